SELECT
  a.k AS k,
  a.g AS g
FROM g.m1 VERSION AS OF 21 AS a
WHERE
  a.g IN (
    SELECT
      m2.g AS g
    FROM g.m2 VERSION AS OF 22 AS m2
    WHERE
      NOT m2.x IS NULL
  )
