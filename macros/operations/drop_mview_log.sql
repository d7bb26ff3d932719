{#-
  Drop the log of a master; views on it then need a complete refresh.
  Usable from `dbt run-operation fast_refresh.drop_mview_log` and from hooks (renders no SQL).
-#}
{% macro drop_mview_log(master) %}
  {{ return(adapter.dispatch('drop_mview_log', 'fast_refresh')(master)) }}
{% endmacro %}

{% macro default__drop_mview_log(master) %}
  {{ fast_refresh._unsupported('drop_mview_log') }}
{% endmacro %}

{% macro fastrefresh__drop_mview_log(master) %}
  {% if execute %}
    {{ log(adapter.fr_drop_mview_log(master), info=true) }}
  {% endif %}
  {{ return('') }}
{% endmacro %}
