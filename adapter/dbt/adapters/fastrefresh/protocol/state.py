"""The protocol's durable facts, as typed values, and where each is kept.

Oracle keeps them in dictionary tables (``SYS.MLOG$``, ``SYS.SLOG$``, ``SNAP$``) that every
refresh updates. Here they live on the Iceberg tables they describe, so that writing them
costs no statement of its own wherever a data commit happens anyway:

| fact | kept as | written |
|---|---|---|
| a log's configuration (master, key, logged columns, flavour, purge) | property ``fast_refresh.log`` of the log table | once, by its ``CREATE TABLE`` |
| a log's state (captured position, sequences, youngest, purges, registered views) | ``fast_refresh.log-state``, in the snapshot summary of the log commit that changed it | with the capture append, the mark, the purge (one commit each) |
| a view's configuration (definition, hashes, shape, table options) | property ``fast_refresh.view`` of the view's storage table | by the complete refresh's ``CREATE OR REPLACE TABLE`` (kept by an in-place rebuild, set again if it changed) |
| a view's state (its place on each log: SLOG$; the master snapshots it reflects) | ``fast_refresh.view-state``, in the snapshot summary of the view's MERGE or rebuild | with that commit |

A state in a snapshot summary is atomic with the data it describes: a refresh or capture
that dies leaves either both or neither. Snapshot properties reach a Spark SQL commit only
through Iceberg's Java API, which is there only when Spark runs in this process; where it
is not (thrift, http, odbc), the same state is written as a table property right after
the commit, with the snapshot it describes (``snapshot``), and the crash window between
the two is recovered as before: rows a capture appended past the recorded state are
removed and captured again, and a view changed past its recorded state is rebuilt.
Readers take the newest state on the table's history (``tables.latest_state``).

Everything here is pure: values and their JSON encoding.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.fastrefresh.iceberg import columns as mt
from dbt.adapters.fastrefresh.sqltext import TableName, property_json

LOG_CONFIG = "fast_refresh.log"
LOG_STATE = "fast_refresh.log-state"
VIEW_CONFIG = "fast_refresh.view"
VIEW_STATE = "fast_refresh.view-state"
# On a fast_refresh model's Spark view: what it was created from (``engine/surface.py``).
VIEW_FINGERPRINT = "fast_refresh.view-of"
# On it too, when it orders its columns otherwise than its storage table (an enforced
# contract's order): their names in its order, for a query over it (``resolve_views``).
VIEW_ORDER = "fast_refresh.view-order"
STATE_KEYS = (LOG_STATE, VIEW_STATE)

UNMARKED = dt.datetime(4000, 1, 1)
_STAMP = "%Y-%m-%d %H:%M:%S.%f"


class Flavour(str, enum.Enum):
    """How a log tells which rows a view has consumed (stored values are Oracle's words)."""

    TIMESTAMP = "TIMESTAMP"  # snaptime__ marking by the first refresher
    COMMIT_SCN = "COMMIT_SCN"  # no marking: views remember the sequence they reached


class PurgeMode(str, enum.Enum):
    """When consumed log rows are deleted (Oracle: PURGE IMMEDIATE SYNCHRONOUS, or a purge
    job after the refreshes)."""

    SYNCHRONOUS = "synchronous"  # in the refresh's wrap-up, before it returns (Oracle's)
    DEFERRED = "deferred"  # once per dbt invocation, at its end (``registry.publish``)


def stamp(value: dt.datetime | None) -> str | None:
    return None if value is None else value.strftime(_STAMP)


def parse_stamp(value: str | None) -> dt.datetime | None:
    return None if value is None else dt.datetime.strptime(value, _STAMP)


def _req_stamp(value: str) -> dt.datetime:
    parsed = parse_stamp(value)
    assert parsed is not None
    return parsed


@dataclass(frozen=True)
class LogConfig:
    """A log's configuration, fixed at ``create_mview_log``."""

    master: TableName
    log_table: TableName
    flavour: Flavour
    key_columns: tuple[str, ...]
    logged_columns: tuple[str, ...]
    master_columns: tuple[str, ...]  # every master column at creation, in table order
    keyless: bool
    created: dt.datetime
    incarnation: str  # unique per creation: a recreated log is another log
    purge: PurgeMode = PurgeMode.DEFERRED
    # The master columns' Iceberg field ids at creation, in ``master_columns``' order
    # (empty when the log was created on the SQL path, which reads none).
    master_field_ids: tuple[int, ...] = ()
    # The snapshot the log captures from, when it was committed under an older schema
    # than the log's master columns (an ALTER TABLE makes no snapshot): the columns it
    # lacks (added after it, or dropped and added again: capture reads them there as
    # NULL) and the ones renamed since (current name, name there). Iceberg reads a
    # snapshot with the schema it was committed under.
    start_snapshot: int | None = None
    added_after_start: tuple[str, ...] = ()
    renamed_after_start: tuple[tuple[str, str], ...] = ()
    # The log's master columns (``columns``) with their types at creation, as the log
    # table has them (empty for a log created before they were recorded).
    column_types: tuple[tuple[str, str], ...] = ()
    # The key is the master's Iceberg identifier fields, taken at creation because no key
    # was given (none: a key-less log; False for a log created before this was recorded,
    # or given its key): a dbt run creates such a log again once they change
    # (``engine.refresh``).
    key_from_identifiers: bool = False

    def absent_at(self) -> dict[int, mt.AtSnapshot]:
        """How capture reads the master columns at its start snapshot, when that was
        committed under an older schema (``added_after_start``, ``renamed_after_start``)."""
        if self.start_snapshot is None or not (self.added_after_start or self.renamed_after_start):
            return {}
        at = mt.AtSnapshot(frozenset(self.added_after_start), dict(self.renamed_after_start))
        return {self.start_snapshot: at}

    @property
    def commit_scn(self) -> bool:
        return self.flavour is Flavour.COMMIT_SCN

    @property
    def columns(self) -> tuple[str, ...]:
        """The master columns the log holds: key columns first, then the logged ones."""
        return self.key_columns + tuple(c for c in self.logged_columns if c not in self.key_columns)

    def to_json(self) -> str:
        return property_json(
            {
                "master": str(self.master),
                "log_table": str(self.log_table),
                "flavour": self.flavour.value,
                "key_columns": list(self.key_columns),
                "logged_columns": list(self.logged_columns),
                "master_columns": list(self.master_columns),
                "keyless": self.keyless,
                "created": stamp(self.created),
                "incarnation": self.incarnation,
                "purge": self.purge.value,
                **(
                    {"master_field_ids": list(self.master_field_ids)}
                    if self.master_field_ids
                    else {}
                ),
                **(
                    {
                        "start_snapshot": self.start_snapshot,
                        "added_after_start": list(self.added_after_start),
                    }
                    if self.added_after_start or self.renamed_after_start
                    else {}
                ),
                **(
                    {"renamed_after_start": [list(p) for p in self.renamed_after_start]}
                    if self.renamed_after_start
                    else {}
                ),
                **(
                    {"column_types": [list(p) for p in self.column_types]}
                    if self.column_types
                    else {}
                ),
                **({"key_from_identifiers": True} if self.key_from_identifiers else {}),
            }
        )

    @classmethod
    def from_json(cls, text: str) -> LogConfig:
        d = json.loads(text)
        return cls(
            master=TableName.parse(d["master"]),
            log_table=TableName.parse(d["log_table"]),
            flavour=Flavour(d["flavour"]),
            key_columns=tuple(d["key_columns"]),
            logged_columns=tuple(d["logged_columns"]),
            master_columns=tuple(d["master_columns"]),
            keyless=bool(d["keyless"]),
            created=_req_stamp(d["created"]),
            incarnation=d["incarnation"],
            purge=PurgeMode(d.get("purge", PurgeMode.DEFERRED.value)),
            master_field_ids=tuple(int(i) for i in d.get("master_field_ids", ())),
            start_snapshot=d.get("start_snapshot"),
            added_after_start=tuple(d.get("added_after_start", ())),
            renamed_after_start=tuple(
                (str(new), str(old)) for new, old in d.get("renamed_after_start", ())
            ),
            column_types=tuple((str(n), str(t)) for n, t in d.get("column_types", ())),
            key_from_identifiers=bool(d.get("key_from_identifiers", False)),
        )


@dataclass(frozen=True)
class Claim:
    """A view's registration on a log, as the log keeps it (the master side of SLOG$).

    ``position``/``since``: the sequence and time the view reflected when it registered.
    The view's own state says how far it has got since; these are the lower bounds a purge
    falls back to when the view cannot be read (it was dropped: Oracle's orphan)."""

    registered_at: dt.datetime
    position: int
    since: dt.datetime


@dataclass(frozen=True)
class LogState:
    """A log's moving facts (Oracle's SYS.MLOG$ row, plus the views registered on it).

    Sequences are dense and purges cut prefixes, so the log holds exactly the rows
    ``(purged_sequence, last_sequence]``.
    """

    epoch: int  # grows when the master's history is lost: views of an older epoch are stale
    captured_through: int | None  # the master snapshot captured up to
    captured_at: dt.datetime | None
    last_sequence: int
    marked_sequence: int  # rows up to here carry a refresh time (timestamp flavour)
    youngest: dt.datetime  # every refresh time that stamped rows is at most this
    oldest: dt.datetime  # the least recent refresh of a registered view, at the last purge
    purged_sequence: int
    purged_through: dt.datetime | None
    last_purge_time: dt.datetime | None
    last_purge_rows: int
    younger_than: dt.datetime
    younger_reason: str | None
    users: Mapping[str, Claim] = field(default_factory=dict)
    # In a snapshot summary written before its append committed: the append's own rows
    # are numbered from here, so last_sequence = sequence_base + the commit's added-records.
    sequence_base: int | None = None
    # In a table property: the log snapshot this state describes.
    snapshot: int | None = None

    def epoch_id(self, config: LogConfig) -> str:
        """What a view remembers to tell this log's history from a recreated one's."""
        return f"{config.incarnation}/{self.epoch}"

    def to_json(self) -> str:
        return property_json(
            {
                "epoch": self.epoch,
                "captured_through": self.captured_through,
                "captured_at": stamp(self.captured_at),
                "last_sequence": self.last_sequence,
                "marked_sequence": self.marked_sequence,
                "youngest": stamp(self.youngest),
                "oldest": stamp(self.oldest),
                "purged_sequence": self.purged_sequence,
                "purged_through": stamp(self.purged_through),
                "last_purge_time": stamp(self.last_purge_time),
                "last_purge_rows": self.last_purge_rows,
                "younger_than": stamp(self.younger_than),
                "younger_reason": self.younger_reason,
                "users": {
                    view: [stamp(c.registered_at), c.position, stamp(c.since)]
                    for view, c in sorted(self.users.items())
                },
                "sequence_base": self.sequence_base,
                "snapshot": self.snapshot,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> LogState:
        d = json.loads(text)
        return cls(
            epoch=int(d["epoch"]),
            captured_through=d["captured_through"],
            captured_at=parse_stamp(d["captured_at"]),
            last_sequence=int(d["last_sequence"]),
            marked_sequence=int(d["marked_sequence"]),
            youngest=_req_stamp(d["youngest"]),
            oldest=_req_stamp(d["oldest"]),
            purged_sequence=int(d["purged_sequence"]),
            purged_through=parse_stamp(d["purged_through"]),
            last_purge_time=parse_stamp(d["last_purge_time"]),
            last_purge_rows=int(d["last_purge_rows"]),
            younger_than=_req_stamp(d["younger_than"]),
            younger_reason=d["younger_reason"],
            users={
                view: Claim(_req_stamp(r), int(p), _req_stamp(s))
                for view, (r, p, s) in d.get("users", {}).items()
            },
            sequence_base=d.get("sequence_base"),
            snapshot=d.get("snapshot"),
        )

    def replace(self, **changes: Any) -> LogState:
        return dataclasses.replace(self, **changes)

    def younger(self, at: dt.datetime, why: str, **changes: Any) -> LogState:
        """The state in a new epoch, younger than every view on the log from ``at``, for
        ``why``: each view refreshes completely once (Oracle's ORA-12034)."""
        return self.replace(epoch=self.epoch + 1, younger_than=at, younger_reason=why, **changes)


def new_log_state(created: dt.datetime, captured_through: int | None) -> LogState:
    """A log as ``create_mview_log`` leaves it (seed 001: oldest = youngest = created)."""
    return LogState(
        epoch=1, captured_through=captured_through, captured_at=created, last_sequence=0,
        marked_sequence=0, youngest=created, oldest=created, purged_sequence=0,
        purged_through=None, last_purge_time=None, last_purge_rows=0, younger_than=created,
        younger_reason="log created",
    )  # fmt: skip


@dataclass(frozen=True)
class Position:
    """A view's place on one log (the view side of SLOG$): it has consumed the log's rows
    up to ``last_sequence`` of history ``epoch``; ``last_refresh`` is that refresh's time."""

    epoch: str
    last_sequence: int
    last_refresh: dt.datetime


@dataclass(frozen=True)
class ViewConfig:
    """A view's definition, fixed by its last complete refresh (Oracle: SNAP$)."""

    definition: str
    query_hash: str
    master_schema_hash: str
    shape: str
    masters: tuple[TableName, ...]
    table_options: str  # PARTITIONED BY / CLUSTERED BY / LOCATION / COMMENT of its table
    registered_at: dt.datetime
    table_properties: Mapping[str, str] = field(default_factory=dict)  # the model's own
    # Spark's result type of each AVG(arg) of the query, so incremental averages match
    avg_types: Mapping[str, str] = field(default_factory=dict)
    # The view columns that identify a row (a keyed projection's or a join's keys; none
    # for an aggregate): the key of a log created on the view for views over it
    key_columns: tuple[str, ...] = ()
    # Built by ``dbt run --empty`` (dbt limited each table it reads to no rows): the
    # definition is not the model's, and the next dbt run rebuilds the view
    built_empty: bool = False
    # The dbt model that built it (its node's unique_id) and the dbt project and target
    # that ran it (``<root project's name>:<target schema>``): a later run of that project
    # on that target releases the view from its logs once no model of the project builds
    # it (``admin.release_orphans``)
    dbt_node: str | None = None
    dbt_project: str | None = None

    def to_json(self) -> str:
        return property_json(
            {
                "definition": self.definition,
                "query_hash": self.query_hash,
                "master_schema_hash": self.master_schema_hash,
                "shape": self.shape,
                "masters": [str(m) for m in self.masters],
                "table_options": self.table_options,
                "registered_at": stamp(self.registered_at),
                "table_properties": dict(self.table_properties),
                "avg_types": dict(self.avg_types),
                "key_columns": list(self.key_columns),
                **({"built_empty": True} if self.built_empty else {}),
                **({"dbt_node": self.dbt_node} if self.dbt_node else {}),
                **({"dbt_project": self.dbt_project} if self.dbt_project else {}),
            }
        )

    @classmethod
    def from_json(cls, text: str) -> ViewConfig:
        d = json.loads(text)
        return cls(
            definition=d["definition"],
            query_hash=d["query_hash"],
            master_schema_hash=d["master_schema_hash"],
            shape=d["shape"],
            masters=tuple(TableName.parse(m) for m in d["masters"]),
            table_options=d["table_options"],
            registered_at=_req_stamp(d["registered_at"]),
            table_properties=dict(d.get("table_properties") or {}),
            avg_types=dict(d.get("avg_types") or {}),
            key_columns=tuple(d.get("key_columns") or ()),
            built_empty=bool(d.get("built_empty", False)),
            dbt_node=d.get("dbt_node"),
            dbt_project=d.get("dbt_project"),
        )


@dataclass(frozen=True)
class ViewState:
    """What a view reflects after a refresh: its place on each log, the master snapshots."""

    refresh_method: str
    last_refresh_type: str  # FAST | COMPLETE
    last_refresh_time: dt.datetime
    last_fallback_reason: str | None
    positions: Mapping[str, Position] = field(default_factory=dict)  # by log table
    master_snapshots: Mapping[str, int] = field(default_factory=dict)  # by master
    snapshot: int | None = None  # in a table property: the view snapshot it describes
    # The masters read at a snapshot older than a column of theirs (added after it, read
    # as NULL: ``sqlgen.filled_read``); the view's next refresh that applies changes
    # rebuilds it from a newer one.
    filled: tuple[str, ...] = ()
    # In a table property (the SQL path): the view's data files at ``snapshot`` as read
    # after its commit (``refresh.commit_view``), or, for a view found larger than a
    # one-statement delta suits, as read at an earlier one (None: not read).
    data_files: int | None = None
    # Their size in bytes, read with the count (None: not read, or a state written before
    # it was kept).
    data_bytes: int | None = None
    # The session's time zone its rows were computed in, for a view whose query reads it
    # (``ivm/zones.py``; None: its rows are the same in every zone, or a view refreshed
    # before this was recorded): a refresh in another zone rebuilds the view.
    time_zone: str | None = None

    def to_json(self) -> str:
        return property_json(
            {
                "refresh_method": self.refresh_method,
                "last_refresh_type": self.last_refresh_type,
                "last_refresh_time": stamp(self.last_refresh_time),
                "last_fallback_reason": self.last_fallback_reason,
                "positions": {
                    log: [p.epoch, p.last_sequence, stamp(p.last_refresh)]
                    for log, p in sorted(self.positions.items())
                },
                "master_snapshots": dict(sorted(self.master_snapshots.items())),
                "snapshot": self.snapshot,
                **({"filled": list(self.filled)} if self.filled else {}),
                **({"data_files": self.data_files} if self.data_files is not None else {}),
                **({"data_bytes": self.data_bytes} if self.data_bytes is not None else {}),
                **({"time_zone": self.time_zone} if self.time_zone is not None else {}),
            }
        )

    @classmethod
    def from_json(cls, text: str) -> ViewState:
        d = json.loads(text)
        return cls(
            refresh_method=d["refresh_method"],
            last_refresh_type=d["last_refresh_type"],
            last_refresh_time=_req_stamp(d["last_refresh_time"]),
            last_fallback_reason=d["last_fallback_reason"],
            positions={
                log: Position(e, int(s), _req_stamp(t))
                for log, (e, s, t) in d.get("positions", {}).items()
            },
            master_snapshots={k: int(v) for k, v in d.get("master_snapshots", {}).items()},
            snapshot=d.get("snapshot"),
            filled=tuple(d.get("filled", ())),
            data_files=d.get("data_files"),
            data_bytes=d.get("data_bytes"),
            time_zone=d.get("time_zone"),
        )

    def replace(self, **changes: Any) -> ViewState:
        return dataclasses.replace(self, **changes)
