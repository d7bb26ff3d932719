with open_orders as (

    select * from {{ ref('int_open_orders') }}

)

select customer_id, count(*) as open_orders, min(order_date) as oldest_open_order
from open_orders
group by customer_id
