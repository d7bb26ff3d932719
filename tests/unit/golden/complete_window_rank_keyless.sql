SELECT
  q.g AS g,
  q.x AS x,
  q.__fr_p_0 AS `__fr_p_0`
FROM (
  SELECT
    m2.g AS g,
    m2.x AS x,
    DENSE_RANK() OVER (PARTITION BY m2.g ORDER BY m2.x) AS r,
    m2.g AS __fr_p_0
  FROM g.m2 VERSION AS OF 22 AS m2
) AS q
WHERE
  q.r <= 2
