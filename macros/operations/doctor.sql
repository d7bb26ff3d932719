{#-
  dbt run-operation fast_refresh.doctor
  Prints what the connection runs on: adapter, Spark version, session catalog, the file
  system of local files (Hadoop's unless the session sets one: the embedded default's is
  dbt.fastrefresh.NioLocalFileSystem), and whether Iceberg answers. Fails with the fix
  when Iceberg is not usable.
-#}
{% macro doctor() %}
  {{ return(adapter.dispatch('doctor', 'fast_refresh')()) }}
{% endmacro %}

{% macro default__doctor() %}
  {{ fast_refresh._unsupported('doctor') }}
{% endmacro %}

{% macro fastrefresh__doctor() %}
  {% if not execute %}{{ return('') }}{% endif %}
  {% set version = run_query("select version()").columns[0].values()[0] %}
  {% set catalog = run_query("set spark.sql.catalog.spark_catalog").columns[1].values()[0] %}
  {{ log("adapter:        " ~ adapter.type(), info=true) }}
  {{ log("spark version:  " ~ version, info=true) }}
  {{ log("spark_catalog:  " ~ catalog, info=true) }}
  {% set files = run_query("set spark.hadoop.fs.file.impl").columns[1].values()[0] %}
  {{ log("local files:    " ~ ("Hadoop's" if files == '<undefined>' else files), info=true) }}
  {% if 'iceberg' not in (catalog | lower) %}
    {{ exceptions.raise_compiler_error(
        "Iceberg is not configured: spark.sql.catalog.spark_catalog is '" ~ catalog ~ "'. "
        ~ "Fix: on a cluster, start Spark with the Iceberg runtime and "
        ~ "spark.sql.catalog.spark_catalog=org.apache.iceberg.spark.SparkSessionCatalog; "
        ~ "embedded, remove `embedded: false` from the profile.") }}
  {% endif %}
  {% set probe = target.schema ~ ".fast_refresh_doctor_probe" %}
  {% do run_query("create schema if not exists " ~ target.schema) %}
  {% do run_query("drop table if exists " ~ probe) %}
  {% do run_query("create table " ~ probe ~ " (id int) using iceberg") %}
  {% do run_query("insert into " ~ probe ~ " values (1)") %}
  {% set snapshots = run_query("select count(*) from " ~ probe ~ ".snapshots").columns[0].values()[0] %}
  {% do run_query("drop table " ~ probe) %}
  {{ log("iceberg:        OK (created, wrote and read the snapshots of " ~ probe ~ ": "
         ~ snapshots ~ " snapshot)", info=true) }}
{% endmacro %}
