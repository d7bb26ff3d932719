MERGE INTO `g`.`window_running_sum` AS t
USING (
  WITH imgs AS (
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
  ), __fr_parts AS (
    SELECT DISTINCT
      __fr_i.g AS __fr_pv0
    FROM imgs AS __fr_i
  ), __fr_recomputed AS (
    SELECT
      m1.k AS k,
      m1.x AS x,
      SUM(m1.x) OVER (PARTITION BY m1.g ORDER BY m1.k) AS running,
      m1.g AS `__fr_p_0`
    FROM (
      SELECT
        *
      FROM `g`.`m1` VERSION AS OF 21 AS __fr_m
      LEFT SEMI JOIN __fr_parts AS __fr_pp
        ON __fr_m.g IS NOT DISTINCT FROM __fr_pp.__fr_pv0
    ) AS m1
  )
  SELECT
    `k`,
    `x`,
    `running`,
    `__fr_p_0`,
    'I' AS __fr_op
  FROM __fr_recomputed
  UNION ALL
  SELECT
    CAST(NULL AS DOUBLE) AS `k`,
    CAST(NULL AS DOUBLE) AS `x`,
    CAST(NULL AS DOUBLE) AS `running`,
    __fr_pv0 AS `__fr_p_0`,
    'D' AS __fr_op
  FROM __fr_parts
) AS s
ON t.`__fr_p_0` IS NOT DISTINCT FROM s.`__fr_p_0` AND s.__fr_op = 'D'
WHEN MATCHED THEN DELETE
WHEN NOT MATCHED AND s.__fr_op = 'I' THEN INSERT (`k`, `x`, `running`, `__fr_p_0`) VALUES (s.`k`, s.`x`, s.`running`, s.`__fr_p_0`)
