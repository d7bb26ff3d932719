WITH __fr_s AS (
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
)
INSERT INTO `g`.`outer_aggregate_full_global`
REPLACE WHERE TRUE
SELECT
  `na`,
  `nb`,
  `n`,
  `__fr_count`,
  `__fr_cnt_0`,
  `__fr_cnt_1`
FROM (
  SELECT
    t.`na`,
    t.`nb`,
    t.`n`,
    t.`__fr_count`,
    t.`__fr_cnt_0`,
    t.`__fr_cnt_1`
  FROM `g`.`outer_aggregate_full_global` AS t
  LEFT ANTI JOIN (
    SELECT
      *
    FROM __fr_s
    WHERE
      __fr_op = 'D'
  ) AS s
    ON TRUE
  UNION ALL
  SELECT
    `na`,
    `nb`,
    `n`,
    `__fr_count`,
    `__fr_cnt_0`,
    `__fr_cnt_1`
  FROM __fr_s
  WHERE
    __fr_op = 'I'
)
