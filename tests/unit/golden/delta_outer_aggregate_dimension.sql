MERGE INTO `g`.`outer_aggregate_dimension` AS t
USING (
  WITH __fr_gown_keys AS (
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
  ), __fr_gown_old AS (
    SELECT
      m.`k`,
      m.`g`,
      -1 AS __fr_sign
    FROM `g`.`m3` VERSION AS OF 13 AS m
    LEFT SEMI JOIN __fr_gown_keys AS c
      ON m.`k` IS NOT DISTINCT FROM c.`k`
  ), __fr_gown_new AS (
    SELECT
      m.`k`,
      m.`g`,
      1 AS __fr_sign
    FROM `g`.`m3` VERSION AS OF 23 AS m
    LEFT SEMI JOIN __fr_gown_keys AS c
      ON m.`k` IS NOT DISTINCT FROM c.`k`
  ), __fr_gown AS (
    SELECT
      *
    FROM __fr_gown_old
    UNION ALL
    SELECT
      *
    FROM __fr_gown_new
  ), __fr_goth_rng AS (
    SELECT
      `k`,
      `x`,
      old_new__,
      sequence__,
      xid__
    FROM `g`.`mlog__m1` VERSION AS OF 31
    WHERE
      (
        capture__ > 4 AND capture__ <= 7
      )
      AND (
        dmltype__ <> 'U'
        OR (
          (
            CAST(CONV(HEX(SUBSTRING(change_vector__, 1, 1)), 16, 10) AS INT) & 10
          ) <> 0
        )
      )
      AND old_new__ <> 'U'
  ), __fr_goth_ranked AS (
    SELECT
      *,
      ROW_NUMBER() OVER (PARTITION BY `k` ORDER BY sequence__) AS __fr_pos,
      COUNT(1) OVER (
        PARTITION BY `k`
        ORDER BY sequence__
        ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING
      ) AS __fr_n,
      LAG(old_new__) OVER (PARTITION BY `k` ORDER BY sequence__) AS __fr_prev
    FROM __fr_goth_rng
  ), __fr_goth AS (
    SELECT
      `k`,
      `x`,
      IF(old_new__ = 'O', -1, 1) AS __fr_sign
    FROM __fr_goth_ranked
    WHERE
      IF(
        old_new__ = 'N' AND __fr_prev = 'N',
        CAST(RAISE_ERROR(
          CONCAT(
            'dbt-fastrefresh: master g.mlog__m1 has more than one row with key (',
            COALESCE(CAST(`k` AS STRING), 'NULL'),
            ') in snapshot ',
            CAST(xid__ AS STRING),
            ': that commit added a row with a key another row of the master still held. A keyed log needs a unique key: with two rows of one key, a view keeps one of them. Fix: make the key unique, then drop the log (dbt run-operation fast_refresh.drop_mview_log --args "{master: g.mlog__m1}") and let the next dbt run create it again from the table as it is then, or create it again yourself with another key, or key-less (key=[]); the views on it rebuild once.'
          )
        ) AS BOOLEAN),
        TRUE
      )
      AND (
        (
          __fr_pos = 1 AND old_new__ = 'O'
        )
        OR (
          __fr_pos = __fr_n AND old_new__ = 'N'
        )
      )
  ), __fr_goth_v AS (
    SELECT DISTINCT
      __fr_goth.k AS __fr_c0
    FROM __fr_goth
  ), __fr_groups AS (
    SELECT DISTINCT
      *
    FROM (
      SELECT
        __fr_gown.g AS __fr_v0
      FROM __fr_gown
      UNION ALL
      SELECT
        __fr_p.g AS __fr_v0
      FROM `g`.`m3` VERSION AS OF 23 AS __fr_p
      LEFT SEMI JOIN __fr_goth_v AS v
        ON __fr_p.k = v.__fr_c0
      UNION ALL
      SELECT
        NULL AS __fr_v0
    )
  )
  SELECT
    `g`,
    `n`,
    `sx`,
    `nb`,
    `__fr_count`,
    `__fr_cnt_0`,
    `__fr_sum_0`,
    `__fr_cnt_1`,
    'I' AS __fr_op
  FROM (
    SELECT
      n.*
    FROM (
      SELECT
        b.g AS g,
        COUNT(*) AS n,
        SUM(a.x) AS sx,
        COUNT(b.k) AS nb,
        COUNT(*) AS `__fr_count`,
        COUNT(a.x) AS `__fr_cnt_0`,
        TRY_SUM(a.x) AS `__fr_sum_0`,
        COUNT(b.k) AS `__fr_cnt_1`
      FROM g.m1 VERSION AS OF 21 AS a
      LEFT JOIN g.m3 VERSION AS OF 23 AS b
        ON a.k = b.k
      GROUP BY
        b.g
    ) AS n
    LEFT SEMI JOIN __fr_groups AS r
      ON n.`g` IS NOT DISTINCT FROM r.__fr_v0
  )
  UNION ALL
  SELECT
    __fr_v0 AS `g`,
    CAST(NULL AS DOUBLE) AS `n`,
    CAST(NULL AS DOUBLE) AS `sx`,
    CAST(NULL AS DOUBLE) AS `nb`,
    CAST(NULL AS BIGINT) AS `__fr_count`,
    CAST(NULL AS BIGINT) AS `__fr_cnt_0`,
    CAST(NULL AS DECIMAL(20, 2)) AS `__fr_sum_0`,
    CAST(NULL AS BIGINT) AS `__fr_cnt_1`,
    'D' AS __fr_op
  FROM __fr_groups
) AS s
ON t.`g` IS NOT DISTINCT FROM s.`g` AND s.__fr_op = 'D'
WHEN MATCHED THEN DELETE
WHEN NOT MATCHED AND s.__fr_op = 'I' THEN INSERT (`g`, `n`, `sx`, `nb`, `__fr_count`, `__fr_cnt_0`, `__fr_sum_0`, `__fr_cnt_1`) VALUES (
  s.`g`,
  s.`n`,
  s.`sx`,
  s.`nb`,
  s.`__fr_count`,
  s.`__fr_cnt_0`,
  s.`__fr_sum_0`,
  s.`__fr_cnt_1`
)
