{#-
  Create the registry schema and tables if missing (run as the package's on-run-start).
  Usable from `dbt run-operation fast_refresh.ensure_registry` and from hooks (renders no SQL).
-#}
{% macro ensure_registry() %}
  {{ return(adapter.dispatch('ensure_registry', 'fast_refresh')()) }}
{% endmacro %}

{% macro default__ensure_registry() %}
  {{ fast_refresh._unsupported('ensure_registry') }}
{% endmacro %}

{% macro fastrefresh__ensure_registry() %}
  {% if execute %}
    {{ log(adapter.fr_ensure_registry(), info=true) }}
  {% endif %}
  {{ return('') }}
{% endmacro %}
