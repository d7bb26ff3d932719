{#-
  Oracle's DBMS_MVIEW.EXPLAIN_MVIEW: for a registered view (schema.table) or a SELECT,
  print its shape, whether it refreshes fast (and why not), its hidden columns, and the
  delta statement its next fast refresh would run (a dry run: nothing is changed).
  Usable from `dbt run-operation fast_refresh.explain_mview` and from hooks (renders no SQL).
-#}
{% macro explain_mview(mview) %}
  {{ return(adapter.dispatch('explain_mview', 'fast_refresh')(mview)) }}
{% endmacro %}

{% macro default__explain_mview(mview) %}
  {{ fast_refresh._unsupported('explain_mview') }}
{% endmacro %}

{% macro fastrefresh__explain_mview(mview) %}
  {% if execute %}
    {{ log(adapter.fr_explain_mview(mview), info=true) }}
  {% endif %}
  {{ return('') }}
{% endmacro %}
