SELECT
  (
    SELECT
      COUNT_IF(COALESCE(readable_metrics.`k`.null_value_count, 1) > 0)
    FROM `g`.`m1`.`files` VERSION AS OF 21
    WHERE
      content = 0
  ) + (
    SELECT
      COUNT(*)
    FROM (
      SELECT
        1
      FROM `g`.`mlog__m1` VERSION AS OF 31
      WHERE
        (
          capture__ > 4 AND capture__ <= 7
        ) AND (
          `k` IS NULL
        )
      LIMIT 1
    )
  ) + (
    SELECT
      COUNT_IF(COALESCE(readable_metrics.`k`.null_value_count, 1) > 0)
    FROM `g`.`m3`.`files` VERSION AS OF 23
    WHERE
      content = 0
  )
