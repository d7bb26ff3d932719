{#-
  Create the registry schema and tables if missing (run as the package's on-run-start).
  Usable from `dbt run-operation fast_refresh.ensure_registry` and from hooks (renders no SQL).
  A hook of a command that writes nothing (`fast_refresh._read_only`: compile, docs
  generate, show...) does nothing: it would create the schema, which credentials that may
  only read cannot.
-#}
{% macro ensure_registry() %}
  {{ return(adapter.dispatch('ensure_registry', 'fast_refresh')()) }}
{% endmacro %}

{% macro default__ensure_registry() %}
  {{ fast_refresh._unsupported('ensure_registry') }}
{% endmacro %}

{% macro fastrefresh__ensure_registry() %}
  {% if execute and not fast_refresh._read_only() %}
    {{ log(adapter.fr_ensure_registry(), info=true) }}
  {% endif %}
  {{ return('') }}
{% endmacro %}
