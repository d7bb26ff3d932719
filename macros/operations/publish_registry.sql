{#-
  Publish what this dbt invocation changed to the registry (one commit for the whole run;
  the package runs it as its on-run-end hook). First, views registered on the logs the run
  changed are released when their table is gone, and, from a dbt run, when they sit in a
  schema of the project's fast_refresh models without being one, or when a model of this
  project built them and none builds them now, in any schema (a model removed, renamed or
  moved; var fast_refresh_release_removed_models: false keeps them). Run-operations of the package publish by
  themselves; this one is for scripts that drive the adapter otherwise.
  Usable from `dbt run-operation fast_refresh.publish_registry` and from hooks (a hook
  of a command that writes nothing, `fast_refresh._read_only`, does nothing).
-#}
{% macro publish_registry() %}
  {{ return(adapter.dispatch('publish_registry', 'fast_refresh')()) }}
{% endmacro %}

{% macro default__publish_registry() %}
  {{ fast_refresh._unsupported('publish_registry') }}
{% endmacro %}

{% macro fastrefresh__publish_registry() %}
  {% if execute and not fast_refresh._read_only() %}
    {%- set message = adapter.fr_publish_registry(
          graph=graph, release_removed=var('fast_refresh_release_removed_models', true),
          project=project_name ~ ':' ~ target.schema) -%}
    {%- for line in message.split('\n') -%}
      {% do log(line, info=line.startswith('released ')) %}
    {%- endfor -%}
  {% endif %}
  {{ return('') }}
{% endmacro %}
