MERGE INTO `g`.`outer_aggregate_full_global` AS t
USING (
  SELECT
    `na`,
    `nb`,
    `n`,
    `__fr_count`,
    `__fr_cnt_0`,
    `__fr_cnt_1`,
    'I' AS __fr_op
  FROM (
    SELECT
      n.*
    FROM (
      SELECT
        COUNT(a.k) AS na,
        COUNT(b.k) AS nb,
        COUNT(*) AS n,
        COUNT(*) AS `__fr_count`,
        COUNT(a.k) AS `__fr_cnt_0`,
        COUNT(b.k) AS `__fr_cnt_1`
      FROM g.m1 VERSION AS OF 21 AS a
      FULL JOIN g.m3 VERSION AS OF 23 AS b
        ON a.g = b.g
    ) AS n
  )
  UNION ALL
  SELECT
    CAST(NULL AS DOUBLE) AS `na`,
    CAST(NULL AS DOUBLE) AS `nb`,
    CAST(NULL AS DOUBLE) AS `n`,
    CAST(NULL AS BIGINT) AS `__fr_count`,
    CAST(NULL AS BIGINT) AS `__fr_cnt_0`,
    CAST(NULL AS BIGINT) AS `__fr_cnt_1`,
    'D' AS __fr_op
) AS s
ON TRUE AND s.__fr_op = 'D'
WHEN MATCHED THEN DELETE
WHEN NOT MATCHED AND s.__fr_op = 'I' THEN INSERT (`na`, `nb`, `n`, `__fr_count`, `__fr_cnt_0`, `__fr_cnt_1`) VALUES (s.`na`, s.`nb`, s.`n`, s.`__fr_count`, s.`__fr_cnt_0`, s.`__fr_cnt_1`)
