SELECT
  a.k AS k,
  b.k AS k2,
  a.y AS y
FROM g.m1 VERSION AS OF 21 AS a
CROSS JOIN g.m1 VERSION AS OF 21 AS b
WHERE
  a.x = b.x + 1
