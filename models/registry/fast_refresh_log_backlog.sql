-- Each log's backlog per registered view: captured rows the view has not consumed yet and
-- the master commit time of the oldest of them. Views registered on no log are not listed.
-- Rows purge_log removed before the view consumed them are not pending (they are gone):
-- the view needs a complete refresh, as it does once the log is younger than its refresh.
with captures as (
    select * from {{ source('fast_refresh_registry', 'capture_runs') }}
)
select
    l.master,
    l.log_table,
    l.flavour,
    u.mview,
    u.last_refresh,
    greatest(l.last_sequence - greatest(u.last_sequence, l.purged_sequence), 0)
        as pending_log_rows,
    (
        select min(c.oldest_commit) from captures c
        where c.log_table = l.log_table
          and c.last_sequence > greatest(u.last_sequence, l.purged_sequence)
    ) as oldest_unconsumed_change,
    l.younger_than > u.last_refresh
        or u.last_sequence < l.purged_sequence as needs_complete_refresh
from {{ source('fast_refresh_registry', 'mview_logs') }} l
join {{ source('fast_refresh_registry', 'mview_log_users') }} u on u.log_table = l.log_table
