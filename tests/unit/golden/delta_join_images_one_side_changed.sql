MERGE INTO `g`.`join_images_one_side_changed` AS t
USING (
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
            CAST(CONV(HEX(SUBSTRING(change_vector__, 1, 1)), 16, 10) AS INT) & 14
          ) <> 0
        )
      )
    GROUP BY
      `k`
  ), __fr_img0_rng AS (
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
      `x`,
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
  ), __fr_old AS (
    SELECT
      CAST(`k` AS DOUBLE) AS `k`,
      CAST(NULL AS DOUBLE) AS `x`,
      CAST(NULL AS DOUBLE) AS `bk`,
      CAST(NULL AS DOUBLE) AS `bx`,
      IF(__fr_added IS NULL, 'D', 'C') AS __fr_op,
      __fr_added
    FROM __fr_ck0
  )
  SELECT
    *
  FROM __fr_old
  UNION ALL
  SELECT
    CAST(__fr_p.`k` AS DOUBLE) AS `k`,
    CAST(__fr_p.`x` AS DOUBLE) AS `x`,
    CAST(__fr_p.`bk` AS DOUBLE) AS `bk`,
    CAST(__fr_p.`bx` AS DOUBLE) AS `bx`,
    'I' AS __fr_op,
    CAST(NULL AS BIGINT) AS __fr_added
  FROM (
    SELECT
      a.k AS k,
      a.x AS x,
      b.k AS bk,
      b.x AS bx
    FROM (
      SELECT
        *
      FROM __fr_img0
      WHERE
        __fr_sign = 1
    ) AS a
    JOIN g.m3 VERSION AS OF 23 AS b
      ON a.g = b.g
  ) AS __fr_p
) AS s
ON t.`k` IS NOT DISTINCT FROM s.`k` AND s.__fr_op IN ('D', 'C')
WHEN MATCHED AND s.__fr_op = 'D' THEN DELETE
WHEN MATCHED AND CAST(RAISE_ERROR(
  CONCAT(
    'dbt-fastrefresh: master g.mlog__m1 has more than one row with key (',
    COALESCE(CAST(s.`k` AS STRING), 'NULL'),
    ') in snapshot ',
    CAST(s.__fr_added AS STRING),
    ': that commit added a row with a key another row of the master still held. A keyed log needs a unique key: with two rows of one key, a view keeps one of them. Fix: make the key unique, then drop the log (dbt run-operation fast_refresh.drop_mview_log --args "{master: g.mlog__m1}") and let the next dbt run create it again from the table as it is then, or create it again yourself with another key, or key-less (key=[]); the views on it rebuild once.'
  )
) AS BOOLEAN) THEN DELETE
WHEN NOT MATCHED AND s.__fr_op = 'I' THEN INSERT (`k`, `x`, `bk`, `bx`) VALUES (s.`k`, s.`x`, s.`bk`, s.`bx`)
