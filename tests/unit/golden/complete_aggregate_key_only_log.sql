SELECT
  m3.g AS g,
  COUNT(*) AS c,
  SUM(m3.x) AS sx,
  COUNT(*) AS `__fr_count`,
  COUNT(m3.x) AS `__fr_cnt_0`,
  TRY_SUM(m3.x) AS `__fr_sum_0`
FROM g.m3 VERSION AS OF 23 AS m3
GROUP BY
  m3.g
