{#-
  persist_docs for columns: dbt-spark comments columns only when the model's file_format
  config says delta, hudi or iceberg. A fast_refresh view is always an Iceberg table
  without that config, so its columns are commented whenever the relation is Iceberg;
  everything else goes to dbt-spark's macro unchanged.
-#}
{% macro fastrefresh__alter_column_comment(relation, column_dict) %}
  {% if config.get('materialized') == 'fast_refresh' %}
    {% for column_name in column_dict %}
      {% set comment = column_dict[column_name]['description'] %}
      {% set escaped_comment = comment | replace('\'', '\\\'') %}
      {% set comment_query %}
        alter table {{ relation }} alter column
            {{ adapter.quote(column_name) if column_dict[column_name]['quote'] else column_name }}
            comment '{{ escaped_comment }}'
      {% endset %}
      {% do run_query(comment_query) %}
    {% endfor %}
  {% else %}
    {{ return(spark__alter_column_comment(relation, column_dict)) }}
  {% endif %}
{% endmacro %}
