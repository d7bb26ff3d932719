WITH src AS (
  SELECT
    `k`,
    `v`,
    `w`,
    0 AS s0__,
    -1 AS s1__,
    0 AS s2__
  FROM (
    SELECT
      b.`k`,
      b.`v`,
      b.`w`
    FROM (
      SELECT
        `k`,
        `v`,
        `w`,
        _file AS f__,
        _pos AS p__
      FROM `g`.`t` VERSION AS OF 7
      WHERE
        _file IN ('b')
        AND (
          (
            `k` BETWEEN CAST('1' AS BIGINT) AND CAST('50' AS BIGINT)
          )
        )
    ) AS b
    LEFT SEMI JOIN (
      SELECT
        file_path AS f__,
        pos AS p__
      FROM `g`.`t`.`position_deletes` VERSION AS OF 8
      WHERE
        delete_file_path IN ('d1')
    ) AS d
      ON b.f__ = d.f__ AND b.p__ = d.p__
  ) AS r__
  UNION ALL
  SELECT
    `k`,
    `v`,
    `w`,
    -1 AS s0__,
    0 AS s1__,
    0 AS s2__
  FROM (
    SELECT
      `k`,
      `v`,
      `w`
    FROM `g`.`t` VERSION AS OF 6
    WHERE
      _file IN ('a')
      AND (
        (
          `k` BETWEEN CAST('1' AS BIGINT) AND CAST('50' AS BIGINT)
        )
      )
  ) AS r__
  UNION ALL
  SELECT
    `k`,
    `v`,
    `w`,
    1 AS s0__,
    0 AS s1__,
    0 AS s2__
  FROM (
    SELECT
      `k`,
      `v`,
      `w`
    FROM `g`.`t` VERSION AS OF 7
    WHERE
      _file IN ('b')
      AND (
        (
          `k` BETWEEN CAST('1' AS BIGINT) AND CAST('50' AS BIGINT)
        )
      )
  ) AS r__
  UNION ALL
  SELECT
    `k`,
    `v`,
    `w`,
    0 AS s0__,
    0 AS s1__,
    1 AS s2__
  FROM (
    SELECT
      `k`,
      `v`,
      `w`
    FROM `g`.`t` VERSION AS OF 9
    WHERE
      _file IN ('c')
      AND (
        (
          `k` BETWEEN CAST('51' AS BIGINT) AND CAST('60' AS BIGINT)
        )
      )
  ) AS r__
), w AS (
  SELECT
    `k`,
    `v`,
    `w`,
    SUM(s0__) AS n0__,
    SUM(s1__) AS n1__,
    SUM(s2__) AS n2__
  FROM src
  GROUP BY
    `k`,
    `v`,
    `w`
), net AS (
  SELECT
    e__.ord__,
    w.`k`,
    w.`v`,
    w.`w`,
    e__.n__
  FROM w
  LATERAL VIEW
  INLINE(
    FILTER(
      ARRAY(
        STRUCT(0 AS ord__, n0__ AS n__),
        STRUCT(1 AS ord__, n1__ AS n__),
        STRUCT(2 AS ord__, n2__ AS n__)
      ),
      x__ -> x__.n__ <> 0
    )
  ) e__
), o AS (
  SELECT
    ord__,
    IF(n__ < 0, 0, 1) AS half__,
    `k`,
    `v`,
    `w`,
    IF(n__ < 0, 'D', 'I') AS dmltype__,
    IF(n__ < 0, 'O', 'N') AS old_new__,
    IF(n__ < 0, X'00', X'FE') AS change_vector__
  FROM net
  LATERAL VIEW
  EXPLODE(SEQUENCE(1, ABS(n__))) r__ AS rep__
)
INSERT INTO `g`.`mlog__t`
SELECT
  o.`k`,
  o.`v`,
  o.`w`,
  o.dmltype__,
  o.old_new__,
  o.change_vector__,
  o.c__.base__ + ROW_NUMBER() OVER (ORDER BY o.ord__, o.`k`, o.`v`, o.`w`, o.half__) AS sequence__,
  o.c__.xid__,
  o.c__.base__ + 1 AS capture__
FROM (
  SELECT
    *,
    ELEMENT_AT(
      MAP(
        0,
        STRUCT(
          CAST(7 AS BIGINT) AS xid__,
          CAST(41 AS BIGINT) AS base__,
          CAST('4000-01-01 00:00:00' AS TIMESTAMP_NTZ) AS stamp__
        ),
        1,
        STRUCT(
          CAST(8 AS BIGINT) AS xid__,
          CAST(41 AS BIGINT) AS base__,
          CAST('4000-01-01 00:00:00' AS TIMESTAMP_NTZ) AS stamp__
        ),
        2,
        STRUCT(
          CAST(9 AS BIGINT) AS xid__,
          CAST(41 AS BIGINT) AS base__,
          CAST('4000-01-01 00:00:00' AS TIMESTAMP_NTZ) AS stamp__
        )
      ),
      ord__
    ) AS c__
  FROM o
) AS o
