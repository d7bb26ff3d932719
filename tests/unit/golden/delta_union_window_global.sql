MERGE INTO `g`.`union_window_global` AS t
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
            CAST(CONV(HEX(SUBSTRING(change_vector__, 1, 1)), 16, 10) AS INT) & 14
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
  ), __fr_u1_0 AS (
    SELECT
      `x`,
      IF(old_new__ = 'N', 1, -1) AS __fr_sign
    FROM `g`.`mlog__m2` VERSION AS OF 32
    WHERE
      (
        capture__ > 4 AND capture__ <= 7
      )
      AND (
        dmltype__ <> 'U'
        OR (
          (
            CAST(CONV(HEX(SUBSTRING(change_vector__, 1, 1)), 16, 10) AS INT) & 4
          ) <> 0
        )
      )
  ), __fr_u1 AS (
    SELECT
      n.`total` AS `g`,
      n.`_col_1` AS `x`,
      1 AS `__fr_union`,
      CAST(NULL AS DOUBLE) AS `__fr_b0_p_0`
    FROM (
      SELECT
        'total' AS total,
        SUM(m2.x) AS _col_1,
        COUNT(*) AS `__fr_count`,
        COUNT(m2.x) AS `__fr_cnt_0`,
        TRY_SUM(m2.x) AS `__fr_sum_0`
      FROM g.m2 VERSION AS OF 22 AS m2
    ) AS n
  )
  SELECT
    CAST(n.`g` AS DOUBLE) AS `g`,
    CAST(n.`x` AS DOUBLE) AS `x`,
    CAST(n.`__fr_union` AS DOUBLE) AS `__fr_union`,
    CAST(n.`__fr_b0_p_0` AS DOUBLE) AS `__fr_b0_p_0`,
    'I' AS __fr_op
  FROM (
    SELECT
      n.*
    FROM __fr_u0 AS n
    LEFT SEMI JOIN __fr_u0_r0 AS r
      ON n.`__fr_b0_p_0` IS NOT DISTINCT FROM r.__fr_v0
  ) AS n
  UNION ALL
  SELECT
    CAST(NULL AS DOUBLE),
    CAST(NULL AS DOUBLE),
    d.`__fr_union`,
    d.`__fr_b0_p_0`,
    'D' AS __fr_op
  FROM (
    SELECT DISTINCT
      t.`__fr_union`,
      t.`__fr_b0_p_0`
    FROM `g`.`union_window_global` AS t
    LEFT SEMI JOIN __fr_u0_r0 AS r
      ON t.`__fr_b0_p_0` IS NOT DISTINCT FROM r.__fr_v0
    WHERE
      t.`__fr_union` = 0
  ) AS d
  UNION ALL
  SELECT
    CAST(n.`g` AS DOUBLE) AS `g`,
    CAST(n.`x` AS DOUBLE) AS `x`,
    CAST(n.`__fr_union` AS DOUBLE) AS `__fr_union`,
    CAST(n.`__fr_b0_p_0` AS DOUBLE) AS `__fr_b0_p_0`,
    'I' AS __fr_op
  FROM (
    SELECT
      n.*
    FROM __fr_u1 AS n
  ) AS n
  UNION ALL
  SELECT
    CAST(NULL AS DOUBLE),
    CAST(NULL AS DOUBLE),
    d.`__fr_union`,
    d.`__fr_b0_p_0`,
    'D' AS __fr_op
  FROM (
    SELECT DISTINCT
      t.`__fr_union`,
      t.`__fr_b0_p_0`
    FROM `g`.`union_window_global` AS t
    WHERE
      t.`__fr_union` = 1
  ) AS d
) AS s
ON t.`__fr_union` IS NOT DISTINCT FROM s.`__fr_union`
AND t.`__fr_b0_p_0` IS NOT DISTINCT FROM s.`__fr_b0_p_0`
AND s.__fr_op = 'D'
WHEN MATCHED THEN DELETE
WHEN NOT MATCHED AND s.__fr_op = 'I' THEN INSERT (`g`, `x`, `__fr_union`, `__fr_b0_p_0`) VALUES (s.`g`, s.`x`, s.`__fr_union`, s.`__fr_b0_p_0`)
