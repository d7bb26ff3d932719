{#-
  Whether this dbt invocation is one that writes nothing to the warehouse (`dbt compile`,
  `dbt docs generate`, `dbt show`, `dbt source freshness`, `dbt list`, `dbt parse`): the
  package's hooks then leave the registry alone. `dbt test` is not one: `is_fresh`
  captures changes into the logs.
-#}
{% macro _read_only() %}
  {{ return(flags.WHICH in ('compile', 'generate', 'show', 'freshness', 'list', 'ls', 'parse')) }}
{% endmacro %}
