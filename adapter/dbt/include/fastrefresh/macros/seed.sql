{#-
  `dbt seed` of a table with a materialized view log keeps the table and replaces its rows
  in one commit, so the log records only the rows that changed and the models over the
  seed refresh fast (engine/seeds.py). Otherwise (no log, columns or table options
  changed, --full-refresh) dbt-spark's seed runs unchanged: the table is dropped and
  created again.
-#}
{% macro fastrefresh__reset_csv_table(model, full_refresh, old_relation, agate_table) %}
  {%- set column_override = model['config'].get('column_types', {}) -%}
  {%- set columns = [] -%}
  {%- for col_name in agate_table.column_names -%}
    {%- set inferred_type = adapter.convert_type(agate_table, loop.index0) -%}
    {%- do columns.append([col_name | string, column_override.get(col_name, inferred_type)]) -%}
  {%- endfor -%}
  {%- if old_relation and not full_refresh and adapter.fr_seed_keeps_table(old_relation, columns, fastrefresh__seed_options()) -%}
    {%- if agate_table.rows | length == 0 -%}
      {#- dbt loads no rows then (no load_csv_rows): the table's go in one commit here -#}
      {%- do adapter.fr_seed_replacing(old_relation) -%}
      {% call statement('_') -%}
        delete from {{ old_relation.render() }}
      {%- endcall %}
      {{ return('delete from ' ~ old_relation.render()) }}
    {%- endif -%}
    {{ return('-- ' ~ old_relation ~ ' kept: it has a materialized view log, and its rows are replaced in one commit') }}
  {%- endif -%}
  {{ return(spark__reset_csv_table(model, full_refresh, old_relation, agate_table)) }}
{% endmacro %}


{#-
  dbt-spark's create_csv_table; an Iceberg seed's table then records the fingerprint of its
  options (fastrefresh__seed_options) as a table property, which fastrefresh__reset_csv_table
  compares on the next `dbt seed`: one metadata commit, made only when the table is created.
-#}
{% macro fastrefresh__create_csv_table(model, agate_table) %}
  {%- set sql = spark__create_csv_table(model, agate_table) -%}
  {%- if fastrefresh__creates_iceberg() -%}
    {% call statement('_') -%}
      alter table {{ this.render() }} set tblproperties (
        '{{ adapter.fr_table_options_property() }}' = '{{ fastrefresh__seed_options() }}')
    {%- endcall %}
  {%- endif -%}
  {{ return(sql) }}
{% endmacro %}


{#-
  The fingerprint of a seed's options: the clauses dbt-spark's create_csv_table writes
  after the table's columns (format, partitioning, bucketing, location, comment; those of
  a table model without its options and tblproperties). A seed's table keeps its rows
  across `dbt seed`s only while this is what it was created with.
-#}
{% macro fastrefresh__seed_options() -%}
  {{ return(fastrefresh__table_options(seed=true)) }}
{%- endmacro %}


{% macro fastrefresh__load_csv_rows(model, agate_table) %}
  {%- if not adapter.fr_seed_replacing(this) -%}
    {{ return(spark__load_csv_rows(model, agate_table)) }}
  {%- endif -%}
  {#- dbt-spark's spark__load_csv_rows, its first batch replacing the table's rows -#}
  {% set batch_size = get_batch_size() %}
  {% set column_override = model['config'].get('column_types', {}) %}
  {% set statements = [] %}
  {% for chunk in agate_table.rows | batch(batch_size) %}
      {% set bindings = [] %}
      {% for row in chunk %}
          {% do bindings.extend(row) %}
      {% endfor %}
      {% set sql %}
          insert into {{ this.render() }} {% if loop.first %}replace where true {% endif %}values
          {% for row in chunk -%}
              ({%- for col_name in agate_table.column_names -%}
                  {%- set inferred_type = adapter.convert_type(agate_table, loop.index0) -%}
                  {%- set type = column_override.get(col_name, inferred_type) -%}
                    cast({{ get_binding_char() }} as {{type}})
                  {%- if not loop.last%},{%- endif %}
              {%- endfor -%})
              {%- if not loop.last%},{%- endif %}
          {%- endfor %}
      {% endset %}
      {% do adapter.add_query(sql, bindings=bindings, abridge_sql_log=True) %}
      {% if loop.index0 == 0 %}
          {% do statements.append(sql) %}
      {% endif %}
  {% endfor %}
  {{ return(statements[0]) }}
{% endmacro %}
