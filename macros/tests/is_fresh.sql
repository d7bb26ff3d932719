{#-
  data_tests: [fast_refresh.is_fresh] on a fast_refresh model.
  Captures the view's masters, then fails (one row: staleness and why) unless the view
  is FRESH: no change on any master since its last refresh, nothing purged that it
  needed, no definition or master schema change. dbt's `where` config does not apply (the
  view is fresh or not as a whole); under `dbt build --empty` (the model built without
  rows, which its next run rebuilds) it checks nothing.
-#}
{% test is_fresh(model) %}
  {%- if not execute or invocation_args_dict.get('empty') -%}
    select 1 as staleness where false
  {%- else -%}
    {%- set state = adapter.fr_staleness(adapter.fr_tested_relation(model)) -%}
    select '{{ state[0] }}' as staleness, {{ dbt.string_literal(state[1]) }} as why
    where '{{ state[0] }}' <> 'FRESH'
  {%- endif -%}
{% endtest %}
