select customer_id, count(*) as orders, sum(amount) as revenue
from {{ source('shop', 'orders') }}
group by customer_id
