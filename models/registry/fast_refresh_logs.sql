-- Each materialized view log (Oracle: SYS.MLOG$ / USER_MVIEW_LOGS) with its registered views.
select
    l.master,
    l.log_table,
    l.flavour,
    l.key_columns,
    l.logged_columns,
    l.keyless,
    l.created,
    l.oldest,
    l.youngest,
    l.last_purge_time,
    l.last_purge_rows,
    l.captured_through,
    l.captured_at,
    l.last_sequence,
    l.younger_than,
    l.younger_reason,
    (select count(*) from {{ source('fast_refresh_registry', 'mview_log_users') }} u
      where u.log_table = l.log_table) as registered_views
from {{ source('fast_refresh_registry', 'mview_logs') }} l
