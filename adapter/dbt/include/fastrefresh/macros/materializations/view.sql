{#-
  dbt's view materialization (create_or_replace_view), with two changes
  (adapter/dbt/adapters/fastrefresh/engine/dbt_views.py):
  - An existing view is dropped, then created, except on a shared catalog: behind Iceberg's
    SparkSessionCatalog (the embedded default) CREATE OR REPLACE VIEW keeps the old query
    (adapter.fr_views_replace_in_place). The new query is analysed first, so a model whose
    new SQL fails keeps its old view.
  - A model configured fast_refresh_reuse_view: true (the package's registry models) keeps
    its view when the statement that would create it is the one that created it, which a
    fingerprint property on the view records; --full-refresh creates it again anyway.
-#}
{% materialization view, adapter='fastrefresh' -%}
  {%- set identifier = model['alias'] -%}
  {%- set old_relation = adapter.get_relation(database=database, schema=schema, identifier=identifier) -%}
  {%- set exists_as_view = (old_relation is not none and old_relation.is_view) -%}
  {%- set target_relation = api.Relation.create(
      identifier=identifier, schema=schema, database=database, type='view') -%}
  {%- set grant_config = config.get('grants') -%}
  {%- set reuse = config.get('fast_refresh_reuse_view', false) -%}

  {{ run_hooks(pre_hooks) }}

  {%- if old_relation is not none and old_relation.is_table -%}
    {{ handle_existing_table(should_full_refresh(), old_relation) }}
  {%- endif -%}

  {%- set create_sql = get_create_view_as_sql(target_relation, sql) -%}
  {%- if exists_as_view and reuse and not should_full_refresh()
        and adapter.fr_view_unchanged(target_relation, create_sql) -%}
    {% do store_raw_result(name='main', message='OK (unchanged)', code='OK', rows_affected=-1) %}
  {%- else -%}
    {%- if exists_as_view and not adapter.fr_views_replace_in_place() -%}
      {#- The new query is analysed before the old view goes: a model whose new SQL fails
          keeps its view, as CREATE OR REPLACE VIEW would. -#}
      {%- do get_columns_in_query(sql) -%}
      {% do adapter.drop_relation(old_relation) %}
    {%- endif -%}
    {% call statement('main') -%}
      {{ create_sql }}
    {%- endcall %}
    {%- if reuse -%}
      {% do adapter.fr_mark_view(target_relation, create_sql) %}
    {%- endif -%}
  {%- endif -%}

  {% set should_revoke = should_revoke(exists_as_view, full_refresh_mode=True) %}
  {% do apply_grants(target_relation, grant_config, should_revoke=should_revoke) %}

  {{ run_hooks(post_hooks) }}

  {{ return({'relations': [target_relation]}) }}
{%- endmaterialization %}
