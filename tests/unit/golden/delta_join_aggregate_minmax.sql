MERGE INTO `g`.`join_aggregate_minmax` AS t
USING (
  WITH __fr_img0_rng AS (
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
            CAST(CONV(HEX(SUBSTRING(change_vector__, 1, 1)), 16, 10) AS INT) & 4
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
            CAST(CONV(HEX(SUBSTRING(change_vector__, 1, 1)), 16, 10) AS INT) & 12
          ) <> 0
        )
      )
  ), __fr_img1_old AS (
    SELECT
      m.`k`,
      m.`g`,
      m.`x`,
      -1 AS __fr_sign
    FROM `g`.`m3` VERSION AS OF 13 AS m
    LEFT SEMI JOIN __fr_img1_keys AS c
      ON m.`k` IS NOT DISTINCT FROM c.`k`
  ), __fr_img1_new AS (
    SELECT
      m.`k`,
      m.`g`,
      m.`x`,
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
      a.g AS __fr_g_0,
      a.__fr_sign AS __fr_sign
    FROM (
      SELECT
        *
      FROM __fr_img0
    ) AS a
    JOIN g.m3 VERSION AS OF 13 AS b
      ON a.g = b.g
    UNION ALL
    SELECT
      a.g AS __fr_g_0,
      b.__fr_sign AS __fr_sign
    FROM g.m1 VERSION AS OF 21 AS a
    JOIN (
      SELECT
        *
      FROM __fr_img1
    ) AS b
      ON a.g = b.g
  ), __fr_ag AS (
    SELECT DISTINCT
      __fr_g_0
    FROM __fr_rows
  ), __fr_re AS (
    SELECT
      a.g AS g,
      MAX(b.x) AS mx,
      COUNT(*) AS c,
      COUNT(*) AS `__fr_count`
    FROM g.m1 VERSION AS OF 21 AS a
    JOIN g.m3 VERSION AS OF 23 AS b
      ON a.g = b.g
    LEFT SEMI JOIN __fr_ag
      ON a.g IS NOT DISTINCT FROM __fr_ag.__fr_g_0
    GROUP BY
      a.g
  )
  SELECT
    re.`g`,
    re.`mx`,
    re.`c`,
    re.`__fr_count`,
    ag.__fr_g_0 AS __fr_k_0,
    re.__fr_count IS NULL AS __fr_gone
  FROM __fr_ag AS ag
  LEFT JOIN __fr_re AS re
    ON re.`g` IS NOT DISTINCT FROM ag.__fr_g_0
) AS s
ON t.`g` IS NOT DISTINCT FROM s.__fr_k_0
WHEN MATCHED AND s.__fr_gone THEN DELETE
WHEN MATCHED THEN UPDATE SET
  `g` = s.`g`,
  `mx` = s.`mx`,
  `c` = s.`c`,
  `__fr_count` = s.`__fr_count`
WHEN NOT MATCHED AND NOT s.__fr_gone THEN INSERT (`g`, `mx`, `c`, `__fr_count`) VALUES (s.`g`, s.`mx`, s.`c`, s.`__fr_count`)
