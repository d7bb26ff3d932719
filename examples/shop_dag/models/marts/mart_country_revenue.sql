select
    country,
    count(*) as order_lines,
    sum(line_amount) as revenue,
    avg(line_amount) as avg_line_amount
from {{ ref('int_order_lines') }}
where order_status <> 'returned'
group by country
