MERGE INTO `g`.`aggregate_key_only_log` AS t
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
            CAST(CONV(HEX(SUBSTRING(change_vector__, 1, 1)), 16, 10) AS INT) & 12
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
  ), __fr_rows AS (
    SELECT
      m3.g AS __fr_g_0,
      m3.x AS __fr_a_0,
      m3.__fr_sign AS __fr_sign
    FROM imgs AS m3
  ), __fr_d AS (
    SELECT
      __fr_g_0,
      COALESCE(SUM(__fr_sign), 0) AS __fr_d_count,
      COALESCE(SUM(IF(__fr_a_0 IS NULL, 0, __fr_sign)), 0) AS __fr_d_cnt_0,
      SUM(
        IF(__fr_sign > 0, CAST(__fr_a_0 AS DECIMAL(20, 2)), -CAST(__fr_a_0 AS DECIMAL(20, 2)))
      ) AS __fr_d_sum_0
    FROM __fr_rows
    GROUP BY
      __fr_g_0
  )
  SELECT
    *
  FROM __fr_d
  WHERE
    __fr_d_count <> 0 OR __fr_d_cnt_0 <> 0 OR COALESCE(__fr_d_sum_0, 0) <> 0
) AS s
ON t.`g` IS NOT DISTINCT FROM s.__fr_g_0
WHEN MATCHED AND t.__fr_count + s.__fr_d_count = 0 THEN DELETE
WHEN MATCHED THEN UPDATE SET
  `__fr_count` = CAST((
    t.__fr_count + s.__fr_d_count
  ) AS BIGINT),
  `__fr_cnt_0` = CAST((
    t.__fr_cnt_0 + s.__fr_d_cnt_0
  ) AS BIGINT),
  `__fr_sum_0` = CAST(IF(
    (
      t.__fr_cnt_0 + s.__fr_d_cnt_0
    ) = 0,
    NULL,
    IF(
      t.__fr_sum_0 IS NULL AND t.__fr_cnt_0 > 0,
      CAST(RAISE_ERROR(
        'dbt-fastrefresh: a group\'s DECIMAL sum passed its type, where Spark\'s SUM is NULL, of m3.x (rebuild the view: dbt run --full-refresh)'
      ) AS DECIMAL(20, 2)),
      COALESCE(t.__fr_sum_0, 0) + COALESCE(s.__fr_d_sum_0, 0)
    )
  ) AS DECIMAL(20, 2)),
  `c` = CAST(CAST((
    t.__fr_count + s.__fr_d_count
  ) AS BIGINT) AS DOUBLE),
  `sx` = CAST(CAST(IF(
    (
      t.__fr_cnt_0 + s.__fr_d_cnt_0
    ) = 0,
    NULL,
    IF(
      t.__fr_sum_0 IS NULL AND t.__fr_cnt_0 > 0,
      CAST(RAISE_ERROR(
        'dbt-fastrefresh: a group\'s DECIMAL sum passed its type, where Spark\'s SUM is NULL, of m3.x (rebuild the view: dbt run --full-refresh)'
      ) AS DECIMAL(20, 2)),
      COALESCE(t.__fr_sum_0, 0) + COALESCE(s.__fr_d_sum_0, 0)
    )
  ) AS DECIMAL(20, 2)) AS DOUBLE)
WHEN NOT MATCHED AND s.__fr_d_count > 0 THEN INSERT (`g`, `c`, `sx`, `__fr_count`, `__fr_cnt_0`, `__fr_sum_0`) VALUES (
  CAST(s.__fr_g_0 AS DOUBLE),
  CAST(CAST(s.__fr_d_count AS BIGINT) AS DOUBLE),
  CAST(CAST(IF(s.__fr_d_cnt_0 = 0, NULL, s.__fr_d_sum_0) AS DECIMAL(20, 2)) AS DOUBLE),
  CAST(s.__fr_d_count AS BIGINT),
  CAST(s.__fr_d_cnt_0 AS BIGINT),
  CAST(IF(s.__fr_d_cnt_0 = 0, NULL, s.__fr_d_sum_0) AS DECIMAL(20, 2))
)
