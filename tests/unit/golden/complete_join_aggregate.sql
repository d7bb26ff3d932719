SELECT
  b.g AS g,
  COUNT(*) AS c,
  SUM(a.x) AS sx,
  AVG(a.y) AS ay,
  COUNT(*) AS `__fr_count`,
  COUNT(a.x) AS `__fr_cnt_0`,
  TRY_SUM(a.x) AS `__fr_sum_0`,
  COUNT(a.y) AS `__fr_cnt_1`,
  TRY_SUM(a.y) AS `__fr_sum_1`
FROM g.m1 VERSION AS OF 21 AS a
JOIN g.m3 VERSION AS OF 23 AS b
  ON a.k = b.k
GROUP BY
  b.g
