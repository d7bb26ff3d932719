SELECT
  a.k AS k
FROM g.m1 VERSION AS OF 21 AS a
WHERE
  EXISTS(
    SELECT
      1 AS `1`
    FROM g.m1 VERSION AS OF 21 AS c
    WHERE
      c.k = a.x
  )
