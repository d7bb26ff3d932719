-- Who holds which materialized view log or view now (a shared catalog's leases:
-- several dbt processes refreshing the same logs). Empty on the embedded default, whose
-- state folder one process holds. A lease whose holder died is taken over once it has
-- expired, or at once by a process of the holder's own machine.
select
    substring_index(name, ':', 1) as kind,
    substr(name, instr(name, ':') + 1) as object,
    holder,
    host,
    pid,
    purpose,
    acquired,
    expires,
    expires < cast(to_utc_timestamp(current_timestamp(), current_timezone()) as timestamp_ntz)
        as expired
from {{ source('fast_refresh_registry', 'leases') }}
