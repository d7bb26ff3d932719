SELECT
  a.g AS g,
  COUNT(*) AS n,
  SUM(b.x) AS sx,
  COUNT(*) AS `__fr_count`,
  COUNT(b.x) AS `__fr_cnt_0`,
  TRY_SUM(b.x) AS `__fr_sum_0`
FROM g.m2 VERSION AS OF 22 AS a
JOIN g.m1 VERSION AS OF 21 AS b
  ON a.g = b.g
GROUP BY
  a.g
