{#-
  Copy new master commits into the log(s) (all logs when master is omitted).
  Usable from `dbt run-operation fast_refresh.capture_changes` and from hooks (renders no SQL).
-#}
{% macro capture_changes(master=none) %}
  {{ return(adapter.dispatch('capture_changes', 'fast_refresh')(master)) }}
{% endmacro %}

{% macro default__capture_changes(master) %}
  {{ fast_refresh._unsupported('capture_changes') }}
{% endmacro %}

{% macro fastrefresh__capture_changes(master) %}
  {% if execute %}
    {{ log(adapter.fr_capture_changes(master), info=true) }}
  {% endif %}
  {{ return('') }}
{% endmacro %}
