SELECT
  *,
  COUNT(1) OVER (
    PARTITION BY `g`, `x`, IF(TYPEOF(`g`) IN ('float', 'double'), CAST(`g` AS STRING) = '-0.0', FALSE), IF(TYPEOF(`x`) IN ('float', 'double'), CAST(`x` AS STRING) = '-0.0', FALSE)
  ) AS __fr_multiplicity
FROM (
  SELECT
    m2.g AS g,
    m2.x AS x
  FROM g.m2 VERSION AS OF 22 AS m2
  WHERE
    m2.x IS NULL OR m2.x < 3
) AS __fr_q
