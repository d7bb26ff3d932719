"""What dbt-fastrefresh reads from and writes to Iceberg tables besides their rows.

Two ways to the same facts, behind one protocol (``Tables``):

- ``SqlTables`` (``sql.py``): Spark SQL only (``SHOW TBLPROPERTIES``, ``DESCRIBE``, the ``.snapshots``
  and ``.entries`` metadata tables, ``ALTER TABLE ... SET TBLPROPERTIES``). Works over
  every dbt-spark connection method: session, thrift, http, odbc.
- ``JvmTables`` (``iceberg/jvm.py``): Iceberg's Java API through py4j, when Spark runs in this
  process. A table load and its current snapshot cost milliseconds instead of a Spark
  statement each; a commit can carry the protocol's state in its snapshot summary; capture
  reads exactly the data files a commit touched.

Both store the same state in the same places (``protocol/state.py``), and the tests run the
protocol through both against each other.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.iceberg import columns as mt
from dbt.adapters.fastrefresh.sqltext import TableName

# Snapshot summary entries a reader needs besides the protocol's own keys.
SUMMARY_STATS = (
    "total-data-files",
    "total-files-size",
    "added-records",
    "total-records",
    "total-delete-files",
    "added-position-deletes",
    "removed-position-deletes",
    "deleted-data-files",
    "deleted-records",
)


def epoch_millis(millis: int) -> dt.datetime:
    """A commit time (Iceberg's ``timestamp-ms``) as an aware UTC datetime, on both paths.

    >>> epoch_millis(1_700_000_000_123)
    datetime.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=datetime.timezone.utc)
    """
    return dt.datetime.fromtimestamp(millis // 1000, dt.timezone.utc).replace(
        microsecond=millis % 1000 * 1000
    )


@dataclass(frozen=True)
class SnapshotInfo:
    """One snapshot of a table: its place in the history and the summary entries asked for."""

    snapshot_id: int
    parent_id: int | None
    operation: str
    committed_at: dt.datetime | None
    summary: Mapping[str, str] = field(default_factory=dict)

    def count(self, key: str) -> int | None:
        """A count in the summary (``total-records``, ...); None when it is not there."""
        value = self.summary.get(key, "")
        return int(value) if value.isdigit() else None

    @property
    def data_files(self) -> int | None:
        return self.count("total-data-files")

    @property
    def data_bytes(self) -> int | None:
        """The size of the table's data and delete files at this snapshot."""
        return self.count("total-files-size")

    @property
    def rewritten(self) -> tuple[int, int]:
        """The data files this commit removed whole and the rows they held, from its
        summary (a copy-on-write rewrite, an overwrite, a whole-file delete; 0 and 0 when
        the summary does not say)."""
        files, rows = self.count("deleted-data-files"), self.count("deleted-records")
        return (files, rows) if files is not None and rows is not None else (0, 0)


@dataclass(frozen=True)
class TableMeta:
    """A table as a refresh needs it, read in one go."""

    name: TableName
    iceberg: bool
    provider: str
    columns: tuple[mt.Column, ...]
    current_snapshot: int | None
    properties: Mapping[str, str]  # dbt-fastrefresh's own properties (fast_refresh.*)
    identifier_fields: tuple[str, ...] = ()
    rows: int | None = None  # at the current snapshot (its summary); None: not known


class History(Protocol):
    """A table's snapshots by id (None: not in its metadata, e.g. expired)."""

    def get(self, snapshot_id: int) -> SnapshotInfo | None: ...


@dataclass(frozen=True)
class Found:
    """The newest protocol state on a table's history.

    ``text``: the state's JSON (None: none found); ``anchor``: the snapshot it describes;
    ``after``: the commits after the anchor that carry no state, newest first — writes
    that died before their state was recorded (SQL path), or other writers' commits.
    """

    text: str | None
    anchor: int | None
    in_summary: bool
    after: tuple[SnapshotInfo, ...] = ()

    @property
    def changed_after(self) -> bool:
        """Whether a commit after the state changed rows (compaction, ``replace``, does not)."""
        return any(s.operation != "replace" for s in self.after)


def latest_state(meta: TableMeta, key: str, history: History) -> Found:
    """The newest state stored under ``key`` (pure over ``history``).

    A state in a table property names the snapshot it describes; one in a snapshot summary
    is at that snapshot. Walking back from the current snapshot, the first snapshot that
    carries the state in its summary, or that the property names, gives it; a property
    naming the snapshot a summary state is at wins, being written after that commit.

    >>> m = TableMeta(TableName("s", "t"), True, "iceberg", (), 2, {"k": '{"snapshot": 1}'})
    >>> h = {2: SnapshotInfo(2, 1, "append", None), 1: SnapshotInfo(1, None, "append", None)}
    >>> f = latest_state(m, "k", h)
    >>> (f.anchor, f.in_summary, [s.snapshot_id for s in f.after])
    (1, False, [2])
    >>> created = TableMeta(TableName("s", "t"), True, "iceberg", (), 3, {"k": "{}"})
    >>> compacted = {3: SnapshotInfo(3, 2, "replace", None)}  # 2, with the state, expired
    >>> latest_state(created, "k", compacted).text is None
    True
    """
    prop = meta.properties.get(key)
    prop_anchor = json.loads(prop).get("snapshot") if prop else None
    if prop is not None and prop_anchor == meta.current_snapshot:
        return Found(prop, prop_anchor, False)
    after: list[SnapshotInfo] = []
    cursor = meta.current_snapshot
    while cursor is not None:
        if prop is not None and cursor == prop_anchor:
            return Found(prop, cursor, False, tuple(after))
        snapshot = history.get(cursor)
        if snapshot is None:
            # Expired before a state was found (a compaction, then snapshots expired by
            # hand): the newest state went with them. A property written while the table
            # had no snapshot is older than that state, and taken for it, it moved the
            # log back to its creation: every change captured again, applied twice.
            return Found(None, None, False, tuple(after))
        if key in snapshot.summary:
            return Found(snapshot.summary[key], cursor, True, tuple(after))
        after.append(snapshot)
        cursor = snapshot.parent_id
    if prop is not None and prop_anchor is None:
        # Written while the table had no snapshot (a log is created empty).
        return Found(prop, None, False, tuple(after))
    return Found(None, None, False, tuple(after))


# Commits whose capture reads nothing at their parent snapshot: an append adds files only,
# and a replace (compaction) is not captured at all.
PARENT_FREE = ("append", "replace")

# What a gap says when the table itself was made anew (``chain_after``): the log of a dbt
# seed or ``table`` model lost its history to dbt then, and to something else otherwise
# (``engine/refresh.py`` tells the two apart by these).
GAP_RECREATED = "the table was dropped and created again"
GAP_REPLACED = "the table was replaced (CREATE OR REPLACE TABLE)"


@dataclass(frozen=True)
class Chain:
    """The master snapshots to capture (oldest first), or why the history is gone."""

    snapshots: tuple[SnapshotInfo, ...]
    gap: str | None = None


def chain_after(history: History, current: int | None, captured_through: int | None) -> Chain:
    """The ancestors of ``current`` committed after ``captured_through``, oldest first.

    ``captured_through`` None means the log was created on a table without any commit, so
    every ancestor counts. A ``captured_through`` that is not an ancestor of ``current``
    is a gap, which says why as far as the history tells: the table dropped and created
    again (``captured_through`` is not in its metadata), replaced (it is, and the current
    history starts after it) or rolled back (it is, and the current history starts before
    it), or its snapshots expired (an ancestor of ``current`` is gone). So is an expired
    ``captured_through`` whose next commit removed rows (capture reads them there).

    >>> h = {1: SnapshotInfo(1, None, "append", None), 2: SnapshotInfo(2, 1, "overwrite", None)}
    >>> [x.snapshot_id for x in chain_after(h, 2, 1).snapshots]
    [2]
    >>> chain_after(h, 2, 7).gap is not None
    True
    """
    if current is None:
        if captured_through is None:
            return Chain(())
        return Chain((), f"the table has no current snapshot, but snapshot {captured_through} "
                         f"was captured before ({GAP_RECREATED}, or replaced, and has had no "
                         "commit since)")  # fmt: skip
    found: list[SnapshotInfo] = []
    cursor: int | None = current
    while cursor is not None and cursor != captured_through:
        snapshot = history.get(cursor)
        if snapshot is None:
            if _older_than(
                found, history.get(captured_through) if captured_through is not None else None
            ):
                break  # rolled back past the captured snapshot (and expired since): _lost
            return Chain((), f"snapshot {cursor} is no longer in the table's metadata "
                             "(its snapshots were expired)")  # fmt: skip
        found.append(snapshot)
        cursor = snapshot.parent_id
    if cursor != captured_through:
        why = _lost(history, found, captured_through)
        return Chain((), f"snapshot {captured_through}, up to which changes were captured, "
                         f"is not an ancestor of the current snapshot: {why}")  # fmt: skip
    first = found[-1] if found else None
    if (
        first is not None
        and first.operation not in PARENT_FREE
        and captured_through is not None
        and history.get(captured_through) is None
    ):
        # The first new commit removed rows, which are read at its parent: gone with it.
        return Chain((), f"snapshot {captured_through}, up to which changes were captured, "
                         "is no longer in the table's metadata (its snapshots were expired), "
                         f"and the rows commit {first.snapshot_id} removed are read there")  # fmt: skip
    return Chain(tuple(reversed(found)))


def _older_than(found: list[SnapshotInfo], captured: SnapshotInfo | None) -> bool:
    """Whether the oldest ancestor of the current snapshot ``found`` so far was committed
    before ``captured`` (the snapshot captured through, still in the metadata): then the
    table was rolled back past it, where the walk (``chain_after``) met an ancestor gone."""
    oldest = found[-1] if found else None
    return bool(
        captured is not None
        and oldest is not None
        and oldest.committed_at
        and captured.committed_at
        and oldest.committed_at < captured.committed_at
    )


def _lost(history: History, found: list[SnapshotInfo], captured_through: int | None) -> str:
    """Why ``captured_through`` is not an ancestor of the history ``found`` walked back to
    its first snapshot (``chain_after``)."""
    captured = None if captured_through is None else history.get(captured_through)
    if captured is None:
        return f"{GAP_RECREATED} (or rolled back past it, and that snapshot expired since)"
    first = found[-1] if found else None
    if first is not None and first.committed_at and captured.committed_at:
        if first.committed_at > captured.committed_at:
            return f"{GAP_REPLACED}, its history starting again at snapshot {first.snapshot_id}"
        return "the table was rolled back past it"
    return f"{GAP_REPLACED} or rolled back past it"


@dataclass(frozen=True)
class RowSource:
    """A SELECT of master rows (the master's columns, in table order), and what each of its
    rows is to each commit of a capture: ``signs[ordinal]`` is -1 (the commit removed the
    row) or +1 (it added it). A data file one commit added and the next rewrote is read
    once, for both.

    ``by_row``: the SELECT has one more column, ``ord__``, and each row is ``signs[ord__]``
    to that one commit only (rows that several commits' position deletes removed, read
    once for all of them).

    ``whole_files``: the SELECT reads whole data files. Where a commit removed them
    (copy-on-write), most of their rows are carried over into the files it added and
    cancel there."""

    sql: str
    signs: Mapping[int, int]
    by_row: bool = False
    whole_files: bool = False


@dataclass(frozen=True)
class CaptureReads:
    """What capture reads for a run of master commits: the commits with changes, in order,
    with the ordinal each is known by, and the row sources."""

    commits: tuple[tuple[int, SnapshotInfo], ...]
    sources: tuple[RowSource, ...]
    rows: int | None = None  # the rows the sources read (None: not known)
    # The sources shuffle nothing themselves (their joins broadcast; the Java path's
    # staging says so), so the statement's own shuffles are all it has.
    unshuffled: bool = False

    @property
    def removes(self) -> bool:
        """Whether any commit removed rows (else every row is an insert: nothing to net)."""
        return any(sign < 0 for s in self.sources for sign in s.signs.values())

    @property
    def carries_over(self) -> bool:
        """Whether a commit removed whole data files (copy-on-write), so that rows it left
        unchanged are read both as removed and as added. Without that, the rows a commit
        removed and added are its changes (a position delete or deletion vector names only
        the rows a statement matched)."""
        return any(
            s.whole_files and any(sign < 0 for sign in s.signs.values()) for s in self.sources
        )

    @property
    def changed_rows(self) -> int | None:
        """At most how many rows the commits changed, from their summaries (the rows they
        added and the positions they deleted), when no commit carries rows over; None: not
        known (carried-over rows, or a writer that keeps no counts).

        A file-scoped delete file (Spark's merge-on-read writes) carries its data file's
        earlier positions over from the delete file it replaces, which the same commit
        removes: the summary counts those positions as added and as removed, and only the
        difference is new. A 10M-row master after seven rounds of 10,000 changes: 52,500
        positions added, 50,000 of them carried over."""
        if self.carries_over:
            return None
        total = 0
        keys = ("added-records", "added-position-deletes", "removed-position-deletes")
        for _, info in self.commits:
            added, positions, carried = (info.summary.get(k, "0") for k in keys)
            if "total-records" not in info.summary or not all(
                c.isdigit() for c in (added, positions, carried)
            ):
                return None
            total += int(added) + max(0, int(positions) - int(carried))
        return total


class Tables(Protocol):
    """Metadata reads and commits of Iceberg tables (see the module docstring)."""

    kind: str  # "sql" or "java": which path, for messages and tests

    def load(self, name: TableName, *, fresh: bool = False) -> TableMeta | None:
        """The table (None if it does not exist). ``fresh``: see other writers' commits."""
        ...

    def load_state(self, name: TableName, *, fresh: bool = False) -> TableMeta | None:
        """``load`` where only the properties and current snapshot are needed: the
        columns may be left empty (reading a protocol state)."""
        ...

    def columns(self, name: TableName, *, own_write: bool = False) -> tuple[mt.Column, ...] | None:
        """The table's columns alone (None if it does not exist), for a reader that has
        its state from ``load_state``. ``own_write``: this process has just created or
        replaced the table, so its session's catalog holds that commit and no other
        writer's is looked for (the table is its own, under its lease)."""
        ...

    def history(self, name: TableName) -> History: ...

    def reading(
        self, keep: Callable[[Mapping[str, str]], bool] | None = None
    ) -> contextlib.AbstractContextManager[None]:
        """A block that only reads, in which a table's first load may answer the next;
        ``keep``: only of the tables whose properties it accepts, in a block that writes
        others (``SqlTables.reading``)."""
        ...

    def set_properties(
        self, name: TableName, values: Mapping[str, str], *, remove: Sequence[str] = ()
    ) -> None:
        """One metadata-only commit setting ``values`` and removing ``remove``."""
        ...

    def summary(self, values: Mapping[str, str]) -> contextlib.AbstractContextManager[bool]:
        """Attach ``values`` to the snapshot summary of the commits this thread makes inside
        the block; yields whether it can (False: the caller records them otherwise)."""
        ...

    def view_property(self, name: TableName, key: str) -> str | None:
        """A property of the Spark view ``name`` (None: no such view, or no such property)."""
        ...

    def view_entry(self, name: TableName, key: str) -> tuple[bool, str | None]:
        """``view_property``, and whether anything (a view, a table) has the name, in
        the same read: a name found free takes a plain ``CREATE VIEW``."""
        ...

    def view_entries(self, name: TableName, keys: Sequence[str]) -> tuple[bool, dict[str, str]]:
        """``view_entry`` of several properties in the one read: those the view has."""
        ...

    def iceberg_table(self, name: TableName) -> TableMeta | None:
        """``name`` read fresh (as ``load(name, fresh=True)``) when this path can tell at
        little cost that it is an Iceberg table, which no view of that name can then be;
        None: it is something else, it is missing, or this path cannot tell cheaply
        (the caller asks ``view_property``)."""
        ...

    def snapshot_schema(
        self, name: TableName, snapshot: int, current: Sequence[mt.Column]
    ) -> mt.AtSnapshot | None:
        """How a read of ``name`` at ``snapshot`` yields its ``current`` columns (Iceberg's
        time travel reads a snapshot with the schema it was committed under); None: as
        they are."""
        ...

    def capture_reads(
        self,
        master: TableName,
        columns: Sequence[mt.Column],
        key_columns: Sequence[str],
        snapshots: Sequence[SnapshotInfo],
        *,
        absent: Mapping[int, mt.AtSnapshot] | None = None,
        history: History | None = None,
    ) -> contextlib.AbstractContextManager[CaptureReads]:
        """How to read what each commit touched (valid inside the block). ``absent``: how
        a snapshot committed under an older schema reads the columns
        (``LogConfig.absent_at``). ``history``: the master's, as the capture walked it
        (the SQL path chooses its metadata reads by its length)."""
        ...

    def delete_through(
        self, name: TableName, column: str, value: int, summary: Mapping[str, str]
    ) -> bool:
        """Delete every row with ``column <= value`` by dropping whole data files, in one
        metadata-only commit carrying ``summary``; False when some file holds rows on both
        sides (nothing was changed: the caller deletes by rows)."""
        ...


# -- the SQL path --------------------------------------------------------------------------


def require_iceberg(meta: TableMeta | None, name: TableName, role: str = "master") -> TableMeta:
    """``meta``, or a clear error when the table is missing or not an Iceberg table."""
    if meta is None:
        raise FastRefreshError(
            f"The {role} table {name} does not exist. Fix: create it (as an Iceberg table) "
            "or correct the name."
        )
    if meta.provider == "view":
        raise FastRefreshError(
            f"{name} is a view, not a table: a {role} table's changes come from its Iceberg "
            "snapshots, which a view has none of. Fix: use the Iceberg tables the view reads "
            "(create their logs and name them as masters), or make it a fast_refresh model "
            "(its log is then on the model's storage table)."
        )
    if not meta.iceberg:
        raise FastRefreshError(
            f"The {role} table {name} is a '{meta.provider or 'non-Iceberg'}' table; "
            "dbt-fastrefresh reads changes from Iceberg snapshots. Fix: convert it to Iceberg "
            f"(e.g. CREATE TABLE ... USING iceberg AS SELECT * FROM {name}) and use that as "
            "the master."
        )
    return meta
