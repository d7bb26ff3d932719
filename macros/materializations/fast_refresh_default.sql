{#-
  The fast_refresh materialization needs the dbt-fastrefresh adapter: its protocol lives
  in that adapter's Python layer. On any other adapter, fail before any SQL runs.
-#}
{% materialization fast_refresh, default %}
  {{ exceptions.raise_compiler_error(
      "Model " ~ this ~ " uses materialized='fast_refresh', which needs the dbt-fastrefresh "
      ~ "adapter, but this profile's type is '" ~ adapter.type() ~ "'. Fix: pip install "
      ~ "dbt-fastrefresh and set `type: fastrefresh` in the profile (every dbt-spark field "
      ~ "keeps working)."
  ) }}
{% endmaterialization %}
