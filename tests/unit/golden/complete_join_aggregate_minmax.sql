SELECT
  a.g AS g,
  MAX(b.x) AS mx,
  COUNT(*) AS c,
  COUNT(*) AS `__fr_count`
FROM g.m1 VERSION AS OF 21 AS a
JOIN g.m3 VERSION AS OF 23 AS b
  ON a.g = b.g
GROUP BY
  a.g
