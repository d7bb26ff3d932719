-- Each fast_refresh view: how it refreshes, when it last did, and how stale it is
-- (FRESH, STALE: changes pending, NEEDS_COMPILE: definition or master schema changed,
-- UNUSABLE: must be completely refreshed). Oracle: USER_MVIEWS.
with views as (
    select * from {{ source('fast_refresh_registry', 'mviews') }}
),
pending as (
    select u.mview,
           -- rows purge_log removed before the view consumed them are gone, not pending:
           -- the view needs a complete refresh
           sum(greatest(l.last_sequence - greatest(u.last_sequence, l.purged_sequence), 0))
               as pending_log_rows,
           max(case when l.younger_than > u.last_refresh
                     or u.last_sequence < l.purged_sequence then 1 else 0 end) as log_younger
    from {{ source('fast_refresh_registry', 'mview_log_users') }} u
    join {{ source('fast_refresh_registry', 'mview_logs') }} l on l.log_table = u.log_table
    group by u.mview
)
select
    v.mview,
    v.refresh_method,
    v.shape,
    v.masters,
    v.last_refresh_type,
    v.last_refresh_time,
    case
        when v.staleness in ('UNUSABLE', 'NEEDS_COMPILE') then v.staleness
        when p.log_younger = 1 then 'UNUSABLE'
        when p.pending_log_rows > 0 then 'STALE'
        else v.staleness
    end as staleness,
    coalesce(p.pending_log_rows, 0) as pending_log_rows,
    v.last_fallback_reason
from views v
left join pending p on p.mview = v.mview
