SELECT
  m1.k AS k,
  m1.x AS x,
  SUM(m1.x) OVER (PARTITION BY m1.g ORDER BY m1.k) AS running,
  m1.g AS `__fr_p_0`
FROM g.m1 VERSION AS OF 21 AS m1
