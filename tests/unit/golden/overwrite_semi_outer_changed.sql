WITH __fr_rng AS (
  SELECT
    `k`,
    `g`,
    `x`,
    old_new__,
    sequence__
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
), __fr_ranked AS (
  SELECT
    *,
    ROW_NUMBER() OVER (PARTITION BY `k` ORDER BY sequence__) AS __fr_pos,
    COUNT(1) OVER (
      PARTITION BY `k`
      ORDER BY sequence__
      ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING
    ) AS __fr_n
  FROM __fr_rng
), imgs AS (
  SELECT
    `k`,
    `g`,
    `x`,
    IF(old_new__ = 'O', -1, 1) AS __fr_sign
  FROM __fr_ranked
  WHERE
    (
      __fr_pos = 1 AND old_new__ = 'O'
    )
    OR (
      __fr_pos = __fr_n AND old_new__ = 'N'
    )
), __fr_s AS (
  SELECT
    IF(a.__fr_sign = -1, a.`k`, CAST(a.k AS DOUBLE)) AS `k`,
    IF(a.__fr_sign = -1, CAST(NULL AS DOUBLE), CAST(a.g AS DOUBLE)) AS `g`,
    IF(a.__fr_sign = -1, 'D', 'I') AS __fr_op
  FROM imgs AS a
  WHERE
    a.__fr_sign = -1
    OR (
      TRUE
      AND (
        a.x > 0
        AND EXISTS(
          SELECT
            1 AS `1`
          FROM g.m3 VERSION AS OF 23 AS b
          WHERE
            b.g = a.g AND b.x > 5
        )
      )
    )
)
INSERT INTO `g`.`semi_outer_changed`
REPLACE WHERE TRUE
SELECT
  `k`,
  `g`
FROM (
  SELECT
    t.`k`,
    t.`g`
  FROM `g`.`semi_outer_changed` AS t
  LEFT ANTI JOIN (
    SELECT
      `k` AS `k`
    FROM (
      SELECT
        `k`
      FROM __fr_rng
      WHERE
        old_new__ = 'O'
    )
  ) AS s
    ON t.`k` IS NOT DISTINCT FROM s.`k`
  UNION ALL
  SELECT
    `k`,
    `g`
  FROM __fr_s
  WHERE
    __fr_op = 'I'
)
