MERGE INTO `g`.`union_agg_join` AS t
USING (
  WITH __fr_u0_0 AS (
    SELECT
      `k`,
      `g`,
      `x`,
      IF(old_new__ = 'N', 1, -1) AS __fr_sign
    FROM `g`.`mlog__m1` VERSION AS OF 31
    WHERE
      (
        capture__ > 4 AND capture__ <= 7
      )
      AND (
        dmltype__ <> 'U'
        OR (
          (
            CAST(CONV(HEX(SUBSTRING(change_vector__, 1, 1)), 16, 10) AS INT) & 12
          ) <> 0
        )
      )
      AND old_new__ <> 'U'
  ), __fr_u0_r0 AS (
    SELECT DISTINCT
      __fr_u0_0.g AS __fr_v0
    FROM __fr_u0_0
  ), __fr_u0 AS (
    SELECT
      n.`g` AS `g`,
      n.`n` AS `n`,
      n.`sx` AS `sx`,
      0 AS `__fr_union`,
      CAST(NULL AS DOUBLE) AS `__fr_b1_j1_k`
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
  ), __fr_u1_0 AS (
    SELECT
      `k`,
      `g`,
      IF(old_new__ = 'N', 1, -1) AS __fr_sign
    FROM `g`.`mlog__m1` VERSION AS OF 31
    WHERE
      (
        capture__ > 4 AND capture__ <= 7
      )
      AND (
        dmltype__ <> 'U'
        OR (
          (
            CAST(CONV(HEX(SUBSTRING(change_vector__, 1, 1)), 16, 10) AS INT) & 6
          ) <> 0
        )
      )
      AND old_new__ <> 'U'
  ), __fr_u1_r0 AS (
    SELECT DISTINCT
      __fr_u1_0.k AS __fr_v0
    FROM __fr_u1_0
  ), __fr_u1 AS (
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
  )
  SELECT
    CAST(n.`g` AS DOUBLE) AS `g`,
    CAST(n.`n` AS DOUBLE) AS `n`,
    CAST(n.`sx` AS DOUBLE) AS `sx`,
    CAST(n.`__fr_union` AS DOUBLE) AS `__fr_union`,
    CAST(n.`__fr_b1_j1_k` AS DOUBLE) AS `__fr_b1_j1_k`,
    'I' AS __fr_op
  FROM (
    SELECT
      n.*
    FROM __fr_u0 AS n
    LEFT SEMI JOIN __fr_u0_r0 AS r
      ON n.`g` IS NOT DISTINCT FROM r.__fr_v0
  ) AS n
  UNION ALL
  SELECT
    d.`g`,
    d.`n`,
    CAST(NULL AS DOUBLE),
    d.`__fr_union`,
    d.`__fr_b1_j1_k`,
    'D' AS __fr_op
  FROM (
    SELECT DISTINCT
      t.`__fr_union`,
      t.`g`,
      t.`n`,
      t.`__fr_b1_j1_k`
    FROM `g`.`union_agg_join` AS t
    LEFT SEMI JOIN __fr_u0_r0 AS r
      ON t.`g` IS NOT DISTINCT FROM r.__fr_v0
    WHERE
      t.`__fr_union` = 0
  ) AS d
  UNION ALL
  SELECT
    CAST(n.`g` AS DOUBLE) AS `g`,
    CAST(n.`n` AS DOUBLE) AS `n`,
    CAST(n.`sx` AS DOUBLE) AS `sx`,
    CAST(n.`__fr_union` AS DOUBLE) AS `__fr_union`,
    CAST(n.`__fr_b1_j1_k` AS DOUBLE) AS `__fr_b1_j1_k`,
    'I' AS __fr_op
  FROM (
    SELECT
      n.*
    FROM __fr_u1 AS n
    LEFT SEMI JOIN __fr_u1_r0 AS r
      ON n.`n` IS NOT DISTINCT FROM r.__fr_v0
  ) AS n
  UNION ALL
  SELECT
    d.`g`,
    d.`n`,
    CAST(NULL AS DOUBLE),
    d.`__fr_union`,
    d.`__fr_b1_j1_k`,
    'D' AS __fr_op
  FROM (
    SELECT DISTINCT
      t.`__fr_union`,
      t.`g`,
      t.`n`,
      t.`__fr_b1_j1_k`
    FROM `g`.`union_agg_join` AS t
    LEFT SEMI JOIN __fr_u1_r0 AS r
      ON t.`n` IS NOT DISTINCT FROM r.__fr_v0
    WHERE
      t.`__fr_union` = 1
  ) AS d
) AS s
ON t.`__fr_union` IS NOT DISTINCT FROM s.`__fr_union`
AND t.`g` IS NOT DISTINCT FROM s.`g`
AND t.`n` IS NOT DISTINCT FROM s.`n`
AND t.`__fr_b1_j1_k` IS NOT DISTINCT FROM s.`__fr_b1_j1_k`
AND s.__fr_op = 'D'
WHEN MATCHED THEN DELETE
WHEN NOT MATCHED AND s.__fr_op = 'I' THEN INSERT (`g`, `n`, `sx`, `__fr_union`, `__fr_b1_j1_k`) VALUES (s.`g`, s.`n`, s.`sx`, s.`__fr_union`, s.`__fr_b1_j1_k`)
