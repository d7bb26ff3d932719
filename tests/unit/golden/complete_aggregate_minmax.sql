SELECT
  m1.g AS g,
  MIN(m1.x) AS mn,
  MAX(m1.y) AS mx,
  COUNT(DISTINCT m1.x) AS cd,
  COUNT(*) AS `__fr_count`
FROM g.m1 VERSION AS OF 21 AS m1
GROUP BY
  m1.g
