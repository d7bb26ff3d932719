MERGE INTO `g`.`aggregate_global` AS t
USING (
  WITH imgs AS (
    SELECT
      `k`,
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
            CAST(CONV(HEX(SUBSTRING(change_vector__, 1, 1)), 16, 10) AS INT) & 24
          ) <> 0
        )
      )
      AND old_new__ <> 'U'
  ), __fr_rows AS (
    SELECT
      m1.y AS __fr_a_0,
      m1.__fr_sign AS __fr_sign
    FROM imgs AS m1
    WHERE
      NOT m1.x IS NULL
  ), __fr_d AS (
    SELECT
      COALESCE(SUM(__fr_sign), 0) AS __fr_d_count,
      COALESCE(SUM(IF(__fr_a_0 IS NULL, 0, __fr_sign)), 0) AS __fr_d_cnt_0,
      SUM(
        IF(__fr_sign > 0, CAST(__fr_a_0 AS DECIMAL(20, 2)), -CAST(__fr_a_0 AS DECIMAL(20, 2)))
      ) AS __fr_d_sum_0
    FROM __fr_rows
  )
  SELECT
    *
  FROM __fr_d
  WHERE
    __fr_d_count <> 0 OR __fr_d_cnt_0 <> 0 OR COALESCE(__fr_d_sum_0, 0) <> 0
) AS s
ON 1 = 1
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
        'dbt-fastrefresh: a group\'s DECIMAL sum passed its type, where Spark\'s SUM is NULL, of m1.y (rebuild the view: dbt run --full-refresh)'
      ) AS DECIMAL(20, 2)),
      COALESCE(t.__fr_sum_0, 0) + COALESCE(s.__fr_d_sum_0, 0)
    )
  ) AS DECIMAL(20, 2)),
  `c` = CAST(CAST((
    t.__fr_count + s.__fr_d_count
  ) AS BIGINT) AS DOUBLE),
  `sy` = CAST(CAST(IF(
    (
      t.__fr_cnt_0 + s.__fr_d_cnt_0
    ) = 0,
    NULL,
    IF(
      t.__fr_sum_0 IS NULL AND t.__fr_cnt_0 > 0,
      CAST(RAISE_ERROR(
        'dbt-fastrefresh: a group\'s DECIMAL sum passed its type, where Spark\'s SUM is NULL, of m1.y (rebuild the view: dbt run --full-refresh)'
      ) AS DECIMAL(20, 2)),
      COALESCE(t.__fr_sum_0, 0) + COALESCE(s.__fr_d_sum_0, 0)
    )
  ) AS DECIMAL(20, 2)) AS DOUBLE)
