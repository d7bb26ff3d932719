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
    m1.g AS __fr_g_0,
    m1.x AS __fr_a_0,
    m1.y AS __fr_a_1,
    m1.__fr_sign AS __fr_sign
  FROM imgs AS m1
), __fr_u AS (
  SELECT
    t.`g` AS __fr_g_0,
    t.__fr_count AS __fr_d_count,
    t.__fr_cnt_0 AS __fr_d_cnt_0,
    IF(
      t.__fr_sum_0 IS NULL AND t.__fr_cnt_0 > 0,
      CAST(RAISE_ERROR(
        'dbt-fastrefresh: a group\'s DECIMAL sum passed its type, where Spark\'s SUM is NULL, of m1.x (rebuild the view: dbt run --full-refresh)'
      ) AS DECIMAL(20, 2)),
      t.__fr_sum_0
    ) AS __fr_d_sum_0,
    t.__fr_cnt_1 AS __fr_d_cnt_1,
    IF(
      t.__fr_sum_1 IS NULL AND t.__fr_cnt_1 > 0,
      CAST(RAISE_ERROR(
        'dbt-fastrefresh: a group\'s DECIMAL sum passed its type, where Spark\'s SUM is NULL, of m1.y (rebuild the view: dbt run --full-refresh)'
      ) AS DECIMAL(20, 2)),
      t.__fr_sum_1
    ) AS __fr_d_sum_1
  FROM `g`.`aggregate_signed` AS t
  UNION ALL
  SELECT
    CAST(__fr_g_0 AS DOUBLE) AS __fr_g_0,
    __fr_sign AS __fr_d_count,
    IF(__fr_a_0 IS NULL, 0, __fr_sign) AS __fr_d_cnt_0,
    IF(__fr_sign > 0, CAST(__fr_a_0 AS DECIMAL(20, 2)), -CAST(__fr_a_0 AS DECIMAL(20, 2))) AS __fr_d_sum_0,
    IF(__fr_a_1 IS NULL, 0, __fr_sign) AS __fr_d_cnt_1,
    IF(__fr_sign > 0, CAST(__fr_a_1 AS DECIMAL(20, 2)), -CAST(__fr_a_1 AS DECIMAL(20, 2))) AS __fr_d_sum_1
  FROM __fr_rows
)
INSERT INTO `g`.`aggregate_signed`
REPLACE WHERE TRUE
SELECT
  CAST(s.__fr_g_0 AS DOUBLE) AS `g`,
  CAST(CAST(s.__fr_d_count AS BIGINT) AS DOUBLE) AS `c`,
  CAST(CAST(IF(s.__fr_d_cnt_0 = 0, NULL, s.__fr_d_sum_0) AS DECIMAL(20, 2)) AS DOUBLE) AS `sx`,
  CAST(CAST((
    CAST(CAST(IF(s.__fr_d_cnt_1 = 0, NULL, s.__fr_d_sum_1) AS DECIMAL(20, 2)) AS DECIMAL(34, 2)) / CAST(CAST(s.__fr_d_cnt_1 AS BIGINT) AS DECIMAL(20, 0))
  ) AS DECIMAL(14, 6)) AS DOUBLE) AS `ay`,
  CAST(CAST(s.__fr_d_cnt_0 AS BIGINT) AS DOUBLE) AS `cx`,
  CAST(s.__fr_d_count AS BIGINT) AS `__fr_count`,
  CAST(s.__fr_d_cnt_0 AS BIGINT) AS `__fr_cnt_0`,
  CAST(IF(s.__fr_d_cnt_0 = 0, NULL, s.__fr_d_sum_0) AS DECIMAL(20, 2)) AS `__fr_sum_0`,
  CAST(s.__fr_d_cnt_1 AS BIGINT) AS `__fr_cnt_1`,
  CAST(IF(s.__fr_d_cnt_1 = 0, NULL, s.__fr_d_sum_1) AS DECIMAL(20, 2)) AS `__fr_sum_1`
FROM (
  SELECT
    __fr_g_0,
    SUM(__fr_d_count) AS __fr_d_count,
    SUM(__fr_d_cnt_0) AS __fr_d_cnt_0,
    SUM(__fr_d_sum_0) AS __fr_d_sum_0,
    SUM(__fr_d_cnt_1) AS __fr_d_cnt_1,
    SUM(__fr_d_sum_1) AS __fr_d_sum_1
  FROM __fr_u
  GROUP BY
    __fr_g_0
) AS s
WHERE
  s.__fr_d_count > 0
