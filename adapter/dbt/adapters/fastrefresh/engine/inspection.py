"""Looking at views without changing them: staleness, explain, the pinned definition,
and refreshing registered views by name.

Oracle's USER_MVIEWS.STALENESS, DBMS_MVIEW.EXPLAIN_MVIEW, the query a view reflects, and
DBMS_MVIEW.REFRESH with a list.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import sqlglot

from dbt.adapters.fastrefresh.engine.config import TableSpec
from dbt.adapters.fastrefresh.engine.refresh import (
    MasterState,
    RefreshResult,
    ViewRecord,
    load_masters,
    load_view,
    overwrites,
    plan_of,
    refresh_view,
    resolve_views,
    same_master_columns,
    schema_hash,
    zone_moved,
)
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.iceberg.tables import TableMeta
from dbt.adapters.fastrefresh.ivm import sqlgen
from dbt.adapters.fastrefresh.ivm.analysis import DIALECT, ViewPlan, tables_of
from dbt.adapters.fastrefresh.mlog.capture import capture
from dbt.adapters.fastrefresh.mlog.consumers import usability_problem
from dbt.adapters.fastrefresh.mlog.ddl import load_log
from dbt.adapters.fastrefresh.protocol.decisions import RefreshMethod, Staleness
from dbt.adapters.fastrefresh.protocol.env import Env
from dbt.adapters.fastrefresh.sqltext import TableName, log_table_for, storage_of


def registered(env: Env, view: TableName) -> ViewRecord:
    """The view's record (its columns not read); a clear error when it is not a
    registered fast_refresh view."""
    record = load_view(env, view, columns=False)
    if record is None or record.config is None or record.state is None:
        raise FastRefreshError(
            f"{view} is not a registered fast_refresh view. Fix: build it with dbt run "
            "(materialized='fast_refresh'), or check the name (schema.table)."
        )
    return record


def pinned_definition(env: Env, view: TableName) -> str:
    """The view's query on the master snapshots its last refresh read."""
    record = registered(env, view)
    assert record.config is not None and record.state is not None
    pins = {TableName.parse(k): int(v) for k, v in record.state.master_snapshots.items()}
    tree = sqlglot.parse_one(record.config.definition, read=DIALECT)
    return str(sqlgen.pin_tables(tree, pins).sql(dialect=DIALECT))


def staleness_of(
    env: Env, record: ViewRecord, *, zone: Callable[[], str] | None = None
) -> tuple[Staleness, str]:
    """(FRESH | STALE | NEEDS_COMPILE | UNUSABLE, why) from what the logs hold now.
    ``zone``: how to read the session's time zone (default ``env.sql.time_zone``: on a
    server a ``SET`` statement; a publish reads it once for all its views)."""
    if record.config is None or record.state is None:
        return Staleness.UNUSABLE, "the view is not registered: it needs a complete refresh"
    state = record.state
    if record.config.built_empty:
        return Staleness.UNUSABLE, (
            "built by `dbt run --empty`, without rows: its next dbt run rebuilds it"
        )
    if record.found.changed_after:
        return Staleness.UNUSABLE, (
            "the view's table changed after its last refresh (a refresh did not finish, or "
            "it was written outside dbt-fastrefresh): it needs a complete refresh"
        )
    masters = load_masters(env, record.config.definition, log_columns=False)
    plan = plan_of(env, record.config.definition, masters)
    current = schema_hash(masters, plan)
    if not same_master_columns(record.config.master_schema_hash, current, masters):
        return Staleness.NEEDS_COMPILE, (
            "a master table's columns the query reads, or its identifier fields, changed "
            "since the last refresh"
        )
    moved = zone_moved(state, plan, (zone or env.sql.time_zone)() if plan.zoned else None)
    if moved is not None:
        return Staleness.NEEDS_COMPILE, f"{moved}; its next refresh is complete"
    pending = []
    for m in masters:
        if m.log is None:
            if str(log_table_for(m.name)) in state.positions:
                return Staleness.UNUSABLE, (
                    f"the log on {m.name} was dropped after the view's last refresh: its "
                    "next refresh is complete"
                )
            if m.meta.current_snapshot != state.master_snapshots.get(str(m.name)):
                pending.append(f"{m.name} changed (no log: the next refresh is complete)")
            continue
        position = state.positions.get(str(m.log.log_table))
        problem = usability_problem(m.log, record.name, position, state.last_refresh_time)
        if problem is not None:
            return Staleness.UNUSABLE, str(problem)
        assert position is not None
        if m.log.state.last_sequence > position.last_sequence:
            rows = m.log.state.last_sequence - position.last_sequence
            pending.append(f"{rows} log row(s) on {m.log.log_table}")
        elif m.meta.current_snapshot != m.log.state.captured_through:
            # Committed, not captured yet (Oracle's logs capture as the DML commits: its
            # view is STALE at once). A commit that changed no row is captured as none.
            pending.append(f"{m.name} has commits its log has not captured yet")
    if pending:
        return Staleness.STALE, "; ".join(pending)
    return Staleness.FRESH, "up to date with its masters"


def staleness(env: Env, view: TableName) -> tuple[Staleness, str]:
    """``staleness_of`` after capturing the view's masters (what ``is_fresh`` tests)."""
    record = load_view(env, view, columns=False)
    if record is None or record.config is None:
        return Staleness.UNUSABLE, "the view is not registered: it needs a complete refresh"
    for name in record.config.masters:
        if load_log(env, name, columns=False) is not None:
            capture(env, name)
    return staleness_of(env, record)


# How a query begins (after blanks, comments and parentheses), where a name cannot.
_QUERY = re.compile(r"(?:\s|--[^\n]*\n|/\*.*?\*/|\()*(?:select|with)\b", re.I | re.S)


def explain(env: Env, target: str) -> str:
    """EXPLAIN_MVIEW: what refreshes fast, what does not and why, and the delta SQL."""
    view: TableName | None = None
    sql = target
    if not _QUERY.match(target):  # a view's name, `selected_ids` too
        view = TableName.parse(target)
        record = registered(env, view)
        assert record.config is not None
        sql = record.config.definition
    lines = [f"explain_mview {view or 'query'}:"]
    fresh: dict[TableName, TableMeta] = {}
    sql = resolve_views(env, sql, fresh)
    masters = load_masters(env, sql, read=fresh)
    known = {m.name for m in masters}
    for name in tables_of(sql):
        if name not in known:
            lines.append(f"  master {name}: does not exist or is not an Iceberg table")
    for m in masters:
        if m.log is None:
            lines.append(f"  master {m.name}: NO materialized view log (fast refresh impossible)")
            continue
        c = m.log.config
        kind = "key-less" if c.keyless else f"keyed by {', '.join(c.key_columns)}"
        lines.append(
            f"  master {m.name}: log {c.log_table} ({kind}; {c.flavour.value.lower()} flavour; "
            f"logs {', '.join(c.columns) or 'the key only'}; {c.purge.value} purge)"
        )
    plan = plan_of(env, sql, masters)
    lines.append(f"  shape: {plan.describe()}")
    capable = plan.supported and all(m.log is not None for m in masters)
    lines.append(f"  REFRESH_FAST: {'yes' if capable else 'no'}")
    if plan.supported:
        lines.append(f"  hidden columns: {', '.join(n for n, _ in plan.hidden) or 'none'}")
        lines.append(f"  columns read: {', '.join(plan.columns_read)}")
        lines += [f"  note: {note}" for note in sqlgen.notes(plan)]
        for m in masters if not plan.inputs else []:
            read = set(plan.columns_read_of(m.name))
            if m.log is not None and not read <= set(m.log.config.columns):
                missing = sorted(read - set(m.log.config.columns))
                lines.append(
                    f"  note: {m.log.log_table} lacks {', '.join(missing)}: refreshes read "
                    "those from the master by time travel"
                )
    current = load_view(env, view) if capable and view is not None else None
    if current is not None and view is not None:
        lines += _next_delta(plan, view, current, masters)
    return "\n".join(lines)


def _next_delta(
    plan: ViewPlan, view: TableName, current: ViewRecord, masters: list[MasterState]
) -> list[str]:
    """The delta statement the view's next fast refresh runs (its log range left open)."""
    types = {c.name: c.type for c in current.meta.columns}
    sources: dict[TableName, sqlgen.Source] = {
        m.name: sqlgen.LogSource(
            m.log.log_table,
            "<the next refresh's range>",
            () if m.log.config.keyless else m.log.config.key_columns,
            m.log.config.master_columns,
            m.log.config.columns,
            master=m.name,
        )
        for m in masters
        if m.log is not None
    }
    pins: dict[TableName, int | None] = {m.name: None for m in masters}
    avg_types = current.config.avg_types if current.config else {}
    # The statement writes the view's storage table, as the refresh's does (the view over
    # it has no hidden columns and is not writable).
    into = sqlgen.Target(storage_of(view), types, avg_types, overwrite=overwrites(current))
    statement = sqlgen.delta_statement(plan, into, sources, pins=pins, old_pins=pins)
    return ["  delta statement of the next fast refresh:", "    " + statement]


def refresh_mviews(env: Env, names: list[str], method: object) -> list[RefreshResult]:
    """DBMS_MVIEW.REFRESH(list, method): refresh registered views from their definitions."""
    chosen = RefreshMethod.parse(method, where="refresh_mviews", argument="method")
    if not names:
        raise FastRefreshError(
            "refresh_mviews needs the views to refresh (names), and got none, so nothing "
            "was refreshed. Fix: dbt run-operation fast_refresh.refresh_mviews --args "
            '"{names: [schema.view], method: force}".'
        )
    # Every name checked before any view is refreshed: a typo in the list refreshed the
    # views before it, and said only that it was none.
    records = [(view, registered(env, view)) for view in map(TableName.parse, names)]
    results = []
    for view, record in records:
        assert record.config is not None
        spec = TableSpec(record.config.table_options, record.config.table_properties)
        results.append(
            refresh_view(
                env,
                view=view,
                sql=record.config.definition,
                method=chosen,
                exists=True,
                table=spec,
            )
        )
    return results
