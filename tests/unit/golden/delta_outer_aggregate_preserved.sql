MERGE INTO `g`.`outer_aggregate_preserved` AS t
USING (
  WITH __fr_goth_keys AS (
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
  ), __fr_goth_old AS (
    SELECT
      m.`k`,
      m.`g`,
      m.`x`,
      -1 AS __fr_sign
    FROM `g`.`m3` VERSION AS OF 13 AS m
    LEFT SEMI JOIN __fr_goth_keys AS c
      ON m.`k` IS NOT DISTINCT FROM c.`k`
  ), __fr_goth_new AS (
    SELECT
      m.`k`,
      m.`g`,
      m.`x`,
      1 AS __fr_sign
    FROM `g`.`m3` VERSION AS OF 23 AS m
    LEFT SEMI JOIN __fr_goth_keys AS c
      ON m.`k` IS NOT DISTINCT FROM c.`k`
  ), __fr_goth AS (
    SELECT
      *
    FROM __fr_goth_old
    UNION ALL
    SELECT
      *
    FROM __fr_goth_new
  ), __fr_goth_v AS (
    SELECT DISTINCT
      __fr_goth.g AS __fr_c0
    FROM __fr_goth
  ), __fr_groups AS (
    SELECT DISTINCT
      *
    FROM (
      SELECT
        __fr_p.g AS __fr_v0
      FROM `g`.`m1` VERSION AS OF 21 AS __fr_p
      LEFT SEMI JOIN __fr_goth_v AS v
        ON __fr_p.g = v.__fr_c0
    )
  )
  SELECT
    `g`,
    `matches`,
    `mx`,
    `__fr_having`,
    `__fr_count`,
    `__fr_cnt_0`,
    'I' AS __fr_op
  FROM (
    SELECT
      n.*
    FROM (
      SELECT
        a.g AS g,
        COUNT(b.k) AS matches,
        MAX(b.x) AS mx,
        COUNT(*) > 1 AS __fr_having,
        COUNT(*) AS `__fr_count`,
        COUNT(b.k) AS `__fr_cnt_0`
      FROM g.m1 VERSION AS OF 21 AS a
      LEFT JOIN g.m3 VERSION AS OF 23 AS b
        ON a.g = b.g
      GROUP BY
        a.g
    ) AS n
    LEFT SEMI JOIN __fr_groups AS r
      ON n.`g` IS NOT DISTINCT FROM r.__fr_v0
  )
  UNION ALL
  SELECT
    __fr_v0 AS `g`,
    CAST(NULL AS DOUBLE) AS `matches`,
    CAST(NULL AS DOUBLE) AS `mx`,
    CAST(NULL AS BOOLEAN) AS `__fr_having`,
    CAST(NULL AS BIGINT) AS `__fr_count`,
    CAST(NULL AS BIGINT) AS `__fr_cnt_0`,
    'D' AS __fr_op
  FROM __fr_groups
) AS s
ON t.`g` IS NOT DISTINCT FROM s.`g` AND s.__fr_op = 'D'
WHEN MATCHED THEN DELETE
WHEN NOT MATCHED AND s.__fr_op = 'I' THEN INSERT (`g`, `matches`, `mx`, `__fr_having`, `__fr_count`, `__fr_cnt_0`) VALUES (s.`g`, s.`matches`, s.`mx`, s.`__fr_having`, s.`__fr_count`, s.`__fr_cnt_0`)
