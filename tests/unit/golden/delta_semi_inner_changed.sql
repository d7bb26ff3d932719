MERGE INTO `g`.`semi_inner_changed` AS t
USING (
  WITH __fr_ib0 AS (
    SELECT
      `g`,
      `x`,
      IF(old_new__ = 'N', 1, -1) AS __fr_sign
    FROM `g`.`mlog__m2` VERSION AS OF 32
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
  ), __fr_v0 AS (
    SELECT DISTINCT
      m2.g AS __fr_c0
    FROM __fr_ib0 AS m2
  ), __fr_r0 AS (
    SELECT
      a.`k`
    FROM `g`.`m1` VERSION AS OF 21 AS a
    LEFT SEMI JOIN __fr_v0 AS v
      ON a.g = v.__fr_c0
  ), __fr_keys AS (
    SELECT
      *
    FROM __fr_r0
  ), __fr_new AS (
    SELECT
      n.*
    FROM (
      SELECT
        a.k AS k,
        a.g AS g
      FROM g.m1 VERSION AS OF 21 AS a
      WHERE
        a.g IN (
          SELECT
            m2.g AS g
          FROM g.m2 VERSION AS OF 22 AS m2
          WHERE
            NOT m2.x IS NULL
        )
    ) AS n
    LEFT SEMI JOIN __fr_keys AS k
      ON n.`k` IS NOT DISTINCT FROM k.`k`
  )
  SELECT
    `k`,
    `g`,
    FALSE AS __fr_gone
  FROM __fr_new
  UNION ALL
  SELECT
    k.`k` AS `k`,
    CAST(NULL AS DOUBLE) AS `g`,
    TRUE AS __fr_gone
  FROM __fr_keys AS k
  LEFT ANTI JOIN __fr_new AS n
    ON n.`k` IS NOT DISTINCT FROM k.`k`
) AS s
ON t.`k` IS NOT DISTINCT FROM s.`k`
WHEN MATCHED AND s.__fr_gone THEN DELETE
WHEN MATCHED THEN UPDATE SET
  `k` = s.`k`,
  `g` = s.`g`
WHEN NOT MATCHED AND NOT s.__fr_gone THEN INSERT (`k`, `g`) VALUES (s.`k`, s.`g`)
