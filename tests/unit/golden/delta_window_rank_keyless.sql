MERGE INTO `g`.`window_rank_keyless` AS t
USING (
  WITH imgs AS (
    SELECT
      `g`,
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
            CAST(CONV(HEX(SUBSTRING(change_vector__, 1, 1)), 16, 10) AS INT) & 6
          ) <> 0
        )
      )
  ), __fr_parts AS (
    SELECT DISTINCT
      __fr_i.g AS __fr_pv0
    FROM imgs AS __fr_i
  ), __fr_recomputed AS (
    SELECT
      q.g AS g,
      q.x AS x,
      q.__fr_p_0 AS `__fr_p_0`
    FROM (
      SELECT
        m2.g AS g,
        m2.x AS x,
        DENSE_RANK() OVER (PARTITION BY m2.g ORDER BY m2.x) AS r,
        m2.g AS __fr_p_0
      FROM (
        SELECT
          *
        FROM `g`.`m2` VERSION AS OF 22 AS __fr_m
        LEFT SEMI JOIN __fr_parts AS __fr_pp
          ON __fr_m.g IS NOT DISTINCT FROM __fr_pp.__fr_pv0
      ) AS m2
    ) AS q
    WHERE
      q.r <= 2
  )
  SELECT
    `g`,
    `x`,
    `__fr_p_0`,
    'I' AS __fr_op
  FROM __fr_recomputed
  UNION ALL
  SELECT
    CAST(NULL AS DOUBLE) AS `g`,
    CAST(NULL AS DOUBLE) AS `x`,
    __fr_pv0 AS `__fr_p_0`,
    'D' AS __fr_op
  FROM __fr_parts
) AS s
ON t.`__fr_p_0` IS NOT DISTINCT FROM s.`__fr_p_0` AND s.__fr_op = 'D'
WHEN MATCHED THEN DELETE
WHEN NOT MATCHED AND s.__fr_op = 'I' THEN INSERT (`g`, `x`, `__fr_p_0`) VALUES (s.`g`, s.`x`, s.`__fr_p_0`)
