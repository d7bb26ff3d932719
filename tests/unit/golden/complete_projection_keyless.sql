SELECT
  *,
  COUNT(1) OVER (PARTITION BY `g`, `x`) AS __fr_multiplicity
FROM (
  SELECT
    m2.g AS g,
    m2.x AS x
  FROM g.m2 VERSION AS OF 22 AS m2
  WHERE
    m2.x IS NULL OR m2.x < 3
) AS __fr_q
