{#-
  data_tests: [fast_refresh.equals_query] on a fast_refresh model.
  The view (its user columns; hidden __fr_ columns left out) must equal its query
  recomputed on the master snapshots its last refresh read — EXCEPT ALL both ways, so
  duplicates count. Failing rows say which side has them ('extra' in the view,
  'missing' from it). Independent of staleness: see fast_refresh.is_fresh for that.
-#}
{% test equals_query(model) %}
  {%- if not execute -%}
    select 1 as side where false
  {%- else -%}
    {%- set columns = [] -%}
    {%- for column in adapter.get_columns_in_relation(model) -%}
      {%- if not column.name.startswith('__fr_') -%}
        {%- do columns.append(adapter.quote(column.name)) -%}
      {%- endif -%}
    {%- endfor -%}
    {%- set cols = columns | join(', ') -%}
    with stored as (select {{ cols }} from {{ model }}),
    expected as (select {{ cols }} from ({{ adapter.fr_pinned_definition(model) }}) q),
    extra as (select * from stored except all select * from expected),
    missing as (select * from expected except all select * from stored)
    select 'extra' as side, * from extra
    union all
    select 'missing' as side, * from missing
  {%- endif -%}
{% endtest %}
