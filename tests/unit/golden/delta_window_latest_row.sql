MERGE INTO `g`.`window_latest_row` AS t
USING (
  WITH __fr_keys AS (
    SELECT DISTINCT
      `k`
    FROM `g`.`mlog__m3` VERSION AS OF 33
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
  ), __fr_old AS (
    SELECT
      m.`k`,
      m.`g`,
      m.`x`,
      -1 AS __fr_sign
    FROM `g`.`m3` VERSION AS OF 13 AS m
    LEFT SEMI JOIN __fr_keys AS c
      ON m.`k` IS NOT DISTINCT FROM c.`k`
  ), __fr_new AS (
    SELECT
      m.`k`,
      m.`g`,
      m.`x`,
      1 AS __fr_sign
    FROM `g`.`m3` VERSION AS OF 23 AS m
    LEFT SEMI JOIN __fr_keys AS c
      ON m.`k` IS NOT DISTINCT FROM c.`k`
  ), imgs AS (
    SELECT
      *
    FROM __fr_old
    UNION ALL
    SELECT
      *
    FROM __fr_new
  ), __fr_parts AS (
    SELECT DISTINCT
      __fr_i.g AS __fr_pv0
    FROM imgs AS __fr_i
  ), __fr_recomputed AS (
    SELECT
      r.k AS k,
      r.g AS g,
      r.x AS x,
      r.rn AS rn,
      r.__fr_p_0 AS `__fr_p_0`
    FROM (
      SELECT
        m3.k AS k,
        m3.g AS g,
        m3.x AS x,
        ROW_NUMBER() OVER (PARTITION BY m3.g ORDER BY m3.x DESC, m3.k) AS rn,
        m3.g AS __fr_p_0
      FROM (
        SELECT
          *
        FROM `g`.`m3` VERSION AS OF 23 AS __fr_m
        LEFT SEMI JOIN __fr_parts AS __fr_pp
          ON __fr_m.g IS NOT DISTINCT FROM __fr_pp.__fr_pv0
      ) AS m3
    ) AS r
    WHERE
      r.rn = 1
  )
  SELECT
    `k`,
    `g`,
    `x`,
    `rn`,
    `__fr_p_0`,
    'I' AS __fr_op
  FROM __fr_recomputed
  UNION ALL
  SELECT
    CAST(NULL AS DOUBLE) AS `k`,
    CAST(NULL AS DOUBLE) AS `g`,
    CAST(NULL AS DOUBLE) AS `x`,
    CAST(NULL AS DOUBLE) AS `rn`,
    __fr_pv0 AS `__fr_p_0`,
    'D' AS __fr_op
  FROM __fr_parts
) AS s
ON t.`__fr_p_0` IS NOT DISTINCT FROM s.`__fr_p_0` AND s.__fr_op = 'D'
WHEN MATCHED THEN DELETE
WHEN NOT MATCHED AND s.__fr_op = 'I' THEN INSERT (`k`, `g`, `x`, `rn`, `__fr_p_0`) VALUES (s.`k`, s.`g`, s.`x`, s.`rn`, s.`__fr_p_0`)
