SELECT
  b.g AS g,
  COUNT(*) AS n,
  SUM(a.x) AS sx,
  COUNT(b.k) AS nb,
  COUNT(*) AS `__fr_count`,
  COUNT(a.x) AS `__fr_cnt_0`,
  TRY_SUM(a.x) AS `__fr_sum_0`,
  COUNT(b.k) AS `__fr_cnt_1`
FROM g.m1 VERSION AS OF 21 AS a
LEFT JOIN g.m3 VERSION AS OF 23 AS b
  ON a.k = b.k
GROUP BY
  b.g
