select o.order_id, o.amount, c.region
from {{ source('shop', 'orders') }} o
join {{ source('shop', 'customers') }} c on o.customer_id = c.customer_id
