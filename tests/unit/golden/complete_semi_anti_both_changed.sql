SELECT
  a.g AS g,
  a.x AS x,
  `a`.`k` AS `__fr_k_k`
FROM g.m1 VERSION AS OF 21 AS a
WHERE
  NOT EXISTS(
    SELECT
      1 AS `1`
    FROM g.m3 VERSION AS OF 23 AS b
    WHERE
      b.g = a.g
  )
