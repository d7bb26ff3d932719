"""One view's refresh, end to end: Oracle's DBMS_MVIEW.REFRESH for a dbt model.

1. **Read**: the view's query is analyzed (cached per process); its masters, their logs
   and the view's own state are read (``Tables``: milliseconds on the Java path).
2. **Decide**: fast, or complete with a reason (``refresh_method: force``), or fail naming
   cause and fix (``refresh_method: fast``) — ``decide``.
3. **Setup** per log (capture, choose the time, mark) — ``mlog.consumers.setup``.
4. **Apply**: one MERGE of the delta (fast; a small view is replaced whole), or a rebuild
   on the pinned master snapshots (complete): every row of the table replaced
   (``sqltext.replace_all``) when the view's definition is unchanged (its history kept
   for the logs on it), else ``CREATE OR REPLACE TABLE ... AS``. The view's new state (its
   place on each log, the master snapshots it reflects) goes with that commit. With no
   change pending nothing is written at all.
5. **Wrap-up**: a complete refresh registers the view on logs it is new to; the logs'
   consumed rows are purged (``mlog.consumers.purge_after_refresh``); the run is journaled
   for the registry (``registry.publish``).

Crash safety: on the Java path the view's state is in the snapshot summary of the commit
that changed the view, so a refresh that dies leaves the view and its state together. On
the SQL path the state follows as a table property; a refresh that died between the two
left the view past its recorded state, and the next refresh rebuilds it completely
instead of applying a change twice. Commits that only rewrote the view's files (Iceberg's
``replace``: compaction) do not count: they change no row.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import re
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import sqlglot
from dbt.adapters.events.logging import AdapterLogger
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.transforms import eliminate_qualify

from dbt.adapters.fastrefresh import sqltext
from dbt.adapters.fastrefresh.engine.config import TableSpec, ViewDocs
from dbt.adapters.fastrefresh.engine.surface import ensure_view, storage_read, view_order
from dbt.adapters.fastrefresh.engine.upstream import Upstream
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.iceberg.columns import Column
from dbt.adapters.fastrefresh.iceberg.tables import (
    GAP_RECREATED,
    GAP_REPLACED,
    Found,
    TableMeta,
    latest_state,
)
from dbt.adapters.fastrefresh.ivm import sqlgen, zones
from dbt.adapters.fastrefresh.ivm.analysis import (
    DIALECT,
    HIDDEN_PREFIX,
    Shape,
    ViewPlan,
    analyze,
    tables_of,
)
from dbt.adapters.fastrefresh.ivm.checks import NOT_A_MASTER
from dbt.adapters.fastrefresh.ivm.sqlgen.aggregate import NON_FINITE_FIX, NON_FINITE_LEFT, SUM_GUARD
from dbt.adapters.fastrefresh.mlog.consumers import (
    Setup,
    purge_after_refresh,
    register,
    setup,
    setup_writes,
    usability_problem,
)
from dbt.adapters.fastrefresh.mlog.ddl import (
    LoadedLog,
    create_mview_log,
    drop_mview_log,
    drop_replaced_log,
    identifiers_moved,
    load_log,
    log_differences,
    log_lock,
    log_mismatch,
    log_table_altered,
    planned_key,
    recreate_fix,
    require_unique_key,
    unloggable,
)
from dbt.adapters.fastrefresh.protocol import upkeep
from dbt.adapters.fastrefresh.protocol.decisions import (
    NEEDS_COMPILE,
    REQUESTED,
    Reason,
    ReasonCode,
    RefreshMethod,
    RefreshType,
    fix_names,
)
from dbt.adapters.fastrefresh.protocol.env import Env
from dbt.adapters.fastrefresh.protocol.keys import duplicate_key_failure
from dbt.adapters.fastrefresh.protocol.state import (
    VIEW_CONFIG,
    VIEW_FINGERPRINT,
    VIEW_ORDER,
    VIEW_STATE,
    ViewConfig,
    ViewState,
)
from dbt.adapters.fastrefresh.runtime import faults
from dbt.adapters.fastrefresh.runtime.executor import WouldWrite
from dbt.adapters.fastrefresh.runtime.process import RefreshRecord
from dbt.adapters.fastrefresh.sqltext import (
    TableName,
    log_table_for,
    master_of_log,
    storage_of,
    view_of,
)

logger = AdapterLogger("fastrefresh")

# Under ``force``: a log range holding more rows than this fraction of the master's rows
# refreshes completely: reading, sorting and netting that many log rows costs about as
# much as rebuilding from the master. Ranges below CHEAP_RANGE rows are not checked.
COMPLETE_ABOVE_FRACTION = 0.2
CHEAP_RANGE = 20_000
# A view of at most this many data files, or of at most this many bytes in all, takes its
# delta as one statement replacing the whole view (``sqltext.replace_all``) instead of a
# MERGE: a copy-on-write MERGE rewrites the files its changed rows are in, which for so
# few files is all of them, and first runs the delta once more to find those files; a
# view this small is rewritten whole in less time than the delta's second run takes.
# (An aggregate view of 10,000 groups, 1% changes: 0.6-0.8 s against 1.0-1.2 s. A keyed
# projection of 300,000 rows, 2 MB in 3 files, 10% of a 1M-row master changed: 0.8-0.9 s
# against 1.1-1.5 s; one of 1,000,000 rows, 4.7 MB in 9 files, 0.1% of 10M changed:
# 0.64-0.72 s against 0.72-0.83 s; one of 3,000,000 rows, 23 MB in 10 files: 1.3-1.7 s
# against 1.1-1.5 s, so it keeps the MERGE.) Every shape. The Java path knows both from
# the current snapshot's summary; the SQL path reads them after its commits (one
# ``.snapshots`` query, ``commit_view``) while the view may be small, and keeps them in
# the view's state.
OVERWRITE_MAX_FILES = 2
OVERWRITE_MAX_BYTES = 8 << 20


@dataclass
class RefreshResult:
    view: TableName
    refresh_type: RefreshType
    reason: Reason | None
    log_rows: int
    seconds: float
    phases: dict[str, float] = field(default_factory=dict)
    noop: bool = False
    logs_created: tuple[str, ...] = ()  # what creating (or dropping) logs said
    # A master's log that differs from what its dbt node's ``mview_log`` asks (kept).
    log_warnings: tuple[str, ...] = ()

    def message(self) -> str:
        if self.refresh_type is RefreshType.FAST:
            what = "no changes" if self.noop else f"{self.log_rows} log row(s)"
            return f"FAST refresh of {self.view}: {what}"
        return f"COMPLETE refresh of {self.view}: {self.reason}"


@dataclass(frozen=True)
class MasterState:
    """One Iceberg table the view reads, with its log (None: it has none)."""

    meta: TableMeta
    log: LoadedLog | None

    @property
    def name(self) -> TableName:
        return self.meta.name


@dataclass(frozen=True)
class ViewRecord:
    """The view's storage table as found (``meta``): its configuration and newest state."""

    meta: TableMeta
    config: ViewConfig | None
    state: ViewState | None
    found: Found
    data_files: int | None = None  # the storage's data files now (None: not known)
    data_bytes: int | None = None  # their size (None: not known)
    view: TableName | None = None  # the view's own name (None: not known, as in tests)

    @property
    def name(self) -> TableName:
        """The view's name (its identity on logs and in the registry)."""
        return self.view or self.meta.name

    @property
    def large(self) -> bool:
        """Known to hold more data files than a one-statement delta suits, and more bytes
        (or bytes not known: a state the SQL path wrote before it kept them)."""
        if self.data_files is None or self.data_files <= OVERWRITE_MAX_FILES:
            return False
        return self.data_bytes is None or self.data_bytes > OVERWRITE_MAX_BYTES


def resolve_views(env: Env, sql: str, found: dict[TableName, TableMeta] | None = None) -> str:
    """``sql`` reading each fast_refresh view it names as that view does, from its storage
    table (``(SELECT <its columns> FROM <storage>) <alias>``), so that the refresh sees
    the Iceberg table behind the view: its snapshots, its log, its time travel. The
    planner merges the derived table into the query; its hidden columns stay unseen. A
    ``QUALIFY`` becomes a filter on a derived table (Spark 3.5 has no ``QUALIFY``), so the
    view's stored definition runs on Spark as it is.

    ``found``: where to leave the Iceberg tables among the names, read fresh, when the
    path told them from views that way (``Tables.iceberg_table``), for ``load_masters``.
    """
    try:
        tree = sqlglot.parse_one(sql, read=DIALECT)
    except SqlglotError:
        return sql
    swapped = False
    if tree.find(exp.Qualify) is not None:
        # Spark 3.5 has no QUALIFY: the filter goes on a derived table of the windows.
        tree, swapped = eliminate_qualify(tree), True
    for table in list(tree.find_all(exp.Table)):
        name = TableName(table.db.lower(), table.name.lower())
        if not table.db or view_of(name):
            continue
        iceberg = env.tables.iceberg_table(name)
        if iceberg is not None:  # a table: no view of this name
            if found is not None:
                found[name] = iceberg
            continue
        # Only a model's own view stands for its storage table: a model rebuilt by
        # another materialization (a table or a view of its name) leaves its old storage
        # table behind, which must not be read for it.
        marks = env.tables.view_entries(name, (VIEW_FINGERPRINT, VIEW_ORDER))[1]
        if VIEW_FINGERPRINT not in marks:
            continue
        storage = storage_of(name)
        meta = env.tables.load(storage)
        if meta is None or not meta.iceberg or VIEW_CONFIG not in meta.properties:
            continue
        # In the view's column order (an enforced contract's), as `select *` over it reads.
        read = storage_read(storage, meta.columns, view_order(marks.get(VIEW_ORDER)))
        body = sqlglot.parse_one(read, read=DIALECT)
        alias = exp.TableAlias(this=exp.to_identifier(table.alias_or_name))
        table.replace(exp.Subquery(this=body, alias=alias))
        swapped = True
    return tree.sql(dialect=DIALECT) if swapped else sql


def load_masters(
    env: Env,
    sql: str,
    *,
    log_columns: bool = True,
    read: Mapping[TableName, TableMeta] | None = None,
) -> list[MasterState]:
    """The Iceberg tables a view's query reads, read fresh, with their logs
    (``log_columns=False``: without the logs' own columns, for a reader of their state
    alone; see ``load_log``). ``read``: tables ``resolve_views`` has just read fresh."""
    found = []
    for name in tables_of(sql):
        meta = (read or {}).get(name) or env.tables.load(name, fresh=True)
        if meta is None or not meta.iceberg:
            continue
        found.append(MasterState(meta, load_log(env, name, columns=log_columns, read=meta)))
    return found


def built_by_0_1(env: Env, view: TableName) -> bool:
    """Whether ``view`` names a table that dbt-fastrefresh 0.1 built (the view's rows, its
    hidden columns and its state in a table of the view's own name)."""
    meta = env.tables.load(view)
    return meta is not None and meta.iceberg and VIEW_CONFIG in meta.properties


def adopt_0_1_table(env: Env, view: TableName) -> bool:
    """Move a view built by dbt-fastrefresh 0.1 to its storage table (a rename: its rows,
    history and state go with it, so it refreshes fast on), leaving its name for the view
    over it; whether there was one to move."""
    storage = storage_of(view)
    if env.tables.load(storage) is not None or not built_by_0_1(env, view):
        return False
    env.sql.execute(f"ALTER TABLE {view.sql} RENAME TO {storage.sql}")
    return True


def load_view(env: Env, view: TableName, *, columns: bool = True) -> ViewRecord | None:
    """The view's record, read from its storage table (None: it has none).
    ``columns=False``: for a reader of the view's configuration and state alone (the
    registry, the inspection macros), whose ``meta.columns`` may be empty: on the SQL path
    that is a ``DESCRIBE`` fewer, and none inside ``Tables.reading`` once the state of the
    view has been read."""
    storage = storage_of(view)
    load = env.tables.load if columns else env.tables.load_state
    meta = load(storage, fresh=env.shared_catalog)
    if meta is None:
        return None
    text = meta.properties.get(VIEW_CONFIG)
    config = ViewConfig.from_json(text) if text else None
    history = env.tables.history(storage)
    found = latest_state(meta, VIEW_STATE, history)
    state = ViewState.from_json(found.text) if found.text else None
    files = size = None
    current = meta.current_snapshot
    if env.tables.kind != "java" and not found.in_summary and found.anchor == current:
        # The SQL path's state, written after the current snapshot: the count it read then
        # (None: it read none), where reading the history would cost a statement.
        files, size = (state.data_files, state.data_bytes) if state else (None, None)
    elif current is not None:
        info = history.get(current)  # the state's walk has read it
        files, size = (info.data_files, info.data_bytes) if info else (None, None)
    return ViewRecord(meta, config, state, found, files, size, view)


def overwrites(record: ViewRecord) -> bool:
    """Whether the view takes its delta as one statement replacing it whole
    (``OVERWRITE_MAX_FILES``). Only a copy-on-write view: a merge-on-read MERGE rewrites
    nothing, it adds a delete file."""
    if record.data_files is None or record.large:
        return False
    return record.config is not None and copy_on_write(record.config)


def copy_on_write(config: ViewConfig) -> bool:
    """Whether the view's MERGE rewrites files (its table is not merge-on-read)."""
    spec = TableSpec(config.table_options, config.table_properties)
    return spec.table_properties().get("write.merge.mode") != "merge-on-read"


def keeps_history(
    record: ViewRecord, config: ViewConfig, plan: ViewPlan, masters: list[MasterState]
) -> bool:
    """Whether a complete refresh may rewrite the view in place (``sqltext.replace_all``)
    rather than replace its table: the same query over the same master columns (so the
    same columns and types), the same table options and properties. The rewrite keeps
    the view's history, so a log on the view captures the rebuild as the rows it changed
    and the views over it refresh fast; a replaced table starts a new history, and they
    rebuild once."""
    old = record.config
    if old is None or record.state is None:
        return False
    same = (
        old.query_hash == config.query_hash
        and same_master_columns(old.master_schema_hash, config.master_schema_hash, masters)
        and old.table_options == config.table_options
        and dict(old.table_properties) == dict(config.table_properties)
        and old.built_empty == config.built_empty
    )
    columns = [c.name.lower() for c in record.meta.columns]
    return same and columns == [c.lower() for c in plan.view_columns]


def schema_hash(masters: list[MasterState], plan: ViewPlan | None = None) -> str:
    """A hash of the master columns ``plan``'s query reads and of the masters' identifier
    fields (names and types, in each master's order): a column added to a master, or
    changed, that the view does not read changes nothing it stores, and its next refresh
    stays fast. Of every master column without a supported ``plan``, as views built by
    earlier development builds stored it (``same_master_columns`` takes either)."""
    text = ";".join(
        f"{m.name}:" + ",".join(f"{c.name} {c.type}" for c in _hashed_columns(m, plan))
        for m in masters
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _hashed_columns(m: MasterState, plan: ViewPlan | None) -> Sequence[Column]:
    if plan is None or not plan.supported:
        return m.meta.columns
    read = {c.lower() for c in (*plan.columns_read_of(m.name), *m.meta.identifier_fields)}
    return [c for c in m.meta.columns if c.name.lower() in read]


def same_master_columns(stored: str, current: str, masters: list[MasterState]) -> bool:
    """Whether a view's ``master_schema_hash`` (``stored``) is the masters' ``current``
    one (``schema_hash`` with the view's plan), or, for a view built before that hash
    covered only the columns its query reads, the hash of every column."""
    return stored == current or stored == schema_hash(masters)


def log_keys(masters: Sequence[MasterState]) -> dict[TableName, list[str]]:
    """The key columns of each master whose log is keyed, as the planner takes them: not
    those of a log whose key columns the master no longer has (renamed or dropped: the
    log records nothing, and a view planned with them could not even be rebuilt)."""
    return {
        m.name: list(m.log.config.key_columns)
        for m in masters
        if m.log is not None
        and not m.log.config.keyless
        and set(m.log.config.key_columns) <= {c.name for c in m.meta.columns}
    }


def plan_of(env: Env, sql: str, masters: list[MasterState]) -> ViewPlan:
    """``analyze`` of the view's query, cached per process by query and master schemas."""
    columns = {m.name: list(m.meta.columns) for m in masters}
    keys = log_keys(masters)
    cache_key = (
        sql,
        tuple((str(n), tuple(c)) for n, c in sorted(columns.items())),
        tuple((str(n), tuple(k)) for n, k in sorted(keys.items())),
    )
    plan = env.runtime.plans.get(cache_key)
    if plan is None:
        plan = analyze(sql, columns, keys)
        if plan.supported:
            plan = dataclasses.replace(plan, zoned=zones.zoned_read(plan, columns))
        env.runtime.plans[cache_key] = plan
    if plan.reason and plan.reason.endswith(NOT_A_MASTER):
        # The analysis knows only that the table is none of the masters read: say what
        # it is, and what makes it one (only where the view cannot refresh fast anyway).
        name = TableName.parse(plan.reason.removesuffix(NOT_A_MASTER).rsplit(" ", 1)[-1])
        plan = dataclasses.replace(plan, reason=f"{plan.reason}: {not_a_master(env, name)}")
    return plan  # type: ignore[no-any-return]


def not_a_master(env: Env, name: TableName) -> str:
    """Why ``name``, which a view's query reads, is not a master table, and the fix."""
    meta = env.tables.load(name)
    if meta is None:
        return "it does not exist. Fix: create it, or correct the name"
    if meta.provider == "view":
        return (
            "it is a view, which has no Iceberg snapshots to read its changes from. Fix: "
            "make its dbt model a `fast_refresh` model or an Iceberg `table` "
            "(`file_format='iceberg'`), or read the Iceberg tables it reads"
        )
    if not meta.iceberg:
        return (
            f"it is a '{meta.provider or 'non-Iceberg'}' table, and changes are read from "
            "Iceberg snapshots. Fix: make it an Iceberg table (`file_format='iceberg'` in "
            "its dbt model's or seed's config, or `+file_format: iceberg` for the "
            "project's models and seeds; "
            f"CREATE TABLE ... USING iceberg AS SELECT * FROM {name} for a source)"
        )
    return (
        "it was not an Iceberg table when this refresh read the query's tables (replaced "
        "since?). Fix: run the model again"
    )


def unnamed_outputs(sql: str) -> str | None:
    """A warning when the query outputs expressions without an alias (None: none does).
    The planner names such a column by its position (``_col_1``), where Spark names it
    after the expression (``count(1)``, ``(x + 1)``): a model switched from ``table`` to
    ``fast_refresh`` would rename it.

    >>> unnamed_outputs("SELECT g, count(*) AS n FROM s.t GROUP BY g") is None
    True
    >>> "COUNT(*), x + 1 without" in unnamed_outputs("SELECT g, count(*), x + 1 FROM s.t GROUP BY g, x")
    True
    """
    try:
        tree = sqlglot.parse_one(sql, read=DIALECT)
    except SqlglotError:
        return None
    select = tree if isinstance(tree, exp.Select) else tree.find(exp.Select)
    named = (exp.Alias, exp.Column, exp.Star)
    unnamed = (
        [e.sql(dialect=DIALECT) for e in select.expressions if not isinstance(e, named)]
        if select
        else []
    )
    if not unnamed:
        return None
    return (
        f"the query outputs {', '.join(unnamed)} without an alias: the view names such a "
        "column by its position (_col_1, _col_2 ...), where Spark would name it after the "
        "expression. Fix: give each an alias (count(*) AS n)."
    )


def _without_comment(options: str) -> str:
    """Stored table options (``TableSpec.stored``) without their COMMENT clause, which
    dbt-spark's ``comment_clause`` renders last."""
    return re.sub(r"\s*\bcomment\s+'.*$", "", options, flags=re.IGNORECASE | re.DOTALL).strip()


def _masters_changed(old: Sequence[TableName], new: Sequence[TableName]) -> str:
    """How the tables a changed definition reads differ ("": the same ones). A table read
    that became (or stopped being) a fast_refresh model's view, whose rows are read from
    its storage table, is named as such: the model's SQL did not change, its upstream's
    materialization did."""
    added, removed = set(new) - set(old), set(old) - set(new)
    said = []
    for storage in sorted(added | removed, key=str):
        view = view_of(storage)
        if view is None:
            continue
        if storage in added and view in removed:
            said.append(f"{view} became a fast_refresh model (its rows are read from {storage})")
        elif storage in removed and view in added:
            said.append(f"{view} is no longer a fast_refresh model")
        else:
            continue
        added -= {storage, view}
        removed -= {storage, view}
    if added:
        said.append(f"it reads {', '.join(sorted(map(str, added)))}")
    if removed:
        said.append(f"it no longer reads {', '.join(sorted(map(str, removed)))}")
    return ": " + "; ".join(said) if said else ""


# The reasons that build a view whatever it holds: under refresh_method 'fast' they
# must lead to a view that can refresh fast. (A build by ``dbt run --empty`` is not among
# them: it reads no rows, and the next run rebuilds the view.)
BUILDS = frozenset({ReasonCode.FIRST_BUILD, ReasonCode.FULL_REFRESH, ReasonCode.BUILT_EMPTY})


def decide(
    *,
    method: RefreshMethod,
    full_refresh: bool,
    view: ViewRecord | None,
    plan: ViewPlan,
    masters: list[MasterState],
    columns_hash: str,
    empty: bool = False,
    lost: TableName | None = None,
    time_zone: str | None = None,
) -> Reason | None:
    """Why the view cannot refresh fast, from what was read before any write (pure);
    None: it can, as far as this tells. ``empty``: ``dbt run --empty``; ``lost``: the
    storage table of a view dbt found (without a record, the table was dropped);
    ``time_zone``: the session's, for a query that reads it (``plan.zoned``)."""
    if empty:
        return Reason(ReasonCode.EMPTY, "dbt run --empty: built without rows")
    if method is RefreshMethod.COMPLETE:
        return Reason(ReasonCode.METHOD_COMPLETE, "refresh_method is complete")
    if full_refresh:
        return Reason(ReasonCode.FULL_REFRESH, "--full-refresh")
    if view is None:
        if lost is not None:
            return Reason(
                ReasonCode.FIRST_BUILD,
                f"the view's storage table {lost} is missing (dropped?): built anew",
            )
        return Reason(ReasonCode.FIRST_BUILD, "first build")
    if view.config is None or view.state is None:
        return Reason(
            ReasonCode.NOT_REGISTERED,
            "the view is not registered (built by another materialization, or unregistered)",
        )
    for m in masters:
        # Before the definition: a rebuild alone would not make the next refresh fast.
        mismatch = None if m.log is None else log_mismatch(m.log, m.meta)
        if mismatch:
            return Reason(
                ReasonCode.LOG_BROKEN,
                f"the materialized view log cannot record changes: {mismatch}",
            )
    changed = _since_built(
        view.config, view, plan, masters, columns_hash=columns_hash, time_zone=time_zone
    )
    if changed is not None:
        return changed
    never = never_fast(plan, masters)
    if never is not None:
        return never
    # Last: a plan that cannot refresh fast (a master without its log, say) may need
    # columns the view never had, with no hand in it; nor one whose logs were created
    # again with a key since (their key's hidden columns): the logs' reason is the one.
    altered = storage_altered(view, plan)
    if altered is None:
        return None
    return _younger_log(view, masters) or Reason(ReasonCode.UNFINISHED, altered)


def _younger_log(view: ViewRecord, masters: list[MasterState]) -> Reason | None:
    """The first of the view's logs that cannot give it its changes (``usability_problem``
    on what was read: a log created again since the view's last refresh, say)."""
    assert view.state is not None
    for m in masters:
        if m.log is not None:
            position = view.state.positions.get(str(m.log.log_table))
            problem = usability_problem(m.log, view.name, position, view.state.last_refresh_time)
            if problem is not None:
                return problem
    return None


def _since_built(
    config: ViewConfig,
    view: ViewRecord,
    plan: ViewPlan,
    masters: list[MasterState],
    *,
    columns_hash: str,
    time_zone: str | None,
) -> Reason | None:
    """``decide``'s reasons of a registered view (``config`` its definition) that changed,
    or whose table or session changed, since its last build."""
    assert view.state is not None
    if config.built_empty:
        return Reason(ReasonCode.BUILT_EMPTY, "its last build was `dbt run --empty`, without rows")
    changed = _definition_changed(config, plan)
    if changed is not None:
        return changed
    if not same_master_columns(config.master_schema_hash, columns_hash, masters):
        return Reason(
            ReasonCode.MASTER_COLUMNS_CHANGED,
            "a master table's columns the query reads, or its identifier fields, changed",
        )
    moved = zone_moved(view.state, plan, time_zone)
    if moved is not None:
        return Reason(ReasonCode.TIME_ZONE_CHANGED, moved)
    if view.found.changed_after:
        return Reason(
            ReasonCode.UNFINISHED,
            "a previous refresh of the view did not finish (or its table was changed "
            "outside dbt-fastrefresh)",
        )
    return None


def storage_altered(view: ViewRecord, plan: ViewPlan) -> str | None:
    """How the view's storage table lacks columns its plan writes or reads (renamed or
    dropped by hand: an ``ALTER TABLE`` makes no snapshot, so its history does not tell),
    from its columns as the view's record read them (None: it has them all, or they were
    not read)."""
    if not plan.supported or not view.meta.columns:
        return None
    have = {c.name.lower() for c in view.meta.columns}
    missing = [c for c in plan.view_columns if c.lower() not in have]
    if not missing:
        return None
    return (
        f"the view's storage table {view.meta.name} was changed outside dbt-fastrefresh: "
        f"column(s) {', '.join(missing)} missing"
    )


def zone_moved(state: ViewState, plan: ViewPlan, time_zone: str | None) -> str | None:
    """Why the view's rows are not its query's in the session's ``time_zone`` (read for a
    query that reads it; None: not read), or None. A view refreshed before its state
    recorded a zone is taken to be in this one (its next commit records it)."""
    if time_zone is None or state.time_zone in (None, time_zone):
        return None
    return (
        f"the session time zone is {time_zone}, and the view's rows were computed in "
        f"{state.time_zone}: its query {plan.zoned}"
    )


def never_fast(plan: ViewPlan, masters: list[MasterState]) -> Reason | None:
    """Why no refresh of the view can be fast however often it is built: its query's
    shape, or a master without a log. None: a build can be followed by fast refreshes."""
    if not plan.supported:
        code = ReasonCode(plan.reason_code) if plan.reason_code else ReasonCode.UNSUPPORTED_QUERY
        return Reason(code, plan.reason or "the query is not fast-refreshable")
    for m in masters:
        if m.log is None:
            said = f"the master table {m.name} has no materialized view log (Oracle: ORA-23413)"
            cannot = unloggable(m.meta, m.name)
            if cannot is not None:  # the fix names the master's columns, not create_mview_log
                said += (
                    f", and can have none: {cannot[0]}. Fix: {cannot[1]}. Until then the view "
                    "can only be built completely (on each run under refresh_method='force', "
                    "as a `table` model is)"
                )
            return Reason(ReasonCode.NO_LOG, said)
    return None


@dataclass(frozen=True)
class DbtModel:
    """The dbt model a refresh runs for (``refresh_mviews`` runs for none).

    Attributes:
        name: the model's name (what ``dbt run -s`` selects; an alias makes the view's
            name differ), which errors name in their fix.
        empty: ``dbt run --empty`` (dbt limited each table the query reads to no rows):
            the view is built without rows, and its next dbt run rebuilds it.
        view_found: dbt found the view: if its storage table is missing, the reason of
            the build says so (it was dropped outside dbt-fastrefresh).
        node, project: the model's node (its unique_id) and the dbt project and target
            running it (``<project_name>:<target.schema>``), recorded in the view's
            definition (``admin.ProjectNodes``).
    """

    name: str
    empty: bool = False
    view_found: bool = False
    node: str | None = None
    project: str | None = None


# How Spark names a table it cannot find (its error carries the whole plan after it).
_NOT_FOUND = re.compile(
    r"The table or view ((?:`[^`]+`|[\w$]+)(?:\.(?:`[^`]+`|[\w$]+))*) cannot be found"
)


def _missing_read(exc: BaseException, sql: str) -> TableName | None:
    """The table of ``sql`` that ``exc`` says does not exist (None: another error)."""
    match = _NOT_FOUND.search(str(exc))
    if match is None:
        return None
    parts = [p.strip("`").lower() for p in re.findall(r"`[^`]+`|[\w$]+", match.group(1))]
    if len(parts) < 2:
        return None
    name = TableName(parts[-2], parts[-1])
    return name if name in tables_of(sql) else None


# Spark's error classes (``[UNRESOLVED_COLUMN.WITH_SUGGESTION] ...``), and the terminal
# colours of its parse errors' pointer.
_ERROR_CLASS = re.compile(r"\[[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*\]")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_LINE = re.compile(r"(\bline )(\d+)")
# Iceberg binding a filter to a table's schema without one of its columns.
_NO_FIELD = re.compile(r"ValidationException: Cannot find field '([^']+)' in struct")
_TWICE = re.compile(r"\[COLUMN_ALREADY_EXISTS\] The column (`[^`]+`) already exists")
# Iceberg converting a Spark type it has none for (a bare NULL's VOID, an INTERVAL).
_UNSTORABLE = re.compile(r"Not a supported type: ([a-z][a-z ]*)")
# Spark or Iceberg refusing a model's table option as the storage table is created.
_NO_COLUMN = re.compile(r"Couldn't find column (\S+) in:")
_LOCATION = re.compile(r"location\s+'([^']+)'", re.IGNORECASE)
_MKDIRS = re.compile(r"Mkdirs failed to create (\S+)")


# What Spark raises evaluating an expression over a row's values (not over the query's
# text, or the cluster's state): its error classes of SQLSTATE class 22, data exceptions
# (Spark 3.5's error-classes.json; those of streaming sources and of analysis left out),
# a map's duplicate key (23505) or missing key (under ANSI mode), and raise_error /
# assert_true: a plain RuntimeException in Spark 3.5 ([USER_RAISED_EXCEPTION] from Spark
# 4.0), whose message is the user's.
ROW_ERROR_CLASSES = frozenset({
    "ARITHMETIC_OVERFLOW", "BINARY_ARITHMETIC_OVERFLOW", "CANNOT_DECODE_URL",
    "CANNOT_PARSE_DECIMAL", "CANNOT_PARSE_JSON_FIELD", "CANNOT_PARSE_TIMESTAMP",
    "CAST_INVALID_INPUT", "CAST_OVERFLOW", "CONVERSION_INVALID_INPUT", "DATETIME_OVERFLOW",
    "DIVIDE_BY_ZERO", "DUPLICATED_MAP_KEY", "FAILED_PARSE_STRUCT_TYPE",
    "INTERVAL_ARITHMETIC_OVERFLOW", "INTERVAL_DIVIDED_BY_ZERO", "INVALID_ARRAY_INDEX",
    "INVALID_ARRAY_INDEX_IN_ELEMENT_AT", "INVALID_BITMAP_POSITION",
    "INVALID_FRACTION_OF_SECOND", "INVALID_INDEX_OF_ZERO", "INVALID_JSON_ROOT_FIELD",
    "INVALID_PARAMETER_VALUE", "MALFORMED_RECORD_IN_PARSING", "MAP_KEY_DOES_NOT_EXIST",
    "NULL_MAP_KEY", "NUMERIC_OUT_OF_SUPPORTED_RANGE", "NUMERIC_VALUE_OUT_OF_RANGE",
    "USER_RAISED_EXCEPTION",
})  # fmt: skip
_CLASSES = "|".join(sorted(ROW_ERROR_CLASSES))
_ROW_ERROR = re.compile(
    rf"\[((?:{_CLASSES})(?:\.[A-Z0-9_]+)?)\] ?([^\n]*)|java\.lang\.RuntimeException: ([^\n]*)"
)


def _spark_said(exc: BaseException) -> str:
    """The first line of Spark's own message in ``exc``, an error of ``DESCRIBE QUERY``
    over a view's query (its line numbers made the query's), from its error class on:
    through dbt's connection the error is dbt's, whose first line is "Runtime Error"
    (and a server's message may begin with its own words)."""
    message = _ANSI.sub("", str(exc)).strip()
    found = _ERROR_CLASS.search(message)
    if found is not None:
        message = message[found.start() :]
    first = message.split(";\n", 1)[0].split("\n", 1)[0].strip()
    first = _LINE.sub(lambda m: f"{m[1]}{int(m[2]) - 1}", first)
    return first if first.endswith(".") else f"{first}."


def _row_error(message: str) -> str | None:
    """What a statement's error says a row's value raised (``ROW_ERROR_CLASSES``), as
    ``[CLASS] text``; None: another error. Only errors of a Spark task count (``Job
    aborted``): a class raised while Spark analyzed or planned the statement is no row's."""
    if "Job aborted" not in message:
        return None
    match = _ROW_ERROR.search(_ANSI.sub("", message))
    if match is None:
        return None
    if match[1] is not None:
        said = f"[{match[1]}] {match[2].split(' SQLSTATE:', 1)[0].strip().rstrip('.')}"
    else:
        said = f"raise_error/assert_true said '{match[3].strip()}'"
    return said if len(said) <= 300 else said[:297] + "..."


def _sum_guard(message: str) -> str | None:
    """What a guard of a group's sum said (``SUM_GUARD``: a BIGINT sum past 2^63, a
    DECIMAL sum past its type or past what its exact addition or AVG keeps), without its
    fix; None: no such guard stopped the statement."""
    if "Job aborted" not in message or SUM_GUARD not in message:
        return None
    said = message[message.index(SUM_GUARD) + len("dbt-fastrefresh: ") :].split("\n", 1)[0]
    return re.split(r" \(rebuild the view|; rebuild the view", said, maxsplit=1)[0].strip()


def _definition_changed(config: ViewConfig | None, plan: ViewPlan) -> Reason | None:
    """``DEFINITION_CHANGED`` when the view's stored query (``config``) is not ``plan``'s."""
    if config is None or config.query_hash == plan.query_hash:
        return None
    return Reason(
        ReasonCode.DEFINITION_CHANGED,
        "the view's definition changed" + _masters_changed(config.masters, plan.masters),
    )


def _refuse_reserved_outputs(view: TableName, sql: str) -> None:
    """A query whose output columns are named ``__fr_*`` (its first branch's, for a set
    operation), refused before any write: the view over the storage table leaves such
    columns out as hidden, so the view would lack them. Parsed only for a query without
    a supported plan, which refuses such names itself."""
    try:
        tree = sqlglot.parse_one(sql, read=DIALECT)
    except SqlglotError:
        return  # the build says what is wrong with the query
    while isinstance(tree, exp.SetOperation):
        tree = tree.left
    if not isinstance(tree, exp.Query):
        return
    reserved = [n for n in tree.named_selects if n.lower().startswith(HIDDEN_PREFIX)]
    if reserved:
        raise FastRefreshError(
            f"The query of {view} outputs column(s) {', '.join(reserved)}: names starting "
            f"with {HIDDEN_PREFIX} are kept for the hidden columns of the view's storage "
            "table, and the view would leave them out. Fix: rename them in the model's SQL "
            "(AS another name)."
        )


def _refreshed_empty(view: TableName) -> FastRefreshError:
    """refresh_mviews of a view ``dbt run --empty`` built: its stored definition is the
    one dbt limited to no rows."""
    return FastRefreshError(
        f"{view} was last built by `dbt run --empty`: its stored query reads no rows, so "
        "refreshing it from its definition would leave it empty. Fix: build it with its "
        "rows by `dbt run` of its model (select it with -s)."
    )


def refresh_view(
    env: Env,
    *,
    view: TableName,
    sql: str,
    method: object,
    full_refresh: bool = False,
    exists: bool = True,
    table: TableSpec | None = None,
    on_schema_change: str = "ignore",
    upstream: Sequence[Upstream] = (),
    docs: ViewDocs | None = None,
    replace_table: bool = False,
    model: DbtModel | None = None,
) -> RefreshResult:
    """Refresh one view (see the module docstring).

    Args:
        view: the view's name (a Spark view over its storage table, ``storage_of``).
        sql: its query, compiled (a SELECT over ``schema.table`` names; the fast_refresh
            views it names are read from their storage tables, ``resolve_views``).
        method: ``force``, ``fast`` or ``complete`` (``refresh_method``; validated
            here, once, for the materialization and ``refresh_mviews`` alike).
        full_refresh: ``dbt run --full-refresh``.
        exists: False to build the view anew whatever is found (its storage replaced).
        table: how its storage table is created on a complete refresh.
        on_schema_change: when a changed definition or master changes the view's
            columns: ``fail`` raises naming them; anything else (dbt's ``ignore``,
            ``append_new_columns``, ``sync_all_columns``) rebuilds the view once, the
            reason naming them (a view always has its query's columns).
        upstream: the dbt nodes the model reads (``engine/upstream.py``): a master among
            them without a log gets one before the refresh decides.
        docs: the comments the view carries (``persist_docs``); None (``refresh_mviews``):
            an existing view whose columns stay keeps its comments.
        replace_table: the view's name is another materialization's table, dropped when
            the view is created (after the refresh built the storage table).
        model: the dbt model run (``DbtModel``); None: ``refresh_mviews``.
    """
    chosen = RefreshMethod.parse(method, where=f"Model {view}")

    def prepared(env: Env, probe: _Refresh | None = None) -> _Refresh:
        read: dict[TableName, TableMeta] = {}
        resolved = probe.sql if probe else resolve_views(env, sql, read)
        refresh = _Refresh(env, view, resolved, chosen, table or TableSpec(), probe=probe)
        refresh.read = probe.read if probe else read
        refresh.on_schema_change, refresh.upstream = on_schema_change, tuple(upstream)
        refresh.docs, refresh.replace_table, refresh.model = docs, replace_table, model
        return refresh

    run = functools.partial(_Refresh.run, full_refresh=full_refresh, exists=exists)
    probe: _Refresh | None = None
    if env.shared_catalog and exists and not full_refresh and chosen is not RefreshMethod.COMPLETE:
        done, probe = _unchanged(env, prepared, run)
        if done is not None:
            return done
    return _held(env, view, lambda: prepared(env, probe), run)


def _held(
    env: Env,
    view: TableName,
    prepared: Callable[[], _Refresh],
    run: Callable[[_Refresh], RefreshResult],
) -> RefreshResult:
    """The refresh under the view's process lock. The view's lease is taken once its
    masters are read, with their logs' where the refresh writes them
    (``_Refresh._leases``)."""
    with env.runtime.holding([f"view:{view}"]):
        try:
            return run(prepared())
        except LogTableAltered as altered:
            return _without_altered_logs(altered, prepared, run)


def _without_altered_logs(
    altered: LogTableAltered,
    prepared: Callable[[], _Refresh],
    run: Callable[[_Refresh], RefreshResult],
) -> RefreshResult:
    """The refresh once more after it failed on a log whose table's columns were changed
    by hand (SQL path), knowing it from the start: the log is created again, or left out,
    as one that no longer fits its master (``log_mismatch``), and the view rebuilt (under
    'fast', the refresh fails naming the log). The failed statement wrote nothing."""
    logger.warning(f"dbt-fastrefresh: {altered.message} The refresh runs again knowing it.")
    again = prepared()
    again.loaded = altered.masters
    return run(again)


def _unchanged(
    env: Env,
    prepared: Callable[[Env], _Refresh],
    run: Callable[[_Refresh], RefreshResult],
) -> tuple[RefreshResult | None, _Refresh | None]:
    """On a shared catalog, a refresh with nothing to apply, found without the view's
    lease; None: the refresh has something to write (or failed), and runs again under the
    lease, from the probe's read of its masters (returned too: about five statements a
    master through a server). Taking a lease and giving it back are two commits to the
    leases table (about 0.5 s through a server): a refresh that writes nothing needs none,
    since it reads each table's committed state, and every step that would write (a
    capture, a mark, the view's MERGE, its state, the Spark view over it) is refused here
    (``Env.reading_only``)."""
    probe = env.reading_only()
    refresh = None
    try:
        refresh = prepared(probe)
        result = run(refresh)
    except Exception as exc:
        logger.debug(f"under the lease: {exc if isinstance(exc, WouldWrite) else repr(exc)}")
        return None, refresh
    if probe.refused or not result.noop:
        return None, refresh
    refresh.env = env
    refresh.journal_held()
    return result, None


class LogTableAltered(FastRefreshError):
    """A refresh failed on a log whose table's columns were changed by hand, found only
    then (``_Refresh._altered_logs``); ``masters``: the masters as the refresh loaded
    them, with that found (``LoadedLog.altered``), for the refresh to run again from."""

    def __init__(self, message: str, masters: list[MasterState]):
        super().__init__(message)
        self.masters = masters


class _Refresh:
    """The steps of one refresh, sharing what they read (``refresh_view``)."""

    def __init__(
        self,
        env: Env,
        view: TableName,
        sql: str,
        method: RefreshMethod,
        table: TableSpec,
        *,
        probe: _Refresh | None = None,
    ):
        """``probe``: the lease-free probe of the same refresh that ran before it, if one
        did (``_unchanged``), whose reads it starts from: its masters (the setup reads
        them again) and the session's time zone (the same connection's)."""
        self.env, self.view, self.sql, self.method, self.table = env, view, sql, method, table
        self.storage = storage_of(view)
        self.docs: ViewDocs | None = None
        self.replace_table = False
        self.model: DbtModel | None = None  # None: refresh_mviews
        self.started = time.monotonic()
        self.run_started = env.clock()
        self.phases: dict[str, float] = {}
        self.setups: dict[TableName, Setup] = {}
        self.masters: list[MasterState] = []
        self.on_schema_change = "ignore"
        self.upstream: tuple[Upstream, ...] = ()
        self.logs_created: list[str] = []
        self.new_logs: list[TableName] = []  # the masters whose logs it created
        self.left: list[str] = []  # the log tables it read before a rebuild, and no longer
        self.log_warnings: list[str] = []
        # Logs to create again because this view reads a column they lack, once the
        # refresh is known to go ahead (``_recreate_logs``): (master, its node, why).
        self.to_recreate: list[tuple[TableName, Upstream, str]] = []
        self.previous_filled: tuple[str, ...] = ()
        # Why a fast refresh failed while applying (``_apply_or_rebuild``), for its journal.
        self.failed_because: Reason | None = None
        self.altered_asked: BaseException | None = None  # the failure _altered_logs read
        # Masters ``resolve_views`` read fresh (``load_masters``).
        self.read: dict[TableName, TableMeta] = {}
        # The masters with their logs, as first read (``_masters_and_run``); set before
        # it: read by the lease-free probe (``_unchanged``).
        self.loaded: list[MasterState] | None = probe.loaded if probe else None
        # What it journaled while it could only read (``_journal``, ``_unchanged``).
        self.held: list[tuple[Any, ...]] = []
        # The session's time zone, read for a view whose query reads it (``ivm/zones.py``),
        # by the lease-free probe or else by ``_run``.
        self.time_zone: str | None = probe.time_zone if probe else None
        # The leases taken with the view's, until given back (``_leased``).
        self.together: contextlib.AbstractContextManager[None] | None = None
        # The logs' leases ``together`` holds (a shared catalog; not while only reading).
        self.leased_logs: set[str] = set()
        # ``--full-refresh``, or a build anew: the view is rebuilt whatever its logs say.
        self.rebuilding = False
        # Why the refresh is complete when a log whose key must change could not be
        # created again (``_rekeyed``).
        self.unkeyed: Reason | None = None

    def _with_log(
        self, master: MasterState, loaded: list[MasterState], *, create: bool = True
    ) -> MasterState:
        """``master``, with the log created when it has none and is a dbt node the model
        reads whose ``mview_log`` allows it (``engine/upstream.py``), unless ``create`` is
        false (the query can never refresh fast: ``_shape_never_fast``) or the master's
        columns allow no log (``unloggable``: ``never_fast`` says so). A log that exists is
        kept as it is; where it differs from the options the node's ``mview_log`` gives,
        the refresh warns (recreating the log would rebuild every view on it)."""
        up = next((u for u in self.upstream if u.relation == master.name), None)
        if up is None or up.log is False:
            return master
        if master.log is not None:
            differences = log_differences(master.log.config, master.meta, up.options)
            if differences:
                named = view_of(master.name) or master.name
                self.log_warnings.append(
                    f"the materialized view log on {master.name} differs from the "
                    f"mview_log of {up.node}: it has {'; '.join(differences)}. The log is "
                    "kept as it was created (recreating it makes every view on it rebuild "
                    "once). Fix: make mview_log match the log, or recreate the log "
                    f"with dbt run-operation fast_refresh.drop_mview_log --args "
                    f"'{{master: {named}}}' and dbt run."
                )
            return self._with_new_columns(master, up, loaded)
        if not create or unloggable(master.meta, master.name) is not None:
            return master  # (``never_fast`` says why it has no log)
        said = create_mview_log(self.env, master.name, **up.options, if_not_exists=True)
        self.logs_created.append(f"{said} (for the models that read {up.node})")
        self.new_logs.append(master.name)
        return MasterState(master.meta, load_log(self.env, master.name, read=master.meta))

    def _with_new_columns(
        self, master: MasterState, up: Upstream, loaded: list[MasterState]
    ) -> MasterState:
        """``master``, its log created again with the same options when it no longer fits
        its table, or would make this view rebuild on every run. Only for a log of every
        master column or of the key alone, on a dbt node the model reads:

        - the master gained columns since the log was created and this view's query reads
          one (a log records the columns its master had then). A column no view reads
          leaves the log as it is, and views that do not read it refresh fast;
        - columns it records were dropped, renamed or changed type (an upstream model's
          output renamed, say), while its key's columns are still there: such a log
          records nothing (``log_mismatch``), and every view on it would rebuild on every
          run, ``--full-refresh`` or not.

        Every view on the log rebuilds once. A log in use by another refresh of this
        process is left for the next run. For a column added, the log is created again
        only once this refresh is known to go ahead (``_recreate_logs``): a refresh that
        fails first (``on_schema_change: fail``, ``refresh_method: fast``) leaves the
        other views on it as they were. A log that records nothing is created again at
        once: every view on it rebuilds whatever this refresh does."""
        log = master.log
        assert log is not None
        config = log.config
        moved = identifiers_moved(config, master.meta)
        if moved is not None:
            return self._rekeyed(master, up, moved)
        mismatch = log_mismatch(log, master.meta)
        if mismatch is None:
            added = [c.name for c in master.meta.columns if c.name not in config.master_columns]
            if not added:
                return master
            plan = plan_of(self.env, self.sql, loaded)
            read = (
                {c.lower() for c in plan.columns_read_of(master.name)} if plan.supported else set()
            )
            if not read & {c.lower() for c in added}:
                return master
            why = f"{master.name} gained column(s) {', '.join(added)} since its log was created"
            self.to_recreate.append((master.name, up, why))
            return master
        else:
            why = mismatch
            if not set(config.key_columns) <= {c.name for c in master.meta.columns}:
                return master  # its key is gone: the log's error names the fix
        return self._recreate(master, up, why)

    def _rekeyed(self, master: MasterState, up: Upstream, why: str) -> MasterState:
        """``master`` with its log created again, keyed by the master's identifier fields
        as they are now (key-less without any), since ``why``: they changed since the log
        took them as its key, which may no longer be unique (a keyed view could then lose
        a row). Every view on the log rebuilds once: under refresh_method 'fast' the
        refresh fails instead, before anything is written, unless it rebuilds anyway. A
        log another refresh of this process created again meanwhile is taken as it is; one
        in use by another refresh stays, and this refresh is complete (``unkeyed``)."""
        assert master.log is not None
        current = load_log(self.env, master.name, read=master.meta)
        if current is not None and current.config.incarnation != master.log.config.incarnation:
            master = MasterState(master.meta, current)
            if identifiers_moved(current.config, master.meta) is None:
                return master
        if self.method is RefreshMethod.FAST and not self.rebuilding:
            reason = Reason(
                ReasonCode.LOG_BROKEN,
                f"{why}; that key may no longer be unique. Fix: {self.fixes['rebuild']}, or "
                f"{self.fixes['force']}: the log is then created again with the key they "
                "give now, and every view on it rebuilds once",
            )  # (a reason naming its own fix: ``_not_possible``)
            self._journal(RefreshType.FAST, reason, 0, "FAILED", str(reason))
            raise self._not_possible(reason)
        rekeyed = self._recreate(master, up, why, rekey=True)
        if rekeyed is master:  # not dropped: in use by another refresh of this process
            self.unkeyed = Reason(
                ReasonCode.LOG_BROKEN,
                f"{why}; that key may no longer be unique, and the log is in use by another "
                "refresh of this process: a later run creates it again",
            )
        return rekeyed

    def _recreate(
        self, master: MasterState, up: Upstream, why: str, *, held: int = 0, rekey: bool = False
    ) -> MasterState:
        """``master`` with its log dropped and created with the same options (a log of
        chosen columns stays, unless ``rekey``: its key is what changed; one in use by
        another refresh of this process stays). ``held``: 1 once this refresh counts the
        log in use (``_masters_and_run``)."""
        assert master.log is not None
        config = master.log.config
        logged = set(config.key_columns) | set(config.logged_columns)
        everything = logged == set(config.master_columns)
        if not everything and config.logged_columns and not rekey:  # chosen columns stay
            return master
        if unloggable(master.meta, master.name) is not None:
            return master  # no log could replace it (``never_fast`` says why once it is gone)
        columns = None if everything else list(config.logged_columns)
        if rekey and not everything:  # the old key's columns stay logged
            columns = [c.name for c in master.meta.columns if c.name in logged]
        key = up.options.get("key") if rekey else None
        if key is None and not config.key_from_identifiers:
            key = list(config.key_columns)
        planned = planned_key(master.meta, master.name, key)
        require_unique_key(self.env, master.meta, master.name, planned)  # before the drop
        try:
            drop_mview_log(self.env, master.name, held=held)
        except FastRefreshError:
            return master
        faults.point("log.after_drop")
        said = create_mview_log(
            self.env, master.name, key=key, columns=columns, commit_scn=config.commit_scn,
            purge=config.purge.value, if_not_exists=True,
        )  # fmt: skip
        self.logs_created.append(f"{said} (again: {why}; for the models that read {up.node})")
        return MasterState(master.meta, load_log(self.env, master.name, read=master.meta))

    def _recreate_logs(
        self, masters: list[MasterState], reason: Reason | None
    ) -> list[MasterState]:
        """``masters``, with the logs ``_with_new_columns`` left to create again created
        again, unless the refresh fails for ``reason`` (under refresh_method 'fast', a
        reason that is no expected build): that failure leaves the log to the other views."""
        if not self.to_recreate:
            return masters
        if reason is not None and not reason.expected and self.method is RefreshMethod.FAST:
            return masters
        todo = {name: (up, why) for name, up, why in self.to_recreate}
        self.to_recreate = []
        # This refresh counts the logs in use by now (_masters_and_run).
        return [self._recreate(m, *todo[m.name], held=1) if m.name in todo else m for m in masters]

    def _schema_change(self, reason: Reason, record: ViewRecord, plan: ViewPlan) -> Reason:
        """``reason`` naming how the view's columns change, or an error under
        ``on_schema_change: fail`` when they do."""
        change = column_change(record, plan)
        if change is None:
            return reason
        if self.on_schema_change == "fail":
            message = (
                f"Model {self.view}: {reason}, and its columns change ({change}), but "
                f"on_schema_change is 'fail'. Fix: {self.fixes['rebuild']} to rebuild it "
                "with the new columns, or set on_schema_change to 'append_new_columns' or "
                "'sync_all_columns' (the view is then rebuilt once)."
            )
            self._journal(_type_of(reason), reason, 0, "FAILED", message, moved=False)
            raise FastRefreshError(message)
        return Reason(reason.code, f"{reason.detail}: {change}")

    @property
    def fixes(self) -> dict[str, str]:
        """How fixes say to rebuild the view and to let it fall back (``fix_names``)."""
        return fix_names(str(self.view), self.model.name if self.model else None)

    @property
    def empty(self) -> bool:
        """``dbt run --empty``: the query reads no rows (``DbtModel``)."""
        return self.model is not None and self.model.empty

    def _phase(self, name: str, since: float) -> float:
        now = time.monotonic()
        self.phases[name] = self.phases.get(name, 0.0) + now - since
        return now

    def run(self, *, full_refresh: bool, exists: bool) -> RefreshResult:
        try:
            return self._masters_and_run(full_refresh=full_refresh, exists=exists)
        except WouldWrite:
            raise
        except Exception as exc:
            self._drop_new_logs()
            missing = _missing_read(exc, self.sql)
            if missing is not None:
                raise FastRefreshError(
                    f"The query of {self.view} reads {missing}, which does not exist. Fix: "
                    "create it, or correct the name (for a dbt source, its schema and "
                    "identifier in the sources .yml)."
                ) from exc
            dropped = self._dropped_column(exc)
            if dropped is not None:
                raise dropped from exc
            altered = self._altered_logs(exc)
            if altered is not None:
                raise altered from exc
            unstorable = self._unstorable(exc) or self._table_option_error(exc)
            if unstorable is not None:
                raise unstorable from exc
            wrong = self._query_error(exc)
            if wrong is not None:
                raise FastRefreshError(
                    f"The query of {self.view} does not run: {wrong} Fix: correct the "
                    "model's SQL (`dbt compile` writes it under target/compiled)."
                ) from exc
            raise

    def _drop_new_logs(self) -> None:
        """After a failed refresh, the logs it created that no view uses (a first build
        whose query does not run): a failure leaves nothing behind. A log another view
        has registered on since, or another refresh of this process is using, stays."""
        for master in self.new_logs:
            try:
                log = load_log(self.env, master, columns=False)
                if log is not None and not log.state.users:
                    drop_mview_log(self.env, master)
            except Exception as exc:  # the refresh's own error is the one to report
                logger.warning(
                    f"the log on {master}, created by a failed refresh of "
                    f"{self.view}, could not be dropped: {exc}"
                )

    def _dropped_column(self, exc: Exception) -> FastRefreshError | None:
        """The error of a query reading a column its master no longer has, where Spark
        took the column from the schema of the snapshot it read (a column dropped after
        the master's last commit: no commit follows the drop) and Iceberg, planning the
        scan, found it missing from the table's schema now. None: another error."""
        found = _NO_FIELD.search(str(exc))
        if found is None:
            return None
        column = found[1]
        lacking = [
            str(m.name)
            for m in self.loaded or []
            if column.lower() not in {c.name.lower() for c in m.meta.columns}
        ]
        master = f"its master {' or '.join(lacking)}" if lacking else "a master it reads"
        return FastRefreshError(
            f"The query of {self.view} reads column {column} of {master}, which the table no "
            "longer has (dropped or renamed since; Iceberg: cannot find field "
            f"'{column}'). Fix: correct the model's SQL, or restore the column on the master."
        )

    def _altered_logs(self, exc: Exception) -> LogTableAltered | None:
        """Where Spark failed a statement (``[CLASS]``, as capture's append to a log whose
        columns were added or dropped by hand, or a read of one renamed), the logs whose
        table's columns are no longer those they were created with: the SQL path reads a
        log's columns from its configuration (a ``DESCRIBE`` each refresh spared), so
        only a failure makes it read them (``log_table_altered``). None: no such log."""
        text = str(exc)
        if exc is self.altered_asked or isinstance(exc, FastRefreshError):
            return None
        self.altered_asked = exc
        if not _ERROR_CLASS.search(text):
            return None
        found: list[str] = []
        masters = []
        for m in self.loaded or []:
            if m.log is not None and m.log.altered is None:
                columns = self.env.tables.columns(m.log.log_table) or ()
                altered = log_table_altered(m.log.config, columns)
                if altered is not None:
                    found.append(f"{altered}. {recreate_fix(m.name)}")
                    m = MasterState(m.meta, dataclasses.replace(m.log, altered=altered))
            masters.append(m)
        if not found:
            return None
        return LogTableAltered(
            f"The materialized view log of a master of {self.view} cannot record changes: "
            + " ".join(found),
            masters,
        )

    def _query_error(self, exc: Exception) -> str | None:
        """What Spark says of the query itself when ``exc`` is an error of parsing or
        analysis (``[CLASS]`` before any job ran): the statement that failed wrapped the
        query in a ``CREATE TABLE`` of the storage table, and its message carries that
        statement's plan, so the query is analyzed alone (``DESCRIBE QUERY``, only on this
        path) for Spark's message over the model's own SQL. None: the query is not it."""
        text = str(exc)
        if (
            isinstance(exc, FastRefreshError)
            or "Job aborted" in text
            or not _ERROR_CLASS.search(text)
        ):
            return None
        twice = _TWICE.search(text)
        if twice is not None:  # a query may output a name twice, a table not (nor a view)
            return (
                f"[COLUMN_ALREADY_EXISTS] it outputs two columns named {twice[1]}, which a "
                f"table cannot hold; alias one of them ({twice[1]} AS another_name)."
            )
        try:  # the query from a line of its own: Spark's positions are the query's
            self.env.sql.query(f"DESCRIBE QUERY\n{self.sql}")
        except Exception as own:
            return _spark_said(own)
        return None

    def _table_option_error(self, exc: Exception) -> FastRefreshError | None:
        """The error to give when ``exc`` is Spark or Iceberg refusing one of the model's
        table options as the storage table is created (a ``partition_by`` that names no
        output, a ``format-version`` Iceberg has not, a ``location_root`` it cannot
        create), naming the option and the fix. None: it is none of those."""
        text, options = str(exc), self.table.options.lower()
        column = _NO_COLUMN.search(text)
        if column is not None and ("partitioned by" in options or "clustered by" in options):
            return FastRefreshError(
                f"The partition_by (or clustered_by) of {self.view} names {column[1]}, which "
                "is not a column its query outputs. Fix: name one of the query's output "
                "columns, or remove it."
            )
        given = str(self.table.properties.get("format-version", ""))
        if given and (
            f'For input string: "{given}"' in text
            or f"Unsupported format version: v{given}" in text
        ):
            return FastRefreshError(
                f"The tblproperties of {self.view} give format-version {given!r}, which "
                "Iceberg does not take. Fix: '2' (the default) or '3', or remove it."
            )
        folder = _MKDIRS.search(text)
        located = _LOCATION.search(self.table.options)
        if folder is not None and located is not None and located[1].rstrip("/") in folder[1]:
            return FastRefreshError(
                f"The storage table of {self.view} cannot be written at {folder[1]}: the "
                "folder cannot be created there. Fix: set location_root to a folder this "
                "Spark can write, or remove it."
            )
        return None

    def _unstorable(self, exc: Exception) -> FastRefreshError | None:
        """The error to give when ``exc`` is Iceberg refusing a type of the query's
        outputs as the storage table is created (a bare ``NULL``'s VOID, an INTERVAL),
        naming the columns (``DESCRIBE QUERY``, only on this path). None: it is not."""
        found = _UNSTORABLE.search(str(exc))
        if found is None or isinstance(exc, FastRefreshError):
            return None
        try:
            described = self.env.sql.query(f"DESCRIBE QUERY\n{self.sql}")
        except Exception:  # the message names the type alone
            described = []
        named = [
            f"{r[0]} ({r[1]})" for r in described if re.search(r"\b(void|interval)\b", str(r[1]))
        ]
        types = "types" if len(named) > 1 else "a type"
        return FastRefreshError(
            f"The query of {self.view} outputs {', '.join(named) or found[1]}, {types} an "
            "Iceberg table cannot hold. Fix: give a bare NULL its type "
            "(CAST(NULL AS STRING) AS c), and output an interval as a number (datediff(b, "
            "a), unix_seconds(b) - unix_seconds(a)) or a string."
        )

    def _masters_and_run(self, *, full_refresh: bool, exists: bool) -> RefreshResult:
        if self.loaded is None:
            self.loaded = load_masters(self.env, self.sql, read=self.read)
        loaded = self.loaded
        create = not self._shape_never_fast(loaded)
        self.rebuilding = full_refresh or not exists
        with self._leased(self._leases(loaded)):
            masters = [self._with_log(m, loaded, create=create) for m in loaded]
            self._only_reading(masters)
            logs = [m.log.log_table for m in masters if m.log is not None]
            # From its setup to its wrap-up, the logs this refresh works on are not dropped
            # by this process's other threads (drop_mview_log refuses them).
            with self.env.runtime.using(str(log) for log in logs):
                return self._run(masters, logs, full_refresh=full_refresh, exists=exists)

    def _leases(self, loaded: list[MasterState]) -> list[str]:
        """The leases a refresh of the view takes at once (a shared catalog): the view's,
        and, where a master's log is to be created, or has commits to capture, rows to
        mark or leftovers to clear, those of every master's log. Each lease taken is a
        ``MERGE`` into the leases table (0.25-0.5 s through a server), each given back a
        ``DELETE`` (about 0.1 s): a refresh that captured took the view's and then the
        log's, two ``MERGE``s; now one. The logs' are given back once the setups are done
        (``_logs_written``), so another process's capture never waits for this view's
        delta or rebuild. No two processes wait for each other: a refresh holding the
        logs' leases takes no other, and one holding only the view's takes logs' leases
        that no holder of a log's lease waits for (a capture of commits newer than it
        read, its registration after a complete refresh)."""
        view = f"view:{self.view}"
        if not any(
            unloggable(m.meta, m.name) is None if m.log is None else setup_writes(m.log, m.meta)
            for m in loaded
        ):
            return [view]
        return [view, *(log_lock(log_table_for(m.name)) for m in loaded)]

    @contextlib.contextmanager
    def _leased(self, names: list[str]) -> Iterator[None]:
        """Hold ``names`` (the view's lease first) for the block, taken in one swap; the
        others are given back at ``_logs_written`` or at the end, the view's at the end."""
        purpose = f"refresh of {self.view}"
        together = self.env.leasing(names, purpose=purpose)
        together.__enter__()
        self.together = together
        if self.env.shared_catalog and not self.env.read_only:
            self.leased_logs = set(names[1:])
        try:
            with self.env.leasing(names[:1], purpose=purpose):  # counted: no swap
                yield
        finally:
            self._logs_written()

    def _logs_written(self) -> None:
        """Give back the logs' leases taken with the view's (``_leased``): the refresh
        writes its logs no more, but for a registration after a complete refresh and a
        synchronous purge, which take theirs again."""
        together, self.together = self.together, None
        self.leased_logs = set()
        if together is not None:
            together.__exit__(None, None, None)

    def _only_reading(
        self,
        masters: list[MasterState],
        reason: Reason | None = None,
        record: ViewRecord | None = None,
    ) -> None:
        """Where a refresh that may only read (``_unchanged``) would write, stop it as soon
        as that is known, before it reads more: a master without a log, or one whose log
        has commits to capture, rows to mark or leftovers to clear; once decided, a
        complete refresh, or log rows past the view's place."""
        if not self.env.read_only:
            return
        if reason is not None:
            raise WouldWrite(f"a complete refresh: {reason}")
        for m in masters:
            if m.log is None or setup_writes(m.log, m.meta):
                raise WouldWrite(f"a setup on {m.name}")
            if record is not None and record.state is not None:
                place = record.state.positions.get(str(m.log.log_table))
                if place is None or place.last_sequence != m.log.state.last_sequence:
                    raise WouldWrite(f"rows of {m.log.log_table} to apply")

    def _run(
        self,
        masters: list[MasterState],
        logs: list[TableName],
        *,
        full_refresh: bool,
        exists: bool,
    ) -> RefreshResult:
        env = self.env
        self.masters = masters
        plan = plan_of(env, self.sql, masters)
        record = self._record() if exists else None
        columns_hash = schema_hash(masters, plan)
        self.time_zone = (self.time_zone or env.sql.time_zone()) if plan.zoned else None
        reason = decide(
            method=self.method, full_refresh=full_refresh, view=record, plan=plan,
            masters=masters, columns_hash=columns_hash, empty=self.empty,
            lost=self.storage if exists and record is None and self._found_ours() else None,
            time_zone=self.time_zone,
        )  # fmt: skip
        reason = reason or self.unkeyed
        reason, masters = self._go_ahead(reason, plan, masters, record)
        # The delta reads each log at the snapshot its setup read or wrote: from the setup
        # to the delta's end, this process does not expire the logs' snapshots.
        with upkeep.reading(env.runtime, logs):
            self._setup(masters, record, since=self._phase("analyze", self.started))
            pins = {
                m.name: self.setups[m.name].master_snapshot if m.name in self.setups
                else m.meta.current_snapshot
                for m in masters
            }  # fmt: skip
            previous = dict(record.state.master_snapshots) if record and record.state else {}
            self.previous_filled = record.state.filled if record and record.state else ()
            sources: dict[TableName, sqlgen.Source] = {}
            reason = self._final_reason(
                reason, plan, masters, sources=sources, pins=pins, previous=previous
            )
            mark = time.monotonic()
            try:
                reason = self._apply_or_rebuild(
                    reason, plan, record, pins=pins, previous=previous, sources=sources,
                    columns_hash=columns_hash,
                )  # fmt: skip
                log_rows, noop = self._outcome
            except Exception as exc:
                self._apply_failed(exc, reason, config=record.config if record else None, plan=plan)
                raise
        mark = self._phase("apply", mark)
        self._ensure_view(record if reason is None else None, before=record)
        if not noop:
            purge_after_refresh(env, list(self.setups.values()))
        self._phase("wrap_up", mark)
        refresh_type = _type_of(reason)
        seconds = time.monotonic() - self.started
        self.phases["total"] = seconds
        self._journal(refresh_type, reason, log_rows, "SUCCESS", None, moved=not noop)
        return RefreshResult(
            self.view, refresh_type, reason, log_rows, seconds, self.phases, noop,
            logs_created=tuple(self.logs_created), log_warnings=tuple(self.log_warnings),
        )  # fmt: skip

    def _apply_failed(
        self,
        exc: Exception,
        reason: Reason | None,
        *,
        config: ViewConfig | None = None,
        plan: ViewPlan | None = None,
    ) -> None:
        """After the view's write failed: a log whose columns were changed by hand, found
        from the failure (SQL path), raises ``LogTableAltered`` and the refresh runs
        again knowing it (``_held``), with no FAILED row; any other failure is recorded.
        A failed rebuild that was asked for (``REQUESTED``) is recorded as the change of
        the view's definition (``config``, the stored one, against ``plan``) when there is
        one: the registry then says NEEDS_COMPILE, as it does when the same refresh fails
        without being asked."""
        altered = self._altered_logs(exc)
        if altered is not None:
            raise altered from exc
        failed = self.failed_because or reason
        if failed is not None and failed.code in REQUESTED and plan is not None:
            failed = _definition_changed(config, plan) or failed
        self._journal(_type_of(reason), failed, 0, "FAILED", str(exc))

    def _shape_never_fast(self, loaded: list[MasterState]) -> bool:
        """Whether the query's shape can never refresh fast, whatever logs its masters
        get: the logs ``_with_log`` would create are then not created (each would capture
        on every run for no view). Planned with the keys those logs would have; only when
        one would be created."""
        keys = log_keys(loaded)
        creates = False
        for m in loaded:
            up = next((u for u in self.upstream if u.relation == m.name), None)
            if m.log is not None or up is None or up.log is False:
                continue
            creates = True
            try:
                key = planned_key(m.meta, m.name, up.options.get("key"))
            except FastRefreshError:
                return False  # the log's creation says what is wrong
            if key:
                keys[m.name] = key
        if not creates:
            return False
        plan = analyze(self.sql, {m.name: list(m.meta.columns) for m in loaded}, keys)
        return not plan.supported

    def _go_ahead(
        self,
        reason: Reason | None,
        plan: ViewPlan,
        masters: list[MasterState],
        record: ViewRecord | None,
    ) -> tuple[Reason | None, list[MasterState]]:
        """(``reason``, ``masters``) once the refresh is known to go ahead, before any
        write: a refresh that fails here (an empty build refreshed by refresh_mviews,
        ``on_schema_change: fail``, a 'fast' build of a view never fast) writes nothing.
        Then the logs ``_with_new_columns`` left to create again are."""
        if not plan.supported:  # a plan refuses such names (ivm.checks.check_output_names)
            _refuse_reserved_outputs(self.view, self.sql)
        self._only_reading(masters, reason, record)
        if reason is not None and reason.code is ReasonCode.BUILT_EMPTY and not self.model:
            raise _refreshed_empty(self.view)
        if reason is not None and reason.code in NEEDS_COMPILE and record is not None:
            reason = self._schema_change(reason, record, plan)
        if reason is not None and reason.code in BUILDS and self.method is RefreshMethod.FAST:
            self._refuse_a_build_never_fast(plan, masters, record)
        if reason is not None and reason.code is ReasonCode.FIRST_BUILD:
            never = never_fast(plan, masters)
            if never is not None:  # said now, not at the second run
                reason = Reason(reason.code, f"{reason}; it cannot refresh fast: {never}")
        self.masters = self._recreate_logs(masters, reason)
        return reason, self.masters

    def _found_ours(self) -> bool:
        """Whether dbt found the model's view and it is a fast_refresh view (its
        fingerprint): its storage table went missing. A view of another materialization
        (a `view` model switched to fast_refresh) is replaced by a first build."""
        if self.model is None or not self.model.view_found:
            return False
        return self.env.tables.view_property(self.view, VIEW_FINGERPRINT) is not None

    def _refuse_a_build_never_fast(
        self, plan: ViewPlan, masters: list[MasterState], record: ViewRecord | None
    ) -> None:
        """Under refresh_method 'fast', fail a build (first or ``--full-refresh``) of a view
        that could never refresh fast, before any write. Oracle refuses CREATE MATERIALIZED
        VIEW ... REFRESH FAST over a query it cannot refresh fast (ORA-12015, ORA-12052) or
        a master without a log (ORA-23413); a build that succeeded here failed the next
        run instead."""
        never = never_fast(plan, masters)
        if never is None:
            return
        if record is not None:  # (a first build's failure leaves no registry row)
            self._journal(RefreshType.FAST, never, 0, "FAILED", str(never))
        raise self._not_possible(never, master=_master_named(never, masters))

    def _final_reason(
        self,
        reason: Reason | None,
        plan: ViewPlan,
        masters: list[MasterState],
        *,
        sources: dict[TableName, sqlgen.Source],
        pins: Mapping[TableName, int | None],
        previous: Mapping[str, int],
    ) -> Reason | None:
        """Why this refresh is complete: ``reason`` (the view's own), else why the set-up
        logs cannot give it a fast refresh (None: they can; then ``sources`` holds where
        each master's changes come from). A reason the view's method does not accept fails
        the refresh, naming its fix."""
        if reason is None:
            problem = next(((m, s.problem) for m, s in self.setups.items() if s.problem), None)
            reason = self._replaced_by_dbt(*problem) if problem else None
        if reason is None:
            reason = _plan_sources(plan, masters, self.setups, previous, sources)
        if reason is None:
            reason = _history_gone(
                self.env, plan, self.setups, sources, pins=pins, previous=previous
            )
        if reason is None:
            reason = self._filled_before(masters)
        if reason is None and self.method is RefreshMethod.FORCE:
            reason = _range_too_large(self.env, self.setups, pins)
        if reason is not None and not reason.expected and self.method is RefreshMethod.FAST:
            self._journal(RefreshType.FAST, reason, 0, "FAILED", str(reason))
            raise self._not_possible(reason, master=_master_named(reason, masters))
        return reason

    def _replaced_by_dbt(self, master: TableName, reason: Reason) -> Reason:
        """``reason``, saying why when the log that lost its history is on a dbt seed or
        ``table`` model: dbt replaced that table (``dbt seed`` drops and creates it, a
        ``table`` model's ``CREATE OR REPLACE``) rather than its rows (``engine/seeds.py``,
        ``engine/dbt_tables.py``), and a log cannot read changes across a new table. Said
        of a seed or a kept ``table`` model only when the history lost says its table was
        made anew (not a log dropped and created, a rollback or expired snapshots); of a
        ``table`` model that every run replaces, always."""
        up = next((u for u in self.upstream if u.relation == master), None)
        if reason.code is not ReasonCode.LOG_YOUNGER or up is None:
            return reason
        made_anew = GAP_RECREATED in reason.detail or GAP_REPLACED in reason.detail
        if up.materialized == "seed" and made_anew:
            why = (
                f"{master} is a dbt seed whose table its last `dbt seed` dropped and "
                "created again, so its log starts anew and the models over it rebuild once "
                "(`dbt seed` keeps the table and replaces its rows unless the CSV's columns "
                "or the seed's table options changed, it ran with --full-refresh, or its table "
                "was created by a release of dbt-fastrefresh that did not record its options)"
            )
        elif up.materialized == "table" and not up.keeps_table:
            why = (
                f"{master} is a dbt `table` model, which every run replaces (`create or "
                "replace table`), so its log starts anew and the models over it rebuild after "
                "each run of it (configure it fast_refresh_keep_table: true to keep its table "
                "and replace its rows, which capture then reads whole, as they were and as "
                "they are, on each run; or make it an incremental or fast_refresh model)"
            )
        elif up.materialized == "table" and made_anew:
            why = (
                f"{master} is a dbt `table` model whose table its last run replaced, so its "
                "log starts anew and the models over it rebuild once (with "
                "fast_refresh_keep_table, a run keeps the table and replaces its rows unless "
                "the model's columns or table options changed, "
                "it ran with --full-refresh, or its table was created by a release of "
                "dbt-fastrefresh that did not record its options)"
            )
        else:
            return reason
        return Reason(reason.code, f"{reason.detail}: {why}")

    def _not_possible(self, reason: Reason, **names: str) -> FastRefreshError:
        """The error of a fast refresh ``reason`` stops (``names``: the objects its fix
        mentions)."""
        if " Fix: " in str(reason):  # the reason names its own fix (``not_a_master``)
            return FastRefreshError(f"Fast refresh of {self.view} is not possible: {reason}.")
        return FastRefreshError(
            f"Fast refresh of {self.view} is not possible: {reason}. Fix: "
            f"{reason.fix(**self.fixes, **names)}."
        )

    def _filled_before(self, masters: list[MasterState]) -> Reason | None:
        """A view last built from a master's snapshot older than the master's schema in a
        column it reads (``_fills``) is rebuilt by its next refresh that has changes to
        apply: its fast refresh would read the master at that snapshot, where the column
        is missing, has its old name or its old values."""
        filled = self.previous_filled
        if not filled or not any(s.pending for s in self.setups.values()):
            return None
        named = ", ".join(str(m.name) for m in masters if str(m.name) in filled)
        return Reason(
            ReasonCode.MASTER_COLUMNS_CHANGED,
            f"the view was last built from a snapshot of {named or ', '.join(filled)} older "
            "than its newest column(s) (added, renamed, retyped, or dropped and added "
            "again since), which a fast refresh would read there as they were; rebuilt "
            "from the newer snapshot",
        )

    def _record(self) -> ViewRecord | None:
        """The view's record; a view built by dbt-fastrefresh 0.1 is moved to its storage
        table first (``adopt_0_1_table``)."""
        record = load_view(self.env, self.view)
        if record is None and adopt_0_1_table(self.env, self.view):
            record = load_view(self.env, self.view)
        if record is not None and record.config is None and self.model is not None:
            self._refuse_a_foreign_table()
        return record

    def _refuse_a_foreign_table(self) -> None:
        """Fail, before any write, where the storage table's name holds a table without a
        view's configuration that the model's view is not over: a user's own table, which
        a rebuild would replace. A view unregistered (``unregister_mview``, which removes
        the configuration) still has its Spark view, with the fingerprint, over it."""
        if self._found_ours():
            return
        raise FastRefreshError(
            f"A table {self.storage} exists but is not the storage table of a fast_refresh "
            f"view (the name is taken): building the model {self.view} would replace it "
            f"and its rows. Fix: rename or drop {self.storage} (if it is the storage table "
            "of a view unregistered and dropped since, drop it), or give the model another "
            "name (its alias)."
        )

    def _ensure_view(self, record: ViewRecord | None, *, before: ViewRecord | None) -> None:
        """The view over the storage table, as ``record`` (read before a fast refresh,
        which keeps the columns) or the rebuilt table says it should be. Without docs
        (``refresh_mviews``), a view whose columns stay is kept with its comments (created
        again without them, it lost the model's persist_docs until its next dbt run)."""
        # After a complete refresh the table may have other columns: read them again (on
        # the SQL path one DESCRIBE: the rebuild was this session's own commit).
        columns = (
            record.meta.columns
            if record is not None
            else self.env.tables.columns(self.storage, own_write=True)
        )
        assert columns is not None
        keep = self.docs is None and before is not None and before.meta.columns == columns
        ensure_view(
            self.env, self.view, self.storage, columns, self.docs or ViewDocs(),
            replace_table=self.replace_table, keep_existing=keep,
        )  # fmt: skip
        if self.replace_table:
            self._drop_replaced_log()

    def _drop_replaced_log(self) -> None:
        """The log of the table the view replaced (another materialization's, logged while
        models read it) goes with it. Left, capture failed on it for good, and
        drop_mview_log of the model's name dropped the storage table's log, in use. One a
        refresh of this process's other threads is using stays, with a warning."""
        try:
            said = drop_replaced_log(self.env, self.view)
        except FastRefreshError as exc:
            self.log_warnings.append(
                f"the materialized view log of the table {self.view} this model replaced is "
                f"left: {exc.message} Fix: dbt run-operation fast_refresh.drop_mview_log "
                f"--args '{{master: {self.view}}}' once the run has finished."
            )
            return
        if said is not None:
            self.logs_created.append(said)

    def _setup(
        self, masters: list[MasterState], record: ViewRecord | None, *, since: float
    ) -> None:
        """The master side's setup on each logged master (capture, choose the time, mark);
        then the logs' leases taken with the view's are given back."""
        positions = record.state.positions if record and record.state else {}
        last_refresh = record.state.last_refresh_time if record and record.state else None
        for m in masters:
            # A log that no longer fits its master (columns dropped or retyped) cannot
            # capture: the view is rebuilt without it (decide) and does not register on it.
            if m.log is not None and log_mismatch(m.log, m.meta) is None:
                position = positions.get(str(m.log.log_table))
                self.setups[m.name] = setup(
                    self.env, m.meta, self.view, position, last_refresh, log=m.log,
                    leased=log_lock(m.log.log_table) in self.leased_logs,
                )  # fmt: skip
        self._logs_written()
        if self.env.read_only and any(s.pending or s.problem for s in self.setups.values()):
            raise WouldWrite("log rows to apply")
        captured = sum(s.capture.seconds for s in self.setups.values())
        self.phases["capture"] = captured
        self._phase("setup", since)
        self.phases["setup"] -= captured

    # -- apply ---------------------------------------------------------------------------

    def _apply_or_rebuild(
        self,
        reason: Reason | None,
        plan: ViewPlan,
        record: ViewRecord | None,
        **state: Any,
    ) -> Reason | None:
        """``_apply``; when its fast statement stopped before it committed, because a NaN
        or an infinity left a floating-point sum (``NON_FINITE_LEFT``), a group's sum left
        what its type or its exact arithmetic keeps (``SUM_GUARD``), or because the
        query's expressions raised over a changed row (``_row_error``), a complete refresh
        under ``force``, an error naming the fix under ``fast``. Returns why the refresh
        was complete (None: it was fast)."""
        try:
            self._apply(reason, plan, record, **state)
            return reason
        except Exception as exc:
            if reason is not None or isinstance(exc, WouldWrite):
                raise
            message = str(exc)
            for master in self.setups:  # a row added with a key another row held
                if (broken := duplicate_key_failure(exc, master)) is not None:
                    # Every refresh stops so until the log is dropped: UNUSABLE.
                    self.failed_because = Reason(ReasonCode.DELTA_RAISED, broken.message)
                    raise broken from None
            if NON_FINITE_LEFT in message:
                start = message.index(NON_FINITE_LEFT) + len(NON_FINITE_LEFT)
                argument = message[start:].split(NON_FINITE_FIX, 1)[0].split("\n", 1)[0]
                reason = Reason(
                    ReasonCode.NON_FINITE_LEFT,
                    f"a NaN or an infinity left the floating-point SUM/AVG of "
                    f"{argument.strip()}, which cannot subtract it (NaN - NaN and Infinity "
                    "- Infinity are NaN)",
                )
            elif (guard := _sum_guard(message)) is not None:
                reason = Reason(ReasonCode.SUM_OUT_OF_RANGE, guard)
            elif (raised := _row_error(message)) is not None:
                reason = Reason(
                    ReasonCode.DELTA_RAISED,
                    "the query raised an error over a row that changed since the last "
                    f"refresh, {raised}; a fast refresh evaluates the query over the changed "
                    "rows' old and new images (a row inserted and deleted since among them), "
                    "a complete refresh over the current rows only",
                )
            else:
                raise
        logger.debug(f"the fast refresh of {self.view} stopped: {reason}")
        if self.method is RefreshMethod.FAST:
            self.failed_because = reason  # the registry shows the view UNUSABLE
            raise self._not_possible(reason)
        self._apply(reason, plan, record, **state)
        return reason

    def _note_table_changes(self, record: ViewRecord) -> None:
        """A fast refresh keeps the storage table as it was built: a model whose table
        options (``partition_by``, ``clustered_by``, ``location_root``, ``tblproperties``)
        changed since is warned that they wait for a complete refresh. (A changed
        description, in the table's COMMENT, is carried by the view: no warning.)"""
        old, name = record.config, self.model.name if self.model else None
        if old is None or name is None:
            return
        changed = []
        before, now = _without_comment(old.table_options), _without_comment(self.table.stored())
        if before != now:
            changed.append(f"table options ({before or 'none'} -> {now or 'none'})")
        if dict(old.table_properties) != dict(self.table.properties):
            changed.append("tblproperties")
        if changed:
            self.log_warnings.append(
                f"the model's {' and '.join(changed)} changed since its table "
                f"{self.storage} was built, and a fast refresh keeps the table as it is. Fix: "
                f"run `dbt run --full-refresh -s {name}` to rebuild the table with them."
            )

    def _apply(
        self,
        reason: Reason | None,
        plan: ViewPlan,
        record: ViewRecord | None,
        *,
        pins: Mapping[TableName, int | None],
        previous: Mapping[str, int],
        sources: Mapping[TableName, sqlgen.Source],
        columns_hash: str,
    ) -> None:
        self.env.check_leases([f"view:{self.view}"])
        if reason is None:
            assert record is not None
            self._note_table_changes(record)
            self._outcome = self._apply_fast(plan, record, pins, previous, sources)
        else:
            self._apply_complete(plan, record, reason, pins, columns_hash)
            self._outcome = (0, False)

    def _now(self) -> object:
        return max((s.now for s in self.setups.values()), default=None) or self.env.clock()

    def _new_state(
        self, refresh_type: RefreshType, reason: Reason | None, pins: Mapping[TableName, int | None],
        fallback: str | None,
    ) -> ViewState:  # fmt: skip
        return ViewState(
            refresh_method=self.method,
            last_refresh_type=refresh_type,
            last_refresh_time=self._now(),  # type: ignore[arg-type]
            last_fallback_reason=str(reason) if reason is not None else fallback,
            positions={str(s.log.log_table): s.new_position() for s in self.setups.values()},
            master_snapshots={str(k): v for k, v in pins.items() if v is not None},
            time_zone=self.time_zone,
        )

    def _apply_fast(
        self,
        plan: ViewPlan,
        record: ViewRecord,
        pins: Mapping[TableName, int | None],
        previous: Mapping[str, int],
        sources: Mapping[TableName, sqlgen.Source],
    ) -> tuple[int, bool]:
        """One MERGE for every master with pending changes (none: nothing written)."""
        assert record.state is not None and record.config is not None
        pending = {m: s for m, s in self.setups.items() if s.pending}
        if not pending:
            return 0, True
        log_rows = sum(s.through_sequence - s.after_sequence for s in pending.values())
        types = {c.name: c.type for c in record.meta.columns}
        old_pins = _old_pins(self.setups, pins, previous)
        changed = {m: s for m, s in sources.items() if m in pending}
        target = sqlgen.Target(
            self.storage, types, record.config.avg_types, overwrite=overwrites(record),
            required_keys=_required_keys(self.env, plan, self.masters, changed, pins),
        )  # fmt: skip
        statement = sqlgen.delta_statement(plan, target, changed, pins=pins, old_pins=old_pins)
        state = self._new_state(RefreshType.FAST, None, pins, record.state.last_fallback_reason)
        rows = rows_read([record.meta, *(m.meta for m in self.masters)], log_rows)
        # A view known to be large stays so for the SQL path until it is rebuilt: its count
        # and size go on in its state, unread (reading them after each MERGE would cost
        # more than the one-statement delta saves the view that shrinks).
        commit_view(
            self.env, self.storage, statement, state, fault="apply.after_merge", view=self.view,
            rows=rows, count_files=not record.large and copy_on_write(record.config),
            known=(record.data_files, record.data_bytes) if record.large else (None, None),
        )  # fmt: skip
        return log_rows, False

    def _apply_complete(
        self,
        plan: ViewPlan,
        record: ViewRecord | None,
        reason: Reason,
        pins: Mapping[TableName, int | None],
        columns_hash: str,
    ) -> None:
        env = self.env
        unnamed = unnamed_outputs(self.sql)
        if unnamed:
            self.log_warnings.append(unnamed)
        fills = _fills(env, self.masters, pins)
        reads = {m: f.read for m, f in fills.items()}
        config = ViewConfig(
            definition=plan.sql,
            query_hash=plan.query_hash,
            master_schema_hash=columns_hash,
            shape=plan.shape if plan.supported else f"unsupported: {plan.reason}",
            masters=plan.masters,
            table_options=self.table.stored(),
            table_properties=dict(self.table.properties),  # strings (config._properties)
            registered_at=record.config.registered_at if record and record.config else self._now(),  # type: ignore[arg-type]
            avg_types=_avg_types(env, plan, pins, reads),
            key_columns=view_key(plan),
            built_empty=self.empty,
            dbt_node=self.model.node if self.model else None,
            dbt_project=self.model.project if self.model else None,
        )
        state = self._new_state(RefreshType.COMPLETE, reason, pins, None)
        # The masters read there unlike now in a column the query reads (a view that reads
        # none of them refreshes fast from that snapshot as from any other).
        filled = [m for m, f in fills.items() if f.differs & set(plan.columns_read_of(m))]
        state = state.replace(filled=tuple(sorted(str(m) for m in filled)))
        properties = {**self.table.table_properties(), VIEW_CONFIG: config.to_json()}
        select = sqlgen.complete_select(plan, pins, reads)
        in_place = record is not None and keeps_history(record, config, plan, self.masters)
        if in_place:
            statement = f"{sqltext.replace_all(self.storage)} {select}"
        else:
            statement = (
                f"CREATE OR REPLACE TABLE {self.storage.sql} USING iceberg "
                f"{self.table.options} TBLPROPERTIES ({sqltext.properties(properties)}) "
                f"AS {select}"
            )
        commit_view(
            env, self.storage, statement, state, fault="apply.after_rebuild", view=self.view,
            rows=rows_read(m.meta for m in self.masters), count_files=copy_on_write(config),
        )  # fmt: skip
        if in_place and record is not None and record.config != config:
            # After the data: a crash between the two leaves the old configuration, which
            # only makes the next refresh rebuild again.
            env.tables.set_properties(self.storage, {VIEW_CONFIG: config.to_json()})
        faults.point("register.before")
        register(env, list(self.setups.values()))
        before = record.state.positions if record is not None and record.state else {}
        self.left = sorted(set(before) - self._logs_read())

    def _logs_read(self) -> set[str]:
        """The logs of the masters the view's query reads: those set up, and those that
        could not be (a log that no longer fits its master: the view is rebuilt, and stays
        registered there until the log is created again)."""
        logs = {str(s.log.log_table) for s in self.setups.values()}
        return logs | {str(m.log.log_table) for m in self.masters if m.log is not None}

    def journal_held(self) -> None:
        """Record what a refresh that only read journaled (``_journal``)."""
        held, self.held = self.held, []
        for refresh_type, reason, log_rows, status, error, moved in held:
            self._journal(refresh_type, reason, log_rows, status, error, moved=moved)

    def _journal(
        self, refresh_type: RefreshType, reason: Reason | None, log_rows: int, status: str,
        error: str | None, *, moved: bool = True,
    ) -> None:  # fmt: skip
        if self.env.read_only:  # recorded once it is known to stand (_unchanged)
            self.held.append((refresh_type, reason, log_rows, status, error, moved))
            return
        journal = self.env.runtime.journal(self.env.registry)
        journal.views.add(str(self.view))
        if moved:
            # The view's place on each log moved: its rows in mview_log_users are
            # republished (a refresh with nothing to apply wrote nothing and moved none).
            journal.logs.update(str(s.log.master) for s in self.setups.values())
            if status == "SUCCESS":
                journal.written.add(str(self.storage))
        if status == "SUCCESS":
            journal.reads[str(self.view)] = frozenset(self._logs_read())
            # A log the view read before this refresh and no longer reads: its claim there
            # is released at the end of the invocation (admin.release_orphans).
            journal.logs.update(str(master_of_log(TableName.parse(t))) for t in self.left)
        journal.refreshes.append(
            RefreshRecord(
                run_id=uuid.uuid4().hex,
                mview=str(self.view),
                started=self.run_started,
                ended=self.env.clock(),
                refresh_type=refresh_type,
                reason=str(reason) if reason is not None and status == "SUCCESS" else None,
                reason_code=reason.code.value if reason is not None else None,
                log_rows_read=log_rows,
                status=status,
                error=error[:4000] if error else None,
                phases={k: round(v, 4) for k, v in self.phases.items()},
            )
        )


def _required_keys(
    env: Env,
    plan: ViewPlan,
    masters: Sequence[MasterState],
    changed: Mapping[TableName, sqlgen.Source],
    pins: Mapping[TableName, int | None],
) -> frozenset[TableName]:
    """The masters whose log's key holds no NULL for this delta: those keyed by their
    identifier fields, which Iceberg keeps NOT NULL, and, for a FULL join, every input
    when one query (``sqlgen.null_key_probe``) finds no NULL key where the delta reads.
    The query only saves time: where it fails (a catalog without Iceberg's metadata
    tables at a snapshot), the delta keeps the closure."""
    required = frozenset(
        m.name
        for m in masters
        if m.log is not None
        and m.log.config.key_columns
        and set(m.log.config.key_columns) <= set(m.meta.identifier_fields)
    )
    probe = sqlgen.null_key_probe(plan, changed, pins, required)
    if probe is None:
        return required
    try:
        nulls = int(env.sql.query(probe)[0][0])
    except Exception as exc:  # the closure is always right: keep it
        logger.debug(f"the NULL-key probe failed ({exc}); the delta keeps the closure")
        return required
    return required if nulls else required | {put.master for put in plan.inputs}


def commit_view(
    env: Env, storage: TableName, statement: str, state: ViewState, *, fault: str,
    view: TableName, rows: int | None = None, count_files: bool = False,
    known: tuple[int | None, int | None] = (None, None),
) -> None:  # fmt: skip
    """Run ``statement`` (the view's MERGE or rebuild of its ``storage`` table) with the
    view's new ``state``: in the commit's snapshot summary where the path can, else as a
    property right after (each write only while the view's lease, on a shared catalog,
    is still this process's). ``rows``: what the statement reads at most (small: it
    runs without generated code, ``runtime/interpreted.py``). ``count_files``: the
    property's state also gives the table's data files and their size at the new
    snapshot, read from its summary (one ``.snapshots`` query), for the next refresh's
    choice of statement (``overwrites``; the Java path reads the summary at that refresh
    for nothing); else it keeps ``known``, the count and size read before."""
    env.check_leases([f"view:{view}"])
    with env.tables.summary({VIEW_STATE: state.to_json()}) as attached, env.sql.small(rows):
        env.sql.execute(statement)
    faults.point(fault)
    if attached:
        return
    env.check_leases([f"view:{view}"])
    meta = env.tables.load_state(storage)
    current = meta.current_snapshot if meta else None
    files, size = known
    if count_files:
        info = env.tables.history(storage).get(current) if current is not None else None
        files, size = (info.data_files, info.data_bytes) if info else (None, None)
    stored = state.replace(snapshot=current, data_files=files, data_bytes=size)
    env.tables.set_properties(storage, {VIEW_STATE: stored.to_json()})


def rows_read(tables: Iterable[TableMeta | None], log_rows: int = 0) -> int | None:
    """The most rows a refresh's statement reads: ``log_rows`` and every row of ``tables``
    (the view's table, its masters), or None when a table's count is not known (the SQL
    path reads none).

    >>> m = TableMeta(TableName("s", "t"), True, "iceberg", (), 2, {}, rows=10_000)
    >>> rows_read([m, m], 12), rows_read([m, dataclasses.replace(m, rows=None)])
    (20012, None)
    """
    total = log_rows
    for meta in tables:
        if meta is None or meta.rows is None:
            return None
        total += meta.rows
    return total


def _range_too_large(
    env: Env, setups: Mapping[TableName, Setup], pins: Mapping[TableName, int | None]
) -> Reason | None:
    """Why a complete refresh is cheaper than reading this view's log range (or None)."""
    for name, s in setups.items():
        rows = s.through_sequence - s.after_sequence
        pin = pins.get(name)
        if rows < CHEAP_RANGE or pin is None:
            continue
        snapshot = env.tables.history(name).get(pin)
        total = snapshot.count("total-records") if snapshot else None
        if total and rows > COMPLETE_ABOVE_FRACTION * total:
            return Reason(
                ReasonCode.RANGE_TOO_LARGE,
                f"the log range holds {rows:,} rows for this view, {rows / total:.0%} of the "
                f"{total:,} rows of {name}; above {COMPLETE_ABOVE_FRACTION:.0%} a complete "
                "refresh is cheaper (refresh_method='fast' refreshes fast regardless)",
            )
    return None


def _plan_sources(
    plan: ViewPlan,
    masters: list[MasterState],
    setups: Mapping[TableName, Setup],
    previous: Mapping[str, int],
    sources: dict[TableName, sqlgen.Source],
) -> Reason | None:
    """Where each master's changes come from; a reason when they cannot be had."""
    if plan.over_inner_join:
        # The delta rule joins each table's changes with the others as they were: a master
        # with changes for the view as the view last reflected it, which its state records
        # (a master without any is read as pinned, ``_old_pins``; a table still without a
        # snapshot, created empty, has none to record).
        unknown = [
            m.name
            for m in masters
            if previous.get(str(m.name)) is None and m.name in setups and setups[m.name].pending
        ]
        if unknown:
            return Reason(
                ReasonCode.SNAPSHOT_UNKNOWN,
                f"the snapshot of {', '.join(map(str, unknown))} that the view last reflected "
                "is unknown (an aggregate over a join reads it)",
            )
    for m in masters:
        done = setups[m.name]
        config = done.log.config
        source = sqlgen.LogSource(
            config.log_table, done.range_predicate(),
            () if config.keyless else config.key_columns, config.master_columns,
            config.columns, done.log_snapshot, m.name,
        )  # fmt: skip
        read = set(plan.columns_read_of(m.name))
        unrecorded = sorted(read - set(config.master_columns))
        if unrecorded:
            # Capture compares the columns the master had when its log was created: an
            # update of a column added since changes no row it compares, and is not logged.
            return Reason(
                ReasonCode.LOG_BROKEN,
                f"the materialized view log {config.log_table} does not record changes of "
                f"column(s) {', '.join(unrecorded)} of {m.name}, added after it was created",
            )
        if plan.shape is Shape.JOIN or read <= set(config.columns):
            # A join projection needs only the changed keys (it reads the log's images when
            # the log holds the columns, else the pinned master's rows for those keys).
            sources[m.name] = source
            continue
        missing = sorted(read - set(config.columns))
        before = previous.get(str(m.name))
        if config.keyless or before is None or done.master_snapshot is None:
            return Reason(
                ReasonCode.LOG_LACKS_COLUMNS,
                f"the log {config.log_table} does not hold column(s) {', '.join(missing)} the "
                "view reads, and the master's earlier snapshot is unknown",
            )
        sources[m.name] = sqlgen.MasterSource(source, m.name, before, done.master_snapshot)
    return None


def _master_named(reason: Reason, masters: list[MasterState]) -> str:
    """The master a reason's fix names: the one without a log, or whose log broke (it
    cannot record the master's columns, or lacks columns added since)."""
    for m in masters:
        if m.log is None:
            return str(m.name)
        if reason.code is ReasonCode.LOG_BROKEN and (
            log_mismatch(m.log, m.meta) is not None
            or any(c.name not in m.log.config.master_columns for c in m.meta.columns)
        ):
            return str(m.name)
    return ""


def _type_of(reason: Reason | None) -> RefreshType:
    """A refresh with no reason against it is fast."""
    return RefreshType.FAST if reason is None else RefreshType.COMPLETE


def _old_pins(
    setups: Mapping[TableName, Setup],
    pins: Mapping[TableName, int | None],
    previous: Mapping[str, int],
) -> dict[TableName, int | None]:
    """Each master as the view last reflected it. A master without log rows for the view
    has not changed since (its commits, if any, changed no row: compaction, empty DML), so
    its pinned snapshot stands for that one, which may have been expired since."""
    return {m: previous.get(str(m)) if s.pending else pins.get(m) for m, s in setups.items()}


def _history_gone(
    env: Env,
    plan: ViewPlan,
    setups: Mapping[TableName, Setup],
    sources: Mapping[TableName, sqlgen.Source],
    *,
    pins: Mapping[TableName, int | None],
    previous: Mapping[str, int],
) -> Reason | None:
    """Why a master snapshot this refresh must time-travel to is gone (or None).

    The delta rule of an aggregate over a join reads the tables after a changed one as the
    view last reflected them, and a log without a column the view reads sends the refresh
    to the master's earlier snapshot; ``expire_snapshots`` may have removed either.
    """
    needed: dict[TableName, int | None] = {}
    if plan.over_inner_join:
        old = _old_pins(setups, pins, previous)
        changed = [i for i, inp in enumerate(plan.inputs) if setups[inp.master].pending]
        if changed:
            for inp in plan.inputs[changed[0] + 1 :]:
                if setups[inp.master].pending:
                    needed[inp.master] = old[inp.master]
    for m, source in sources.items():
        if isinstance(source, sqlgen.MasterSource) and setups[m].pending:
            needed[m] = source.old_snapshot
    for master, snapshot in sorted(needed.items(), key=lambda item: str(item[0])):
        if snapshot is not None and env.tables.history(master).get(snapshot) is None:
            return Reason(
                ReasonCode.HISTORY_GONE,
                f"snapshot {snapshot} of {master}, the one the view last reflected, is gone "
                "(expire_snapshots removed it), and this refresh reads the master as it was "
                "then",
            )
    return None


def column_change(record: ViewRecord, plan: ViewPlan) -> str | None:
    """How the view's user columns differ from its query's outputs (None: the same, or
    the query is not planned)."""
    if not plan.outputs:
        return None
    old = [c.name.lower() for c in record.meta.columns if not c.name.startswith(HIDDEN_PREFIX)]
    new = [c.lower() for c in plan.user_columns]
    if old == new:
        return None
    added = [c for c in new if c not in old]
    removed = [c for c in old if c not in new]
    parts = [f"new column(s) {', '.join(added)}"] if added else []
    parts += [f"column(s) {', '.join(removed)} removed"] if removed else []
    return "; ".join(parts) or f"columns reordered ({', '.join(new)})"


def view_key(plan: ViewPlan) -> tuple[str, ...]:
    """The view columns that identify a view row: a keyed projection's or a join's key
    columns (none for an aggregate, whose group values may be NULL, or a key-less view)."""
    if plan.shape in (Shape.PROJECTION, Shape.JOIN) and plan.keyed:
        return tuple(dict.fromkeys(plan.key_view_columns))
    return ()


class Fill(NamedTuple):
    """A master read at a snapshot older than its schema (``_fills``)."""

    read: str  # the SELECT that reads it with every current column
    differs: frozenset[str]  # the columns it does not read there as they are now


def _fills(
    env: Env, masters: Sequence[MasterState], pins: Mapping[TableName, int | None]
) -> dict[TableName, Fill]:
    """How a complete refresh reads each master whose pinned snapshot was committed under
    an older schema (``sqlgen.filled_read``): an ``ALTER TABLE`` makes no snapshot, and
    Iceberg reads a snapshot with the schema it was committed under. There a column added
    since is missing (the query naming it failed until the master's next commit), one
    renamed has its old name, and one dropped and added again its old values."""
    fills = {}
    for m in masters:
        snapshot = pins.get(m.name)
        if snapshot is None:
            continue
        at = env.tables.snapshot_schema(m.name, snapshot, m.meta.columns)
        if at is not None:
            read = sqlgen.filled_read(m.name, snapshot, m.meta.columns, at)
            fills[m.name] = Fill(read, at.differs)
    return fills


def _avg_types(
    env: Env,
    plan: ViewPlan,
    pins: Mapping[TableName, int | None],
    fills: Mapping[TableName, str],
) -> dict[str, str]:
    """Spark's result type of each AVG(arg) (so incremental averages match exactly); asked
    once, at the complete refresh, and kept in the view's configuration."""
    args = sorted({a.arg for a in plan.aggregates if a.kind == "avg" and a.arg})
    if not args or not plan.supported:
        return {}
    tree = sqlgen.pin_tables(plan.query(), pins, fills)
    for arg in ("group", "distinct"):
        tree.set(arg, None)
    nodes = [plan.component_nodes[plan.components.index(arg)].copy() for arg in args]
    types = [exp.Anonymous(this="typeof", expressions=[exp.Avg(this=n)]) for n in nodes]
    tree = tree.select(*types, append=False, copy=False)
    tree.set("where", exp.Where(this=exp.false()))
    row = env.sql.query(tree.sql(dialect=DIALECT))[0]
    return dict(zip(args, [str(v) for v in row], strict=True))
