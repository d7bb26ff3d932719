SELECT
  a.k AS k,
  a.x AS x,
  b.k AS bk,
  b.x AS bx
FROM g.m1 VERSION AS OF 21 AS a
JOIN g.m3 VERSION AS OF 23 AS b
  ON a.g = b.g
