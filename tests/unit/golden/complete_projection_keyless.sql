SELECT
  *,
  COUNT(1) OVER (
    PARTITION BY `g`, `x`, IF(TYPEOF(`g`) RLIKE 'float|double', CAST(`g` AS STRING), NULL), IF(TYPEOF(`x`) RLIKE 'float|double', CAST(`x` AS STRING), NULL)
  ) AS __fr_multiplicity
FROM (
  SELECT
    m2.g AS g,
    m2.x AS x
  FROM g.m2 VERSION AS OF 22 AS m2
  WHERE
    m2.x IS NULL OR m2.x < 3
) AS __fr_q
