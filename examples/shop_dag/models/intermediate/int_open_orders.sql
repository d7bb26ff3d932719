{{ config(materialized='ephemeral') }}

select * from {{ ref('stg_orders') }}
where order_status in ('placed', 'paid')
