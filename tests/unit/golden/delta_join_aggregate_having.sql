MERGE INTO `g`.`join_aggregate_having` AS t
USING (
  WITH __fr_img0 AS (
    SELECT
      `k`,
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
            CAST(CONV(HEX(SUBSTRING(change_vector__, 1, 1)), 16, 10) AS INT) & 18
          ) <> 0
        )
      )
      AND old_new__ <> 'U'
  ), __fr_img1_keys AS (
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
            CAST(CONV(HEX(SUBSTRING(change_vector__, 1, 1)), 16, 10) AS INT) & 6
          ) <> 0
        )
      )
  ), __fr_img1_old AS (
    SELECT
      m.`k`,
      m.`g`,
      -1 AS __fr_sign
    FROM `g`.`m3` VERSION AS OF 13 AS m
    LEFT SEMI JOIN __fr_img1_keys AS c
      ON m.`k` IS NOT DISTINCT FROM c.`k`
  ), __fr_img1_new AS (
    SELECT
      m.`k`,
      m.`g`,
      1 AS __fr_sign
    FROM `g`.`m3` VERSION AS OF 23 AS m
    LEFT SEMI JOIN __fr_img1_keys AS c
      ON m.`k` IS NOT DISTINCT FROM c.`k`
  ), __fr_img1 AS (
    SELECT
      *
    FROM __fr_img1_old
    UNION ALL
    SELECT
      *
    FROM __fr_img1_new
  ), __fr_rows AS (
    SELECT
      b.g AS __fr_g_0,
      a.y AS __fr_a_0,
      a.__fr_sign AS __fr_sign
    FROM (
      SELECT
        *
      FROM __fr_img0
    ) AS a
    JOIN g.m3 VERSION AS OF 13 AS b
      ON a.k = b.k
    UNION ALL
    SELECT
      b.g AS __fr_g_0,
      a.y AS __fr_a_0,
      b.__fr_sign AS __fr_sign
    FROM g.m1 VERSION AS OF 21 AS a
    JOIN (
      SELECT
        *
      FROM __fr_img1
    ) AS b
      ON a.k = b.k
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
        'dbt-fastrefresh: a group\'s DECIMAL sum passed its type, where Spark\'s SUM is NULL, of a.y (rebuild the view: dbt run --full-refresh)'
      ) AS DECIMAL(20, 2)),
      COALESCE(t.__fr_sum_0, 0) + COALESCE(s.__fr_d_sum_0, 0)
    )
  ) AS DECIMAL(20, 2)),
  `c` = CAST(CAST((
    t.__fr_count + s.__fr_d_count
  ) AS BIGINT) AS DOUBLE),
  `__fr_having` = CAST(CAST((
    CAST(CAST(IF(
      (
        t.__fr_cnt_0 + s.__fr_d_cnt_0
      ) = 0,
      NULL,
      IF(
        t.__fr_sum_0 IS NULL AND t.__fr_cnt_0 > 0,
        CAST(RAISE_ERROR(
          'dbt-fastrefresh: a group\'s DECIMAL sum passed its type, where Spark\'s SUM is NULL, of a.y (rebuild the view: dbt run --full-refresh)'
        ) AS DECIMAL(20, 2)),
        COALESCE(t.__fr_sum_0, 0) + COALESCE(s.__fr_d_sum_0, 0)
      )
    ) AS DECIMAL(20, 2)) AS DECIMAL(34, 2)) / CAST(CAST((
      t.__fr_cnt_0 + s.__fr_d_cnt_0
    ) AS BIGINT) AS DECIMAL(20, 0))
  ) AS DECIMAL(14, 6)) > 1 AS BOOLEAN)
WHEN NOT MATCHED AND s.__fr_d_count > 0 THEN INSERT (`g`, `c`, `__fr_having`, `__fr_count`, `__fr_cnt_0`, `__fr_sum_0`) VALUES (
  CAST(s.__fr_g_0 AS DOUBLE),
  CAST(CAST(s.__fr_d_count AS BIGINT) AS DOUBLE),
  CAST(CAST((
    CAST(CAST(IF(s.__fr_d_cnt_0 = 0, NULL, s.__fr_d_sum_0) AS DECIMAL(20, 2)) AS DECIMAL(34, 2)) / CAST(CAST(s.__fr_d_cnt_0 AS BIGINT) AS DECIMAL(20, 0))
  ) AS DECIMAL(14, 6)) > 1 AS BOOLEAN),
  CAST(s.__fr_d_count AS BIGINT),
  CAST(s.__fr_d_cnt_0 AS BIGINT),
  CAST(IF(s.__fr_d_cnt_0 = 0, NULL, s.__fr_d_sum_0) AS DECIMAL(20, 2))
)
