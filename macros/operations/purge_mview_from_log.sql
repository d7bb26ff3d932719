{#-
  Oracle's DBMS_MVIEW.PURGE_MVIEW_FROM_LOG: release a view's claim on its logs (or on
  one master's) and purge what only it needed. The view then needs a complete refresh.
  Usable from `dbt run-operation fast_refresh.purge_mview_from_log` and from hooks (renders no SQL).
-#}
{% macro purge_mview_from_log(mview, master=none) %}
  {{ return(adapter.dispatch('purge_mview_from_log', 'fast_refresh')(mview, master)) }}
{% endmacro %}

{% macro default__purge_mview_from_log(mview, master) %}
  {{ fast_refresh._unsupported('purge_mview_from_log') }}
{% endmacro %}

{% macro fastrefresh__purge_mview_from_log(mview, master) %}
  {% if execute %}
    {{ log(adapter.fr_purge_mview_from_log(mview, master), info=true) }}
  {% endif %}
  {{ return('') }}
{% endmacro %}
