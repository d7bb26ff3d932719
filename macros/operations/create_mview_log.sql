{#-
  Create the materialized view log of a master table (Oracle: CREATE MATERIALIZED VIEW LOG).
  master: 'schema.table', ref() or source(); columns: logged columns (default all,
  [] = key only); commit_scn: true for the commit-SCN flavour; key: key columns when the
  master has no Iceberg identifier fields (omit for those; [] for a key-less log);
  purge: 'deferred' (default: consumed rows go once per dbt invocation, at its end) or
  'synchronous' (in each refresh's wrap-up, before it returns: Oracle's default).
  Usable from `dbt run-operation fast_refresh.create_mview_log` and from hooks (renders no SQL).
-#}
{% macro create_mview_log(master, columns=none, commit_scn=false, key=none, purge='deferred') %}
  {{ return(adapter.dispatch('create_mview_log', 'fast_refresh')(master, columns, commit_scn, key, purge)) }}
{% endmacro %}

{% macro default__create_mview_log(master, columns, commit_scn, key, purge) %}
  {{ fast_refresh._unsupported('create_mview_log') }}
{% endmacro %}

{% macro fastrefresh__create_mview_log(master, columns, commit_scn, key, purge) %}
  {% if execute %}
    {{ log(adapter.fr_create_mview_log(master, columns, commit_scn, key, purge), info=true) }}
  {% endif %}
  {{ return('') }}
{% endmacro %}
