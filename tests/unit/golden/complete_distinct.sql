SELECT
  m1.g AS g,
  COUNT(*) AS `__fr_count`
FROM g.m1 VERSION AS OF 21 AS m1
GROUP BY
  m1.g
