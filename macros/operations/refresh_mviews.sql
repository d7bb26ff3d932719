{#-
  Oracle's DBMS_MVIEW.REFRESH with a list: refresh registered views from their stored
  definitions. names: a list or 'a.v1, a.v2'; method: force | fast | complete (or ?, f, c).
  Usable from `dbt run-operation fast_refresh.refresh_mviews` and from hooks (renders no SQL).
-#}
{% macro refresh_mviews(names, method='force') %}
  {{ return(adapter.dispatch('refresh_mviews', 'fast_refresh')(names, method)) }}
{% endmacro %}

{% macro default__refresh_mviews(names, method) %}
  {{ fast_refresh._unsupported('refresh_mviews') }}
{% endmacro %}

{% macro fastrefresh__refresh_mviews(names, method) %}
  {% if execute %}
    {{ log(adapter.fr_refresh_mviews(names, method), info=true) }}
  {% endif %}
  {{ return('') }}
{% endmacro %}
