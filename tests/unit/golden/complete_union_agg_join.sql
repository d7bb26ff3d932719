SELECT
  n.`g` AS `g`,
  n.`n` AS `n`,
  n.`sx` AS `sx`,
  0 AS `__fr_union`,
  NULL AS `__fr_b1_j1_k`
FROM (
  SELECT
    m1.g AS g,
    COUNT(*) AS n,
    SUM(m1.x) AS sx,
    COUNT(*) > 1 AS __fr_having,
    COUNT(*) AS `__fr_count`,
    COUNT(m1.x) AS `__fr_cnt_0`,
    TRY_SUM(m1.x) AS `__fr_sum_0`
  FROM g.m1 VERSION AS OF 21 AS m1
  GROUP BY
    m1.g
) AS n
WHERE
  n.`__fr_having`
UNION ALL
SELECT
  n.`g` AS `g`,
  n.`k` AS `n`,
  n.`x` AS `sx`,
  1 AS `__fr_union`,
  n.`__fr_j1_k` AS `__fr_b1_j1_k`
FROM (
  SELECT
    a.g AS g,
    a.k AS k,
    b.x AS x,
    b.k AS `__fr_j1_k`
  FROM g.m1 VERSION AS OF 21 AS a
  JOIN g.m3 VERSION AS OF 23 AS b
    ON a.k = b.k
) AS n
