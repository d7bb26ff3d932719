-- One row per order line, with its order, customer and product: a join of four models.
with orders as (

    select * from {{ ref('stg_orders') }}

),

items as (

    select * from {{ ref('stg_order_items') }}

),

customers as (

    select * from {{ ref('stg_customers') }}

),

products as (

    select * from {{ ref('stg_products') }}

)

select
    items.order_item_id,
    orders.order_id,
    orders.order_status,
    orders.order_date,
    customers.customer_id,
    customers.country,
    products.category,
    items.quantity,
    items.quantity * items.unit_price as line_amount
from items
join orders on items.order_id = orders.order_id
join customers on orders.customer_id = customers.customer_id
join products on items.product_id = products.product_id
