SELECT
  a.g AS g,
  b.x AS x,
  a.k AS `__fr_j0_k`,
  b.k AS `__fr_j1_k`
FROM g.m1 VERSION AS OF 21 AS a
JOIN g.m3 VERSION AS OF 23 AS b
  ON a.k = b.k
