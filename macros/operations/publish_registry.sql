{#-
  Publish what this dbt invocation changed to the registry (one commit for the whole run;
  the package runs it as its on-run-end hook). Run-operations of the package publish by
  themselves; this one is for scripts that drive the adapter otherwise.
  Usable from `dbt run-operation fast_refresh.publish_registry` and from hooks.
-#}
{% macro publish_registry() %}
  {{ return(adapter.dispatch('publish_registry', 'fast_refresh')()) }}
{% endmacro %}

{% macro default__publish_registry() %}
  {{ fast_refresh._unsupported('publish_registry') }}
{% endmacro %}

{% macro fastrefresh__publish_registry() %}
  {% if execute %}
    {% do log(adapter.fr_publish_registry(), info=false) %}
  {% endif %}
  {{ return('') }}
{% endmacro %}
