SELECT
  m1.g AS g,
  m1.y AS y,
  `m1`.`k` AS `__fr_k_k`
FROM g.m1 VERSION AS OF 21 AS m1
WHERE
  m1.g <> 'c'
