with source as (

    select * from {{ source('raw', 'orders') }}

),

renamed as (

    select
        id as order_id,
        customer_id,
        lower(status) as order_status,
        cast(ordered_at as date) as order_date
    from source

)

select * from renamed
