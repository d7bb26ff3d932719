SELECT
  r.k AS k,
  r.g AS g,
  r.x AS x,
  r.rn AS rn,
  r.__fr_p_0 AS `__fr_p_0`
FROM (
  SELECT
    m3.k AS k,
    m3.g AS g,
    m3.x AS x,
    ROW_NUMBER() OVER (PARTITION BY m3.g ORDER BY m3.x DESC, m3.k) AS rn,
    m3.g AS __fr_p_0
  FROM g.m3 VERSION AS OF 23 AS m3
) AS r
WHERE
  r.rn = 1
