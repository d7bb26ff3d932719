MERGE INTO `g`.`aggregate_expression` AS t
USING (
  WITH imgs AS (
    SELECT
      `k`,
      `g`,
      `x`,
      `y`,
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
            CAST(CONV(HEX(SUBSTRING(change_vector__, 1, 1)), 16, 10) AS INT) & 28
          ) <> 0
        )
      )
      AND old_new__ <> 'U'
  ), __fr_rows AS (
    SELECT
      UPPER(m1.g) AS __fr_g_0,
      m1.x AS __fr_a_0,
      m1.y AS __fr_a_1,
      m1.__fr_sign AS __fr_sign
    FROM imgs AS m1
  ), __fr_d AS (
    SELECT
      __fr_g_0,
      COALESCE(SUM(__fr_sign), 0) AS __fr_d_count,
      COALESCE(SUM(IF(__fr_a_0 IS NULL, 0, __fr_sign)), 0) AS __fr_d_cnt_0,
      SUM(
        IF(__fr_sign > 0, CAST(__fr_a_0 AS DECIMAL(20, 2)), -CAST(__fr_a_0 AS DECIMAL(20, 2)))
      ) AS __fr_d_sum_0,
      COALESCE(SUM(IF(__fr_a_1 IS NULL, 0, __fr_sign)), 0) AS __fr_d_cnt_1,
      SUM(
        IF(__fr_sign > 0, CAST(__fr_a_1 AS DECIMAL(20, 2)), -CAST(__fr_a_1 AS DECIMAL(20, 2)))
      ) AS __fr_d_sum_1
    FROM __fr_rows
    GROUP BY
      __fr_g_0
  )
  SELECT
    *
  FROM __fr_d
  WHERE
    __fr_d_count <> 0
    OR __fr_d_cnt_0 <> 0
    OR COALESCE(__fr_d_sum_0, 0) <> 0
    OR __fr_d_cnt_1 <> 0
    OR COALESCE(__fr_d_sum_1, 0) <> 0
) AS s
ON t.`ug` IS NOT DISTINCT FROM s.__fr_g_0
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
        'dbt-fastrefresh: a group\'s DECIMAL sum passed its type, where Spark\'s SUM is NULL, of m1.x (rebuild the view: dbt run --full-refresh)'
      ) AS DECIMAL(20, 2)),
      COALESCE(t.__fr_sum_0, 0) + COALESCE(s.__fr_d_sum_0, 0)
    )
  ) AS DECIMAL(20, 2)),
  `__fr_cnt_1` = CAST((
    t.__fr_cnt_1 + s.__fr_d_cnt_1
  ) AS BIGINT),
  `__fr_sum_1` = CAST(IF(
    (
      t.__fr_cnt_1 + s.__fr_d_cnt_1
    ) = 0,
    NULL,
    IF(
      t.__fr_sum_1 IS NULL AND t.__fr_cnt_1 > 0,
      CAST(RAISE_ERROR(
        'dbt-fastrefresh: a group\'s DECIMAL sum passed its type, where Spark\'s SUM is NULL, of m1.y (rebuild the view: dbt run --full-refresh)'
      ) AS DECIMAL(20, 2)),
      COALESCE(t.__fr_sum_1, 0) + COALESCE(s.__fr_d_sum_1, 0)
    )
  ) AS DECIMAL(20, 2)),
  `s2` = CAST(CAST(IF(
    (
      t.__fr_cnt_0 + s.__fr_d_cnt_0
    ) = 0,
    NULL,
    IF(
      t.__fr_sum_0 IS NULL AND t.__fr_cnt_0 > 0,
      CAST(RAISE_ERROR(
        'dbt-fastrefresh: a group\'s DECIMAL sum passed its type, where Spark\'s SUM is NULL, of m1.x (rebuild the view: dbt run --full-refresh)'
      ) AS DECIMAL(20, 2)),
      COALESCE(t.__fr_sum_0, 0) + COALESCE(s.__fr_d_sum_0, 0)
    )
  ) AS DECIMAL(20, 2)) * 2 AS DOUBLE),
  `r` = CAST(CAST(IF(
    (
      t.__fr_cnt_1 + s.__fr_d_cnt_1
    ) = 0,
    NULL,
    IF(
      t.__fr_sum_1 IS NULL AND t.__fr_cnt_1 > 0,
      CAST(RAISE_ERROR(
        'dbt-fastrefresh: a group\'s DECIMAL sum passed its type, where Spark\'s SUM is NULL, of m1.y (rebuild the view: dbt run --full-refresh)'
      ) AS DECIMAL(20, 2)),
      COALESCE(t.__fr_sum_1, 0) + COALESCE(s.__fr_d_sum_1, 0)
    )
  ) AS DECIMAL(20, 2)) / CAST((
    t.__fr_count + s.__fr_d_count
  ) AS BIGINT) AS DOUBLE)
WHEN NOT MATCHED AND s.__fr_d_count > 0 THEN INSERT (
  `ug`,
  `s2`,
  `r`,
  `__fr_count`,
  `__fr_cnt_0`,
  `__fr_sum_0`,
  `__fr_cnt_1`,
  `__fr_sum_1`
) VALUES (
  CAST(s.__fr_g_0 AS DOUBLE),
  CAST(CAST(IF(s.__fr_d_cnt_0 = 0, NULL, s.__fr_d_sum_0) AS DECIMAL(20, 2)) * 2 AS DOUBLE),
  CAST(CAST(IF(s.__fr_d_cnt_1 = 0, NULL, s.__fr_d_sum_1) AS DECIMAL(20, 2)) / CAST(s.__fr_d_count AS BIGINT) AS DOUBLE),
  CAST(s.__fr_d_count AS BIGINT),
  CAST(s.__fr_d_cnt_0 AS BIGINT),
  CAST(IF(s.__fr_d_cnt_0 = 0, NULL, s.__fr_d_sum_0) AS DECIMAL(20, 2)),
  CAST(s.__fr_d_cnt_1 AS BIGINT),
  CAST(IF(s.__fr_d_cnt_1 = 0, NULL, s.__fr_d_sum_1) AS DECIMAL(20, 2))
)
