{#-
  With the embedded Iceberg session catalog (SparkSessionCatalog), views are Iceberg views
  whose metadata lives in the warehouse folder of their name, and DROP of a view or of a
  non-Iceberg table leaves that folder behind (apache/iceberg#10157); creating a table of
  that name then fails with LOCATION_ALREADY_EXISTS. Embedded, the leftover folder of a
  dropped relation is removed; on a cluster, dbt-spark's drop runs unchanged.
-#}
{% macro fastrefresh__drop_relation(relation) -%}
  {{ spark__drop_relation(relation) }}
  {% if target.get('embedded') %}
    {% do adapter.fr_remove_dropped_location(relation) %}
  {% endif %}
{%- endmacro %}
