WITH imgs AS (
  SELECT
    `k`,
    `g`,
    `x`,
    `y`,
    IF(old_new__ = 'N', 1, -1) AS __fr_sign
  FROM `g`.`mlog__m1`
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
), __fr_d AS (
  SELECT
    __fr_g_0,
    COALESCE(SUM(__fr_sign), 0) AS __fr_d_count,
    COALESCE(SUM(IF(__fr_a_0 IS NULL, 0, __fr_sign)), 0) AS __fr_d_cnt_0,
    SUM(__fr_sign * __fr_a_0) AS __fr_d_sum_0,
    COALESCE(SUM(IF(__fr_a_1 IS NULL, 0, __fr_sign)), 0) AS __fr_d_cnt_1,
    SUM(__fr_sign * __fr_a_1) AS __fr_d_sum_1
  FROM __fr_rows
  GROUP BY
    __fr_g_0
)
INSERT INTO `g`.`aggregate_signed`
REPLACE WHERE TRUE
SELECT
  CASE
    WHEN s.__fr_in IS NULL
    THEN t.`g`
    WHEN t.__fr_in IS NULL
    THEN CAST(s.__fr_g_0 AS DOUBLE)
    ELSE t.`g`
  END AS `g`,
  CASE
    WHEN s.__fr_in IS NULL
    THEN t.`c`
    WHEN t.__fr_in IS NULL
    THEN CAST(CAST(s.__fr_d_count AS BIGINT) AS DOUBLE)
    ELSE CAST(CAST((
      t.__fr_count + s.__fr_d_count
    ) AS BIGINT) AS DOUBLE)
  END AS `c`,
  CASE
    WHEN s.__fr_in IS NULL
    THEN t.`sx`
    WHEN t.__fr_in IS NULL
    THEN CAST(CAST(IF(s.__fr_d_cnt_0 = 0, NULL, s.__fr_d_sum_0) AS DECIMAL(20, 2)) AS DOUBLE)
    ELSE CAST(CAST(IF(
      (
        t.__fr_cnt_0 + s.__fr_d_cnt_0
      ) = 0,
      NULL,
      COALESCE(t.__fr_sum_0, 0) + COALESCE(s.__fr_d_sum_0, 0)
    ) AS DECIMAL(20, 2)) AS DOUBLE)
  END AS `sx`,
  CASE
    WHEN s.__fr_in IS NULL
    THEN t.`ay`
    WHEN t.__fr_in IS NULL
    THEN CAST(CAST((
      CAST(CAST(IF(s.__fr_d_cnt_1 = 0, NULL, s.__fr_d_sum_1) AS DECIMAL(20, 2)) AS DECIMAL(34, 2)) / CAST(CAST(s.__fr_d_cnt_1 AS BIGINT) AS DECIMAL(20, 0))
    ) AS DECIMAL(14, 6)) AS DOUBLE)
    ELSE CAST(CAST((
      CAST(CAST(IF(
        (
          t.__fr_cnt_1 + s.__fr_d_cnt_1
        ) = 0,
        NULL,
        COALESCE(t.__fr_sum_1, 0) + COALESCE(s.__fr_d_sum_1, 0)
      ) AS DECIMAL(20, 2)) AS DECIMAL(34, 2)) / CAST(CAST((
        t.__fr_cnt_1 + s.__fr_d_cnt_1
      ) AS BIGINT) AS DECIMAL(20, 0))
    ) AS DECIMAL(14, 6)) AS DOUBLE)
  END AS `ay`,
  CASE
    WHEN s.__fr_in IS NULL
    THEN t.`cx`
    WHEN t.__fr_in IS NULL
    THEN CAST(CAST(s.__fr_d_cnt_0 AS BIGINT) AS DOUBLE)
    ELSE CAST(CAST((
      t.__fr_cnt_0 + s.__fr_d_cnt_0
    ) AS BIGINT) AS DOUBLE)
  END AS `cx`,
  CASE
    WHEN s.__fr_in IS NULL
    THEN t.`__fr_count`
    WHEN t.__fr_in IS NULL
    THEN CAST(s.__fr_d_count AS BIGINT)
    ELSE CAST((
      t.__fr_count + s.__fr_d_count
    ) AS BIGINT)
  END AS `__fr_count`,
  CASE
    WHEN s.__fr_in IS NULL
    THEN t.`__fr_cnt_0`
    WHEN t.__fr_in IS NULL
    THEN CAST(s.__fr_d_cnt_0 AS BIGINT)
    ELSE CAST((
      t.__fr_cnt_0 + s.__fr_d_cnt_0
    ) AS BIGINT)
  END AS `__fr_cnt_0`,
  CASE
    WHEN s.__fr_in IS NULL
    THEN t.`__fr_sum_0`
    WHEN t.__fr_in IS NULL
    THEN CAST(IF(s.__fr_d_cnt_0 = 0, NULL, s.__fr_d_sum_0) AS DECIMAL(20, 2))
    ELSE CAST(IF(
      (
        t.__fr_cnt_0 + s.__fr_d_cnt_0
      ) = 0,
      NULL,
      COALESCE(t.__fr_sum_0, 0) + COALESCE(s.__fr_d_sum_0, 0)
    ) AS DECIMAL(20, 2))
  END AS `__fr_sum_0`,
  CASE
    WHEN s.__fr_in IS NULL
    THEN t.`__fr_cnt_1`
    WHEN t.__fr_in IS NULL
    THEN CAST(s.__fr_d_cnt_1 AS BIGINT)
    ELSE CAST((
      t.__fr_cnt_1 + s.__fr_d_cnt_1
    ) AS BIGINT)
  END AS `__fr_cnt_1`,
  CASE
    WHEN s.__fr_in IS NULL
    THEN t.`__fr_sum_1`
    WHEN t.__fr_in IS NULL
    THEN CAST(IF(s.__fr_d_cnt_1 = 0, NULL, s.__fr_d_sum_1) AS DECIMAL(20, 2))
    ELSE CAST(IF(
      (
        t.__fr_cnt_1 + s.__fr_d_cnt_1
      ) = 0,
      NULL,
      COALESCE(t.__fr_sum_1, 0) + COALESCE(s.__fr_d_sum_1, 0)
    ) AS DECIMAL(20, 2))
  END AS `__fr_sum_1`
FROM (
  SELECT
    *,
    TRUE AS __fr_in
  FROM `g`.`aggregate_signed`
) AS t
FULL OUTER JOIN (
  SELECT
    *,
    TRUE AS __fr_in
  FROM (
    SELECT
      *
    FROM __fr_d
    WHERE
      __fr_d_count <> 0
      OR __fr_d_cnt_0 <> 0
      OR COALESCE(__fr_d_sum_0, 0) <> 0
      OR __fr_d_cnt_1 <> 0
      OR COALESCE(__fr_d_sum_1, 0) <> 0
  )
) AS s
  ON t.`g` IS NOT DISTINCT FROM s.__fr_g_0
WHERE
  NOT (
    NOT t.__fr_in IS NULL
    AND NOT s.__fr_in IS NULL
    AND (
      t.__fr_count + s.__fr_d_count = 0
    )
  )
  AND NOT (
    t.__fr_in IS NULL AND NOT (
      s.__fr_d_count > 0
    )
  )
