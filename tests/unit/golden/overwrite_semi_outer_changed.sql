WITH __fr_rng AS (
  SELECT
    `k`,
    `g`,
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
          CAST(CONV(HEX(SUBSTRING(change_vector__, 1, 1)), 16, 10) AS INT) & 14
        ) <> 0
      )
    )
    AND old_new__ <> 'U'
), __fr_ranked AS (
  SELECT
    *,
    ROW_NUMBER() OVER (PARTITION BY `k` ORDER BY sequence__) AS __fr_pos,
    COUNT(1) OVER (
      PARTITION BY `k`
      ORDER BY sequence__
      ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING
    ) AS __fr_n,
    LAG(old_new__) OVER (PARTITION BY `k` ORDER BY sequence__) AS __fr_prev,
    IF(
      FIRST_VALUE(old_new__) OVER (PARTITION BY `k` ORDER BY sequence__) = 'N',
      FIRST_VALUE(xid__) OVER (PARTITION BY `k` ORDER BY sequence__),
      CAST(NULL AS BIGINT)
    ) AS __fr_added
  FROM __fr_rng
), imgs AS (
  SELECT
    `k`,
    `g`,
    `x`,
    IF(old_new__ = 'O', -1, 1) AS __fr_sign,
    __fr_added
  FROM __fr_ranked
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
      OR (
        __fr_pos = __fr_n AND NOT __fr_added IS NULL
      )
    )
), __fr_s AS (
  SELECT
    IF(a.__fr_sign = -1, a.`k`, CAST(a.k AS DOUBLE)) AS `k`,
    IF(a.__fr_sign = -1, CAST(NULL AS DOUBLE), CAST(a.g AS DOUBLE)) AS `g`,
    a.__fr_added,
    IF(__fr_check = 1, 'C', IF(a.__fr_sign = -1, 'D', 'I')) AS __fr_op
  FROM imgs AS a
  LATERAL VIEW
  EXPLODE(IF(a.__fr_added IS NULL, ARRAY(0), ARRAY(0, 1))) __fr_twice AS __fr_check
  WHERE
    __fr_check = 1
    OR (
      a.__fr_sign = -1 AND a.__fr_added IS NULL
    )
    OR (
      a.__fr_sign = 1
      AND (
        a.x > 0
        AND EXISTS(
          SELECT
            1 AS `1`
          FROM g.m3 VERSION AS OF 23 AS b
          WHERE
            b.g = a.g AND b.x > 5
        )
      )
    )
)
INSERT INTO `g`.`semi_outer_changed`
REPLACE WHERE TRUE
SELECT
  `k`,
  `g`
FROM (
  SELECT
    t.`k`,
    t.`g`
  FROM `g`.`semi_outer_changed` AS t
  LEFT ANTI JOIN (
    SELECT
      `k` AS `k`,
      __fr_op,
      __fr_added
    FROM (
      SELECT
        `k`,
        IF(__fr_added IS NULL, 'D', 'C') AS __fr_op,
        __fr_added
      FROM (
        SELECT
          `k`,
          IF(
            MIN(IF(old_new__ = 'N', sequence__, NULL)) = MIN(sequence__),
            MIN_BY(xid__, sequence__),
            CAST(NULL AS BIGINT)
          ) AS __fr_added
        FROM __fr_rng
        GROUP BY
          `k`
      )
    )
  ) AS s
    ON t.`k` IS NOT DISTINCT FROM s.`k`
    AND IF(
      s.__fr_op = 'D',
      TRUE,
      CAST(RAISE_ERROR(
        CONCAT(
          'dbt-fastrefresh: master g.mlog__m1 has more than one row with key (',
          COALESCE(CAST(t.`k` AS STRING), 'NULL'),
          ') in snapshot ',
          CAST(s.__fr_added AS STRING),
          ': that commit added a row with a key another row of the master still held. A keyed log needs a unique key: with two rows of one key, a view keeps one of them. Fix: make the key unique, then drop the log (dbt run-operation fast_refresh.drop_mview_log --args "{master: g.mlog__m1}") and let the next dbt run create it again from the table as it is then, or create it again yourself with another key, or key-less (key=[]); the views on it rebuild once.'
        )
      ) AS BOOLEAN)
    )
  UNION ALL
  SELECT
    `k`,
    `g`
  FROM __fr_s
  WHERE
    __fr_op = 'I'
)
