SELECT
  m1.k AS k,
  m1.g AS g,
  m1.x AS x
FROM g.m1 VERSION AS OF 21 AS m1
WHERE
  m1.x > 0
