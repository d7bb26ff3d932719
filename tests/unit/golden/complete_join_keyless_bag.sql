SELECT
  a.g AS g,
  a.x AS x,
  b.k AS k,
  COUNT(*) AS __fr_repeat,
  COUNT(*) AS `__fr_count`
FROM g.m2 VERSION AS OF 22 AS a
JOIN g.m1 VERSION AS OF 21 AS b
  ON a.g = b.g
WHERE
  NOT b.x IS NULL
GROUP BY
  a.g,
  a.x,
  b.k
