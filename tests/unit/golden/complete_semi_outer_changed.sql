SELECT
  a.k AS k,
  a.g AS g
FROM g.m1 VERSION AS OF 21 AS a
WHERE
  a.x > 0
  AND EXISTS(
    SELECT
      1 AS `1`
    FROM g.m3 VERSION AS OF 23 AS b
    WHERE
      b.g = a.g AND b.x > 5
  )
