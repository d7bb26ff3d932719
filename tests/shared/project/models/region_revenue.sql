select c.region, count(*) as orders, sum(o.amount) as revenue
from {{ source('shop', 'orders') }} o
join {{ source('shop', 'customers') }} c on o.customer_id = c.customer_id
group by c.region
