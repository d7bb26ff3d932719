-- Orders, revenue and average order per status.
select status, count(*) as orders, sum(amount) as revenue, avg(amount) as avg_amount
from {{ source('shop', 'orders') }}
group by status
