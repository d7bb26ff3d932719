{#-
  Oracle's DBMS_MVIEW.PURGE_LOG: purge rows needed only by the num least recently
  refreshed views (flag 'delete': at least one), which then need a complete refresh.
  Usable from `dbt run-operation fast_refresh.purge_log` and from hooks (renders no SQL).
-#}
{% macro purge_log(master, num=1, flag='delete') %}
  {{ return(adapter.dispatch('purge_log', 'fast_refresh')(master, num, flag)) }}
{% endmacro %}

{% macro default__purge_log(master, num, flag) %}
  {{ fast_refresh._unsupported('purge_log') }}
{% endmacro %}

{% macro fastrefresh__purge_log(master, num, flag) %}
  {% if execute %}
    {{ log(adapter.fr_purge_log(master, num, flag), info=true) }}
  {% endif %}
  {{ return('') }}
{% endmacro %}
