{#-
  dbt-spark's table materialization, except for a model configured
  fast_refresh_keep_table: true whose Iceberg table has a materialized view log
  (adapter/dbt/adapters/fastrefresh/engine/dbt_tables.py): when the model's query gives
  the table the same columns and the table was created with the model's options, the table
  is kept and its rows are replaced in one commit, so the log records only the rows the run
  changed and the models over it refresh fast. Otherwise (not configured, no log, columns
  or options changed, --full-refresh, a Python model) the model is built as dbt-spark's
  materialization builds it: by that materialization itself when the table could not be
  kept whatever the query, else (columns or options changed, found after the pre-hooks
  ran) by the same create_table_as.
-#}
{% materialization table, adapter='fastrefresh', supported_languages=['sql', 'python'] %}
  {%- set keep = config.get('fast_refresh_keep_table', false) -%}
  {%- if keep is not sameas true and keep is not sameas false -%}
    {{ exceptions.raise_compiler_error(
        "fast_refresh_keep_table of " ~ model['unique_id'] ~ " must be true or false, got "
        ~ keep ~ ". Fix: fast_refresh_keep_table: true (keep the table and replace its rows) or false.") }}
  {%- endif -%}
  {%- set identifier = model['alias'] -%}
  {%- set old_relation = adapter.get_relation(database=database, schema=schema, identifier=identifier) -%}
  {#- (a table that is not Iceberg yet is dropped by dbt-spark's materialization first) -#}
  {%- if not keep or model['language'] != 'sql' or old_relation is none or not old_relation.is_table
        or not old_relation.is_iceberg or not fastrefresh__creates_iceberg()
        or should_full_refresh() -%}
    {{ return(materialization_table_spark()) }}
  {%- endif -%}
  {%- set contract_config = config.get('contract') -%}
  {%- set target_relation = old_relation.incorporate(type='table') -%}
  {%- set grant_config = config.get('grants') -%}

  {{ run_hooks(pre_hooks) }}

  {#- Asked after the pre-hooks, which may create what the query reads. With an enforced
      contract, dbt-spark's create_table_as selects the contract's columns, in its order:
      the rows are written so too. -#}
  {%- set query = get_select_subquery(compiled_code) if contract_config.enforced else compiled_code -%}
  {%- set keep_rows = adapter.fr_table_keeps_rows(old_relation, fastrefresh__table_options(), query) -%}
  {%- if keep_rows and contract_config.enforced -%}
    {{ get_assert_columns_equivalent(compiled_code) }}
  {%- endif -%}
  {%- if not keep_rows and config.get('file_format', validator=validation.any[basestring]) != 'iceberg' -%}
    {#- (Iceberg on a shared catalog through USING parquet: dbt-spark's create_table_as
        then creates rather than replaces, and its materialization drops the table first) -#}
    {% do adapter.drop_relation(old_relation) %}
  {%- endif -%}
  {% call statement('main') -%}
    {%- if keep_rows %}
    insert into {{ target_relation.render() }} replace where true
    {{ query }}
    {%- else %}
    {#- as dbt-spark's table materialization builds an Iceberg table it replaces -#}
    {{ create_table_as(False, target_relation, compiled_code, 'sql') }}
    {%- endif %}
  {%- endcall %}

  {% set should_revoke = should_revoke(old_relation, full_refresh_mode=True) %}
  {% do apply_grants(target_relation, grant_config, should_revoke) %}

  {% do persist_docs(target_relation, model) %}

  {% do persist_constraints(target_relation, model) %}

  {{ run_hooks(post_hooks) }}

  {{ return({'relations': [target_relation]}) }}
{%- endmaterialization %}


{#-
  The fingerprint of a table model's options: the clauses dbt-spark's create_table_as
  writes between the table's name and its query (format, options, properties,
  partitioning, bucketing, location, comment). A table model's table keeps its rows across
  runs only while this is what it was created with. seed: the clauses of a seed's table
  (dbt-spark's create_csv_table writes no options or tblproperties), fastrefresh__seed_options.
-#}
{% macro fastrefresh__table_options(seed=false) -%}
  {%- set clauses -%}
    {{ file_format_clause() }}
    {%- if not seed %}
    {{ options_clause() }}
    {{ spark__tblproperties_clause() }}
    {%- endif %}
    {{ partition_cols(label="partitioned by") }}
    {{ clustered_cols(label="clustered by") }}
    {{ location_clause() }}
    {{ comment_clause() }}
  {%- endset -%}
  {{ return(local_md5(clauses.split() | join(' '))) }}
{%- endmacro %}


{#-
  Whether the model or seed being built creates an Iceberg table: its file_format is
  iceberg, or every table of this catalog is Iceberg (a shared catalog, where dbt-spark's
  default USING parquet makes an Iceberg table too: adapter.fr_tables_are_iceberg).
-#}
{% macro fastrefresh__creates_iceberg() -%}
  {{ return(config.get('file_format', validator=validation.any[basestring]) == 'iceberg'
            or adapter.fr_tables_are_iceberg()) }}
{%- endmacro %}


{#-
  dbt-spark's tblproperties clause; for an Iceberg table model, with the fingerprint of
  its options (fastrefresh__table_options) as a property of its own, which the table
  materialization above compares on the next run.
-#}
{% macro fastrefresh__tblproperties_clause() -%}
  {%- if model is not mapping or model.get('config', {}).get('materialized') != 'table'
        or model.get('language', 'sql') != 'sql' or not fastrefresh__creates_iceberg() -%}
    {{ return(spark__tblproperties_clause()) }}
  {%- endif -%}
  {%- set tblproperties = dict(config.get('tblproperties') or {}) -%}
  {%- do tblproperties.update({adapter.fr_table_options_property(): fastrefresh__table_options()}) %}
    tblproperties (
      {%- for prop in tblproperties -%}
      '{{ prop }}' = '{{ tblproperties[prop] }}' {% if not loop.last %}, {% endif %}
      {%- endfor %}
    )
{%- endmacro %}
