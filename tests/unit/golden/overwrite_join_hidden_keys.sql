WITH __fr_ck0 AS (
  SELECT
    `k`,
    TRUE AS __fr_hit,
    IF(
      MIN(IF(old_new__ = 'N', sequence__, NULL)) = MIN(sequence__),
      MIN_BY(xid__, sequence__),
      CAST(NULL AS BIGINT)
    ) AS __fr_added
  FROM `g`.`mlog__m1` VERSION AS OF 31
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
  GROUP BY
    `k`
), __fr_img0_rng AS (
  SELECT
    `k`,
    `g`,
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
          CAST(CONV(HEX(SUBSTRING(change_vector__, 1, 1)), 16, 10) AS INT) & 6
        ) <> 0
      )
    )
    AND old_new__ <> 'U'
), __fr_img0_ranked AS (
  SELECT
    *,
    ROW_NUMBER() OVER (PARTITION BY `k` ORDER BY sequence__) AS __fr_pos,
    COUNT(1) OVER (
      PARTITION BY `k`
      ORDER BY sequence__
      ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING
    ) AS __fr_n,
    LAG(old_new__) OVER (PARTITION BY `k` ORDER BY sequence__) AS __fr_prev
  FROM __fr_img0_rng
), __fr_img0 AS (
  SELECT
    `k`,
    `g`,
    IF(old_new__ = 'O', -1, 1) AS __fr_sign
  FROM __fr_img0_ranked
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
), __fr_ck1 AS (
  SELECT DISTINCT
    `k`,
    TRUE AS __fr_hit
  FROM `g`.`mlog__m3` VERSION AS OF 33
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
), __fr_old AS (
  SELECT
    CAST(NULL AS DOUBLE) AS `g`,
    CAST(NULL AS DOUBLE) AS `x`,
    v.`__fr_j0_k`,
    v.`__fr_j1_k`,
    'D' AS __fr_op
  FROM `g`.`join_hidden_keys` AS v
  LEFT JOIN __fr_ck0 AS __fr_h0
    ON v.`__fr_j0_k` IS NOT DISTINCT FROM __fr_h0.`k`
  LEFT JOIN __fr_ck1 AS __fr_h1
    ON v.`__fr_j1_k` IS NOT DISTINCT FROM __fr_h1.`k`
  WHERE
    IF(
      __fr_h0.__fr_added IS NULL,
      TRUE,
      CAST(RAISE_ERROR(
        CONCAT(
          'dbt-fastrefresh: master g.mlog__m1 has more than one row with key (',
          COALESCE(CAST(v.`__fr_j0_k` AS STRING), 'NULL'),
          ') in snapshot ',
          CAST(__fr_h0.__fr_added AS STRING),
          ': that commit added a row with a key another row of the master still held. A keyed log needs a unique key: with two rows of one key, a view keeps one of them. Fix: make the key unique, then drop the log (dbt run-operation fast_refresh.drop_mview_log --args "{master: g.mlog__m1}") and let the next dbt run create it again from the table as it is then, or create it again yourself with another key, or key-less (key=[]); the views on it rebuild once.'
        )
      ) AS BOOLEAN)
    )
    AND (
      __fr_h0.__fr_hit OR __fr_h1.__fr_hit
    )
), __fr_s AS (
  SELECT
    *
  FROM __fr_old
  UNION ALL
  SELECT
    CAST(__fr_p.`g` AS DOUBLE) AS `g`,
    CAST(__fr_p.`x` AS DOUBLE) AS `x`,
    CAST(__fr_p.`__fr_j0_k` AS DOUBLE) AS `__fr_j0_k`,
    CAST(__fr_p.`__fr_j1_k` AS DOUBLE) AS `__fr_j1_k`,
    'I' AS __fr_op
  FROM (
    SELECT
      a.g AS g,
      b.x AS x,
      a.k AS `__fr_j0_k`,
      b.k AS `__fr_j1_k`
    FROM (
      SELECT
        *
      FROM __fr_img0
      WHERE
        __fr_sign = 1
    ) AS a
    JOIN g.m3 VERSION AS OF 23 AS b
      ON a.k = b.k
  ) AS __fr_p
  UNION ALL
  SELECT
    CAST(__fr_p.`g` AS DOUBLE) AS `g`,
    CAST(__fr_p.`x` AS DOUBLE) AS `x`,
    CAST(__fr_p.`__fr_j0_k` AS DOUBLE) AS `__fr_j0_k`,
    CAST(__fr_p.`__fr_j1_k` AS DOUBLE) AS `__fr_j1_k`,
    'I' AS __fr_op
  FROM (
    SELECT
      a.g AS g,
      b.x AS x,
      a.k AS `__fr_j0_k`,
      b.k AS `__fr_j1_k`
    FROM g.m1 VERSION AS OF 21 AS a
    JOIN g.m3 VERSION AS OF 23 AS b
      ON a.k = b.k
    LEFT SEMI JOIN __fr_ck1 AS __fr_in1
      ON b.`k` IS NOT DISTINCT FROM __fr_in1.`k`
    LEFT ANTI JOIN __fr_ck0 AS __fr_out0
      ON a.`k` IS NOT DISTINCT FROM __fr_out0.`k`
  ) AS __fr_p
)
INSERT INTO `g`.`join_hidden_keys`
REPLACE WHERE TRUE
SELECT
  `g`,
  `x`,
  `__fr_j0_k`,
  `__fr_j1_k`
FROM (
  SELECT
    t.`g`,
    t.`x`,
    t.`__fr_j0_k`,
    t.`__fr_j1_k`
  FROM `g`.`join_hidden_keys` AS t
  LEFT ANTI JOIN (
    SELECT
      *
    FROM __fr_s
    WHERE
      __fr_op = 'D'
  ) AS s
    ON t.`__fr_j0_k` IS NOT DISTINCT FROM s.`__fr_j0_k`
    AND t.`__fr_j1_k` IS NOT DISTINCT FROM s.`__fr_j1_k`
  UNION ALL
  SELECT
    `g`,
    `x`,
    `__fr_j0_k`,
    `__fr_j1_k`
  FROM __fr_s
  WHERE
    __fr_op = 'I'
)
