SELECT
  n.`k` AS `k`,
  n.`g` AS `g`,
  n.`x` AS `x`,
  n.`src` AS `src`,
  0 AS `__fr_union`
FROM (
  SELECT
    m1.k AS k,
    m1.g AS g,
    m1.x AS x,
    'm1' AS src
  FROM g.m1 VERSION AS OF 21 AS m1
  WHERE
    m1.x > 0
) AS n
UNION ALL
SELECT
  n.`_col_0` AS `k`,
  n.`g` AS `g`,
  n.`x` AS `x`,
  n.`m2` AS `src`,
  1 AS `__fr_union`
FROM (
  SELECT
    NULL AS _col_0,
    m2.g AS g,
    m2.x AS x,
    'm2' AS m2
  FROM g.m2 VERSION AS OF 22 AS m2
) AS n
UNION ALL
SELECT
  n.`k` AS `k`,
  n.`g` AS `g`,
  n.`x` AS `x`,
  n.`m3` AS `src`,
  2 AS `__fr_union`
FROM (
  SELECT
    m3.k AS k,
    m3.g AS g,
    m3.x AS x,
    'm3' AS m3
  FROM g.m3 VERSION AS OF 23 AS m3
  WHERE
    NOT m3.g IS NULL
) AS n
