{#-
  data_tests: [fast_refresh.is_fresh] on a fast_refresh model.
  Captures the view's masters, then fails (one row: staleness and why) unless the view
  is FRESH: no change on any master since its last refresh, nothing purged that it
  needed, no definition or master schema change.
-#}
{% test is_fresh(model) %}
  {%- if not execute -%}
    select 1 as staleness where false
  {%- else -%}
    {%- set state = adapter.fr_staleness(model) -%}
    select '{{ state[0] }}' as staleness, {{ dbt.string_literal(state[1]) }} as why
    where '{{ state[0] }}' <> 'FRESH'
  {%- endif -%}
{% endtest %}
