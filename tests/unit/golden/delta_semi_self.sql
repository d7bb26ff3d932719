MERGE INTO `g`.`semi_self` AS t
USING (
  WITH __fr_ia_rng AS (
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
  ), __fr_ia_ranked AS (
    SELECT
      *,
      ROW_NUMBER() OVER (PARTITION BY `k` ORDER BY sequence__) AS __fr_pos,
      COUNT(1) OVER (
        PARTITION BY `k`
        ORDER BY sequence__
        ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING
      ) AS __fr_n,
      LAG(old_new__) OVER (PARTITION BY `k` ORDER BY sequence__) AS __fr_prev
    FROM __fr_ia_rng
  ), __fr_ia AS (
    SELECT
      `k`,
      `x`,
      IF(old_new__ = 'O', -1, 1) AS __fr_sign
    FROM __fr_ia_ranked
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
  ), __fr_ib0_rng AS (
    SELECT
      `k`,
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
            CAST(CONV(HEX(SUBSTRING(change_vector__, 1, 1)), 16, 10) AS INT) & 2
          ) <> 0
        )
      )
      AND old_new__ <> 'U'
  ), __fr_ib0_ranked AS (
    SELECT
      *,
      ROW_NUMBER() OVER (PARTITION BY `k` ORDER BY sequence__) AS __fr_pos,
      COUNT(1) OVER (
        PARTITION BY `k`
        ORDER BY sequence__
        ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING
      ) AS __fr_n,
      LAG(old_new__) OVER (PARTITION BY `k` ORDER BY sequence__) AS __fr_prev
    FROM __fr_ib0_rng
  ), __fr_ib0 AS (
    SELECT
      `k`,
      IF(old_new__ = 'O', -1, 1) AS __fr_sign
    FROM __fr_ib0_ranked
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
  ), __fr_v0 AS (
    SELECT DISTINCT
      c.k AS __fr_c0
    FROM __fr_ib0 AS c
  ), __fr_r0 AS (
    SELECT
      a.`k`
    FROM `g`.`m1` VERSION AS OF 21 AS a
    LEFT SEMI JOIN __fr_v0 AS v
      ON a.x = v.__fr_c0
  ), __fr_keys AS (
    SELECT
      a.`k`
    FROM __fr_ia AS a
    UNION
    SELECT
      *
    FROM __fr_r0
  ), __fr_new AS (
    SELECT
      n.*
    FROM (
      SELECT
        a.k AS k
      FROM g.m1 VERSION AS OF 21 AS a
      WHERE
        EXISTS(
          SELECT
            1 AS `1`
          FROM g.m1 VERSION AS OF 21 AS c
          WHERE
            c.k = a.x
        )
    ) AS n
    LEFT SEMI JOIN __fr_keys AS k
      ON n.`k` IS NOT DISTINCT FROM k.`k`
  )
  SELECT
    `k`,
    FALSE AS __fr_gone
  FROM __fr_new
  UNION ALL
  SELECT
    k.`k` AS `k`,
    TRUE AS __fr_gone
  FROM __fr_keys AS k
  LEFT ANTI JOIN __fr_new AS n
    ON n.`k` IS NOT DISTINCT FROM k.`k`
) AS s
ON t.`k` IS NOT DISTINCT FROM s.`k`
WHEN MATCHED AND s.__fr_gone THEN DELETE
WHEN MATCHED THEN UPDATE SET
  `k` = s.`k`
WHEN NOT MATCHED AND NOT s.__fr_gone THEN INSERT (`k`) VALUES (s.`k`)
