"""The master-site half of a refresh: setup (capture, verify, choose the time, mark) and
wrap-up (record the view's refresh, recompute oldest/youngest, purge).

Oracle's DBMS_SNAPSHOT.SET_UP / VERIFY_LOG / WRAP_UP, per log. A fast refresh calls
``setup`` for each master's log, reads its range, applies it, then calls ``wrap_up_all``;
a complete refresh calls the same two (it does the same log management, seed 001 2.1.2)
but does not need to be registered before.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dbt.adapters.fastrefresh import locks, upkeep
from dbt.adapters.fastrefresh import master as mt
from dbt.adapters.fastrefresh.admin import PurgeResult, execute_purges, plan_purge
from dbt.adapters.fastrefresh.capture import (
    UNMARKED_SQL,
    CaptureResult,
    capture_locked,
    fault_point,
    holding_log,
    log_lock,
)
from dbt.adapters.fastrefresh.capture import no_log_error as _no_log_error
from dbt.adapters.fastrefresh.executor import Executor
from dbt.adapters.fastrefresh.registry import LogInfo, LogUser, Registry
from dbt.adapters.fastrefresh.sqltext import TableName, timestamp

ONE_TICK = dt.timedelta(microseconds=1)
no_log_error = _no_log_error


@dataclass(frozen=True)
class Setup:
    """What one view's refresh may read from one log.

    The view's changes are the log rows with ``after < snaptime__ <= now`` (timestamp
    flavour) or ``after_sequence < sequence__ <= through_sequence`` (both flavours).
    """

    log: LogInfo
    mview: TableName
    now: dt.datetime
    master_snapshot: int | None
    user: LogUser | None
    through_sequence: int
    capture: CaptureResult
    problem: str | None  # why this log cannot serve a fast refresh of the view

    @property
    def after(self) -> dt.datetime | None:
        return self.user.last_refresh if self.user else None

    @property
    def after_sequence(self) -> int:
        return self.user.last_sequence if self.user else 0

    def range_predicate(self) -> str:
        """The SQL predicate of the view's rows in this log."""
        if self.log.commit_scn or self.after is None:
            return f"sequence__ > {self.after_sequence} AND sequence__ <= {self.through_sequence}"
        return f"snaptime__ > {timestamp(self.after)} AND snaptime__ <= {timestamp(self.now)}"


def refresh_time(clock: dt.datetime, youngest: dt.datetime | None) -> dt.datetime:
    """The refresh time: the clock, but strictly after every time recorded on the log.

    >>> t = dt.datetime(2026, 1, 1)
    >>> refresh_time(t, t) == t + ONE_TICK
    True
    """
    if youngest is not None and clock <= youngest:
        return youngest + ONE_TICK
    return clock


def usability_problem(
    log: LogInfo, user: LogUser | None, mview_last_refresh: dt.datetime | None
) -> str | None:
    """Why ``log`` cannot give the view all changes since its last refresh (pure)."""
    last = user.last_refresh if user else mview_last_refresh
    if last is not None and log.younger_than > last:
        why = log.younger_reason or "log recreated"
        return (
            f"the materialized view log {log.log_table} is younger than the view's last "
            f"refresh ({why}; Oracle: ORA-12034)"
        )
    if user is None:
        return f"the view is not registered on the materialized view log {log.log_table}"
    if log.commit_scn:
        if user.last_sequence < log.purged_sequence:
            return f"rows the view still needed were purged from {log.log_table} (purge_log)"
    elif log.purged_through is not None and user.last_refresh < log.purged_through:
        return f"rows the view still needed were purged from {log.log_table} (purge_log)"
    return None


# The refresh time each log's last setup chose in this process, until its wrap-up records
# it: a later setup must choose a time after it even when that setup stamped nothing.
_CHOSEN: dict[str, dt.datetime] = {}


def forget(log_table: TableName) -> None:
    """Drop what this process remembers of a log (it was dropped or created)."""
    _CHOSEN.pop(str(log_table), None)
    upkeep.forget(log_table)


def setup(
    x: Executor,
    registry: Registry,
    master: TableName,
    mview: TableName,
    clock: Callable[[], dt.datetime],
    mview_last_refresh: dt.datetime | None = None,
    columns: Sequence[mt.Column] | None = None,
) -> Setup:
    """Verify, choose the refresh time, mark and capture, under the log's lock.

    The registry records the chosen time (``youngest``) and the marked sequence at
    wrap-up, one write for both; a setup that died before left its stamps on the log
    rows, where the next setup finds them (``_youngest``).
    """
    with holding_log(registry, master) as log:
        now = refresh_time(clock(), _youngest(x, log))
        _CHOSEN[str(log.log_table)] = now
        if not log.commit_scn and log.last_sequence > log.marked_sequence:
            # Rows captured outside a refresh: only the first refresher stamps them, and
            # rows already stamped keep their time.
            x.execute(
                f"UPDATE {log.log_table.sql} SET snaptime__ = {timestamp(now)} "
                f"WHERE sequence__ > {log.marked_sequence} AND sequence__ <= {log.last_sequence} "
                f"AND snaptime__ = {UNMARKED_SQL}"
            )
            upkeep.committed(x, log.log_table)
            fault_point("setup.after_mark")
            log = dataclasses.replace(log, marked_sequence=log.last_sequence)
        # New commits are appended already stamped with ``now``: this setup is their
        # first refresher.
        captured, log = capture_locked(
            x, registry, log, clock, stamp=now, columns=columns, defer=True
        )
        user = next((u for u in registry.log_users(log.log_table) if u.mview == mview), None)
        problem = usability_problem(log, user, mview_last_refresh)
    return Setup(log, mview, now, log.captured_through, user, log.last_sequence, captured, problem)


def _youngest(x: Executor, log: LogInfo) -> dt.datetime | None:
    """The youngest time on the log: the registry's, this process's latest choice, and
    stamps a setup left without recording them (it died, or its wrap-up is pending)."""
    youngest = log.youngest
    chosen = _CHOSEN.get(str(log.log_table))
    if chosen is not None and (youngest is None or chosen > youngest):
        youngest = chosen
    if not log.commit_scn and log.last_sequence > log.marked_sequence:
        rows = x.query(
            f"SELECT max(snaptime__) FROM {log.log_table.sql} WHERE sequence__ > "
            f"{log.marked_sequence} AND snaptime__ < {UNMARKED_SQL}"
        )
        stamped = rows[0][0] if rows else None
        if stamped is not None and (youngest is None or stamped > youngest):
            youngest = stamped
    return youngest


def wrap_up(x: Executor, registry: Registry, done: Setup) -> PurgeResult:
    """Record that the view consumed the log through ``done``, then purge what no view needs."""
    return wrap_up_all(x, registry, [done])[0]


def wrap_up_all(x: Executor, registry: Registry, done: Sequence[Setup]) -> list[PurgeResult]:
    """``wrap_up`` for every log one view's refresh read, with one registry commit per
    step for all of them: the view's rows in ``mview_log_users``, then each log's purge,
    then the logs' rows in ``mview_logs``. Each log sees the steps in the order a wrap-up
    of it alone takes, so a crash between them leaves what that one would.

    The logs' rows and their users are read once, before the first write. Every writer of
    a log's users holds the log's lock, as this does from the read to the purge, so the
    users the purge keeps are those read with this view's rows written."""
    if not done:
        return []
    with locks.holding([log_lock(d.log.log_table) for d in done]):
        stored = registry.logs_for_masters(d.log.master for d in done)
        logs = [stored.get(d.log.master) or d.log for d in done]
        users = registry.users_of_logs(log.log_table for log in logs)
        new_users: list[dict[str, object]] = []
        updated: list[dict[str, object]] = []
        for d, log in zip(done, logs, strict=True):
            values = {
                "log_table": str(log.log_table),
                "mview": str(d.mview),
                "last_refresh": d.now,
                "last_sequence": d.through_sequence,
                "master_snapshot": d.master_snapshot,
            }
            if d.user is None:
                new_users.append({"master": str(log.master), "registered_at": d.now, **values})
            else:
                updated.append(values)
            users[log.log_table] = _with_claim(users[log.log_table], log, d)
        registry.insert("mview_log_users", new_users)
        registry.update_rows("mview_log_users", ["log_table", "mview"], updated)
        fault_point("wrap_up.after_register")
        purges = []
        for d, log in zip(done, logs, strict=True):
            recorded: dict[str, object] = {
                "youngest": max(d.now, log.youngest) if log.youngest else d.now
            }
            if not log.commit_scn:
                recorded["marked_sequence"] = max(log.marked_sequence, d.through_sequence)
            purges.append(plan_purge(log, users[log.log_table], d.now, recorded=recorded))
        execute_purges(x, registry, purges)
    return [p.result for p in purges]


def _with_claim(users: Sequence[LogUser], log: LogInfo, done: Setup) -> list[LogUser]:
    """``users`` of ``log`` as ``wrap_up_all`` leaves them (pure): the view's row added when
    it registers, its rows (if still there) moved to ``done``'s range when it was."""
    if done.user is None:
        return [
            *users,
            LogUser(
                log.log_table, log.master, done.mview, done.now, done.now,
                done.through_sequence, done.master_snapshot,
            ),
        ]  # fmt: skip
    return [
        dataclasses.replace(
            u,
            last_refresh=done.now,
            last_sequence=done.through_sequence,
            master_snapshot=done.master_snapshot,
        )
        if u.mview == done.mview
        else u
        for u in users
    ]
