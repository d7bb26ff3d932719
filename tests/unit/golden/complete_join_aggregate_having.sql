SELECT
  b.g AS g,
  COUNT(*) AS c,
  AVG(a.y) > 1 AS __fr_having,
  COUNT(*) AS `__fr_count`,
  COUNT(a.y) AS `__fr_cnt_0`,
  TRY_SUM(a.y) AS `__fr_sum_0`
FROM g.m1 VERSION AS OF 21 AS a
JOIN g.m3 VERSION AS OF 23 AS b
  ON a.k = b.k
GROUP BY
  b.g
