SELECT
  m1.g AS g,
  COUNT(*) AS c,
  SUM(m1.x) AS sx,
  AVG(m1.y) AS ay,
  COUNT(m1.x) AS cx,
  COUNT(*) AS `__fr_count`,
  COUNT(m1.x) AS `__fr_cnt_0`,
  TRY_SUM(m1.x) AS `__fr_sum_0`,
  COUNT(m1.y) AS `__fr_cnt_1`,
  TRY_SUM(m1.y) AS `__fr_sum_1`
FROM g.m1 VERSION AS OF 21 AS m1
GROUP BY
  m1.g
