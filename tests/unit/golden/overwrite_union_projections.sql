WITH __fr_u0_0 AS (
  SELECT
    `k`,
    `g`,
    `x`,
    IF(old_new__ = 'N', 1, -1) AS __fr_sign
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
), __fr_u0_r0 AS (
  SELECT DISTINCT
    __fr_u0_0.k AS __fr_v0
  FROM __fr_u0_0
), __fr_u0 AS (
  SELECT
    n.`k` AS `k`,
    n.`g` AS `g`,
    n.`x` AS `x`,
    n.`src` AS `src`,
    0 AS `__fr_union`
  FROM (
    SELECT
      m1.k AS k,
      m1.g AS g,
      m1.x AS x,
      'm1' AS src
    FROM g.m1 VERSION AS OF 21 AS m1
    WHERE
      m1.x > 0
  ) AS n
), __fr_u1_0 AS (
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
), __fr_u1_r0 AS (
  SELECT DISTINCT
    NULL AS __fr_v0,
    __fr_u1_0.g AS __fr_v1,
    __fr_u1_0.x AS __fr_v2,
    'm2' AS __fr_v3
  FROM __fr_u1_0
), __fr_u1 AS (
  SELECT
    n.`_col_0` AS `k`,
    n.`g` AS `g`,
    n.`x` AS `x`,
    n.`m2` AS `src`,
    1 AS `__fr_union`
  FROM (
    SELECT
      NULL AS _col_0,
      m2.g AS g,
      m2.x AS x,
      'm2' AS m2
    FROM g.m2 VERSION AS OF 22 AS m2
  ) AS n
), __fr_u2_0_keys AS (
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
), __fr_u2_0_old AS (
  SELECT
    m.`k`,
    m.`g`,
    m.`x`,
    -1 AS __fr_sign
  FROM `g`.`m3` VERSION AS OF 13 AS m
  LEFT SEMI JOIN __fr_u2_0_keys AS c
    ON m.`k` IS NOT DISTINCT FROM c.`k`
), __fr_u2_0_new AS (
  SELECT
    m.`k`,
    m.`g`,
    m.`x`,
    1 AS __fr_sign
  FROM `g`.`m3` VERSION AS OF 23 AS m
  LEFT SEMI JOIN __fr_u2_0_keys AS c
    ON m.`k` IS NOT DISTINCT FROM c.`k`
), __fr_u2_0 AS (
  SELECT
    *
  FROM __fr_u2_0_old
  UNION ALL
  SELECT
    *
  FROM __fr_u2_0_new
), __fr_u2_r0 AS (
  SELECT DISTINCT
    __fr_u2_0.k AS __fr_v0
  FROM __fr_u2_0
), __fr_u2 AS (
  SELECT
    n.`k` AS `k`,
    n.`g` AS `g`,
    n.`x` AS `x`,
    n.`m3` AS `src`,
    2 AS `__fr_union`
  FROM (
    SELECT
      m3.k AS k,
      m3.g AS g,
      m3.x AS x,
      'm3' AS m3
    FROM g.m3 VERSION AS OF 23 AS m3
    WHERE
      NOT m3.g IS NULL
  ) AS n
), __fr_s AS (
  SELECT
    CAST(n.`k` AS DOUBLE) AS `k`,
    CAST(n.`g` AS DOUBLE) AS `g`,
    CAST(n.`x` AS DOUBLE) AS `x`,
    CAST(n.`src` AS DOUBLE) AS `src`,
    CAST(n.`__fr_union` AS DOUBLE) AS `__fr_union`,
    'I' AS __fr_op
  FROM (
    SELECT
      n.*
    FROM __fr_u0 AS n
    LEFT SEMI JOIN __fr_u0_r0 AS r
      ON n.`k` IS NOT DISTINCT FROM r.__fr_v0
  ) AS n
  UNION ALL
  SELECT
    d.`k`,
    d.`g`,
    d.`x`,
    d.`src`,
    d.`__fr_union`,
    'D' AS __fr_op
  FROM (
    SELECT DISTINCT
      t.`__fr_union`,
      t.`k`,
      t.`g`,
      t.`x`,
      t.`src`
    FROM `g`.`union_projections` AS t
    LEFT SEMI JOIN __fr_u0_r0 AS r
      ON t.`k` IS NOT DISTINCT FROM r.__fr_v0
    WHERE
      t.`__fr_union` = 0
  ) AS d
  UNION ALL
  SELECT
    CAST(n.`k` AS DOUBLE) AS `k`,
    CAST(n.`g` AS DOUBLE) AS `g`,
    CAST(n.`x` AS DOUBLE) AS `x`,
    CAST(n.`src` AS DOUBLE) AS `src`,
    CAST(n.`__fr_union` AS DOUBLE) AS `__fr_union`,
    'I' AS __fr_op
  FROM (
    SELECT
      n.*
    FROM __fr_u1 AS n
    LEFT SEMI JOIN __fr_u1_r0 AS r
      ON n.`k` IS NOT DISTINCT FROM r.__fr_v0
      AND n.`g` IS NOT DISTINCT FROM r.__fr_v1
      AND n.`x` IS NOT DISTINCT FROM r.__fr_v2
      AND n.`src` IS NOT DISTINCT FROM r.__fr_v3
  ) AS n
  UNION ALL
  SELECT
    d.`k`,
    d.`g`,
    d.`x`,
    d.`src`,
    d.`__fr_union`,
    'D' AS __fr_op
  FROM (
    SELECT DISTINCT
      t.`__fr_union`,
      t.`k`,
      t.`g`,
      t.`x`,
      t.`src`
    FROM `g`.`union_projections` AS t
    LEFT SEMI JOIN __fr_u1_r0 AS r
      ON t.`k` IS NOT DISTINCT FROM r.__fr_v0
      AND t.`g` IS NOT DISTINCT FROM r.__fr_v1
      AND t.`x` IS NOT DISTINCT FROM r.__fr_v2
      AND t.`src` IS NOT DISTINCT FROM r.__fr_v3
    WHERE
      t.`__fr_union` = 1
  ) AS d
  UNION ALL
  SELECT
    CAST(n.`k` AS DOUBLE) AS `k`,
    CAST(n.`g` AS DOUBLE) AS `g`,
    CAST(n.`x` AS DOUBLE) AS `x`,
    CAST(n.`src` AS DOUBLE) AS `src`,
    CAST(n.`__fr_union` AS DOUBLE) AS `__fr_union`,
    'I' AS __fr_op
  FROM (
    SELECT
      n.*
    FROM __fr_u2 AS n
    LEFT SEMI JOIN __fr_u2_r0 AS r
      ON n.`k` IS NOT DISTINCT FROM r.__fr_v0
  ) AS n
  UNION ALL
  SELECT
    d.`k`,
    d.`g`,
    d.`x`,
    d.`src`,
    d.`__fr_union`,
    'D' AS __fr_op
  FROM (
    SELECT DISTINCT
      t.`__fr_union`,
      t.`k`,
      t.`g`,
      t.`x`,
      t.`src`
    FROM `g`.`union_projections` AS t
    LEFT SEMI JOIN __fr_u2_r0 AS r
      ON t.`k` IS NOT DISTINCT FROM r.__fr_v0
    WHERE
      t.`__fr_union` = 2
  ) AS d
)
INSERT INTO `g`.`union_projections`
REPLACE WHERE TRUE
SELECT
  `k`,
  `g`,
  `x`,
  `src`,
  `__fr_union`
FROM (
  SELECT
    t.`k`,
    t.`g`,
    t.`x`,
    t.`src`,
    t.`__fr_union`
  FROM `g`.`union_projections` AS t
  LEFT ANTI JOIN (
    SELECT
      *
    FROM __fr_s
    WHERE
      __fr_op = 'D'
  ) AS s
    ON t.`__fr_union` IS NOT DISTINCT FROM s.`__fr_union`
    AND t.`k` IS NOT DISTINCT FROM s.`k`
    AND t.`g` IS NOT DISTINCT FROM s.`g`
    AND t.`x` IS NOT DISTINCT FROM s.`x`
    AND t.`src` IS NOT DISTINCT FROM s.`src`
  UNION ALL
  SELECT
    `k`,
    `g`,
    `x`,
    `src`,
    `__fr_union`
  FROM __fr_s
  WHERE
    __fr_op = 'I'
)
