{#-
  Oracle's DBMS_MVIEW.UNREGISTER_MVIEW: forget a view's registration (its log claims
  stay; release them with purge_mview_from_log).
  Usable from `dbt run-operation fast_refresh.unregister_mview` and from hooks (renders no SQL).
-#}
{% macro unregister_mview(mview) %}
  {{ return(adapter.dispatch('unregister_mview', 'fast_refresh')(mview)) }}
{% endmacro %}

{% macro default__unregister_mview(mview) %}
  {{ fast_refresh._unsupported('unregister_mview') }}
{% endmacro %}

{% macro fastrefresh__unregister_mview(mview) %}
  {% if execute %}
    {{ log(adapter.fr_unregister_mview(mview), info=true) }}
  {% endif %}
  {{ return('') }}
{% endmacro %}
