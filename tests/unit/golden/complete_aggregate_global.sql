SELECT
  COUNT(*) AS c,
  SUM(m1.y) AS sy,
  COUNT(*) AS `__fr_count`,
  COUNT(m1.y) AS `__fr_cnt_0`,
  TRY_SUM(m1.y) AS `__fr_sum_0`
FROM g.m1 VERSION AS OF 21 AS m1
WHERE
  NOT m1.x IS NULL
