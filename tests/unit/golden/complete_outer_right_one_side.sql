SELECT
  a.k AS k,
  b.k AS bk,
  b.g AS g
FROM g.m1 VERSION AS OF 21 AS a
RIGHT JOIN g.m3 VERSION AS OF 23 AS b
  ON a.k = b.k AND a.x > 0
