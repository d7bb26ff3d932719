select
    category,
    order_date,
    sum(quantity) as units,
    sum(line_amount) as revenue,
    max(line_amount) as largest_line
from {{ ref('int_order_lines') }}
group by category, order_date
