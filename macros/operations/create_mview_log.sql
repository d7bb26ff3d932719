{#-
  Create the materialized view log of a master table (Oracle: CREATE MATERIALIZED VIEW LOG).
  master: 'schema.table', ref() or source(); columns: logged columns (default all,
  [] = key only); commit_scn: true for the commit-SCN flavour; key: key columns when the
  master has no Iceberg identifier fields (omit for those, and for a fast_refresh model:
  its view's key; [] for a key-less log);
  purge: 'deferred' (default: consumed rows go once per dbt invocation, at its end) or
  'synchronous' (in each refresh's wrap-up, before it returns: Oracle's default);
  if_not_exists: true keeps a log the master already has instead of failing.
  Usable from `dbt run-operation fast_refresh.create_mview_log` and from hooks (renders no SQL).
-#}
{% macro create_mview_log(master, columns=none, commit_scn=false, key=none, purge='deferred', if_not_exists=false) %}
  {{ return(adapter.dispatch('create_mview_log', 'fast_refresh')(master, columns, commit_scn, key, purge, if_not_exists)) }}
{% endmacro %}

{% macro default__create_mview_log(master, columns, commit_scn, key, purge, if_not_exists) %}
  {{ fast_refresh._unsupported('create_mview_log') }}
{% endmacro %}

{% macro fastrefresh__create_mview_log(master, columns, commit_scn, key, purge, if_not_exists) %}
  {% if execute %}
    {{ log(adapter.fr_create_mview_log(master, columns, commit_scn, key, purge, if_not_exists=if_not_exists), info=true) }}
  {% endif %}
  {{ return('') }}
{% endmacro %}
