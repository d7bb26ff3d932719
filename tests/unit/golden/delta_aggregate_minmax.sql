MERGE INTO `g`.`aggregate_minmax` AS t
USING (
  WITH __fr_rng AS (
    SELECT
      `k`,
      `g`,
      `x`,
      `y`,
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
            CAST(CONV(HEX(SUBSTRING(change_vector__, 1, 1)), 16, 10) AS INT) & 28
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
      LAG(old_new__) OVER (PARTITION BY `k` ORDER BY sequence__) AS __fr_prev
    FROM __fr_rng
  ), imgs AS (
    SELECT
      `k`,
      `g`,
      `x`,
      `y`,
      IF(old_new__ = 'O', -1, 1) AS __fr_sign
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
      )
  ), __fr_rows AS (
    SELECT
      m1.g AS __fr_g_0,
      m1.__fr_sign AS __fr_sign
    FROM imgs AS m1
  ), __fr_ag AS (
    SELECT DISTINCT
      __fr_g_0
    FROM __fr_rows
  ), __fr_re AS (
    SELECT
      m1.g AS g,
      MIN(m1.x) AS mn,
      MAX(m1.y) AS mx,
      COUNT(DISTINCT m1.x) AS cd,
      COUNT(*) AS `__fr_count`
    FROM g.m1 VERSION AS OF 21 AS m1
    LEFT SEMI JOIN __fr_ag
      ON m1.g IS NOT DISTINCT FROM __fr_ag.__fr_g_0
    GROUP BY
      m1.g
  )
  SELECT
    re.`g`,
    re.`mn`,
    re.`mx`,
    re.`cd`,
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
  `mn` = s.`mn`,
  `mx` = s.`mx`,
  `cd` = s.`cd`,
  `__fr_count` = s.`__fr_count`
WHEN NOT MATCHED AND NOT s.__fr_gone THEN INSERT (`g`, `mn`, `mx`, `cd`, `__fr_count`) VALUES (s.`g`, s.`mn`, s.`mx`, s.`cd`, s.`__fr_count`)
