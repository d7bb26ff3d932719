SELECT
  a.k AS k,
  a.g AS g,
  b.k AS bk,
  b.x AS bx
FROM g.m1 VERSION AS OF 21 AS a
FULL OUTER JOIN g.m3 VERSION AS OF 23 AS b
  ON a.g = b.g
