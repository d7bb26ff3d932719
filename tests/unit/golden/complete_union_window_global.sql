SELECT
  n.`g` AS `g`,
  n.`x` AS `x`,
  0 AS `__fr_union`,
  n.`__fr_p_0` AS `__fr_b0_p_0`
FROM (
  SELECT
    r.g AS g,
    r.x AS x,
    r.__fr_p_0 AS `__fr_p_0`
  FROM (
    SELECT
      m1.g AS g,
      m1.x AS x,
      ROW_NUMBER() OVER (PARTITION BY m1.g ORDER BY m1.x DESC, m1.k) AS rn,
      m1.g AS __fr_p_0
    FROM g.m1 VERSION AS OF 21 AS m1
  ) AS r
  WHERE
    r.rn = 1
) AS n
UNION ALL
SELECT
  n.`total` AS `g`,
  n.`_col_1` AS `x`,
  1 AS `__fr_union`,
  NULL AS `__fr_b0_p_0`
FROM (
  SELECT
    'total' AS total,
    SUM(m2.x) AS _col_1,
    COUNT(*) AS `__fr_count`,
    COUNT(m2.x) AS `__fr_cnt_0`,
    TRY_SUM(m2.x) AS `__fr_sum_0`
  FROM g.m2 VERSION AS OF 22 AS m2
) AS n
