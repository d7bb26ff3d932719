{#-
  data_tests: [fast_refresh.equals_query] on a fast_refresh model.
  The view (its user columns; hidden __fr_ columns left out) must equal its query
  recomputed on the master snapshots its last refresh read, as multisets, so duplicates
  count. Failing rows say which side has them ('extra' in the view, 'missing' from it),
  each as many times as that side has it more often. Independent of staleness: see
  fast_refresh.is_fresh for that. With dbt's `where` config, both sides are filtered by
  it; under `dbt build --empty` (the model built without rows) it checks nothing.
-#}
{% test equals_query(model) %}
  {%- if not execute or invocation_args_dict.get('empty') -%}
    select 1 as side where false
  {%- else -%}
    {%- set relation = adapter.fr_tested_relation(model) -%}
    {%- set where = config.get('where') -%}
    {%- set columns = [] -%}
    {%- for column in adapter.get_columns_in_relation(relation) -%}
      {%- if not column.name.startswith('__fr_') -%}
        {%- do columns.append(adapter.quote(column.name)) -%}
      {%- endif -%}
    {%- endfor -%}
    {%- set cols = columns | join(', ') -%}
    {#- Each distinct row's count in the view less its count in the query: one
        aggregation reads each side once (EXCEPT ALL both ways read each twice). -#}
    with counted as (
      select {{ cols }}, sum(__fr_side) as __fr_surplus from (
        select {{ cols }}, 1 as __fr_side from {{ model }}
        union all
        select {{ cols }}, -1 as __fr_side
        from ({{ adapter.fr_pinned_definition(relation) }}) q
        {%- if where %} where {{ where }}{% endif %}
      ) both_sides
      group by {{ cols }}
      having sum(__fr_side) <> 0
    )
    select if(__fr_surplus > 0, 'extra', 'missing') as side, {{ cols }}
    from counted lateral view explode(sequence(1, abs(__fr_surplus))) copies as __fr_copy
  {%- endif -%}
{% endtest %}
