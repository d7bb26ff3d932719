with source as (

    select * from {{ source('raw', 'products') }}

)

select
    id as product_id,
    name as product_name,
    coalesce(category, 'uncategorized') as category
from source
