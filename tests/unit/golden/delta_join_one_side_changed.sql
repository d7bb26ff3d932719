MERGE INTO `g`.`join_one_side_changed` AS t
USING (
  WITH __fr_ck1 AS (
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
            CAST(CONV(HEX(SUBSTRING(change_vector__, 1, 1)), 16, 10) AS INT) & 14
          ) <> 0
        )
      )
  ), __fr_old AS (
    SELECT
      CAST(NULL AS DOUBLE) AS `k`,
      CAST(NULL AS DOUBLE) AS `x`,
      CAST(`k` AS DOUBLE) AS `bk`,
      CAST(NULL AS DOUBLE) AS `bx`,
      'D' AS __fr_op
    FROM __fr_ck1
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
    'I' AS __fr_op
  FROM (
    SELECT
      a.k AS k,
      a.x AS x,
      b.k AS bk,
      b.x AS bx
    FROM g.m1 VERSION AS OF 21 AS a
    JOIN g.m3 VERSION AS OF 23 AS b
      ON a.g = b.g
    LEFT SEMI JOIN __fr_ck1 AS __fr_in1
      ON b.`k` IS NOT DISTINCT FROM __fr_in1.`k`
  ) AS __fr_p
) AS s
ON t.`bk` IS NOT DISTINCT FROM s.`bk` AND s.__fr_op = 'D'
WHEN MATCHED THEN DELETE
WHEN NOT MATCHED AND s.__fr_op = 'I' THEN INSERT (`k`, `x`, `bk`, `bx`) VALUES (s.`k`, s.`x`, s.`bk`, s.`bx`)
