{#- The demo's master tables: Iceberg tables with a key (identifier field). -#}
{% macro create_demo_masters(orders=10000) %}
  {% do run_query("create schema if not exists shop") %}
  {% do run_query("drop table if exists shop.customers") %}
  {% do run_query("drop table if exists shop.orders") %}
  {% do run_query("
    create table shop.customers (
      customer_id bigint not null, name string, country string
    ) using iceberg") %}
  {% do run_query("
    insert into shop.customers
    select id, concat('customer ', id),
           element_at(array('FR', 'DE', 'IT', 'ES', 'NL'), cast(id % 5 as int) + 1)
    from range(1, 101) as r(id)") %}
  {% do run_query("
    create table shop.orders (
      order_id bigint not null, customer_id bigint, status string,
      amount decimal(12, 2), ordered_at timestamp
    ) using iceberg") %}
  {% do run_query("
    insert into shop.orders
    select id, 1 + (id * 7919) % 100,
           element_at(array('open', 'shipped', 'shipped', 'delivered'), cast(id % 4 as int) + 1),
           cast(5 + (id * 37) % 500 as decimal(12, 2)),
           timestamp'2026-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, cast(id as int), 0)
    from range(1, " ~ (orders + 1) ~ ") as r(id)") %}
  {% do run_query("alter table shop.customers set identifier fields customer_id") %}
  {% do run_query("alter table shop.orders set identifier fields order_id") %}
  {{ log("created shop.customers (100 rows) and shop.orders (" ~ orders ~ " rows)", info=true) }}
{% endmacro %}
