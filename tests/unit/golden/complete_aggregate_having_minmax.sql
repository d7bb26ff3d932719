SELECT
  m1.g AS g,
  MAX(m1.x) AS mx,
  MAX(m1.x) > 2 OR COUNT(*) = 1 AS __fr_having,
  COUNT(*) AS `__fr_count`
FROM g.m1 VERSION AS OF 21 AS m1
GROUP BY
  m1.g
