"""Log maintenance: purge (Oracle's wrap-up purge, DBMS_MVIEW.PURGE_LOG,
PURGE_MVIEW_FROM_LOG) and UNREGISTER_MVIEW.

A log row may go once every view registered on the log has consumed it: on the timestamp
flavour, ``snaptime__ <= min(last refresh of the registered views)``; on the commit-SCN
flavour, ``sequence__ <= min(sequence each view reached)``. ``purge_log`` may cut deeper,
dooming the least recently refreshed views to a complete refresh: the log remembers how
far it was purged, and a view that refreshed before that point is told the log is younger
than its last refresh.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dbt.adapters.fastrefresh import locks, upkeep
from dbt.adapters.fastrefresh.capture import holding_log, log_lock
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.executor import Executor
from dbt.adapters.fastrefresh.registry import LogInfo, LogUser, Registry
from dbt.adapters.fastrefresh.sqltext import TableName, literal, timestamp


@dataclass(frozen=True)
class PurgeResult:
    rows: int
    doomed: tuple[str, ...]


def _position(log: LogInfo, user: LogUser) -> object:
    return user.last_sequence if log.commit_scn else user.last_refresh


def doomed_views(log: LogInfo, users: Sequence[LogUser]) -> list[str]:
    """Views whose last refresh is older than what the log has purged (pure)."""
    out = []
    for u in users:
        if log.commit_scn:
            if u.last_sequence < log.purged_sequence:
                out.append(str(u.mview))
        elif log.purged_through is not None and u.last_refresh < log.purged_through:
            out.append(str(u.mview))
    return sorted(out)


@dataclass(frozen=True)
class Purge:
    """One log's purge, planned: the DELETE's condition (None: nothing to delete), and
    the values the log's registry row takes with it."""

    log: LogInfo
    condition: str | None
    values: dict[str, object]
    result: PurgeResult


def plan_purge(
    log: LogInfo,
    users: Sequence[LogUser],
    now: dt.datetime,
    keep: Sequence[LogUser] | None = None,
    recorded: dict[str, object] | None = None,
) -> Purge:
    """What a purge keeping the rows the views in ``keep`` (default: all ``users``) still
    need deletes and records (pure): the purge (time, rows, new oldest) and ``recorded``,
    which the caller writes with it, and the views it leaves without rows they need."""
    keep = list(users if keep is None else keep)
    # Sequences are dense and purges cut prefixes, so the log holds exactly the rows
    # (purged_sequence, last_sequence]. A view with last refresh L consumed exactly the
    # rows stamped <= L, which are the rows up to its last_sequence: the purge boundary in
    # sequence terms is the smallest last_sequence kept, and the purged count is known
    # without scanning the log.
    if keep:
        to_sequence = min(u.last_sequence for u in keep)
        if log.commit_scn:
            condition = f"sequence__ <= {to_sequence}"
        else:
            boundary = min(u.last_refresh for u in keep)
            condition = f"snaptime__ <= {timestamp(boundary)}"
    else:
        # Nobody is registered: no row is needed by anyone.
        to_sequence = log.last_sequence
        condition = f"sequence__ <= {to_sequence}"
    rows = max(0, to_sequence - log.purged_sequence)
    purged: dict[str, object] = {"purged_sequence": max(log.purged_sequence, to_sequence)}
    if not log.commit_scn:
        through = boundary if keep else now
        purged["purged_through"] = (
            max(through, log.purged_through) if log.purged_through else through
        )
    oldest = min((u.last_refresh for u in keep), default=None) or log.oldest
    values = {
        **(recorded or {}),
        **purged,
        "last_purge_time": now,
        "last_purge_rows": rows,
        "oldest": oldest,
    }
    updated = dataclasses.replace(log, **values)  # type: ignore[arg-type]
    return Purge(
        log,
        condition if rows else None,
        values,
        PurgeResult(rows, tuple(doomed_views(updated, users))),
    )


def execute_purges(x: Executor, registry: Registry, purges: Sequence[Purge]) -> None:
    """Delete the planned rows from each log, then write every log's registry row in one
    commit. Caller holds the logs' locks."""
    for purge in purges:
        if purge.condition is not None:
            x.execute(f"DELETE FROM {purge.log.log_table.sql} WHERE {purge.condition}")
            upkeep.committed(x, purge.log.log_table)
    registry.update_logs([(p.log, p.values) for p in purges])


def purge_rows(
    x: Executor,
    registry: Registry,
    log: LogInfo,
    users: Sequence[LogUser],
    now: dt.datetime,
    keep: Sequence[LogUser] | None = None,
    recorded: dict[str, object] | None = None,
) -> PurgeResult:
    """Purge what no view in ``keep`` (default: all ``users``) still needs (``plan_purge``).

    Caller holds the log's lock. Returns the views that the purge left without the rows
    they need.
    """
    purge = plan_purge(log, users, now, keep, recorded)
    execute_purges(x, registry, [purge])
    return purge.result


def _mark_unusable(registry: Registry, views: Sequence[str]) -> None:
    if views:
        registry.update(
            "mviews",
            f"mview IN ({', '.join(literal(v) for v in views)})",
            {"staleness": "UNUSABLE"},
        )


def purge_log(
    x: Executor,
    registry: Registry,
    master_name: object,
    num: int,
    flag: str,
    now: Callable[[], dt.datetime],
) -> str:
    """DBMS_MVIEW.PURGE_LOG: purge rows needed only by the ``num`` least recently
    refreshed views (``flag='delete'``: at least one), which then need a complete refresh."""
    master = TableName.parse(master_name)
    if not isinstance(num, int) or isinstance(num, bool) or num < 0:
        raise FastRefreshError(
            f"purge_log num must be a whole number >= 0, got {num!r}. Fix: num=1."
        )
    if str(flag).lower() not in ("delete", "nop"):
        raise FastRefreshError(
            f"purge_log flag must be 'delete' or 'nop', got {flag!r}. Fix: flag='nop' purges "
            "for the num least recently refreshed views; flag='delete' for at least one, even "
            "when num=0."
        )
    registry.ensure()
    with holding_log(registry, master) as log:
        users = sorted(registry.log_users(log.log_table), key=lambda u: _position(log, u))  # type: ignore[arg-type, return-value]
        count = max(num, 1) if str(flag).lower() == "delete" else num
        keep = users[count:]
        result = purge_rows(x, registry, log, users, now(), keep=keep)
        _mark_unusable(registry, result.doomed)
    doomed = (
        f"; now needing a complete refresh: {', '.join(result.doomed)}" if result.doomed else ""
    )
    return f"purge_log {master}: deleted {result.rows} row(s) from {log.log_table}{doomed}"


def purge_mview_from_log(
    x: Executor,
    registry: Registry,
    mview_name: object,
    master_name: object | None,
    now: Callable[[], dt.datetime],
) -> str:
    """DBMS_MVIEW.PURGE_MVIEW_FROM_LOG: drop one view's claim on its logs (or one master's)
    and purge the rows only it still needed. The view then needs a complete refresh."""
    mview = TableName.parse(mview_name)
    master = TableName.parse(master_name) if master_name else None
    registry.ensure()
    claims = [u for u in registry.users_of_mview(mview) if master is None or u.master == master]
    if not claims:
        where = f" on the log of {master}" if master else " on any log"
        raise FastRefreshError(
            f"{mview} is not registered{where}, so there is nothing to purge. Fix: check the "
            "names (schema.table; the fast_refresh_log_backlog model lists each log's views); "
            "a view purged before registers again at its next complete refresh."
        )
    messages = []
    for claim in sorted(claims, key=lambda c: str(c.log_table)):
        with locks.holding([log_lock(claim.log_table)]):
            log = registry.log_for_master(claim.master)
            registry.delete(
                "mview_log_users",
                f"log_table = {literal(str(claim.log_table))} AND mview = {literal(str(mview))}",
            )
            if log is None:
                continue
            users = registry.log_users(log.log_table)
            result = purge_rows(x, registry, log, users, now())
            messages.append(f"{log.log_table}: released, {result.rows} row(s) purged")
    _mark_unusable(registry, [str(mview)])
    return (
        f"purge_mview_from_log {mview}: "
        + "; ".join(messages)
        + ("; the view needs a complete refresh to register again")
    )


def unregister_mview(registry: Registry, mview_name: object) -> str:
    """DBMS_MVIEW.UNREGISTER_MVIEW: forget the view's registration (not its log claims)."""
    mview = TableName.parse(mview_name)
    registry.ensure()
    if registry.mview(mview) is None:
        raise FastRefreshError(
            f"{mview} is not a registered materialized view. Fix: check the name "
            "(schema.table); registered views are listed in the fast_refresh registry models."
        )
    registry.delete("mviews", f"mview = {literal(str(mview))}")
    claims = registry.users_of_mview(mview)
    note = (
        f"; its claims on {', '.join(sorted(str(c.log_table) for c in claims))} remain "
        f"(release them with fast_refresh.purge_mview_from_log('{mview}'))"
        if claims
        else ""
    )
    return f"unregistered {mview}{note}"
