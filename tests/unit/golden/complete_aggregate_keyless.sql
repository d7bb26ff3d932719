SELECT
  m2.g AS g,
  COUNT(*) AS c,
  SUM(m2.x) AS sx,
  COUNT(*) AS `__fr_count`,
  COUNT(m2.x) AS `__fr_cnt_0`,
  TRY_SUM(m2.x) AS `__fr_sum_0`
FROM g.m2 VERSION AS OF 22 AS m2
GROUP BY
  m2.g
