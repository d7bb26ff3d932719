WITH net AS (
  SELECT
    0 AS ord__,
    `k`,
    `v`,
    `w`,
    1 AS n__
  FROM (
    SELECT
      k,
      v,
      w
    FROM appended
  ) AS r__
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
  o.c__.base__ + ROW_NUMBER() OVER (ORDER BY o.ord__, o.`k`, o.half__) AS sequence__,
  IF(
    LAG(o.ord__) OVER (ORDER BY o.ord__, o.`k`, o.half__) = o.ord__
    AND LAG(o.`k`) OVER (ORDER BY o.ord__, o.`k`, o.half__) IS NOT DISTINCT FROM o.`k`,
    CAST(RAISE_ERROR(
      CONCAT(
        'dbt-fastrefresh: master g.t has more than one row with key (',
        COALESCE(CAST(o.`k` AS STRING), 'NULL'),
        ') in snapshot ',
        CAST(o.c__.xid__ AS STRING),
        '; a keyed log needs a unique key. Fix: make the key unique, then drop the log (dbt run-operation fast_refresh.drop_mview_log --args "{master: g.t}") and let the next dbt run create it again from the table as it is then, or create it again yourself with another key, or key-less (key=[]); the views on it rebuild once. Until the log is dropped the commit stays in its range: neither the key made unique nor --full-refresh gets past it.'
      )
    ) AS BIGINT),
    o.c__.xid__
  ) AS xid__,
  o.c__.base__ + 1 AS capture__
FROM (
  SELECT
    *,
    ELEMENT_AT(
      MAP(
        0,
        STRUCT(
          CAST(7 AS BIGINT) AS xid__,
          CAST(0 AS BIGINT) AS base__,
          CAST('2026-01-01 12:30:00.000000' AS TIMESTAMP_NTZ) AS stamp__
        )
      ),
      ord__
    ) AS c__
  FROM o
) AS o
