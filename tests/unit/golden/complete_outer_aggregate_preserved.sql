SELECT
  a.g AS g,
  COUNT(b.k) AS matches,
  MAX(b.x) AS mx,
  COUNT(*) > 1 AS __fr_having,
  COUNT(*) AS `__fr_count`,
  COUNT(b.k) AS `__fr_cnt_0`
FROM g.m1 VERSION AS OF 21 AS a
LEFT JOIN g.m3 VERSION AS OF 23 AS b
  ON a.g = b.g
GROUP BY
  a.g
