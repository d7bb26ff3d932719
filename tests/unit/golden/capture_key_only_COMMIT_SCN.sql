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
  FROM (
    SELECT
      *
    FROM src
    DISTRIBUTE BY
      `k`
  )
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
), k AS (
  SELECT
    ord__,
    SUM(IF(n__ < 0, -n__, 0)) AS nold__,
    SUM(IF(n__ > 0, n__, 0)) AS nnew__,
    FIRST(IF(n__ < 0, STRUCT(`k` AS k, `v` AS v, `w` AS w), NULL)) IGNORE NULLS AS o__,
    FIRST(IF(n__ > 0, STRUCT(`k` AS k, `v` AS v, `w` AS w), NULL)) IGNORE NULLS AS w__,
    `k`
  FROM net
  GROUP BY
    ord__,
    `k`
), j AS (
  SELECT
    k.ord__,
    nold__ > 0 AS has_old__,
    nnew__ > 0 AS has_new__,
    o__,
    w__,
    UNHEX(
      CONCAT(
        LPAD(
          HEX(
            IF(o__.`k` IS NOT DISTINCT FROM w__.`k`, 0, 2) + IF(o__.`v` IS NOT DISTINCT FROM w__.`v`, 0, 4) + IF(o__.`w` IS NOT DISTINCT FROM w__.`w`, 0, 8)
          ),
          2,
          '0'
        )
      )
    ) AS cv__,
    `k`
  FROM k
  WHERE
    NOT (
      nold__ = 1 AND nnew__ = 1 AND o__ IS NOT DISTINCT FROM w__
    )
    AND IF(
      GREATEST(nold__, nnew__) > 1,
      CAST(RAISE_ERROR(
        CONCAT(
          'dbt-fastrefresh: master g.t has more than one row with key (',
          COALESCE(CAST(`k` AS STRING), 'NULL'),
          ') in snapshot ',
          CAST(ELEMENT_AT(
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
          ).xid__ AS STRING),
          '; a keyed log needs a unique key. Fix: make the key unique, then drop the log (dbt run-operation fast_refresh.drop_mview_log --args "{master: g.t}") and let the next dbt run create it again from the table as it is then, or create it again yourself with another key, or key-less (key=[]); the views on it rebuild once. Until the log is dropped the commit stays in its range: neither the key made unique nor --full-refresh gets past it.'
        )
      ) AS BOOLEAN),
      TRUE
    )
), o AS (
  SELECT
    ord__,
    h__.*
  FROM j
  LATERAL VIEW
  INLINE(
    FILTER(
      ARRAY(
        IF(
          has_old__ AND NOT has_new__,
          STRUCT(
            0 AS half__,
            o__.`k` AS k,
            IF(has_new__, 'U', 'D') AS dmltype__,
            'O' AS old_new__,
            IF(has_new__, cv__, X'00') AS change_vector__
          ),
          NULL
        ),
        IF(
          has_new__,
          STRUCT(
            1 AS half__,
            w__.`k` AS k,
            IF(has_old__, 'U', 'I') AS dmltype__,
            IF(has_old__, 'U', 'N') AS old_new__,
            IF(has_old__, cv__, X'FE') AS change_vector__
          ),
          NULL
        )
      ),
      e__ -> NOT e__ IS NULL
    )
  ) h__
)
INSERT INTO `g`.`mlog__t`
SELECT
  o.`k`,
  o.dmltype__,
  o.old_new__,
  o.change_vector__,
  o.c__.base__ + ROW_NUMBER() OVER (ORDER BY o.ord__, o.`k`, o.half__) AS sequence__,
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
