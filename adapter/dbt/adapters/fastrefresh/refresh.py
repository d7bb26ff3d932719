"""One view's refresh, end to end: Oracle's DBMS_MVIEW.REFRESH for a dbt model.

1. Analyze the view's SQL; read its masters and their logs.
2. Setup per log (capture, verify, choose the refresh time, mark) — ``logsite.setup``.
3. Decide: fast, or complete with the reason (``refresh_method: force``), or fail
   naming cause and fix (``refresh_method: fast``).
4. Apply: one MERGE of the delta (fast), or ``CREATE OR REPLACE TABLE ... AS`` on the
   pinned master snapshots (complete).
5. Wrap-up of the logs (record the view's refresh, purge) — ``logsite.wrap_up_all``; then the
   view's registry row and the run's history row.

Crash safety: the registry remembers the view table's Iceberg snapshot after each
refresh. A refresh that died after changing the view but before its wrap-up left a
different snapshot, and the next refresh rebuilds the view completely instead of
applying a change twice. Commits that only rewrote the view's files (compaction) do not
count: they change no row.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from dbt.adapters.fastrefresh import logsite, upkeep
from dbt.adapters.fastrefresh import master as mt
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.executor import Executor
from dbt.adapters.fastrefresh.ivm import sqlgen
from dbt.adapters.fastrefresh.ivm.analysis import DIALECT, ViewPlan, analyze, tables_of
from dbt.adapters.fastrefresh.registry import LogInfo, MviewInfo, Registry
from dbt.adapters.fastrefresh.sqltext import TableName, literal

METHODS = ("force", "fast", "complete")
# Under ``force``: a log range holding more rows than this fraction of the master's rows
# refreshes completely: reading, sorting and netting that many log rows costs about as
# much as rebuilding from the master. Ranges below CHEAP_RANGE rows are not checked (the
# check costs a metadata query). The fixed cost of a fast refresh can make a rebuild of a
# small master cheaper still (benchmarks/results/full); that is not guessed here.
COMPLETE_ABOVE_FRACTION = 0.2
CHEAP_RANGE = 20_000
VIEW_PROPERTIES = "'format-version'='2'"
# An unpartitioned view's MERGE needs no shuffle before its write (Iceberg's default hash
# distribution adds one; about 0.1 s of a 1M-row view's MERGE here).
UNPARTITIONED_VIEW_PROPERTIES = VIEW_PROPERTIES + ", 'write.merge.distribution-mode'='none'"


@dataclass
class RefreshResult:
    view: TableName
    refresh_type: str  # FAST or COMPLETE
    reason: str | None
    log_rows: int
    seconds: float
    phases: dict[str, float] = field(default_factory=dict)
    noop: bool = False

    def message(self) -> str:
        if self.refresh_type == "FAST":
            what = "no changes" if self.noop else f"{self.log_rows} log row(s)"
            return f"FAST refresh of {self.view}: {what}"
        return f"COMPLETE refresh of {self.view}: {self.reason}"


@dataclass(frozen=True)
class MasterState:
    name: TableName
    columns: list[mt.Column]
    log: LogInfo | None


def load_masters(x: Executor, registry: Registry, sql: str) -> list[MasterState]:
    """The Iceberg tables a view's query reads, with their columns and logs."""
    found: list[tuple[TableName, list[mt.Column]]] = []
    for name in tables_of(sql):
        if not mt.table_exists(x, name):
            continue
        columns, info = mt.describe(x, name)
        if (
            info.get("Provider", "").lower() != "iceberg"
            and "table_type=iceberg" not in info.get("Table Properties", "").lower()
        ):
            continue
        found.append((name, columns))
    logs = registry.logs_for_masters(name for name, _ in found)
    return [MasterState(name, columns, logs.get(name)) for name, columns in found]


def schema_hash(masters: list[MasterState]) -> str:
    text = ";".join(
        f"{m.name}:" + ",".join(f"{c.name} {c.type}" for c in m.columns) for m in masters
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def decide(
    method: str,
    full_refresh: bool,
    exists: bool,
    plan: ViewPlan,
    row: MviewInfo | None,
    masters: list[MasterState],
    columns_hash: str,
    view_snapshot: int | None,
) -> tuple[str | None, bool]:
    """Why the view cannot refresh fast (None: it can), and whether that is expected.

    Expected reasons (complete method, --full-refresh, first build) never fail a
    ``fast`` refresh; the others do, under ``fast``.
    """
    if method == "complete":
        return "refresh_method is complete", True
    if full_refresh:
        return "--full-refresh", True
    if not exists:
        return "first build", True
    if row is None:
        return (
            "the view is not registered (built by another materialization, or unregistered)",
            False,
        )
    if row.query_hash != plan.query_hash:
        return "the view's definition changed", False
    if row.master_schema_hash != columns_hash:
        return "a master table's columns changed", False
    if row.view_snapshot is None or row.view_snapshot != view_snapshot:
        return (
            "a previous refresh of the view did not finish (or its table was changed outside "
            "dbt-fastrefresh)",
            False,
        )
    if not plan.supported:
        return plan.reason, False
    for m in masters:
        if m.log is None:
            return f"the master table {m.name} has no materialized view log", False
    return None, True


def _only_rewritten(
    x: Executor, view: TableName, recorded: int | None, current: int | None
) -> bool:
    """Whether every commit of the view since the refresh that left it at ``recorded``
    only rewrote files: Iceberg's ``replace`` (``rewrite_data_files``,
    ``rewrite_position_delete_files``, ``rewrite_manifests``), which changes no row. Such
    a view still holds what that refresh wrote, and can refresh fast."""
    if recorded is None or current is None or recorded == current:
        return False
    chain = mt.chain_after(mt.snapshots(x, view), current, recorded)
    return (
        chain.gap is None
        and bool(chain.snapshots)
        and all(s.operation == "replace" for s in chain.snapshots)
    )


def _fix_for(reason: str, masters: list[MasterState]) -> str:
    if "has no materialized view log" in reason:
        missing = next((m.name for m in masters if m.log is None), "")
        return f"create it with dbt run-operation fast_refresh.create_mview_log --args \"{{master: '{missing}'}}\", then run with --full-refresh"
    if "no keyed materialized view log" in reason:
        return (
            "create (or recreate) that table's log with a primary key: dbt run-operation "
            "fast_refresh.create_mview_log --args \"{master: '<table>', key: ['<key column>']}\" "
            "(columns: [] logs the key only, which a join needs), then run with --full-refresh"
        )
    if "the query uses" in reason or "not fast-refreshable" in reason or "must read" in reason:
        return "rewrite the query into a supported shape (see docs/fast-refresh.md), or set refresh_method='force'"
    if "expire_snapshots removed it" in reason:
        return (
            "run `dbt run --full-refresh -s <model>` once (a complete refresh), or set "
            "refresh_method='force'; to refresh fast after the next change, keep the masters' "
            "snapshots longer than the time between refreshes (expire_snapshots older_than)"
        )
    return "run `dbt run --full-refresh -s <model>` once (a complete refresh), or set refresh_method='force'"


def refresh_view(
    x: Executor,
    registry: Registry,
    view: TableName,
    sql: str,
    method: str,
    full_refresh: bool,
    exists: bool,
    table_options: str,
    clock: Callable[[], dt.datetime],
) -> RefreshResult:
    """Refresh one view (see the module docstring)."""
    if method not in METHODS:
        raise FastRefreshError(
            f"Model {view}: refresh_method must be one of {', '.join(METHODS)}, got {method!r}. "
            "Fix: set refresh_method='force' (fast when possible, else complete)."
        )
    started = time.monotonic()
    phases: dict[str, float] = {}
    run_started = clock()
    registry.ensure()

    masters = load_masters(x, registry, sql)
    plan = analyze(
        sql,
        {m.name: m.columns for m in masters},
        {m.name: list(m.log.key_columns) for m in masters if m.log and not m.log.keyless},
    )
    row = registry.mview(view)
    columns_hash = schema_hash(masters)
    view_snapshot = mt.current_snapshot(x, view, refresh=False) if exists else None
    if row is not None and _only_rewritten(x, view, row.view_snapshot, view_snapshot):
        view_snapshot = row.view_snapshot  # compacted since: the same rows
    reason, expected = decide(
        method, full_refresh, exists, plan, row, masters, columns_hash, view_snapshot
    )
    phases["analyze"] = time.monotonic() - started

    mark = time.monotonic()
    setups: dict[TableName, logsite.Setup] = {}
    for m in masters:
        if m.log is not None:
            setups[m.name] = logsite.setup(
                x, registry, m.name, view, clock, row.last_refresh_time if row else None,
                m.columns,
            )  # fmt: skip
    pins: dict[TableName, int | None] = {
        m.name: setups[m.name].master_snapshot
        if m.name in setups
        else mt.current_snapshot(x, m.name)
        for m in masters
    }
    captured = sum(s.capture.seconds for s in setups.values())
    phases["capture"] = captured
    phases["setup"] = time.monotonic() - mark - captured
    if reason is None:
        for setup in setups.values():
            if setup.problem:
                reason, expected = setup.problem, False
                break
    sources: dict[TableName, sqlgen.Source] = {}
    if reason is None:
        reason = _plan_sources(plan, masters, setups, sources) or _history_gone(
            x, plan, setups, sources, pins
        )
        expected = reason is None
    if reason is None and method == "force":
        reason = _range_too_large(x, setups, pins)
    if reason is not None and not expected and method == "fast":
        _record_failure(registry, view, run_started, clock, f"{reason}", "FAST")
        raise FastRefreshError(
            f"Fast refresh of {view} is not possible: {reason}. Fix: {_fix_for(reason, masters)}."
        )

    mark = time.monotonic()
    log_rows = 0
    noop = False
    try:
        with upkeep.reading(s.log.log_table for s in setups.values()):
            refresh_type, log_rows, noop = _apply(
                x, view, plan, reason, setups, sources, pins, table_options
            )
    except Exception as exc:
        _record_failure(
            registry, view, run_started, clock, str(exc), "FAST" if reason is None else "COMPLETE"
        )
        raise
    phases["apply"] = time.monotonic() - mark
    new_snapshot = mt.current_snapshot(x, view, refresh=False)

    mark = time.monotonic()
    logsite.wrap_up_all(x, registry, list(setups.values()))
    phases["wrap_up"] = time.monotonic() - mark
    mark = time.monotonic()
    now = max((s.now for s in setups.values()), default=clock())
    _record_view(
        registry,
        view,
        plan,
        method,
        masters,
        columns_hash,
        refresh_type,
        now,
        reason,
        new_snapshot,
        pins,
        row,
        table_options,
    )
    phases["record"] = time.monotonic() - mark
    seconds = time.monotonic() - started
    phases["total"] = seconds
    registry.insert(
        "refresh_runs",
        [
            {
                "run_id": uuid.uuid4().hex,
                "mview": str(view),
                "started": run_started,
                "ended": clock(),
                "refresh_type": refresh_type,
                "reason": reason,
                "log_rows_read": log_rows,
                "rows_applied": None,
                "status": "SUCCESS",
                "error": None,
                "phase_seconds": {k: round(v, 4) for k, v in phases.items()},
            }
        ],
    )
    return RefreshResult(view, refresh_type, reason, log_rows, seconds, phases, noop)


def _apply(
    x: Executor,
    view: TableName,
    plan: ViewPlan,
    reason: str | None,
    setups: dict[TableName, logsite.Setup],
    sources: dict[TableName, sqlgen.Source],
    pins: dict[TableName, int | None],
    table_options: str,
) -> tuple[str, int, bool]:
    """Change the view: one MERGE per master with pending changes (a join: one MERGE for
    all of them), or a rebuild."""
    if reason is None:
        pending = {m: s for m, s in setups.items() if _pending(s)}
        log_rows = sum(s.through_sequence - s.after_sequence for s in pending.values())
        if not pending:
            return "FAST", 0, True
        types = {c.name: c.type for c in mt.describe(x, view)[0]}
        if plan.shape == "join":
            logs = {m: s for m, s in sources.items() if m in pending}
            assert all(isinstance(s, sqlgen.LogSource) for s in logs.values())
            x.execute(sqlgen.join_merge(plan, view, types, logs, pins))  # type: ignore[arg-type]
            return "FAST", log_rows, False
        avg_types = _avg_types(x, plan, pins)
        if plan.inputs:  # an aggregate over a join: every master's changes in one MERGE
            old_pins = _old_pins(setups, pins)
            changed = {m: s for m, s in sources.items() if m in pending}
            x.execute(
                sqlgen.join_aggregate_merge(plan, view, types, changed, pins, old_pins, avg_types)
            )
            return "FAST", log_rows, False
        for name in pending:
            x.execute(sqlgen.delta_merge(plan, view, types, sources[name], pins, avg_types))
        return "FAST", log_rows, False
    select = sqlgen.complete_select(plan, pins)
    options = table_options.lower()
    if "tblproperties" in options:
        properties = ""
    elif "partitioned by" in options:
        properties = f"TBLPROPERTIES ({VIEW_PROPERTIES})"
    else:
        properties = f"TBLPROPERTIES ({UNPARTITIONED_VIEW_PROPERTIES})"
    x.execute(
        f"CREATE OR REPLACE TABLE {view.sql} USING iceberg {table_options} {properties} AS {select}"
    )
    return "COMPLETE", 0, False


def _range_too_large(
    x: Executor, setups: dict[TableName, logsite.Setup], pins: dict[TableName, int | None]
) -> str | None:
    """Why a complete refresh is cheaper than reading this view's log range (or None)."""
    for name, s in setups.items():
        rows = s.through_sequence - s.after_sequence
        pin = pins.get(name)
        if rows < CHEAP_RANGE or pin is None:
            continue
        total = mt.record_count(x, name, pin)
        if total and rows > COMPLETE_ABOVE_FRACTION * total:
            return (
                f"the log range holds {rows:,} rows for this view, {rows / total:.0%} of the "
                f"{total:,} rows of {name}; above {COMPLETE_ABOVE_FRACTION:.0%} a complete "
                "refresh is cheaper (refresh_method='fast' refreshes fast regardless)"
            )
    return None


def _plan_sources(
    plan: ViewPlan,
    masters: list[MasterState],
    setups: dict[TableName, logsite.Setup],
    sources: dict[TableName, sqlgen.Source],
) -> str | None:
    """Where each master's changes come from; a reason when they cannot be had."""
    if plan.inputs and plan.shape == "aggregate":
        # The delta rule joins each table's changes with the others as they were.
        users = {m.name: setups[m.name].user for m in masters}
        unknown = [n for n, u in users.items() if u is None or u.master_snapshot is None]
        if unknown:
            return (
                f"the snapshot of {', '.join(map(str, unknown))} that the view last reflected "
                "is unknown (an aggregate over a join reads it)"
            )
    for m in masters:
        setup = setups[m.name]
        log = setup.log
        source = sqlgen.LogSource(
            log.log_table,
            setup.range_predicate(),
            () if log.keyless else log.key_columns,
            log.master_columns,
            log.columns,
        )
        read = set(plan.columns_read_of(m.name))
        if plan.shape == "join" or read <= set(log.columns):
            # A join projection needs only the changed keys (it reads the log's images when
            # the log holds the columns, else the pinned master's rows for those keys).
            sources[m.name] = source
            continue
        missing = sorted(read - set(log.columns))
        previous = setup.user.master_snapshot if setup.user else None
        if log.keyless or previous is None or setup.master_snapshot is None:
            return (
                f"the log {log.log_table} does not hold column(s) {', '.join(missing)} the view "
                "reads, and the master's earlier snapshot is unknown"
            )
        sources[m.name] = sqlgen.MasterSource(source, m.name, previous, setup.master_snapshot)
    return None


def _pending(setup: logsite.Setup) -> bool:
    return setup.through_sequence > setup.after_sequence


def _old_pins(
    setups: dict[TableName, logsite.Setup], pins: dict[TableName, int | None]
) -> dict[TableName, int | None]:
    """Each master as the view last reflected it. A master without log rows for the view
    has not changed since (its commits, if any, changed no row: compaction, empty DML), so
    its pinned snapshot stands for that one, which may have been expired since."""
    return {
        m: (s.user.master_snapshot if s.user else None) if _pending(s) else pins.get(m)
        for m, s in setups.items()
    }


def _history_gone(
    x: Executor,
    plan: ViewPlan,
    setups: dict[TableName, logsite.Setup],
    sources: dict[TableName, sqlgen.Source],
    pins: dict[TableName, int | None],
) -> str | None:
    """Why a master snapshot this refresh must time-travel to is gone (or None).

    The delta rule of an aggregate over a join reads the tables after a changed one as the
    view last reflected them, and a log without a column the view reads sends the refresh
    to the master's earlier snapshot; ``expire_snapshots`` may have removed either.
    """
    needed: dict[TableName, int | None] = {}
    if plan.inputs and plan.shape == "aggregate":
        old = _old_pins(setups, pins)
        changed = [i for i, inp in enumerate(plan.inputs) if _pending(setups[inp.master])]
        if changed:
            for inp in plan.inputs[changed[0] + 1 :]:
                if _pending(setups[inp.master]):
                    needed[inp.master] = old[inp.master]
    for m, source in sources.items():
        if isinstance(source, sqlgen.MasterSource) and _pending(setups[m]):
            needed[m] = source.old_snapshot
    for master, snapshot in sorted(needed.items(), key=lambda item: str(item[0])):
        if snapshot is not None and snapshot not in mt.snapshots(x, master):
            return (
                f"snapshot {snapshot} of {master}, the one the view last reflected, is gone "
                "(expire_snapshots removed it), and this refresh reads the master as it was then"
            )
    return None


def _avg_types(x: Executor, plan: ViewPlan, pins: dict[TableName, int | None]) -> dict[str, str]:
    """Spark's result type of each AVG(arg) (so incremental averages match exactly)."""
    args = sorted({a.arg for a in plan.aggregates if a.kind == "avg" and a.arg})
    if not args:
        return {}
    tree = sqlgen.pin_tables(sqlglot.parse_one(plan.qualified, read=DIALECT), pins)
    for arg in ("group", "distinct"):
        tree.set(arg, None)
    tree = tree.select(*[f"typeof(avg({arg}))" for arg in args], append=False, dialect=DIALECT)
    tree.set("where", exp.Where(this=exp.false()))
    row = x.query(tree.sql(dialect=DIALECT))[0]
    return dict(zip(args, [str(v) for v in row], strict=True))


def _record_view(
    registry: Registry,
    view: TableName,
    plan: ViewPlan,
    method: str,
    masters: list[MasterState],
    columns_hash: str,
    refresh_type: str,
    now: dt.datetime,
    reason: str | None,
    view_snapshot: int | None,
    pins: dict[TableName, int | None],
    row: MviewInfo | None,
    table_options: str,
) -> None:
    values = {
        "definition": plan.sql,
        "table_options": " ".join(table_options.split()),
        "query_hash": plan.query_hash,
        "refresh_method": method,
        "masters": [str(m.name) for m in masters],
        "shape": plan.shape if plan.supported else f"unsupported: {plan.reason}",
        "last_refresh_type": refresh_type,
        "last_refresh_time": now,
        "staleness": "FRESH",
        "last_fallback_reason": reason
        if refresh_type == "COMPLETE"
        else (row.last_fallback_reason if row else None),
        "view_snapshot": view_snapshot,
        "master_snapshots": {str(k): v for k, v in pins.items() if v is not None},
        "master_schema_hash": columns_hash,
    }
    if row is None:
        registry.insert("mviews", [{"mview": str(view), "registered_at": now, **values}])
    else:
        registry.update("mviews", f"mview = {literal(str(view))}", values)


def _record_failure(
    registry: Registry,
    view: TableName,
    started: dt.datetime,
    clock: Callable[[], dt.datetime],
    error: str,
    kind: str,
) -> None:
    registry.insert(
        "refresh_runs",
        [
            {
                "run_id": uuid.uuid4().hex,
                "mview": str(view),
                "started": started,
                "ended": clock(),
                "refresh_type": kind,
                "reason": None,
                "log_rows_read": 0,
                "rows_applied": None,
                "status": "FAILED",
                "error": error[:4000],
                "phase_seconds": {},
            }
        ],
    )
    where = f"mview = {literal(str(view))}"
    if registry.select("mviews", where):
        registry.update(
            "mviews", where, {"staleness": "UNUSABLE", "last_fallback_reason": error[:4000]}
        )


def refresh_mviews(
    x: Executor,
    registry: Registry,
    names: list[str],
    method: str,
    clock: Callable[[], dt.datetime],
) -> list[RefreshResult]:
    """DBMS_MVIEW.REFRESH(list, method): refresh registered views from their definitions."""
    from dbt.adapters.fastrefresh.inspection import registered

    if method not in METHODS:
        raise FastRefreshError(
            f"refresh_mviews: method must be one of {', '.join(METHODS)} (or Oracle's '?', "
            f"'f', 'c'), got {method!r}. Fix: method='force' (fast when possible, else "
            "complete)."
        )
    registry.ensure()
    results = []
    for name in names:
        view = TableName.parse(name)
        row = registered(registry, view)
        results.append(
            refresh_view(
                x,
                registry,
                view,
                row.definition or "",
                method,
                False,
                mt.table_exists(x, view),
                row.table_options or "",
                clock,
            )
        )
    return results
