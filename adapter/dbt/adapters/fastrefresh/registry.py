"""The registry: Oracle's SYS.MLOG$, SYS.SLOG$ and SNAP$, as Iceberg tables.

| table            | one row per          | Oracle            |
|------------------|----------------------|-------------------|
| mview_logs       | log                  | SYS.MLOG$         |
| mview_log_users  | (log, view)          | SYS.SLOG$         |
| mviews           | view                 | SNAP$ / USER_MVIEWS |
| refresh_runs     | refresh (history)    | -                 |
| capture_runs     | non-empty capture    | -                 |

The tables live in one schema (profile field ``registry_schema``, default
``fast_refresh``), are created on first use, and carry the registry version as a table
property so a later release can migrate them. Every write goes through this module and
runs under the written table's lock (see ``locks``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.fastrefresh import locks, sqltext, upkeep
from dbt.adapters.fastrefresh import master as mt
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.executor import Executor
from dbt.adapters.fastrefresh.sqltext import TableName, ident, literal

REGISTRY_VERSION = 1
VERSION_PROPERTY = "fast_refresh.registry-version"
# Tables committed to by every refresh (the registry, the logs): keep their metadata small.
METADATA_CLEANUP = {
    "write.metadata.delete-after-commit.enabled": "true",
    "write.metadata.previous-versions-max": "10",
}
# Registry tables are small and written a row at a time. Iceberg's default hash
# distribution puts a shuffle before every UPDATE and DELETE (about 0.1 s of a 0.35 s
# single-row UPDATE here). A registry created by an earlier release gets the properties it
# lacks on first use; a property set by hand is left as it is.
TUNING_PROPERTIES = {
    "write.update.distribution-mode": "none",
    "write.delete.distribution-mode": "none",
    "write.merge.distribution-mode": "none",
    **METADATA_CLEANUP,
}

# Column lists, in table order. Types are Spark SQL types.
TABLES: dict[str, list[tuple[str, str]]] = {
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


@dataclass(frozen=True)
class LogInfo:
    """One row of ``mview_logs``."""

    master: TableName
    log_table: TableName
    flavour: str
    key_columns: tuple[str, ...]
    logged_columns: tuple[str, ...]
    master_columns: tuple[str, ...]
    keyless: bool
    created: dt.datetime
    oldest: dt.datetime | None
    youngest: dt.datetime | None
    last_purge_time: dt.datetime | None
    last_purge_rows: int
    captured_through: int | None
    captured_at: dt.datetime | None
    last_sequence: int
    marked_sequence: int
    purged_through: dt.datetime | None
    purged_sequence: int
    younger_than: dt.datetime
    younger_reason: str | None

    @property
    def commit_scn(self) -> bool:
        return self.flavour == "COMMIT_SCN"

    @property
    def columns(self) -> tuple[str, ...]:
        """The master columns the log holds: key columns first, then the logged ones."""
        return self.key_columns + tuple(c for c in self.logged_columns if c not in self.key_columns)


@dataclass(frozen=True)
class LogUser:
    """One row of ``mview_log_users``: a view's claim on a log."""

    log_table: TableName
    master: TableName
    mview: TableName
    registered_at: dt.datetime
    last_refresh: dt.datetime
    last_sequence: int
    master_snapshot: int | None


@dataclass(frozen=True)
class MviewInfo:
    """One row of ``mviews``."""

    mview: TableName
    query_hash: str
    refresh_method: str
    masters: tuple[TableName, ...]
    shape: str | None
    last_refresh_type: str | None
    last_refresh_time: dt.datetime | None
    staleness: str
    last_fallback_reason: str | None
    view_snapshot: int | None
    master_snapshots: Mapping[str, int] = field(default_factory=dict)
    master_schema_hash: str | None = None
    registered_at: dt.datetime | None = None
    definition: str | None = None
    table_options: str | None = None


def _row_to_dict(table: str, row: tuple[Any, ...]) -> dict[str, Any]:
    return {name: value for (name, _), value in zip(TABLES[table], row, strict=True)}


_ENSURED: set[str] = set()
_ENSURE_LOCK = threading.Lock()

# A log's registry values that a refresh's capture wrote into the log but left for its
# wrap-up to record, in the one ``mview_logs`` write that wrap-up makes anyway (see
# ``Registry.defer_log``). Keyed by (registry schema, log table); each entry keeps the
# stored row it was based on, and applies only while the stored row is still that one.
_DEFERRED: dict[tuple[str, str], tuple[LogInfo, dict[str, Any]]] = {}


class Registry:
    """Reads and writes of the registry tables in one schema."""

    def __init__(self, executor: Executor, schema: str) -> None:
        self.x = executor
        self.schema = schema.lower()

    def table(self, name: str) -> TableName:
        return TableName(self.schema, name)

    def lock_name(self, name: str) -> str:
        return f"registry:{self.schema}.{name}"

    # -- creation and versioning -------------------------------------------------------

    def ensure(self) -> None:
        """Create the schema and any missing table; refuse a registry of a newer release."""
        with _ENSURE_LOCK:
            if self.schema in _ENSURED:
                return
            with locks.holding(self.lock_name(t) for t in TABLES):
                self.x.execute(f"CREATE SCHEMA IF NOT EXISTS {ident(self.schema)}")
                existing = mt.table_names(self.x, self.schema)
                for name, columns in TABLES.items():
                    if name in existing:
                        self._check_existing(name)
                        continue
                    cols = ",\n  ".join(f"{ident(c)} {t}" for c, t in columns)
                    properties = {
                        VERSION_PROPERTY: str(REGISTRY_VERSION),
                        "format-version": "2",
                        **TUNING_PROPERTIES,
                    }
                    self.x.execute(
                        f"CREATE TABLE IF NOT EXISTS {self.table(name).sql} (\n  {cols}\n) "
                        f"USING iceberg TBLPROPERTIES ({sqltext.properties(properties)})"
                    )
            _ENSURED.add(self.schema)

    def _check_existing(self, name: str) -> None:
        """Refuse a table that is not a registry table of this or an earlier release;
        add the tuning properties it lacks."""
        properties = {
            str(k): str(v) for k, v in self.x.query(f"SHOW TBLPROPERTIES {self.table(name).sql}")
        }
        value = properties.get(VERSION_PROPERTY)
        try:
            version = int(str(value))
        except (TypeError, ValueError):
            version = None
        if version is None:
            raise FastRefreshError(
                f"{self.table(name)} exists but is not a dbt-fastrefresh registry table (no "
                f"'{VERSION_PROPERTY}' property). Fix: set registry_schema in the profile to "
                "a schema that holds only the registry, or rename that table."
            )
        if version > REGISTRY_VERSION:
            raise FastRefreshError(
                f"The registry {self.schema} was written by a newer dbt-fastrefresh (registry "
                f"version {version}; this release knows {REGISTRY_VERSION}). Fix: upgrade "
                "dbt-fastrefresh."
            )
        missing = {k: v for k, v in TUNING_PROPERTIES.items() if k not in properties}
        if missing:
            self.x.execute(
                f"ALTER TABLE {self.table(name).sql} SET TBLPROPERTIES ({sqltext.properties(missing)})"
            )

    # -- generic row I/O ----------------------------------------------------------------

    def select(self, name: str, where: str = "TRUE") -> list[dict[str, Any]]:
        cols = ", ".join(ident(c) for c, _ in TABLES[name])
        rows = self.x.query(f"SELECT {cols} FROM {self.table(name).sql} WHERE {where}")
        return [_row_to_dict(name, row) for row in rows]

    def insert(self, name: str, rows: Iterable[Mapping[str, Any]]) -> None:
        rows = list(rows)
        if not rows:
            return
        columns = TABLES[name]
        values = ",\n".join(
            "(" + ", ".join(_sql_value(row.get(c), t) for c, t in columns) + ")" for row in rows
        )
        with locks.holding([self.lock_name(name)]):
            self.x.execute(f"INSERT INTO {self.table(name).sql} VALUES\n{values}")
            upkeep.committed(self.x, self.table(name))

    def update(self, name: str, where: str, values: Mapping[str, Any]) -> None:
        """Set ``values`` in the rows ``where`` picks (see ``_update_table``)."""
        types = dict(TABLES[name])
        self._update_table(
            name,
            [
                f"{ident(c)} = CASE WHEN ({where}) THEN {_sql_value(v, types[c])} "
                f"ELSE {ident(c)} END"
                for c, v in values.items()
            ],
        )

    def _update_table(self, name: str, sets: Sequence[str]) -> None:
        """One UPDATE of every row, each SET a CASE that keeps the rows not picked.

        No WHERE, on purpose: with one, Spark runs a copy-on-write UPDATE as two jobs, one
        to find the data files that hold a picked row (runtime group filtering) and one
        to rewrite them; without, one job rewrites the table. A registry table holds a
        row per view or log, so that is cheaper (0.21 s against 0.39 s for a 10-file
        table here), and it leaves the table one file, which its reads find sooner.
        """
        with locks.holding([self.lock_name(name)]):
            self.x.execute(f"UPDATE {self.table(name).sql} SET {', '.join(sets)}")
            upkeep.committed(self.x, self.table(name))

    def update_rows(
        self, name: str, keys: Sequence[str], rows: Sequence[Mapping[str, Any]]
    ) -> None:
        """Update several rows in one commit. Each of ``rows`` gives the values of the
        ``keys`` that pick its row and of the columns to set there; a column a row does
        not name keeps its value in that row. (An UPDATE with a CASE per column: Iceberg
        runs it for about two thirds of a MERGE's time; see ``_update_table``.)"""
        if not rows:
            return
        types = dict(TABLES[name])
        picks = [
            " AND ".join(f"{ident(k)} = {_sql_value(row[k], types[k])}" for k in keys)
            for row in rows
        ]
        named = {c for row in rows for c in row}
        sets = []
        for column, sql_type in TABLES[name]:
            if column in named and column not in keys:
                cases = " ".join(
                    f"WHEN {pick} THEN {_sql_value(row[column], sql_type)}"
                    for pick, row in zip(picks, rows, strict=True)
                    if column in row
                )
                sets.append(f"{ident(column)} = CASE {cases} ELSE {ident(column)} END")
        self._update_table(name, sets)

    def delete(self, name: str, where: str) -> None:
        with locks.holding([self.lock_name(name)]):
            self.x.execute(f"DELETE FROM {self.table(name).sql} WHERE {where}")
            upkeep.committed(self.x, self.table(name))

    # -- typed accessors ----------------------------------------------------------------

    def log_for_master(self, master: TableName) -> LogInfo | None:
        rows = self.select("mview_logs", f"master = {literal(str(master))}")
        return self._with_deferred(_log_info(rows[0])) if rows else None

    def logs_for_masters(self, masters: Iterable[TableName]) -> dict[TableName, LogInfo]:
        """``log_for_master`` of several masters in one read (a master without a log is
        left out)."""
        names = sorted({str(m) for m in masters})
        if not names:
            return {}
        rows = self.select("mview_logs", f"master IN ({', '.join(map(literal, names))})")
        return {i.master: i for i in (self._with_deferred(_log_info(r)) for r in rows)}

    def logs(self) -> list[LogInfo]:
        return [self._with_deferred(_log_info(r)) for r in self.select("mview_logs")]

    def log_users(self, log_table: TableName) -> list[LogUser]:
        rows = self.select("mview_log_users", f"log_table = {literal(str(log_table))}")
        return [_log_user(r) for r in rows]

    def users_of_logs(self, log_tables: Iterable[TableName]) -> dict[TableName, list[LogUser]]:
        """``log_users`` of several logs in one read (every log asked for has an entry)."""
        names = sorted({str(t) for t in log_tables})
        users: dict[TableName, list[LogUser]] = {TableName.parse(n): [] for n in names}
        if names:
            where = f"log_table IN ({', '.join(map(literal, names))})"
            for user in map(_log_user, self.select("mview_log_users", where)):
                users[user.log_table].append(user)
        return users

    def users_of_mview(self, mview: TableName) -> list[LogUser]:
        rows = self.select("mview_log_users", f"mview = {literal(str(mview))}")
        return [_log_user(r) for r in rows]

    def mview(self, mview: TableName) -> MviewInfo | None:
        rows = self.select("mviews", f"mview = {literal(str(mview))}")
        return _mview_info(rows[0]) if rows else None

    def update_log(self, log: LogInfo, **values: Any) -> None:
        """Write a log's registry row, with whatever was deferred for it (caller holds
        the log's lock and read ``log`` under it)."""
        self.update_logs([(log, values)])

    def update_logs(self, updates: Sequence[tuple[LogInfo, Mapping[str, Any]]]) -> None:
        """``update_log`` for several logs, in one commit (caller holds their locks)."""
        rows = []
        for log, values in updates:
            key = (self.schema, str(log.log_table))
            deferred = _DEFERRED[key][1] if key in _DEFERRED else {}
            rows.append({**deferred, **values, "log_table": str(log.log_table)})
        self.update_rows("mview_logs", ["log_table"], rows)
        for log, _ in updates:
            _DEFERRED.pop((self.schema, str(log.log_table)), None)

    def defer_log(self, stored: LogInfo, **values: Any) -> None:
        """Record ``values`` for a log with its next ``update_log`` instead of now.

        For capture inside a refresh's setup, whose wrap-up writes the log's row anyway:
        one registry commit instead of two. Until then, this process reads the row with
        the values applied. Rows a capture appended above the stored ``last_sequence``
        stay leftovers to any other process, and to this one after a crash, so the next
        capture there removes and captures them again: the protocol's recovery from a
        capture that died before its registry write. ``stored``: the row as stored, read
        under the log's lock (``log_for_master`` of the same process gives it with earlier
        deferred values applied; those are kept).
        """
        key = (self.schema, str(stored.log_table))
        base, earlier = _DEFERRED.get(key, (stored, {}))
        _DEFERRED[key] = (base, {**earlier, **values})

    def forget_deferred(self, log_table: TableName) -> None:
        _DEFERRED.pop((self.schema, str(log_table)), None)

    def _with_deferred(self, stored: LogInfo) -> LogInfo:
        key = (self.schema, str(stored.log_table))
        entry = _DEFERRED.get(key)
        if entry is None:
            return stored
        base, values = entry
        if (base.created, base.last_sequence, base.captured_through) != (
            stored.created,
            stored.last_sequence,
            stored.captured_through,
        ):
            # The stored row moved on without us (another process, a recreated log): the
            # deferred values are stale, and the rows they describe are leftovers.
            _DEFERRED.pop(key, None)
            return stored
        return dataclasses.replace(stored, **values)


def _sql_value(value: Any, sql_type: str) -> str:
    if value is None:
        return f"CAST(NULL AS {sql_type})"
    if sql_type.startswith("ARRAY"):
        inner = sql_type[len("ARRAY<") : -1]
        items = ", ".join(_sql_value(v, inner) for v in value)
        return f"CAST(array({items}) AS {sql_type})"
    if sql_type.startswith("MAP"):
        if not value:
            return f"CAST(map() AS {sql_type})"
        items = ", ".join(f"{literal(str(k))}, {literal(v)}" for k, v in value.items())
        return f"CAST(map({items}) AS {sql_type})"
    if isinstance(value, TableName):
        value = str(value)
    return f"CAST({literal(value)} AS {sql_type})"


def _names(values: Iterable[str] | None) -> tuple[str, ...]:
    return tuple(values or ())


def _log_info(row: dict[str, Any]) -> LogInfo:
    return LogInfo(
        master=TableName.parse(row["master"]),
        log_table=TableName.parse(row["log_table"]),
        flavour=row["flavour"],
        key_columns=_names(row["key_columns"]),
        logged_columns=_names(row["logged_columns"]),
        master_columns=_names(row["master_columns"]),
        keyless=bool(row["keyless"]),
        created=row["created"],
        oldest=row["oldest"],
        youngest=row["youngest"],
        last_purge_time=row["last_purge_time"],
        last_purge_rows=int(row["last_purge_rows"] or 0),
        captured_through=row["captured_through"],
        captured_at=row["captured_at"],
        last_sequence=int(row["last_sequence"] or 0),
        marked_sequence=int(row["marked_sequence"] or 0),
        purged_through=row["purged_through"],
        purged_sequence=int(row["purged_sequence"] or 0),
        younger_than=row["younger_than"],
        younger_reason=row["younger_reason"],
    )


def _log_user(row: dict[str, Any]) -> LogUser:
    return LogUser(
        log_table=TableName.parse(row["log_table"]),
        master=TableName.parse(row["master"]),
        mview=TableName.parse(row["mview"]),
        registered_at=row["registered_at"],
        last_refresh=row["last_refresh"],
        last_sequence=int(row["last_sequence"] or 0),
        master_snapshot=row["master_snapshot"],
    )


def _mview_info(row: dict[str, Any]) -> MviewInfo:
    return MviewInfo(
        mview=TableName.parse(row["mview"]),
        query_hash=row["query_hash"],
        refresh_method=row["refresh_method"],
        masters=tuple(TableName.parse(m) for m in row["masters"] or ()),
        shape=row["shape"],
        last_refresh_type=row["last_refresh_type"],
        last_refresh_time=row["last_refresh_time"],
        staleness=row["staleness"],
        last_fallback_reason=row["last_fallback_reason"],
        view_snapshot=row["view_snapshot"],
        master_snapshots=dict(row["master_snapshots"] or {}),
        master_schema_hash=row["master_schema_hash"],
        registered_at=row["registered_at"],
        definition=row["definition"],
        table_options=row["table_options"],
    )
