"""Materialized-view logs: create and drop (Oracle's CREATE/DROP MATERIALIZED VIEW LOG).

The log of ``db.t`` is the Iceberg table ``db.mlog__t``: the master's key columns, the
logged columns, and ``snaptime__`` (timestamp flavour only), ``dmltype__``, ``old_new__``,
``change_vector__``, ``sequence__`` and ``xid__``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence

from dbt.adapters.fastrefresh import locks, logsite, sqltext
from dbt.adapters.fastrefresh import master as mt
from dbt.adapters.fastrefresh.capture import log_lock, no_log_error
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.executor import Executor
from dbt.adapters.fastrefresh.registry import METADATA_CLEANUP, Registry
from dbt.adapters.fastrefresh.sqltext import TableName, ident, literal, log_table_for

# Logs take a commit per capture, mark and purge.
LOG_TABLE_PROPERTIES = {"format-version": "2", **METADATA_CLEANUP}


def _resolve_key(
    x: Executor, master: TableName, columns: list[mt.Column], key: Sequence[str] | None
) -> list[str]:
    names = [c.name for c in columns]
    if key is None:
        found = mt.identifier_fields(x, master)
        return [n for n in names if n in found]  # table order, not Iceberg's set order
    wanted = [str(k).lower() for k in key]
    unknown = [k for k in wanted if k not in names]
    if unknown:
        raise FastRefreshError(
            f"Key column(s) {', '.join(unknown)} are not columns of {master} "
            f"({', '.join(names)}). Fix: pass key=[...] with existing column names."
        )
    return wanted


def create_mview_log(
    x: Executor,
    registry: Registry,
    master_name: object,
    columns: Sequence[str] | None,
    commit_scn: bool,
    key: Sequence[str] | None,
    now: Callable[[], dt.datetime],
) -> str:
    """Create the log of a master and register it; fail with the fix when it cannot."""
    master = TableName.parse(master_name)
    registry.ensure()
    all_columns = mt.require_iceberg(x, master)
    maps = [c.name for c in all_columns if not c.comparable]
    if maps:
        raise FastRefreshError(
            f"{master} has MAP column(s) {', '.join(maps)}, which Spark cannot compare, so "
            "changes to its rows cannot be told apart. Fix: store them as a struct/array or a "
            "JSON string, or keep them in another table."
        )
    log_table = log_table_for(master)
    with locks.holding([log_lock(log_table)]):
        if registry.log_for_master(master) is not None:
            raise FastRefreshError(
                f"{master} already has a materialized view log, {log_table}. Fix: use it, or "
                f"drop it first with fast_refresh.drop_mview_log('{master}')."
            )
        if mt.table_exists(x, log_table):
            raise FastRefreshError(
                f"A table {log_table} exists but is not a registered log (an earlier "
                f"create_mview_log was interrupted, or the name is taken). Fix: run "
                f"fast_refresh.drop_mview_log('{master}') to remove it, then create the log."
            )
        names = [c.name for c in all_columns]
        key_columns = _resolve_key(x, master, all_columns, key)
        keyless = not key_columns
        if columns is None or keyless:
            # Key-less logs hold full row images: the row is its own identity.
            logged = [n for n in names if n not in key_columns]
        else:
            logged = [str(c).lower() for c in columns]
            unknown = [c for c in logged if c not in names]
            if unknown:
                raise FastRefreshError(
                    f"Column(s) {', '.join(unknown)} are not columns of {master} "
                    f"({', '.join(names)}). Fix: list existing columns, or omit columns= to "
                    "log them all."
                )
            logged = [n for n in names if n in logged and n not in key_columns]
        types = {c.name: c.type for c in all_columns}
        meta = [] if commit_scn else [("snaptime__", "TIMESTAMP_NTZ")]
        meta += [
            ("dmltype__", "STRING"),
            ("old_new__", "STRING"),
            ("change_vector__", "BINARY"),
            ("sequence__", "BIGINT"),
            ("xid__", "BIGINT"),
        ]
        body = ",\n  ".join(
            [f"{ident(n)} {types[n]}" for n in key_columns + logged]
            + [f"{ident(n)} {t}" for n, t in meta]
        )
        properties = {**LOG_TABLE_PROPERTIES, "fast_refresh.master": str(master)}
        current = mt.current_snapshot(x, master)
        x.execute(
            f"CREATE TABLE {log_table.sql} (\n  {body}\n) USING iceberg TBLPROPERTIES ({sqltext.properties(properties)})"
        )
        stamp = now()
        try:
            registry.insert(
                "mview_logs",
                [
                    {
                        "master": str(master),
                        "log_table": str(log_table),
                        "flavour": "COMMIT_SCN" if commit_scn else "TIMESTAMP",
                        "key_columns": key_columns,
                        "logged_columns": logged,
                        "master_columns": names,
                        "keyless": keyless,
                        "created": stamp,
                        "oldest": stamp,
                        "youngest": stamp,
                        "last_purge_time": None,
                        "last_purge_rows": 0,
                        "captured_through": current,
                        "captured_at": stamp,
                        "last_sequence": 0,
                        "marked_sequence": 0,
                        "purged_through": None,
                        "purged_sequence": 0,
                        "younger_than": stamp,
                        "younger_reason": "log created",
                    }
                ],
            )
        except Exception:
            x.execute(f"DROP TABLE IF EXISTS {log_table.sql}")  # leave no partial state
            raise
        logsite.forget(log_table)
    kind = "key-less (full row images)" if keyless else f"keyed by ({', '.join(key_columns)})"
    flavour = "commit-SCN" if commit_scn else "timestamp"
    return (
        f"created materialized view log {log_table} on {master}: {kind}, logging "
        f"{len(logged)} column(s), {flavour} flavour, capturing from snapshot {current}"
    )


def drop_mview_log(x: Executor, registry: Registry, master_name: object) -> str:
    """Drop a log and its registrations; views on it then need a complete refresh."""
    master = TableName.parse(master_name)
    registry.ensure()
    log_table = log_table_for(master)
    with locks.holding([log_lock(log_table)]):
        log = registry.log_for_master(master)
        if log is None:
            if mt.table_exists(x, log_table):
                x.execute(f"DROP TABLE {log_table.sql}")
                return f"dropped {log_table}, a leftover log table that was never registered"
            raise no_log_error(master)
        users = registry.log_users(log.log_table)
        where = f"log_table = {literal(str(log.log_table))}"
        # Registry first: a crash after it leaves only an unregistered table, which a
        # later drop or create reports and removes.
        registry.delete("mview_log_users", where)
        registry.delete("mview_logs", where)
        x.execute(f"DROP TABLE IF EXISTS {log.log_table.sql}")
        logsite.forget(log.log_table)
        registry.forget_deferred(log.log_table)
        views = sorted(str(u.mview) for u in users)
        if views:
            registry.update(
                "mviews",
                f"mview IN ({', '.join(literal(v) for v in views)})",
                {"staleness": "UNUSABLE"},
            )
    note = f"; views that used it need a complete refresh: {', '.join(views)}" if views else ""
    return f"dropped materialized view log {log.log_table} on {master}{note}"
