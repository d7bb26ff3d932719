{#- Shared by every operation's default__ implementation. -#}
{% macro _unsupported(name) %}
  {{ exceptions.raise_compiler_error(
      "fast_refresh." ~ name ~ " needs the dbt-fastrefresh adapter (profile type: "
      ~ "fastrefresh); this profile's type is '" ~ adapter.type() ~ "'. Fix: pip install "
      ~ "dbt-fastrefresh and set `type: fastrefresh` (every dbt-spark field keeps working).") }}
{% endmacro %}
