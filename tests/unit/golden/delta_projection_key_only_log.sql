MERGE INTO `g`.`projection_key_only_log` AS t
USING (
  WITH __fr_keys AS (
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
            CAST(CONV(HEX(SUBSTRING(change_vector__, 1, 1)), 16, 10) AS INT) & 10
          ) <> 0
        )
      )
  ), __fr_old AS (
    SELECT
      m.`k`,
      m.`x`,
      -1 AS __fr_sign
    FROM `g`.`m3` VERSION AS OF 13 AS m
    LEFT SEMI JOIN __fr_keys AS c
      ON m.`k` IS NOT DISTINCT FROM c.`k`
  ), __fr_new AS (
    SELECT
      m.`k`,
      m.`x`,
      1 AS __fr_sign
    FROM `g`.`m3` VERSION AS OF 23 AS m
    LEFT SEMI JOIN __fr_keys AS c
      ON m.`k` IS NOT DISTINCT FROM c.`k`
  ), imgs AS (
    SELECT
      *
    FROM __fr_old
    UNION ALL
    SELECT
      *
    FROM __fr_new
  )
  SELECT
    IF(m3.__fr_sign = -1, m3.`k`, CAST(m3.k AS DOUBLE)) AS `k`,
    IF(m3.__fr_sign = -1, CAST(NULL AS DOUBLE), CAST(m3.x AS DOUBLE)) AS `x`,
    IF(m3.__fr_sign = -1, 'D', 'I') AS __fr_op
  FROM imgs AS m3
  WHERE
    m3.__fr_sign = -1 OR (
      TRUE AND (
        m3.x > 0
      )
    )
) AS s
ON t.`k` IS NOT DISTINCT FROM s.`k` AND s.__fr_op = 'D'
WHEN MATCHED THEN DELETE
WHEN NOT MATCHED AND s.__fr_op = 'I' THEN INSERT (`k`, `x`) VALUES (s.`k`, s.`x`)
