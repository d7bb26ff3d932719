WITH __fr_own0_rng AS (
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
), __fr_own0_ranked AS (
  SELECT
    *,
    ROW_NUMBER() OVER (PARTITION BY `k` ORDER BY sequence__) AS __fr_pos,
    COUNT(1) OVER (
      PARTITION BY `k`
      ORDER BY sequence__
      ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING
    ) AS __fr_n,
    LAG(old_new__) OVER (PARTITION BY `k` ORDER BY sequence__) AS __fr_prev
  FROM __fr_own0_rng
), __fr_own0 AS (
  SELECT
    `k`,
    `g`,
    `x`,
    IF(old_new__ = 'O', -1, 1) AS __fr_sign
  FROM __fr_own0_ranked
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
), __fr_oth0_keys AS (
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
          CAST(CONV(HEX(SUBSTRING(change_vector__, 1, 1)), 16, 10) AS INT) & 14
        ) <> 0
      )
    )
), __fr_oth0_old AS (
  SELECT
    m.`k`,
    m.`g`,
    m.`x`,
    -1 AS __fr_sign
  FROM `g`.`m3` VERSION AS OF 13 AS m
  LEFT SEMI JOIN __fr_oth0_keys AS c
    ON m.`k` IS NOT DISTINCT FROM c.`k`
), __fr_oth0_new AS (
  SELECT
    m.`k`,
    m.`g`,
    m.`x`,
    1 AS __fr_sign
  FROM `g`.`m3` VERSION AS OF 23 AS m
  LEFT SEMI JOIN __fr_oth0_keys AS c
    ON m.`k` IS NOT DISTINCT FROM c.`k`
), __fr_oth0 AS (
  SELECT
    *
  FROM __fr_oth0_old
  UNION ALL
  SELECT
    *
  FROM __fr_oth0_new
), __fr_oth0_v AS (
  SELECT DISTINCT
    __fr_oth0.g AS __fr_c0
  FROM __fr_oth0
), __fr_reached0 AS (
  SELECT
    `k`
  FROM __fr_own0
  UNION
  SELECT
    __fr_p.`k`
  FROM `g`.`m1` VERSION AS OF 21 AS __fr_p
  LEFT SEMI JOIN __fr_oth0_v AS v
    ON __fr_p.g = v.__fr_c0
), __fr_recomputed AS (
  SELECT
    a.k AS k,
    a.x AS x,
    b.k AS bk,
    b.x AS bx
  FROM (
    SELECT
      *
    FROM `g`.`m1` VERSION AS OF 21 AS __fr_m
    LEFT SEMI JOIN __fr_reached0 AS __fr_r
      ON __fr_m.k IS NOT DISTINCT FROM __fr_r.k
  ) AS a
  LEFT JOIN g.m3 VERSION AS OF 23 AS b
    ON a.g = b.g
), __fr_s AS (
  SELECT
    `k`,
    `x`,
    `bk`,
    `bx`,
    'I' AS __fr_op
  FROM __fr_recomputed
  UNION ALL
  SELECT
    r.`k` AS `k`,
    CAST(NULL AS DOUBLE) AS `x`,
    CAST(NULL AS DOUBLE) AS `bk`,
    CAST(NULL AS DOUBLE) AS `bx`,
    'D' AS __fr_op
  FROM __fr_reached0 AS r
)
INSERT INTO `g`.`outer_left`
REPLACE WHERE TRUE
SELECT
  `k`,
  `x`,
  `bk`,
  `bx`
FROM (
  SELECT
    t.`k`,
    t.`x`,
    t.`bk`,
    t.`bx`
  FROM `g`.`outer_left` AS t
  LEFT ANTI JOIN (
    SELECT
      *
    FROM __fr_s
    WHERE
      __fr_op = 'D'
  ) AS s
    ON t.`k` IS NOT DISTINCT FROM s.`k`
  UNION ALL
  SELECT
    `k`,
    `x`,
    `bk`,
    `bx`
  FROM __fr_s
  WHERE
    __fr_op = 'I'
)
