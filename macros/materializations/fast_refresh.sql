{#-
  materialized='fast_refresh': an Oracle-style fast-refresh materialized view.

  config:
    refresh_method: force (default: fast when possible, else complete, saying why)
                    | fast (fail, naming cause and fix, when a fast refresh is impossible)
                    | complete (always rebuild)
    on_schema_change: ignore (default), fail, append_new_columns, sync_all_columns: what a
                    change of the view's columns does (fail, or rebuild once saying so)
    contract, grants, persist_docs: as on dbt-spark's incremental models
    partition_by, clustered_by, buckets, location_root, tblproperties: as dbt-spark
  The logs of the tables it reads (dbt nodes it ref()s or source()s) are created when
  missing, unless a node says mview_log: false (engine/upstream.py).
  The model's relation is a view of its query's columns over an Iceberg table named
  <model>__fr_data, which holds the rows and the hidden __fr_ columns the refresh keeps;
  the view carries the model's comments (persist_docs). The protocol (capture, setup,
  delta, wrap-up) runs in the adapter's Python layer: adapter.fr_refresh_model.
-#}
{% materialization fast_refresh, adapter='fastrefresh' %}
  {%- set table_options -%}
    {{ partition_cols(label="partitioned by") }} {{ clustered_cols(label="clustered by") }}
    {{ location_clause() }} {{ comment_clause() }}
  {%- endset -%}
  {#- The config is validated once, before anything runs (ModelConfig.parse). -#}
  {%- set fr_config = adapter.fr_model_config(
        this, refresh_method=config.get('refresh_method', 'force'),
        file_format=config.get('file_format', 'iceberg'), full_refresh=should_full_refresh(),
        table_options=table_options, tblproperties=config.get('tblproperties'),
        model=model, graph=graph, on_schema_change=config.get('on_schema_change', 'ignore'),
        empty=invocation_args_dict.get('empty', false),
        project=project_name ~ ':' ~ target.schema) -%}

  {%- set target_relation = this.incorporate(type='view') -%}
  {%- set existing = load_cached_relation(this) -%}
  {%- set replaces_table = false -%}
  {%- if existing is not none and not existing.is_view -%}
    {#- The model's name is the view over its storage table. A table of that name built
        by dbt-fastrefresh 0.1 becomes the storage table (renamed: it refreshes fast on);
        another materialization's table goes, when the view is created: a model whose
        refresh fails (its SQL, its config) keeps the table it had. -#}
    {%- if adapter.fr_built_by_0_1(existing) -%}
      {% do adapter.rename_relation(
            existing, existing.incorporate(path={'identifier': existing.identifier ~ '__fr_data'})) %}
    {%- else -%}
      {%- set replaces_table = true -%}
    {%- endif -%}
    {%- set existing = none -%}
  {%- endif -%}

  {#- A model contract: the query's columns and types must be the contract's. -#}
  {%- set contract_config = config.get('contract') -%}
  {%- if contract_config and contract_config.enforced -%}
    {{ get_assert_columns_equivalent(sql) }}
  {%- endif -%}

  {{ run_hooks(pre_hooks) }}
  {%- set result = adapter.fr_refresh_model(
        target_relation, existing, sql, fr_config, replaces_table) -%}
  {%- for created in result.get('logs_created', []) -%}
    {{ log("fast_refresh " ~ this ~ ": " ~ created, info=true) }}
  {%- endfor -%}
  {%- for warning in result.get('log_warnings', []) -%}
    {% do exceptions.warn("fast_refresh " ~ this ~ ": " ~ warning) %}
  {%- endfor -%}
  {%- if result.get('type') == 'COMPLETE' -%}
    {{ log("fast_refresh " ~ this ~ ": COMPLETE refresh (" ~ result.reason ~ ")", info=true) }}
  {%- endif -%}
  {% do store_raw_result(
        name='main', message=result.get('message', ''), code=result.get('type', 'OK'),
        rows_affected=result.get('log_rows', 0)) %}
  {{ run_hooks(post_hooks) }}
  {%- set grant_config = config.get('grants') -%}
  {%- set should_revoke = should_revoke(existing, full_refresh_mode=(result.get('type') == 'COMPLETE')) -%}
  {% do apply_grants(target_relation, grant_config, should_revoke=should_revoke) %}
  {#- persist_docs: the comments are part of the view (fr_refresh_model creates it). -#}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
