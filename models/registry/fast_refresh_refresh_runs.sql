-- Refresh history, newest first: type (FAST/COMPLETE), why, how much, how long.
select
    run_id,
    mview,
    started,
    ended,
    cast(unix_micros(cast(ended as timestamp)) - unix_micros(cast(started as timestamp)) as double) / 1e6 as seconds,
    refresh_type,
    reason,
    log_rows_read,
    rows_applied,
    status,
    error,
    phase_seconds
from {{ source('fast_refresh_registry', 'refresh_runs') }}
