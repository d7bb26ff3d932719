SELECT
  m3.k AS k,
  m3.x AS x
FROM g.m3 VERSION AS OF 23 AS m3
WHERE
  m3.x > 0
