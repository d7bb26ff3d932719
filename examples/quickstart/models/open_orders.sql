-- The open orders: a filter/projection view over the orders master.
select order_id, customer_id, amount
from {{ source('shop', 'orders') }}
where status = 'open'
