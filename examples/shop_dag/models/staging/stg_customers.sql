with source as (

    select * from {{ source('raw', 'customers') }}

),

renamed as (

    select
        id as customer_id,
        trim(name) as customer_name,
        upper(country) as country
    from source

)

select * from renamed
