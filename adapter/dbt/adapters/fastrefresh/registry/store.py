"""The registry: the protocol's state and history, published as queryable tables.

The protocol keeps its facts on the tables they describe (``protocol/state.py``); refreshes read
and write them there, and never the registry. The registry is where people and the
package's registry models look: Oracle's dictionary views, here SQL views over one
append-only Iceberg table, ``registry``, in the schema the profile field
``registry_schema`` names (default ``fast_refresh``):

| view | one row per | Oracle |
|------------------|----------------------|-------------------|
| mview_logs       | log                  | SYS.MLOG$ / USER_MVIEW_LOGS |
| mview_log_users  | (log, view)          | SYS.SLOG$         |
| mviews           | view                 | SNAP$ / USER_MVIEWS |
| refresh_runs     | refresh (history)    | -                 |
| capture_runs     | non-empty capture    | -                 |

``publish`` appends, in one commit, the current state of every log and view the process
changed and the history it made since it last published; a view shows the newest row of
each log, (log, view) and view. dbt-fastrefresh publishes at the end of every dbt
invocation (the package's ``on-run-end`` hook) and of every run-operation, so a run of
any number of models costs the registry one commit, not several per model. A process
killed before it publishes loses the history rows of that invocation, not the state:
the next publish of those objects shows it.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Mapping
from typing import Any

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.fastrefresh.engine.inspection import staleness_of
from dbt.adapters.fastrefresh.engine.refresh import load_view
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.iceberg import columns as mt
from dbt.adapters.fastrefresh.iceberg.leases import TABLE as LEASES
from dbt.adapters.fastrefresh.iceberg.leases import ensure_table as ensure_leases
from dbt.adapters.fastrefresh.iceberg.leases import leases_table
from dbt.adapters.fastrefresh.mlog.consumers import purge, read_view_state
from dbt.adapters.fastrefresh.mlog.ddl import LoadedLog, load_log
from dbt.adapters.fastrefresh.protocol import upkeep
from dbt.adapters.fastrefresh.protocol.decisions import (
    NEEDS_COMPILE,
    REQUESTED,
    ReasonCode,
    Staleness,
)
from dbt.adapters.fastrefresh.protocol.env import Env
from dbt.adapters.fastrefresh.protocol.state import VIEW_CONFIG, Position
from dbt.adapters.fastrefresh.registry import migration
from dbt.adapters.fastrefresh.registry.table import (
    REGISTRY_VERSION,
    TABLE,
    VERSION_PROPERTY,
    create_table,
    table,
    values_row,
)
from dbt.adapters.fastrefresh.runtime import faults
from dbt.adapters.fastrefresh.runtime.process import Journal
from dbt.adapters.fastrefresh.sqltext import (
    STORAGE_SUFFIX,
    TableName,
    ident,
    literal,
    log_table_for,
    pack_sql,
    string,
    timestamp,
    view_of,
)

logger = AdapterLogger("fastrefresh")

COMPACT_EVERY = 50  # publishes of this process between two compactions of the registry

# The registry views' columns, in order (Spark SQL types).
VIEWS: dict[str, list[tuple[str, str]]] = {
    "mview_logs": [
        ("master", "STRING"),
        ("log_table", "STRING"),
        ("flavour", "STRING"),  # TIMESTAMP (snaptime marking) or COMMIT_SCN
        ("key_columns", "ARRAY<STRING>"),
        ("logged_columns", "ARRAY<STRING>"),
        ("master_columns", "ARRAY<STRING>"),  # all master columns at creation, in order
        ("keyless", "BOOLEAN"),
        ("created", "TIMESTAMP_NTZ"),
        ("oldest", "TIMESTAMP_NTZ"),
        ("youngest", "TIMESTAMP_NTZ"),
        ("last_purge_time", "TIMESTAMP_NTZ"),
        ("last_purge_rows", "BIGINT"),
        ("captured_through", "BIGINT"),  # master snapshot id
        ("captured_at", "TIMESTAMP_NTZ"),
        ("last_sequence", "BIGINT"),
        ("marked_sequence", "BIGINT"),
        ("purged_through", "TIMESTAMP_NTZ"),
        ("purged_sequence", "BIGINT"),
        ("younger_than", "TIMESTAMP_NTZ"),
        ("younger_reason", "STRING"),
        ("purge", "STRING"),  # deferred | synchronous
    ],
    "mview_log_users": [
        ("log_table", "STRING"),
        ("master", "STRING"),
        ("mview", "STRING"),
        ("registered_at", "TIMESTAMP_NTZ"),
        ("last_refresh", "TIMESTAMP_NTZ"),
        ("last_sequence", "BIGINT"),
        ("master_snapshot", "BIGINT"),
    ],
    "mviews": [
        ("mview", "STRING"),
        ("query_hash", "STRING"),
        ("refresh_method", "STRING"),
        ("masters", "ARRAY<STRING>"),
        ("shape", "STRING"),
        ("last_refresh_type", "STRING"),
        ("last_refresh_time", "TIMESTAMP_NTZ"),
        ("staleness", "STRING"),
        ("last_fallback_reason", "STRING"),
        ("view_snapshot", "BIGINT"),
        ("master_snapshots", "MAP<STRING, BIGINT>"),
        ("master_schema_hash", "STRING"),
        ("registered_at", "TIMESTAMP_NTZ"),
        ("definition", "STRING"),  # the view's compiled SQL (Oracle: the MV's query text)
        ("table_options", "STRING"),  # PARTITIONED BY / TBLPROPERTIES ... of its table
    ],
    "refresh_runs": [
        ("run_id", "STRING"),
        ("mview", "STRING"),
        ("started", "TIMESTAMP_NTZ"),
        ("ended", "TIMESTAMP_NTZ"),
        ("refresh_type", "STRING"),
        ("reason", "STRING"),
        ("log_rows_read", "BIGINT"),
        ("rows_applied", "BIGINT"),
        ("status", "STRING"),
        ("error", "STRING"),
        ("phase_seconds", "MAP<STRING, DOUBLE>"),
    ],
    "capture_runs": [
        ("log_table", "STRING"),
        ("master", "STRING"),
        ("captured_at", "TIMESTAMP_NTZ"),
        ("from_snapshot", "BIGINT"),
        ("to_snapshot", "BIGINT"),
        ("snapshots", "BIGINT"),
        ("first_sequence", "BIGINT"),
        ("last_sequence", "BIGINT"),
        ("log_rows", "BIGINT"),
        ("oldest_commit", "TIMESTAMP_NTZ"),
        ("newest_commit", "TIMESTAMP_NTZ"),
        ("seconds", "DOUBLE"),
    ],
}
# Each view's kind in the registry table, and whether it shows the newest row per name
# (state) or every row (history).
KINDS = {
    "mview_logs": ("log", True),
    "mview_log_users": ("log_user", True),
    "mviews": ("mview", True),
    "refresh_runs": ("refresh_run", False),
    "capture_runs": ("capture_run", False),
}


def view_sql(env: Env, view: str) -> str:
    """The SELECT of one registry view over the registry table (pure)."""
    kind, latest = KINDS[view]
    columns = VIEWS[view]
    fields = ", ".join(f"{c} {'STRING' if t == 'TIMESTAMP_NTZ' else t}" for c, t in columns)
    picks = ", ".join(
        f"CAST(p.{c} AS TIMESTAMP_NTZ) AS {c}" if t == "TIMESTAMP_NTZ" else f"p.{c} AS {c}"
        for c, t in columns
    )
    source = table(env).sql
    if latest:
        rows = (
            f"SELECT payload, deleted FROM (SELECT payload, deleted, row_number() OVER "
            f"(PARTITION BY name ORDER BY recorded DESC, seq DESC) AS rank__ FROM {source} "
            f"WHERE kind = {string(kind)}) WHERE rank__ = 1 AND NOT deleted"
        )
    else:
        rows = f"SELECT payload FROM {source} WHERE kind = {string(kind)}"
    return f"SELECT {picks} FROM (SELECT from_json(payload, {string(fields)}) AS p FROM ({rows}))"


# -- creation and versioning ---------------------------------------------------------------


def ensure(env: Env, *, again: bool = False) -> None:
    """Create the registry schema, table and views if missing; refuse a registry of a
    newer release or a schema holding other tables of the same names. A process does so
    once per registry; ``again``: look again, as this process last found it may no longer
    be (the registry table dropped by hand since: ``ensure_registry``, ``rebuild``)."""
    key = env.registry
    if again:
        env.runtime.ensured.discard(key)
    if key in env.runtime.ensured:
        return
    with env.runtime.holding([f"registry:{key}"]):
        if key in env.runtime.ensured:
            return
        existing, views = _names(env)
        if "mview_logs" in existing and "mview_logs" not in views and migration.is_v1(env):
            migration.migrate_v1(env)
            existing, views = _names(env)
        taken = sorted(v for v in VIEWS if v in existing and v not in views)
        if taken:
            raise FastRefreshError(
                f"{TableName(env.registry, taken[0])} is a table, where the registry keeps a "
                "view of that name: the schema holds tables that are not dbt-fastrefresh's. "
                "Fix: set registry_schema in the profile to a schema that holds only the "
                "registry, or rename that table."
            )
        if TABLE in existing:
            _check_version(env)
        else:
            create_table(env)
        if LEASES not in existing:
            ensure_leases(env.sql, leases_table(env.registry), missing=True)
        for view in VIEWS:
            if view not in existing:
                env.sql.execute(
                    f"CREATE VIEW IF NOT EXISTS {TableName(env.registry, view).sql} AS "
                    f"{view_sql(env, view)}"
                )
        env.runtime.ensured.add(key)


def rediscover(env: Env) -> tuple[int, int, list[str]]:
    """Put every materialized view log and fast_refresh view of the catalog in this
    process's journal, so that the next publish shows each as it is now (``rebuild``).
    One SHOW TABLES per schema; a table is read only when its name is a log's or a storage
    table's. Returns (logs, views) found, and the tables that could not be read (each
    with why), which are left out: one such table does not keep the others from the
    registry."""
    journal = env.runtime.journal(env.registry)
    logs = views = 0
    unreadable: list[str] = []
    for schema, *_ in env.sql.query("SHOW SCHEMAS"):
        for name in sorted(mt.table_names(env.sql, str(schema))):
            table_name = TableName(str(schema).lower(), name)
            try:
                if name.startswith("mlog__"):
                    master = TableName(table_name.schema, name.removeprefix("mlog__"))
                    if load_log(env, master) is not None:
                        journal.logs.add(str(master))
                        logs += 1
                elif (view := view_of(table_name)) is not None:
                    record = load_view(env, view, columns=False)
                    if record is not None and record.config is not None:
                        journal.views.add(str(view))
                        views += 1
            except Exception as exc:  # a state broken by hand, hidden by the server
                unreadable.append(f"{table_name} ({getattr(exc, 'message', None) or exc!r})")
    return logs, views, unreadable


def rebuild(env: Env) -> str:
    """``rebuild_registry``: publish the current state of every log and view, after the
    registry table was dropped (a new, empty one is created), truncated or edited by hand.
    Their state lives on their own tables, so nothing the protocol needs was lost; the
    refresh and capture history the registry lost stays lost."""
    ensure(env, again=True)
    logs, views, unreadable = rediscover(env)
    found = f"registry: found {logs} log(s) and {views} view(s); "
    if unreadable:
        logger.warning(
            f"dbt-fastrefresh: rebuild_registry left out {len(unreadable)} table(s) it could "
            f"not read: {'; '.join(unreadable)}. Fix: as each error says; then run "
            "rebuild_registry again."
        )
        found += f"left out, unreadable: {', '.join(u.split(' ', 1)[0] for u in unreadable)}; "
    return found + publish(env)


def _names(env: Env) -> tuple[set[str], set[str]]:
    """The schema's tables and views (lower case), and its views; the schema created
    when missing (asked of the listing that fails without it, not of a statement more on
    every run)."""
    try:
        views = mt.view_names(env.sql, env.registry)
        # Iceberg's own catalog (a shared catalog) leaves views out of SHOW TABLES.
        tables = mt.table_names(env.sql, env.registry)
    except Exception as exc:  # Spark's catalog lists no views of a missing schema
        if not mt.is_missing(exc):
            raise
        env.sql.execute(f"CREATE SCHEMA IF NOT EXISTS {ident(env.registry)}")
        return set(), set()
    return tables | views, views


def _version(env: Env) -> str:
    """The registry table's version property ('' without one): from Iceberg's Java API
    where Spark runs in this process (milliseconds), else one statement."""
    if env.tables.kind == "java":
        meta = env.tables.load(table(env), fresh=True)
        return "" if meta is None else meta.properties.get(VERSION_PROPERTY, "")
    rows = env.sql.query(f"SHOW TBLPROPERTIES {table(env).sql} ({string(VERSION_PROPERTY)})")
    return str(rows[0][1]) if rows else ""


def _check_version(env: Env) -> None:
    value = _version(env)
    if not value.isdigit():
        raise FastRefreshError(
            f"{table(env)} exists but is not a dbt-fastrefresh registry (no "
            f"'{VERSION_PROPERTY}' property). Fix: set registry_schema in the profile to a "
            "schema that holds only the registry, or rename that table."
        )
    if int(value) > REGISTRY_VERSION:
        raise FastRefreshError(
            f"The registry {env.registry} was written by a newer dbt-fastrefresh (registry "
            f"version {value}; this release knows {REGISTRY_VERSION}). Fix: upgrade "
            "dbt-fastrefresh."
        )


# -- publishing ------------------------------------------------------------------------------


def publish(env: Env) -> str:
    """Purge the logs this process left rows to purge on (``deferred``), then write what
    it changed since its last publish to the registry (one commit)."""
    # The views' states the purges read answer the registry's rows too: one read of each
    # view where there were two (on the SQL path a statement each). The purges write only
    # logs, which are read at each call; a view's position read a moment before is never
    # ahead of its own (a position only moves forward), so a purge takes no row it needs.
    with env.tables.reading(keep=_is_view_storage):
        journal = env.runtime.journal(env.registry)
        for master in sorted(journal.to_purge):
            try:
                purge(env, TableName.parse(master))
            except Exception as exc:  # housekeeping: the rows wait for the next purge
                logger.warning(
                    f"dbt-fastrefresh could not purge the log of {master}: {exc}. Its consumed "
                    "rows stay until the next purge; refreshes are not affected. Fix: none "
                    "needed unless it repeats; then run fast_refresh.purge_log for that master "
                    "and check that the warehouse is writable."
                )
        journal = env.runtime.take_journal(env.registry)
        if journal.empty():
            return "registry: nothing to publish"
        try:
            ensure(env)
            with env.tables.reading():  # a log or view is read for each of its users
                rows = _rows(env, journal)
            if rows:
                faults.point("publish.before")
                _insert(env, rows)
        except Exception:
            env.runtime.restore_journal(env.registry, journal)
            raise
    if rows:  # published: what follows is housekeeping, and must not publish it twice
        env.upkeep_commit(table(env))
        _compact_when_due(env)
    return f"registry: published {len(rows)} row(s) to {table(env)}"


def _insert(env: Env, rows: list[str]) -> None:
    """Append ``rows`` to the registry table. One this process found ready earlier, then
    dropped by hand, is created again (``ensure``, once) and takes them; the logs and views
    this process did not change are missing from it until ``rebuild_registry``."""
    statement = f"INSERT INTO {table(env).sql} VALUES\n" + ",\n".join(rows)
    try:
        env.sql.execute(statement)
    except Exception as exc:
        if not mt.is_missing(exc):
            raise
        ensure(env, again=True)
        env.sql.execute(statement)
        logger.warning(
            f"dbt-fastrefresh found the registry table {table(env)} missing (dropped since "
            "this process last published) and created it again; it shows only what this "
            "invocation changed. Fix: run `dbt run-operation fast_refresh.rebuild_registry` "
            "to publish every log and view again."
        )


def _is_view_storage(properties: Mapping[str, str]) -> bool:
    """Whether a table's properties are a fast_refresh view's storage table's."""
    return VIEW_CONFIG in properties


def _rows(env: Env, journal: Journal) -> list[str]:
    now = env.clock()
    rows: list[str] = []
    for log_table in sorted(journal.dropped_logs):
        rows.append(values_row("log", log_table, None, now))
    for log_table, view in sorted(journal.released):
        rows.append(values_row("log_user", f"{log_table}|{view}", None, now))
    for view in sorted(journal.unregistered):
        rows.append(values_row("mview", view, None, now))
    views = set(journal.views)
    zone = functools.cache(env.sql.time_zone)  # one read for the views reading it
    for master in sorted(journal.logs | _logged(env, journal.written)):
        log = _readable_log(env, master)
        if log is None:
            continue
        described = describe_log(env, log)
        rows.append(values_row("log", str(log.log_table), described.row, now))
        for user in described.users:
            rows.append(values_row("log_user", f"{user['log_table']}|{user['mview']}", user, now))
            views.add(str(user["mview"]))
    failures = {r.mview: r for r in journal.refreshes if r.status == "FAILED"}
    last = {r.mview: r for r in journal.refreshes}
    released = {view for _, view in journal.released}
    shown = sorted(views - journal.unregistered)
    ran = {v for v, r in last.items() if r.status == "SUCCESS"}
    published = _published_refreshes(env, [v for v in shown if v not in ran])
    for view in shown:
        row = describe_view(
            env, TableName.parse(view), failures.get(view), last.get(view), zone=zone,
            published=published.get(view),
        )  # fmt: skip
        if row is not None:
            rows.append(values_row("mview", view, row, now))
        elif view in released:
            # Released from its logs with its table gone (a model removed, its relations
            # dropped): no longer a materialized view. Its last row said FRESH for good.
            rows.append(values_row("mview", view, None, now))
    for r in journal.refreshes:
        rows.append(values_row("refresh_run", r.run_id, {
            "run_id": r.run_id, "mview": r.mview, "started": r.started, "ended": r.ended,
            "refresh_type": r.refresh_type, "reason": r.reason, "log_rows_read": r.log_rows_read,
            "rows_applied": None, "status": r.status, "error": r.error,
            "phase_seconds": r.phases,
        }, now))  # fmt: skip
    for c in journal.captures:
        payload = {name: getattr(c, name) for name, _ in VIEWS["capture_runs"]}
        rows.append(values_row("capture_run", f"{c.log_table}@{c.last_sequence}", payload, now))
    return rows


def _published_refreshes(env: Env, views: list[str]) -> dict[str, tuple[str, dt.datetime]]:
    """The last refresh (type, time) the registry's ``mviews`` shows of each of ``views``
    (one query; none when empty): a fast refresh with nothing to apply writes no state, so
    what an earlier publish showed of it is known only here (``describe_view``). A
    registry that cannot be read shows nothing: the views' states answer."""
    if not views:
        return {}
    try:
        rows = select(env, "mviews", f"mview IN ({', '.join(string(v) for v in views)})")
    except Exception as exc:  # the states still answer
        logger.debug(f"dbt-fastrefresh: the registry's last refreshes were not read: {exc}")
        return {}
    found: dict[str, tuple[str, dt.datetime]] = {}
    for row in rows:
        kind, when = row["last_refresh_type"], row["last_refresh_time"]
        try:  # a TIMESTAMP_NTZ, or its text through a server
            at = when if isinstance(when, dt.datetime) else dt.datetime.fromisoformat(str(when))
        except ValueError:  # a row edited by hand: the view's state answers
            continue
        if kind and when:
            found[str(row["mview"])] = (str(kind), at)
    return found


def _readable_log(env: Env, master: str) -> LoadedLog | None:
    """The log of ``master`` for the registry's row (None: it has none, or its state
    cannot be read, which is warned of: one such log does not keep the rest of a
    publish from the registry)."""
    try:
        return load_log(env, TableName.parse(master), columns=False)
    except FastRefreshError as exc:
        logger.warning(
            f"dbt-fastrefresh: the registry leaves out the log of {master}: {exc.message}"
        )
        return None


def settle_written(env: Env, journal: Journal) -> None:
    """Count the storage tables this process's refreshes wrote that have a log among the
    logs that changed (``_logged``), once: the release reads their users then (a view
    over a model, removed, held its upstream's log for good: nothing captures a log whose
    only view is gone), and the publish does not look for them again."""
    journal.logs.update(_logged(env, journal.written))
    journal.written.clear()


def _logged(env: Env, written: set[str]) -> set[str]:
    """The storage tables among ``written`` (by this process's refreshes) that have a log:
    the masters of views over views, which are stale now, though nothing has captured the
    write yet (``staleness_of``). On the SQL path one ``SHOW TABLES`` per schema, rather
    than a read of each missing log; on the Java path a load costs milliseconds."""
    names = [TableName.parse(w) for w in sorted(written)]
    if env.tables.kind == "java":
        return {str(n) for n in names if env.tables.load_state(log_table_for(n)) is not None}
    found: set[str] = set()
    for schema in sorted({n.schema for n in names}):
        logs = mt.table_names(env.sql, schema, f"mlog__*{STORAGE_SUFFIX}")
        found |= {str(n) for n in names if n.schema == schema and log_table_for(n).table in logs}
    return found


class DescribedLog:
    """A log as the registry shows it: its row and its users' rows."""

    def __init__(self, row: dict[str, Any], users: list[dict[str, Any]]) -> None:
        self.row, self.users = row, users


def describe_log(env: Env, log: LoadedLog) -> DescribedLog:
    """The registry's rows of a log and its registered views (Oracle's MLOG$ and SLOG$):
    each view's place from its own state, its claim's where that cannot be read. OLDEST and
    YOUNGEST are the least and most recent refresh of a registered view (seed 001)."""
    config, state = log.config, log.state
    epoch = state.epoch_id(config)
    users = []
    times = []
    for view, claim in sorted(state.users.items()):
        view_state = read_view_state(env, TableName.parse(view))
        position: Position | None = (
            view_state.positions.get(str(log.log_table)) if view_state else None
        )
        if position is None or position.epoch != epoch:
            last_refresh, last_sequence = claim.since, claim.position
        else:
            last_refresh, last_sequence = position.last_refresh, position.last_sequence
        times.append(last_refresh)
        users.append({
            "log_table": str(log.log_table), "master": str(config.master), "mview": view,
            "registered_at": claim.registered_at, "last_refresh": last_refresh,
            "last_sequence": last_sequence,
            "master_snapshot": (view_state.master_snapshots.get(str(config.master))
                                if view_state else None),
        })  # fmt: skip
    row = {
        "master": str(config.master), "log_table": str(config.log_table),
        "flavour": config.flavour.value, "key_columns": list(config.key_columns),
        "logged_columns": list(config.logged_columns),
        "master_columns": list(config.master_columns), "keyless": config.keyless,
        "created": config.created, "oldest": min(times, default=state.oldest),
        "youngest": max([state.youngest, *times]), "last_purge_time": state.last_purge_time,
        "last_purge_rows": state.last_purge_rows, "captured_through": state.captured_through,
        "captured_at": state.captured_at, "last_sequence": state.last_sequence,
        "marked_sequence": state.marked_sequence, "purged_through": state.purged_through,
        "purged_sequence": state.purged_sequence, "younger_than": state.younger_than,
        "younger_reason": state.younger_reason, "purge": config.purge.value,
    }  # fmt: skip
    return DescribedLog(row, users)


def describe_view(
    env: Env,
    view: TableName,
    failure: Any = None,
    last: Any = None,
    *,
    zone: Callable[[], str] | None = None,
    published: tuple[str, dt.datetime] | None = None,
) -> dict[str, Any] | None:
    """The registry's row of a view (Oracle's USER_MVIEWS), with its staleness. ``zone``:
    how to read the session's time zone (``staleness_of``); ``published``: the last
    refresh the registry shows of it (``_published_refreshes``)."""
    record = load_view(env, view, columns=False)
    if record is None or record.config is None or record.state is None:
        return None
    config, state = record.config, record.state
    try:
        staleness, why = staleness_of(env, record, zone=zone)
    except FastRefreshError as exc:  # a master or its log unreadable: the row says so
        staleness, why = Staleness.UNUSABLE, f"its masters cannot be read: {exc.message}"
    code = ReasonCode(failure.reason_code) if failure is not None and failure.reason_code else None
    # A failed rebuild the user asked for (--full-refresh, method complete) left the view
    # as it was: its staleness is its state's, not UNUSABLE.
    if last is failure and code is not None and code not in REQUESTED:
        staleness = Staleness.NEEDS_COMPILE if code in NEEDS_COMPILE else Staleness.UNUSABLE
        why = failure.error
    last_type, last_time = last_refresh(state, last, published)
    return {
        "mview": str(view), "query_hash": config.query_hash,
        "refresh_method": state.refresh_method, "masters": [str(m) for m in config.masters],
        "shape": config.shape, "last_refresh_type": last_type,
        "last_refresh_time": last_time, "staleness": staleness,
        "last_fallback_reason": state.last_fallback_reason if staleness is not Staleness.UNUSABLE or why is None else why,
        "view_snapshot": record.found.anchor, "master_snapshots": dict(state.master_snapshots),
        "master_schema_hash": config.master_schema_hash, "registered_at": config.registered_at,
        "definition": config.definition, "table_options": config.table_options,
    }  # fmt: skip


def last_refresh(
    state: Any, last: Any = None, published: tuple[str, dt.datetime] | None = None
) -> tuple[str, dt.datetime]:
    """The type and time of a view's last refresh (pure): its state's, written by the last
    refresh that changed the view, unless a later one changed nothing (a fast refresh with
    nothing to apply writes no state): ``last``, this process's refresh of it, or
    ``published``, the last refresh the registry showed, when later. Type and time are
    always one refresh's; a refresh that wrote its state is timed as the state records it."""
    kind, when = str(state.last_refresh_type), state.last_refresh_time
    if last is not None and last.status == "SUCCESS" and last.started > when:
        return str(last.refresh_type), last.started
    if published is not None and published[1] > when:
        return published
    return kind, when


def _compact_when_due(env: Env) -> None:
    """Every ``COMPACT_EVERY`` publishes, delete the state rows newer ones replaced, and
    the history rows older than ``env.history_days`` (``compaction_sql``), then pack the
    table's small files (``_pack``). The count starts at a random point of the cycle
    (``upkeep.start``): a ``dbt run`` is a process that publishes once, so the registry
    is compacted once per ``COMPACT_EVERY`` publishes on average, across processes."""
    key = f"publish:{env.registry}"
    counts = env.runtime.commits
    count = (counts[key] if key in counts else upkeep.start(COMPACT_EVERY)) + 1
    env.runtime.commits[key] = count % COMPACT_EVERY
    if count < COMPACT_EVERY:
        return
    try:
        env.sql.execute(compaction_sql(env))
    except Exception as exc:  # e.g. another process published meanwhile (serializable)
        env.runtime.commits[key] = COMPACT_EVERY - 1  # try again at the next publish
        logger.warning(
            f"dbt-fastrefresh could not compact the registry table {table(env)}: {exc}. What "
            "was published stays; the next publish tries again. Fix: none needed unless it "
            "repeats; then check that the warehouse is writable."
        )
        return
    env.upkeep_commit(table(env))
    _pack(env)


def _pack(env: Env) -> None:
    """Pack the registry table's small files into one (``sqltext.pack_sql``). Each publish
    appends a file, and the compaction's ``MERGE`` writes the rows it kept of the files
    it deleted from into one file per task of its scan, while the files it did not touch
    stay (history rows live ``env.history_days``): over a benchmark run of 47 minutes the
    table reached 184 files of 1,219 rows in all, and a read of a registry view took
    0.66 s, against 0.25 s once the files were packed into one (the packing 1.3 s, once
    per ``COMPACT_EVERY`` publishes). Housekeeping like the compaction: a failure (another
    process's compaction deleted from the same files) is logged, and the next compaction
    packs them."""
    try:
        packed = env.sql.query(pack_sql(table(env)))
    except Exception as exc:
        logger.warning(
            f"dbt-fastrefresh could not pack the files of the registry table {table(env)}: "
            f"{exc}. What was published stays; the next compaction tries again. Fix: none "
            f"needed unless it repeats; then run {pack_sql(table(env))} and check that the "
            "warehouse is writable."
        )
        return
    if packed and int(packed[0][0] or 0):  # rewritten_data_files_count: it committed
        env.upkeep_commit(table(env))


def compaction_sql(env: Env) -> str:
    """The registry's compaction, one ``MERGE`` (one commit): the state rows a newer row
    of the same object replaced, and the history rows (``refresh_runs``,
    ``capture_runs``) recorded more than ``env.history_days`` days ago (none when None)."""
    source = table(env).sql
    kinds = ", ".join(string(k) for k, latest in KINDS.values() if latest)
    replaced = (
        "SELECT kind, name, recorded, seq FROM (SELECT kind, name, recorded, seq, row_number() "
        "OVER (PARTITION BY kind, name ORDER BY recorded DESC, seq DESC) AS rank__ FROM "
        f"{source} WHERE kind IN ({kinds})) WHERE rank__ > 1"
    )
    if env.history_days is not None:
        cutoff = env.clock() - dt.timedelta(days=env.history_days)
        history = ", ".join(string(k) for k, latest in KINDS.values() if not latest)
        replaced += (
            f" UNION ALL SELECT kind, name, recorded, seq FROM {source} WHERE kind IN "
            f"({history}) AND recorded < {timestamp(cutoff)}"
        )
    return (
        f"MERGE INTO {source} t USING ({replaced}) s ON t.kind = s.kind AND t.name = s.name "
        "AND t.recorded = s.recorded AND t.seq = s.seq WHEN MATCHED THEN DELETE"
    )


# -- reading -----------------------------------------------------------------------------------


def select(env: Env, view: str, where: str = "TRUE") -> list[dict[str, Any]]:
    """Rows of a registry view (as published)."""
    ensure(env)
    columns = VIEWS[view]
    rows = env.sql.query(
        f"SELECT {', '.join(ident(c) for c, _ in columns)} FROM "
        f"{TableName(env.registry, view).sql} WHERE {where}"
    )
    return [dict(zip([c for c, _ in columns], row, strict=True)) for row in rows]


def logs_published(env: Env) -> list[TableName]:
    """The masters of every log the registry knows of (``capture_changes`` of all logs)."""
    return sorted(TableName.parse(r["master"]) for r in select(env, "mview_logs"))


def claimed_logs(env: Env, view: TableName) -> list[TableName]:
    """The log tables the registry shows ``view`` registered on."""
    rows = select(env, "mview_log_users", f"mview = {literal(str(view))}")
    return sorted(TableName.parse(r["log_table"]) for r in rows)
