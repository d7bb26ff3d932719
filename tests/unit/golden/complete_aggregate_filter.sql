SELECT
  m1.g AS g,
  SUM(CASE WHEN m1.x > 1 THEN m1.x END) AS sx,
  COUNT(CASE WHEN m1.y IS NULL THEN 1 END) AS ny,
  COUNT(*) AS `__fr_count`,
  COUNT(CASE WHEN m1.x > 1 THEN m1.x END) AS `__fr_cnt_0`,
  TRY_SUM(CASE WHEN m1.x > 1 THEN m1.x END) AS `__fr_sum_0`,
  COUNT(CASE WHEN m1.y IS NULL THEN 1 END) AS `__fr_cnt_1`
FROM g.m1 VERSION AS OF 21 AS m1
GROUP BY
  m1.g
