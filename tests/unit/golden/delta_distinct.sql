MERGE INTO `g`.`distinct` AS t
USING (
  WITH imgs AS (
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
            CAST(CONV(HEX(SUBSTRING(change_vector__, 1, 1)), 16, 10) AS INT) & 4
          ) <> 0
        )
      )
      AND old_new__ <> 'U'
  ), __fr_rows AS (
    SELECT
      m1.g AS __fr_g_0,
      m1.__fr_sign AS __fr_sign
    FROM imgs AS m1
  ), __fr_d AS (
    SELECT
      __fr_g_0,
      COALESCE(SUM(__fr_sign), 0) AS __fr_d_count
    FROM __fr_rows
    GROUP BY
      __fr_g_0
  )
  SELECT
    *
  FROM __fr_d
  WHERE
    __fr_d_count <> 0
) AS s
ON t.`g` IS NOT DISTINCT FROM s.__fr_g_0
WHEN MATCHED AND t.__fr_count + s.__fr_d_count = 0 THEN DELETE
WHEN MATCHED THEN UPDATE SET
  `__fr_count` = CAST((
    t.__fr_count + s.__fr_d_count
  ) AS BIGINT)
WHEN NOT MATCHED AND s.__fr_d_count > 0 THEN INSERT (`g`, `__fr_count`) VALUES (CAST(s.__fr_g_0 AS DOUBLE), CAST(s.__fr_d_count AS BIGINT))
