"""Materialized-view logs: create, drop, and read and record a log's state.

The log of ``db.t`` is the Iceberg table ``db.mlog__t`` (Oracle's ``MLOG$_T``): the master's
key columns, the logged columns, and ``snaptime__`` (timestamp flavour only),
``dmltype__``, ``old_new__``, ``change_vector__``, ``sequence__``, ``xid__`` and
``capture__``, the first sequence of the capture that wrote the row, by which the log is
partitioned. Its configuration is a property of the table, set by its ``CREATE TABLE``;
its state travels with its commits (``protocol/state.py``).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.fastrefresh import sqltext
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.iceberg import columns as mt
from dbt.adapters.fastrefresh.iceberg.leases import TABLE as LEASES
from dbt.adapters.fastrefresh.iceberg.tables import Found, TableMeta, latest_state, require_iceberg
from dbt.adapters.fastrefresh.protocol.env import Env
from dbt.adapters.fastrefresh.protocol.state import (
    LOG_CONFIG,
    LOG_STATE,
    VIEW_CONFIG,
    VIEW_FINGERPRINT,
    Flavour,
    LogConfig,
    LogState,
    PurgeMode,
    ViewConfig,
    new_log_state,
)
from dbt.adapters.fastrefresh.runtime import faults
from dbt.adapters.fastrefresh.sqltext import TableName, ident, literal, log_table_for, storage_of

logger = AdapterLogger("fastrefresh")

# Tables committed to by every refresh (the logs, the registry): keep their metadata small.
METADATA_CLEANUP = {
    "write.metadata.delete-after-commit.enabled": "true",
    "write.metadata.previous-versions-max": "10",
}
# Logs take a commit per capture, mark and purge. Their rows are written and purged by
# sequence ranges, so a capture's rows go to as few files as its tasks write, without
# a shuffle first.
LOG_TABLE_PROPERTIES = {
    "format-version": "2",
    "write.distribution-mode": "none",
    "write.update.distribution-mode": "none",
    "write.delete.distribution-mode": "none",
    **METADATA_CLEANUP,
}
# A log's own columns after the master's (Oracle's SNAPTIME$$, DMLTYPE$$, OLD_NEW$$,
# CHANGE_VECTOR$$, SEQUENCE$$, XID$$; capture__ numbers the capture that wrote the row).
LOG_OWN_COLUMNS = {
    "snaptime__": "TIMESTAMP_NTZ", "dmltype__": "STRING", "old_new__": "STRING",
    "change_vector__": "BINARY", "sequence__": "BIGINT", "xid__": "BIGINT", "capture__": "BIGINT",
}  # fmt: skip


def log_lock(log_table: TableName) -> str:
    return f"log:{log_table}"


@dataclass(frozen=True)
class LoadedLog:
    """A log as read now: its configuration, its newest state, and where that came from."""

    config: LogConfig
    state: LogState
    meta: TableMeta
    found: Found
    # How the log table's columns differ from those it was created with (changed by hand,
    # ``log_table_altered``), where its columns were read (None: they do not, or unread).
    altered: str | None = None

    @property
    def log_table(self) -> TableName:
        return self.config.log_table

    @property
    def master(self) -> TableName:
        return self.config.master

    @property
    def leftovers(self) -> bool:
        """Whether commits after the recorded state changed rows: writes of a capture,
        mark or purge that died before recording their state (the SQL path records it
        in a second step)."""
        return self.found.changed_after


def load_log(
    env: Env,
    master: TableName,
    known: LoadedLog | None = None,
    *,
    columns: bool = True,
    read: TableMeta | None = None,
) -> LoadedLog | None:
    """The log of ``master`` (None: it has none). ``known``: the log as read before (its
    state read again here): its table's columns are taken from it while the log is the
    same one (same configuration), which spares the SQL path a ``DESCRIBE``.
    ``columns=False``: without the log table's columns, for a reader of its state alone
    (a purge, a registration, the registry), which no ``log_mismatch`` may be given.
    ``read``: the master as just read. While its types of the logged columns are those
    the log was created with (``LogConfig.column_types``), the log table's columns are
    taken from the configuration: the SQL path's ``DESCRIBE`` would find them, since a
    log's columns never change. Otherwise (a type changed, or a log older than the
    record) the table is described, for ``log_mismatch`` to compare."""
    log_table = log_table_for(master)
    types_from = read if columns and known is None else None
    if columns and types_from is None:
        meta = _log_table(env, log_table, known)
    else:
        meta = env.tables.load_state(log_table, fresh=env.shared_catalog)
    if meta is None:
        return None
    text = meta.properties.get(LOG_CONFIG)
    if text is None:
        return None
    config = LogConfig.from_json(text)
    # From the table's columns where this load read them (the Java path's always), else
    # as ``known`` found them: no more is read for it.
    copied = known is not None and meta.columns is known.meta.columns
    altered = known.altered if known and copied else log_table_altered(config, meta.columns)
    if types_from is not None:
        recorded = _recorded_columns(config, types_from)
        described = recorded or env.tables.columns(log_table)
        if described is None:
            return None  # dropped since its state was read
        altered = altered or (None if recorded else log_table_altered(config, described))
        meta = dataclasses.replace(meta, columns=described)
    history = env.tables.history(log_table)
    found = latest_state(meta, LOG_STATE, history)
    if found.text is None:
        raise LogStateGone(
            f"The state of the materialized view log {log_table} is gone: neither its "
            f"properties nor its retained snapshots hold '{LOG_STATE}' (its snapshots were "
            "expired, or the table was changed by hand). Fix: drop_mview_log and "
            f"create_mview_log('{master}') again; views on it then refresh completely once."
        )
    state = LogState.from_json(found.text)
    if found.in_summary and state.sequence_base is not None:
        # Written before its append committed: the append's rows end the sequence.
        anchor = history.get(found.anchor) if found.anchor is not None else None
        added = int((anchor.summary.get("added-records") if anchor else None) or 0)
        last = state.sequence_base + added
        marked = last if state.marked_sequence < 0 else state.marked_sequence
        state = state.replace(last_sequence=last, marked_sequence=marked, sequence_base=None)
    return LoadedLog(config, state, meta, found, altered)


def log_table_altered(config: LogConfig, columns: Sequence[mt.Column]) -> str | None:
    """How the log table's ``columns`` (as read) are no longer those it was created with
    (``_create_sql``): added, dropped, renamed or moved by hand (``ALTER TABLE``), which
    capture's append (by position) or the views' reads of it then fail on. None: they are
    the same, they were not read, or the configuration does not record them (a log older
    than ``LogConfig.column_types``). A log's columns never change otherwise."""
    if not config.column_types or not columns:
        return None
    expected = [n.lower() for n, _ in config.column_types]
    expected += [n for n in LOG_OWN_COLUMNS if n != "snaptime__" or not config.commit_scn]
    found = [c.name.lower() for c in columns]
    if found == expected:
        return None
    added = [c for c in found if c not in expected]
    gone = [c for c in expected if c not in found]
    parts = [f"column(s) {', '.join(added)} added"] if added else []
    parts += [f"column(s) {', '.join(gone)} dropped or renamed"] if gone else []
    return f"its table {config.log_table} was changed outside dbt-fastrefresh (ALTER TABLE): " + (
        "; ".join(parts) or "its columns were reordered"
    )


class LogStateGone(FastRefreshError):
    """A log whose state neither its properties nor its retained snapshots hold."""


def _recorded_columns(config: LogConfig, master: TableMeta) -> tuple[mt.Column, ...] | None:
    """The log table's master columns from its configuration, when the master's types of
    them are still the recorded ones (None: not recorded, or a type differs)."""
    if not config.column_types:
        return None
    current = {c.name: c.type for c in master.columns}
    if any(current.get(name) != kind for name, kind in config.column_types):
        return None
    return tuple(mt.Column(name, kind) for name, kind in config.column_types)


def _log_table(env: Env, log_table: TableName, known: LoadedLog | None) -> TableMeta | None:
    fresh = env.shared_catalog
    if known is None:
        return env.tables.load(log_table, fresh=fresh)
    meta = env.tables.load_state(log_table, fresh=fresh)
    if meta is None or meta.properties.get(LOG_CONFIG) != known.meta.properties.get(LOG_CONFIG):
        return env.tables.load(log_table) if meta is not None else None
    return dataclasses.replace(meta, columns=known.meta.columns)


def reread_after_write(env: Env, log: LoadedLog) -> TableMeta:
    """The log's table after this process wrote to it: its properties and current
    snapshot read again, its columns as they were (a write to a log changes none)."""
    meta = env.tables.load_state(log.log_table)
    if meta is None:
        raise no_log_error(log.master)
    return dataclasses.replace(meta, columns=log.meta.columns)


def record_state(env: Env, log: LoadedLog, state: LogState, *, current: bool = False) -> LoadedLog:
    """Record ``state`` as a property commit (no data commit carries it). ``current``:
    ``log.meta`` was loaded under the log's lock since the last write to it, so it is not
    loaded again."""
    env.check_leases([log_lock(log.log_table)])
    meta = log.meta if current else env.tables.load_state(log.log_table)
    anchor = meta.current_snapshot if meta else None
    stored = state.replace(snapshot=anchor, sequence_base=None)
    env.tables.set_properties(log.log_table, {LOG_STATE: stored.to_json()})
    env.runtime.journal(env.registry).logs.add(str(log.master))
    return dataclasses.replace(log, state=state)


def commit_with_state(
    env: Env, log: LoadedLog, statement: str, state: LogState, *, fault: str
) -> None:
    """Run ``statement`` (a write to the log) so that ``state`` is recorded with it: in the
    commit's snapshot summary where the path can, else as a property right after (the
    fault point ``fault`` sits right after the statement, for the crash tests)."""
    env.check_leases([log_lock(log.log_table)])
    with env.tables.summary({LOG_STATE: state.to_json()}) as attached:
        env.sql.execute(statement)
    faults.point(fault)
    env.runtime.journal(env.registry).logs.add(str(log.master))
    env.upkeep_commit(log.log_table)
    if attached:
        return
    current = env.tables.load_state(log.log_table)
    stored = state.replace(snapshot=current.current_snapshot if current else None)
    env.tables.set_properties(log.log_table, {LOG_STATE: stored.to_json()})


def log_mismatch(log: LoadedLog, master: TableMeta) -> str | None:
    """How the master's columns no longer fit its log (None: they do): its table's columns
    changed by hand (``LoadedLog.altered``), columns dropped or
    renamed since the log was created, dropped and added again (Java path: a new field
    id), or logged columns whose type changed (the log's column keeps the old type, so
    capture could not write the new values)."""
    if log.altered is not None:
        return log.altered
    current = {c.name: c for c in master.columns}
    missing = [c for c in log.config.master_columns if c not in current]
    if missing:
        return (
            f"column(s) {', '.join(missing)} of {log.master} were dropped or renamed since its "
            f"log {log.log_table} was created"
        )
    readded = _readded(log, current)
    if readded:
        return (
            f"column(s) {', '.join(readded)} of {log.master} were dropped and added again "
            f"since its log {log.log_table} was created (their old values are gone without "
            "a commit to capture)"
        )
    logged = {c.name: c.type for c in log.meta.columns}
    retyped = [
        f"{n} ({logged[n]} -> {current[n].type})"
        for n in log.config.columns
        if n in logged and current[n].type != logged[n]
    ]
    if retyped:
        return (
            f"column(s) {', '.join(retyped)} of {log.master} changed type since its log "
            f"{log.log_table} was created"
        )
    return None


def _field_ids(meta: TableMeta) -> tuple[int, ...]:
    """The master's columns' field ids in table order, if the path read them all."""
    ids = [c.field_id for c in meta.columns]
    return tuple(i for i in ids if i is not None) if None not in ids else ()


def _readded(log: LoadedLog, current: Mapping[str, mt.Column]) -> list[str]:
    """Master columns whose Iceberg field id is not the one they had at the log's
    creation: dropped and added again under the same name (and maybe type), their old
    values gone without a commit for capture to see. Only where both ids are known."""
    recorded = zip(log.config.master_columns, log.config.master_field_ids, strict=False)
    return [n for n, i in recorded if current[n].field_id not in (None, i)]


def recreate_fix(master: TableName) -> str:
    return (
        f"Fix: run drop_mview_log('{master}') and create_mview_log('{master}') again (views "
        "on it then refresh completely once)."
    )


def master_columns(log: LoadedLog, master: TableMeta) -> list[mt.Column]:
    """The master columns recorded at log creation, checked against the master today."""
    mismatch = log_mismatch(log, master)
    if mismatch:
        raise FastRefreshError(
            f"The materialized view log cannot record changes: {mismatch}. "
            + recreate_fix(log.master)
        )
    current = {c.name: c for c in master.columns}
    return [current[c] for c in log.config.master_columns]


def no_log_error(master: TableName) -> FastRefreshError:
    return FastRefreshError(
        f"The master table {master} has no materialized view log (Oracle: ORA-23413). Fix: "
        f"dbt run-operation fast_refresh.create_mview_log --args \"{{master: '{master}'}}\""
    )


def missing_log_error(env: Env, master: TableName, *, dropping: bool = False) -> FastRefreshError:
    """The error of an operation on the log of ``master``, which has none: the master's
    own problem when it is missing or no Iceberg table (``require_iceberg``; a log cannot
    be created on it either), else ORA-23413 with the fix for the operation."""
    try:
        require_iceberg(env.tables.load_state(master, fresh=True), master)
    except FastRefreshError as exc:
        return exc
    if dropping:
        return FastRefreshError(
            f"The master table {master} has no materialized view log (Oracle: ORA-23413): "
            "there is nothing to drop. Fix: check the master's name (the logs are listed "
            "in the fast_refresh_logs registry model)."
        )
    return no_log_error(master)


# -- create and drop --------------------------------------------------------------------


def column_list(value: object, argument: str) -> list[str] | None:
    """A list of column names as run-operation arguments give it: a list, or one string
    of comma-separated names (``key: id`` or ``columns: 'a, b'``); None stays None."""
    if value is None:
        return None
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value]
    raise FastRefreshError(
        f"create_mview_log {argument} must be a list of column names, got {value!r}. "
        f"Fix: {argument}=['a', 'b'] (or {argument}='a, b'; [] for none)."
    )


def flag(value: object, argument: str) -> bool:
    """A yes/no run-operation argument: a boolean, or its YAML/CLI spelling as a string
    (``'false'`` is no, where ``bool('false')`` would be yes)."""
    if isinstance(value, bool):
        return value
    words = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
    if isinstance(value, (str, int)) and str(value).strip().lower() in words:
        return words[str(value).strip().lower()]
    raise FastRefreshError(
        f"create_mview_log {argument} must be true or false, got {value!r}. "
        f"Fix: {argument}: true (or false)."
    )


def reserved_columns(meta: TableMeta) -> list[str]:
    """Master columns whose names the log or the views keep for themselves (a
    fast_refresh model's storage table has __fr_ columns of its own: they stay)."""
    own = set(LOG_OWN_COLUMNS)
    storage = VIEW_CONFIG in meta.properties
    return [
        c.name
        for c in meta.columns
        if c.name in own or (c.name.startswith("__fr_") and not storage)
    ]


def planned_key(meta: TableMeta, master: TableName, key: object) -> list[str]:
    """The key columns a log created on ``master`` with ``key`` (``create_mview_log``'s
    argument) would have: none for a key-less one."""
    return _resolve_key(meta, master, column_list(key, "key"))


def _resolve_key(meta: TableMeta, master: TableName, key: Sequence[str] | None) -> list[str]:
    names = [c.name for c in meta.columns]
    if key is None:
        view = meta.properties.get(VIEW_CONFIG)
        if view is not None:
            # A fast_refresh view's storage table: the view's own key (a keyed
            # projection's or a join's; an aggregate's group values may be NULL, so it
            # has none), as the log ``dbt run`` creates on it (engine.upstream).
            return list(ViewConfig.from_json(view).key_columns)
        return [n for n in names if n in meta.identifier_fields]  # table order
    wanted = [str(k).lower() for k in key]
    twice = sorted({k for k in wanted if wanted.count(k) > 1})
    if twice:
        raise FastRefreshError(
            f"The key of a log on {master} names {', '.join(twice)} more than once. Fix: "
            "name each key column once (key=[a, b])."
        )
    unknown = [k for k in wanted if k not in names]
    if unknown:
        raise FastRefreshError(
            f"Key column(s) {', '.join(unknown)} are not columns of {master} "
            f"({', '.join(names)}). Fix: pass key=[...] with existing column names."
        )
    return wanted


def _unique_key(
    env: Env, meta: TableMeta, master: TableName, key: Sequence[str] | None
) -> list[str]:
    """``_resolve_key``, refused when two rows of the master share the key."""
    columns = _resolve_key(meta, master, key)
    require_unique_key(env, meta, master, columns)
    return columns


def require_unique_key(env: Env, meta: TableMeta, master: TableName, key: Sequence[str]) -> None:
    """Refuse ``key`` for a log on ``master`` when two rows of its current snapshot share
    it: neither Iceberg's identifier fields nor a key a user names are enforced, and a
    log keyed so would stop at the first capture of a commit touching such a row, or
    apply a change of one of them to both. One aggregate of the master (its snapshot the
    log starts from); none for a key-less log, an empty master, or a view's storage
    table keyed by the view's own key (unique by construction)."""
    if not key or meta.current_snapshot is None:
        return
    view = meta.properties.get(VIEW_CONFIG)
    if view is not None and tuple(key) == ViewConfig.from_json(view).key_columns:
        return
    columns = ", ".join(ident(k) for k in key)
    found = env.sql.query(
        f"SELECT {columns}, count(*) FROM {master.sql} VERSION AS OF {meta.current_snapshot} "
        f"GROUP BY {columns} HAVING count(*) > 1 LIMIT 1"
    )
    if not found:
        return
    *values, count = found[0]
    shown = ", ".join("NULL" if v is None else str(v) for v in values)
    raise FastRefreshError(
        f"The key ({', '.join(key)}) of {master} is not unique: {count} rows have "
        f"({shown}) in snapshot {meta.current_snapshot}. A keyed materialized view log "
        "needs a unique key (Iceberg does not enforce identifier fields); no log was "
        f"created. Fix: make ({', '.join(key)}) unique in {master}, or create the log with "
        "another key, or key-less (key=[]); for a dbt model or source, set that key in "
        "its mview_log config (mview_log: {key: [...]} or {key: []})."
    )


def _logged(
    master: TableName, names: list[str], key: list[str], columns: Sequence[str] | None
) -> list[str]:
    logged = [str(c).lower() for c in columns or ()]
    unknown = [c for c in logged if c not in names]
    if unknown:  # (a key-less log's too: a misspelt name was ignored there)
        raise FastRefreshError(
            f"Column(s) {', '.join(unknown)} are not columns of {master} "
            f"({', '.join(names)}). Fix: list existing columns, or omit columns= to log them all."
        )
    if columns is None or not key:
        # Key-less logs hold full row images: the row is its own identity.
        return [n for n in names if n not in key]
    return [n for n in names if n in logged and n not in key]


def master_table(env: Env, name: object) -> TableName:
    """The table a master name stands for: a fast_refresh view's storage table, which its
    log is on (the view's own name is a Spark view over it), else the named table.

    The name stands for the storage table while it is the model's view, or while nothing
    has it (the view dropped by hand: the model's next refresh creates it again). A model
    switched to another materialization leaves its storage table behind: the name is then
    that materialization's table or view, and means it (as ``engine.refresh.resolve_views``
    reads it)."""
    master = TableName.parse(name)
    storage = storage_of(master)
    meta = env.tables.load(storage)
    if meta is None or not meta.iceberg or VIEW_CONFIG not in meta.properties:
        return master
    if env.tables.view_property(master, VIEW_FINGERPRINT) is not None:
        return storage
    return storage if env.tables.load(master) is None else master


def log_differences(config: LogConfig, meta: TableMeta, options: Mapping[str, Any]) -> list[str]:
    """How the log ``config`` (on the master ``meta``) differs from the ``create_mview_log``
    ``options`` a dbt node's ``mview_log`` gives: one phrase per option given that the log
    does not have (an option left out is not compared: ``columns`` left out means the
    master's columns when the log was created)."""
    master, found = config.master, []
    if "key" in options:
        key = _resolve_key(meta, master, column_list(options["key"], "key"))
        if set(key) != set(config.key_columns):
            found.append(f"key {_listed(config.key_columns)}, not {_listed(key)}")
    if "columns" in options and config.key_columns:
        names = [c.name for c in meta.columns]
        columns = column_list(options["columns"], "columns")
        logged = _logged(master, names, list(config.key_columns), columns)
        if set(logged) != set(config.logged_columns):
            found.append(f"columns {_listed(config.logged_columns)}, not {_listed(logged)}")
    if "commit_scn" in options:
        wanted = flag(options["commit_scn"], "commit_scn")
        if wanted != config.commit_scn:
            found.append(f"commit_scn {str(config.commit_scn).lower()}, not {str(wanted).lower()}")
    if "purge" in options and purge_mode(options["purge"]) is not config.purge:
        found.append(f"purge {config.purge.value!r}, not {purge_mode(options['purge']).value!r}")
    return found


def identifiers_moved(config: LogConfig, meta: TableMeta) -> str | None:
    """Why the log ``config`` no longer has the key its master's identifier fields give,
    when it took them as its key (no key given; none: a key-less log): they were set,
    dropped or changed since, so its key may no longer be unique, or a key is there to
    take. None: they were not, or its key was chosen. Only top-level columns make a key
    (``_resolve_key``): a nested identifier field is no column of the log."""
    now = [c.name for c in meta.columns if c.name in meta.identifier_fields]  # table order
    if not config.key_from_identifiers or set(config.key_columns) == set(now):
        return None
    return (
        f"the identifier fields of {config.master} are now {_listed(now)}, and its log took "
        f"them as its key when it was created: {_listed(config.key_columns)}"
    )


def _listed(columns: Sequence[str]) -> str:
    return f"({', '.join(columns)})" if columns else "(none: key-less)"


def create_mview_log(
    env: Env,
    master_name: object,
    *,
    columns: Sequence[str] | None = None,
    commit_scn: bool = False,
    key: Sequence[str] | None = None,
    purge: str = PurgeMode.DEFERRED.value,
    if_not_exists: bool = False,
) -> str:
    """Create the log of a master (Oracle: CREATE MATERIALIZED VIEW LOG).

    Args:
        master_name: ``schema.table``, a ref() or a source().
        columns: the logged columns (default all; ``[]``: the key only).
        commit_scn: the commit-SCN flavour (no ``snaptime__`` marking).
        key: key columns when the master has no Iceberg identifier fields; ``[]`` for a
            key-less log.
        purge: when consumed rows go: ``deferred`` (default: once per dbt invocation, at
            its end) or ``synchronous`` (in each refresh's wrap-up, as Oracle does).
        if_not_exists: when the master already has a log, keep it and say so instead of
            failing (Oracle 23's ``IF NOT EXISTS``), naming how it differs from the log
            these options create.
    """
    master = _users_table(env, master_name)
    mode = purge_mode(purge)
    meta = require_iceberg(env.tables.load(master, fresh=True), master)
    _check_master_columns(meta, master)
    log_table = log_table_for(master)
    with env.holding([log_lock(log_table)]):
        if _check_name_free(env, master, log_table, if_not_exists=if_not_exists):
            # The macro passes every option; commit_scn and purge at their defaults may
            # be options not given (the documented hook gives none).
            options = {
                "key": key, "columns": columns, "commit_scn": commit_scn or None,
                "purge": None if mode is PurgeMode.DEFERRED else purge,
            }  # fmt: skip
            return _kept(env, meta, master, {k: v for k, v in options.items() if v is not None})
        names = [c.name for c in meta.columns]
        key_columns = _unique_key(env, meta, master, column_list(key, "key"))
        logged = _logged(master, names, key_columns, column_list(columns, "columns"))
        created = env.clock()
        at = _changed_after(env, meta)
        added = tuple(n for n in names if at and n.lower() in at.absent)
        renamed = tuple((n, at.renamed[n.lower()]) for n in names if at and n.lower() in at.renamed)
        config = LogConfig(
            master=master, log_table=log_table,
            flavour=Flavour.COMMIT_SCN if commit_scn else Flavour.TIMESTAMP,
            key_columns=tuple(key_columns), logged_columns=tuple(logged),
            master_columns=tuple(names), keyless=not key_columns, created=created,
            incarnation=uuid.uuid4().hex, purge=mode, master_field_ids=_field_ids(meta),
            start_snapshot=meta.current_snapshot if added or renamed else None,
            added_after_start=added, renamed_after_start=renamed,
            key_from_identifiers=key is None and VIEW_CONFIG not in meta.properties,
        )  # fmt: skip
        config = dataclasses.replace(config, column_types=_typed(config.columns, meta))
        env.sql.execute(_create_sql(config, new_log_state(created, meta.current_snapshot)))
        env.runtime.chosen.pop(str(log_table), None)
        env.runtime.journal(env.registry).logs.add(str(master))
    return _created(config, meta.current_snapshot)


def _users_table(env: Env, name: object) -> TableName:
    """``master_table``, refused for the registry's own tables (``registry`` and
    ``leases`` in its schema): a log on one would capture every publish."""
    master = master_table(env, name)
    if master.schema == env.registry and master.table in ("registry", LEASES):
        raise FastRefreshError(
            f"{master} is dbt-fastrefresh's own table (its registry's, in schema "
            f"{env.registry}), which takes no log. Fix: name a table of your own (the "
            "registry's views and the fast_refresh_* models show what it holds)."
        )
    return master


def _created(config: LogConfig, snapshot: int | None) -> str:
    """What ``create_mview_log`` says of the log it created."""
    key = config.key_columns
    kind = "key-less (full row images)" if not key else f"keyed by ({', '.join(key)})"
    flavour = "commit-SCN" if config.commit_scn else "timestamp"
    return (
        f"created materialized view log {config.log_table} on {config.master}: {kind}, "
        f"logging {len(config.logged_columns)} column(s), {flavour} flavour, "
        f"{config.purge.value} purge, capturing from snapshot {snapshot}"
    )


def _typed(names: Sequence[str], meta: TableMeta) -> tuple[tuple[str, str], ...]:
    """``names`` with their types in ``meta``: the log's columns as its table is created
    (``_create_sql``) and its configuration records them (``LogConfig.column_types``)."""
    types = {c.name: c.type for c in meta.columns}
    return tuple((n, types[n]) for n in names)


def _changed_after(env: Env, meta: TableMeta) -> mt.AtSnapshot | None:
    """How the master's current snapshot reads its columns (all of which capture reads),
    when it was committed under an older schema: an ``ALTER TABLE`` makes no snapshot,
    and the first capture reads rows that snapshot held."""
    if meta.current_snapshot is None:
        return None
    return env.tables.snapshot_schema(meta.name, meta.current_snapshot, meta.columns)


def _check_master_columns(meta: TableMeta, master: TableName) -> None:
    """Refuse a master whose columns a log cannot hold (``unloggable``)."""
    cannot = unloggable(meta, master)
    if cannot is not None:
        raise FastRefreshError(f"{cannot[0]}. Fix: {cannot[1]}.")


def unloggable(meta: TableMeta, master: TableName) -> tuple[str, str] | None:
    """Why no log can be created on ``master`` (its columns), and the fix; None: one can.
    MAP columns are not comparable, and some names are the log's or the views' own."""
    maps = [c.name for c in meta.columns if not c.comparable]
    if maps:
        return (
            f"{master} has MAP column(s) {', '.join(maps)}, which Spark cannot compare, so "
            "changes to its rows cannot be told apart",
            "store them as a struct/array or a JSON string, or keep them in another table",
        )
    reserved = reserved_columns(meta)
    if reserved:
        return (
            f"{master} has column(s) {', '.join(reserved)}, whose names dbt-fastrefresh keeps "
            f"for its own (a log's {', '.join(LOG_OWN_COLUMNS)}, and __fr_*)",
            "rename them in the master (ALTER TABLE ... RENAME COLUMN), then create the log "
            "(on a dbt source or model, the next dbt run creates it)",
        )
    return None


def purge_mode(purge: object) -> PurgeMode:
    try:
        return PurgeMode(str(purge).lower())
    except ValueError:
        raise FastRefreshError(
            f"create_mview_log purge must be 'deferred' or 'synchronous', got {purge!r}. "
            "Fix: purge='deferred' (consumed rows go once per dbt invocation, at its end) or "
            "'synchronous' (in each refresh's wrap-up, before it returns)."
        ) from None


def _kept(env: Env, meta: TableMeta, master: TableName, options: Mapping[str, Any]) -> str:
    """What ``create_mview_log(if_not_exists=true)`` says of the log it keeps: where it
    differs from the log ``options`` create (those given: ``commit_scn`` and ``purge``
    when not their defaults), how. Options that no longer fit the master (a key column
    dropped since) are said, not raised: a hook keeping the log must not fail the model."""
    said = f"materialized view log {log_table_for(master)} on {master} already exists: kept"
    try:
        log = load_log(env, master, columns=False)
        differences = log_differences(log.config, meta, options) if log is not None else []
    except FastRefreshError as exc:
        return f"{said} as it is; its options could not be compared with it: {exc}"
    if not differences:
        return said
    return (
        f"{said} as it is, though the log these options create would differ: it has "
        f"{'; '.join(differences)}. Fix: leave it, or drop it with fast_refresh."
        f"drop_mview_log('{master}') and create it again (every view on it then "
        "rebuilds once)"
    )


def _check_name_free(
    env: Env, master: TableName, log_table: TableName, *, if_not_exists: bool = False
) -> bool:
    """Whether ``master`` already has its log (only under ``if_not_exists``); an error when
    it has one otherwise, or when another table holds the log's name."""
    existing = env.tables.load(log_table, fresh=True)
    if existing is None:
        return False
    if LOG_CONFIG in existing.properties and if_not_exists:
        return True
    if LOG_CONFIG in existing.properties:
        raise FastRefreshError(
            f"{master} already has a materialized view log, {log_table}. Fix: use "
            f"it, pass if_not_exists=true to keep it, or drop it first with "
            f"fast_refresh.drop_mview_log('{master}')."
        )
    raise FastRefreshError(
        f"A table {log_table} exists but is not a materialized view log (the name is "
        f"taken). Fix: rename or drop that table, or run fast_refresh.drop_mview_log("
        f"'{master}') if it is a log an earlier release left behind."
    )


def _create_sql(config: LogConfig, state: LogState) -> str:
    """The log's CREATE TABLE, its configuration and first state in its properties: a log
    exists whole or not. Partitioned by capture: a view's range and a purge select whole
    partitions, so Iceberg applies them alone (Spark filters no row again, and a
    statement's code does not change with the range: Spark reuses it compiled), and a
    purge drops files."""
    body = [f"{ident(n)} {t}" for n, t in config.column_types]
    body += [] if config.commit_scn else ["snaptime__ TIMESTAMP_NTZ"]
    body += [f"{n} {t}" for n, t in LOG_OWN_COLUMNS.items() if n != "snaptime__"]
    properties: dict[str, str] = {
        **LOG_TABLE_PROPERTIES,
        "fast_refresh.master": str(config.master),
        LOG_CONFIG: config.to_json(),
        LOG_STATE: state.to_json(),
    }
    return (
        f"CREATE TABLE {config.log_table.sql} (\n  " + ",\n  ".join(body) + "\n) USING iceberg "
        f"PARTITIONED BY (capture__) TBLPROPERTIES ({sqltext.properties(properties)})"
    )


def drop_mview_log(env: Env, master_name: object, *, held: int = 0) -> str:
    """Drop a log (Oracle: DROP MATERIALIZED VIEW LOG); its views then need a complete
    refresh (they find their log gone, or a new one they are not registered on).
    ``held``: the uses of the log the caller counts itself (a refresh creating its log
    again), which do not stop the drop.

    A name that stands for a fast_refresh model's storage table (``master_table``) while
    a log of the name itself is still there means that log: it was on the table of that
    name the model replaced (left by a refresh that died between the two, or by an older
    version), and capture fails on it for good. Dropping the storage table's log instead
    made every view on it rebuild, and left the stale log failing."""
    named = TableName.parse(master_name)
    master = master_table(env, named)
    if master != named and is_log_table(env.tables.load(log_table_for(named), fresh=True)):
        said = _drop_log(env, named, held=held)
        return (
            f"{said} ({named} is a fast_refresh model's view now, not the table this log was "
            f"on; the log of the model's storage table, {log_table_for(master)}, is kept: "
            f"drop it by naming {master})"
        )
    return _drop_log(env, master, held=held)


def drop_replaced_log(env: Env, table: TableName) -> str | None:
    """Drop the log of ``table``, another materialization's table that the fast_refresh
    model of that name has just replaced by its view (Oracle drops a master's log with
    it); what that did, None when it had none. The views on it are released: they read
    the model's storage table now, a change of definition they rebuild for anyway."""
    if not is_log_table(env.tables.load(log_table_for(table), fresh=True)):
        return None
    said = _drop_log(env, table)
    return f"{said} (its table {table} was replaced by the fast_refresh model's view)"


def is_log_table(meta: TableMeta | None) -> bool:
    """Whether ``meta`` is a materialized view log's table (dbt-fastrefresh's properties)."""
    return meta is not None and (
        LOG_CONFIG in meta.properties or "fast_refresh.master" in meta.properties
    )


def _drop_log(env: Env, master: TableName, *, held: int = 0) -> str:
    """``drop_mview_log`` of the log on ``master`` itself (the name resolved)."""
    log_table = log_table_for(master)
    with env.holding([log_lock(log_table)]):
        if env.runtime.in_use.get(str(log_table), 0) > held:
            raise FastRefreshError(
                f"The materialized view log {log_table} is in use by a refresh running in "
                "this process (another dbt thread); dropping it now would fail that refresh "
                "half-way. Nothing was dropped. Fix: drop it when the run has finished (dbt "
                "run-operation fast_refresh.drop_mview_log in its own invocation)."
            )
        meta = env.tables.load(log_table, fresh=True)
        if meta is None:
            raise missing_log_error(env, master, dropping=True)
        users: Mapping[str, Any] = {}
        if LOG_CONFIG not in meta.properties:
            if not is_log_table(meta):
                raise FastRefreshError(
                    f"{log_table} is not a materialized view log (no dbt-fastrefresh "
                    f"properties), so it is left alone. Fix: check the master name; drop "
                    "that table yourself if it is not needed."
                )
        else:
            try:
                log = load_log(env, master)
            except LogStateGone:
                log = None  # the fix that error names: its views, unknown, rebuild once
            users = log.state.users if log else {}
        env.sql.execute(f"DROP TABLE IF EXISTS {log_table.sql}")
        env.runtime.chosen.pop(str(log_table), None)
        journal = env.runtime.journal(env.registry)
        journal.dropped_logs.add(str(log_table))
        journal.released.update((str(log_table), view) for view in users)
        journal.views.update(users)
    views = sorted(users)
    note = f"; views that used it need a complete refresh: {', '.join(views)}" if views else ""
    return f"dropped materialized view log {log_table} on {master}{note}"


def load_log_locked(
    env: Env, master: TableName, known: LoadedLog | None = None, *, columns: bool = True
) -> LoadedLog | None:
    """The log of ``master`` (None: it has none) as any writer of its state needs it:
    without rows a write that died left past its recorded state. A state recorded over
    them would anchor past them and hide them, and the next capture would write the same
    commits again. Caller holds the log's lock. ``known``, ``columns``: see
    ``load_log``."""
    log = load_log(env, master, known, columns=columns)
    return delete_leftovers(env, log) if log is not None and log.leftovers else log


def load_log_for_write(env: Env, master: TableName, known: LoadedLog | None = None) -> LoadedLog:
    """``load_log_locked``, present (else the ORA-23413 error)."""
    log = load_log_locked(env, master, known)
    if log is None:
        raise missing_log_error(env, master)
    return log


def changed_by_hand(env: Env, log: LoadedLog) -> str | None:
    """How rows the log's state records were lost or doubled by a writer other than
    dbt-fastrefresh (None: they were not, or this path cannot tell). On the Java path every
    write to a log carries its state in its snapshot summary, so a commit past the
    recorded state that changed rows (not a compaction) is someone else's. The log must
    still hold each sequence of ``(purged_sequence, last_sequence]`` once: seed 001's
    reorganization (the rows copied out, ``TRUNCATE``, inserted again) does, a ``DELETE``
    or ``TRUNCATE`` by hand, or a row inserted twice, does not. One aggregate, only where
    such a commit is found. Rows updated in place keep their count and are not found. The
    SQL path records its state after its commit, so there a purge that died half-way
    cannot be told from a ``DELETE`` by hand."""
    if env.tables.kind != "java" or not any(s.operation != "replace" for s in log.found.after):
        return None
    state = log.state
    lower, upper = state.purged_sequence, state.last_sequence
    ((rows, distinct),) = env.sql.query(
        f"SELECT count(*), count(DISTINCT sequence__) FROM {log.log_table.sql} "
        f"WHERE sequence__ > {lower} AND sequence__ <= {upper}"
    )
    if rows == distinct == upper - lower:
        return None
    return (
        f"changed outside dbt-fastrefresh: it holds {rows} row(s), {distinct} distinct, of "
        f"the {upper - lower} its state records (sequences {lower + 1} to {upper})"
    )


def delete_leftovers(env: Env, log: LoadedLog) -> LoadedLog:
    """Remove rows written past the recorded state by a write that died before recording
    it (SQL path), keeping stamps those rows' setup left: a later refresh time must still
    be later than every stamp on the log. Where the commits past the state are not
    dbt-fastrefresh's (``changed_by_hand``), the log starts a new epoch: no view reads
    its rows as changes again, each refreshes completely once. Caller holds the log's
    lock."""
    state = log.state
    by_hand = changed_by_hand(env, log)
    if by_hand is not None:
        logger.warning(
            f"dbt-fastrefresh: the materialized view log {log.log_table} was {by_hand}: its "
            "rows no longer say what changed, so every view on it refreshes completely "
            "once. Fix: none needed; change a log only through dbt-fastrefresh."
        )
        state = state.younger(env.clock(), by_hand)
    youngest = state.youngest
    if not log.config.commit_scn:
        rows = env.sql.query(
            f"SELECT max(snaptime__) FROM {log.log_table.sql} WHERE snaptime__ < "
            f"TIMESTAMP_NTZ'4000-01-01 00:00:00'"
        )
        stamped = rows[0][0] if rows else None
        if stamped is not None and stamped > youngest:
            youngest = stamped
    env.check_leases([log_lock(log.log_table)])
    env.sql.execute(
        f"DELETE FROM {log.log_table.sql} WHERE capture__ > {literal(state.last_sequence)}"
    )
    env.upkeep_commit(log.log_table)
    record_state(env, log, state.replace(youngest=youngest))
    reloaded = load_log(env, log.master)
    assert reloaded is not None
    return reloaded
