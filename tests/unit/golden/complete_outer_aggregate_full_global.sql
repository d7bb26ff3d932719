SELECT
  COUNT(a.k) AS na,
  COUNT(b.k) AS nb,
  COUNT(*) AS n,
  COUNT(*) AS `__fr_count`,
  COUNT(a.k) AS `__fr_cnt_0`,
  COUNT(b.k) AS `__fr_cnt_1`
FROM g.m1 VERSION AS OF 21 AS a
FULL JOIN g.m3 VERSION AS OF 23 AS b
  ON a.g = b.g
