"""Looking at views without changing them: staleness, explain, the pinned definition.

Oracle's USER_MVIEWS.STALENESS, DBMS_MVIEW.EXPLAIN_MVIEW, and the query a view reflects.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import sqlglot

from dbt.adapters.fastrefresh import capture, logsite
from dbt.adapters.fastrefresh import master as mt
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.executor import Executor
from dbt.adapters.fastrefresh.ivm import sqlgen
from dbt.adapters.fastrefresh.ivm.analysis import DIALECT, analyze, tables_of
from dbt.adapters.fastrefresh.refresh import load_masters, schema_hash
from dbt.adapters.fastrefresh.registry import MviewInfo, Registry
from dbt.adapters.fastrefresh.sqltext import TableName


def registered(registry: Registry, view: TableName) -> MviewInfo:
    row = registry.mview(view)
    if row is None or not row.definition:
        raise FastRefreshError(
            f"{view} is not a registered fast_refresh view. Fix: build it with dbt run "
            "(materialized='fast_refresh'), or check the name (schema.table)."
        )
    return row


def pinned_definition(registry: Registry, view: TableName) -> str:
    """The view's query on the master snapshots its last refresh read."""
    row = registered(registry, view)
    pins = {TableName.parse(k): int(v) for k, v in (row.master_snapshots or {}).items()}
    tree = sqlglot.parse_one(row.definition or "", read=DIALECT)
    return sqlgen.pin_tables(tree, pins).sql(dialect=DIALECT)


def staleness(
    x: Executor, registry: Registry, view: TableName, clock: Callable[[], dt.datetime]
) -> tuple[str, str]:
    """(FRESH | STALE | NEEDS_COMPILE | UNUSABLE, why), after capturing the masters."""
    registry.ensure()
    row = registry.mview(view)
    if row is None:
        return "UNUSABLE", "the view is not registered: it needs a complete refresh"
    if row.staleness in ("UNUSABLE", "NEEDS_COMPILE"):
        return row.staleness, row.last_fallback_reason or row.staleness.lower()
    states = load_masters(x, registry, row.definition or "")
    if row.master_schema_hash and schema_hash(states) != row.master_schema_hash:
        return "NEEDS_COMPILE", "a master table's columns changed since the last refresh"
    pending = []
    for state in states:
        if state.log is None:
            current = mt.current_snapshot(x, state.name)
            if current != (row.master_snapshots or {}).get(str(state.name)):
                pending.append(f"{state.name} changed (no log: the next refresh is complete)")
            continue
        capture.capture(x, registry, state.name, clock)
        log = registry.log_for_master(state.name) or state.log
        user = next((u for u in registry.log_users(log.log_table) if u.mview == view), None)
        problem = logsite.usability_problem(log, user, row.last_refresh_time)
        if problem:
            return "UNUSABLE", problem
        assert user is not None
        if log.last_sequence > user.last_sequence:
            pending.append(
                f"{log.last_sequence - user.last_sequence} log row(s) on {log.log_table}"
            )
    if pending:
        return "STALE", "; ".join(pending)
    return "FRESH", "up to date with its masters"


def explain(x: Executor, registry: Registry, target: str) -> str:
    """EXPLAIN_MVIEW: what refreshes fast, what does not and why, and the delta SQL."""
    registry.ensure()
    view: TableName | None = None
    sql = target
    if "select" not in target.lower():
        view = TableName.parse(target)
        sql = registered(registry, view).definition or ""
    lines = [f"explain_mview {view or 'query'}:"]
    masters = []
    for name in tables_of(sql):
        if not mt.table_exists(x, name):
            lines.append(f"  master {name}: does not exist")
            continue
        columns = mt.describe(x, name)[0]
        log = registry.log_for_master(name)
        masters.append((name, columns, log))
        if log is None:
            lines.append(f"  master {name}: NO materialized view log (fast refresh impossible)")
        else:
            kind = "key-less" if log.keyless else f"keyed by {', '.join(log.key_columns)}"
            lines.append(
                f"  master {name}: log {log.log_table} ({kind}; {log.flavour.lower()} flavour; "
                f"logs {', '.join(log.columns) or 'the key only'})"
            )
    plan = analyze(
        sql,
        {n: c for n, c, _ in masters},
        {n: list(lg.key_columns) for n, _, lg in masters if lg and not lg.keyless},
    )
    lines.append(f"  shape: {plan.describe()}")
    capable = plan.supported and all(lg is not None for _, _, lg in masters)
    lines.append(f"  REFRESH_FAST: {'yes' if capable else 'no'}")
    if plan.supported:
        lines.append(f"  hidden columns: {', '.join(n for n, _ in plan.hidden) or 'none'}")
        lines.append(f"  columns read: {', '.join(plan.columns_read)}")
        if plan.shape == "join":
            lines.append(
                "  note: a join reads the changed keys from its logs and joins their rows "
                "from the masters at the pinned snapshots"
            )
        elif plan.inputs:
            lines.append(
                "  note: each table's changes (from its log, or from the master by time travel "
                "when the log lacks a column) are joined with the tables before it as they "
                "are now and the tables after it as they were"
            )
        for _, _, log in masters if not plan.inputs else []:
            if log is not None and not set(plan.columns_read) <= set(log.columns):
                missing = sorted(set(plan.columns_read) - set(log.columns))
                lines.append(
                    f"  note: {log.log_table} lacks {', '.join(missing)}: refreshes read those "
                    "from the master by time travel"
                )
    if capable and view is not None and mt.table_exists(x, view):
        types = {c.name: c.type for c in mt.describe(x, view)[0]}
        sources = {
            name: sqlgen.LogSource(
                log.log_table,
                "<the next refresh's range>",
                () if log.keyless else log.key_columns,
                log.master_columns,
                log.columns,
            )
            for name, _, log in masters
            if log is not None
        }
        pins = {name: None for name, _, _ in masters}
        if plan.shape == "join":
            merge = sqlgen.join_merge(plan, view, types, sources, pins)
        elif plan.inputs:
            merge = sqlgen.join_aggregate_merge(plan, view, types, sources, pins, pins, {})
        else:
            name = masters[0][0]
            merge = sqlgen.delta_merge(plan, view, types, sources[name], pins, {})
        lines.append("  delta statement of the next fast refresh:")
        lines.append("    " + merge)
    return "\n".join(lines)
