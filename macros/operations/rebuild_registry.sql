{#-
  Publish the current state of every materialized view log and fast_refresh view to the
  registry, after its table was dropped (the next dbt invocation creates an empty one),
  truncated or edited by hand. The protocol's state lives on the logs' and views' own
  tables, so nothing it needs was lost; the refresh and capture history the registry lost
  stays lost.
  Usable from `dbt run-operation fast_refresh.rebuild_registry` and from hooks (renders no SQL).
-#}
{% macro rebuild_registry() %}
  {{ return(adapter.dispatch('rebuild_registry', 'fast_refresh')()) }}
{% endmacro %}

{% macro default__rebuild_registry() %}
  {{ fast_refresh._unsupported('rebuild_registry') }}
{% endmacro %}

{% macro fastrefresh__rebuild_registry() %}
  {% if execute %}
    {{ log(adapter.fr_rebuild_registry(), info=true) }}
  {% endif %}
  {{ return('') }}
{% endmacro %}
