-- A mart over a mart: the countries above a revenue threshold.
select country, revenue, order_lines
from {{ ref('mart_country_revenue') }}
where revenue > 1000
