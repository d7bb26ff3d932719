MERGE INTO `g`.`join_keyless_bag` AS t
USING (
  WITH __fr_img0 AS (
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
  ), __fr_img1 AS (
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
  ), __fr_rows AS (
    SELECT
      a.g AS __fr_g_0,
      a.x AS __fr_g_1,
      b.k AS __fr_g_2,
      a.__fr_sign AS __fr_sign
    FROM (
      SELECT
        *
      FROM __fr_img1
    ) AS a
    JOIN g.m1 VERSION AS OF 11 AS b
      ON a.g = b.g
    WHERE
      NOT b.x IS NULL
    UNION ALL
    SELECT
      a.g AS __fr_g_0,
      a.x AS __fr_g_1,
      b.k AS __fr_g_2,
      b.__fr_sign AS __fr_sign
    FROM g.m2 VERSION AS OF 22 AS a
    JOIN (
      SELECT
        *
      FROM __fr_img0
    ) AS b
      ON a.g = b.g
    WHERE
      NOT b.x IS NULL
  ), __fr_d AS (
    SELECT
      __fr_g_0,
      __fr_g_1,
      __fr_g_2,
      COALESCE(SUM(__fr_sign), 0) AS __fr_d_count
    FROM __fr_rows
    GROUP BY
      __fr_g_0,
      __fr_g_1,
      __fr_g_2
  )
  SELECT
    *
  FROM __fr_d
  WHERE
    __fr_d_count <> 0
) AS s
ON t.`g` IS NOT DISTINCT FROM s.__fr_g_0
AND t.`x` IS NOT DISTINCT FROM s.__fr_g_1
AND t.`k` IS NOT DISTINCT FROM s.__fr_g_2
WHEN MATCHED AND t.__fr_count + s.__fr_d_count = 0 THEN DELETE
WHEN MATCHED THEN UPDATE SET
  `__fr_count` = CAST((
    t.__fr_count + s.__fr_d_count
  ) AS BIGINT),
  `__fr_repeat` = CAST(CAST((
    t.__fr_count + s.__fr_d_count
  ) AS BIGINT) AS DOUBLE)
WHEN NOT MATCHED AND s.__fr_d_count > 0 THEN INSERT (`g`, `x`, `k`, `__fr_repeat`, `__fr_count`) VALUES (
  CAST(s.__fr_g_0 AS DOUBLE),
  CAST(s.__fr_g_1 AS DOUBLE),
  CAST(s.__fr_g_2 AS DOUBLE),
  CAST(CAST(s.__fr_d_count AS BIGINT) AS DOUBLE),
  CAST(s.__fr_d_count AS BIGINT)
)
