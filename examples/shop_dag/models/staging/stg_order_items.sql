with source as (

    select * from {{ source('raw', 'order_items') }}

),

renamed as (

    select
        id as order_item_id,
        order_id,
        product_id,
        quantity,
        cast(unit_price as decimal(12, 2)) as unit_price
    from source
    where quantity > 0

)

select * from renamed
