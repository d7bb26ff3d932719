"""The files each master commit touched, and the SQL path's reads of their rows.

- Java path (``iceberg/jvm.py``): the exact data files, staged as Spark scans (Iceberg's scan
  task sets, as its own rewrite procedures use): files the commit removed, read at its
  parent; files its delete files point into, rows live at the parent but not at the
  commit (merge-on-read, position deletes or deletion vectors alike); files it added.
- SQL path (``sql_commit_reads`` here): the metadata tables name the files (``entries``
  at each commit's snapshot, or ``all_entries``: ``entries_at_commits``); Iceberg does
  not prune files on ``_file``, so each read carries a predicate built from the touched
  files' column bounds, kept cheap (``prune_predicate``); the cost then follows the
  table's layout.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.iceberg import columns as mt
from dbt.adapters.fastrefresh.iceberg.tables import CaptureReads, RowSource, SnapshotInfo
from dbt.adapters.fastrefresh.runtime.executor import Executor
from dbt.adapters.fastrefresh.sqltext import TableName, ident, literal, string

# Spark evaluates the pruning predicate again on every row it reads (Iceberg prunes files
# with it, but reports it as not fully applied). Per-file ranges prune best but cost a
# disjunct per file: at 40 files of a 10M-row master they made the read 25-43 s instead
# of about 1 s. Above MAX_PRUNE_FILES files, one envelope per column; when the files are
# half the table or more, no ranges at all (pruning could spare at most half the scan).
MAX_PRUNE_FILES = 8
MAX_PRUNE_COLUMNS = 6


@dataclass(frozen=True)
class Bounds:
    """A data file's bounds on one column, as strings cast back to the column type."""

    column: str
    type: str
    lower: str | None
    upper: str | None
    has_nulls: bool
    all_null: bool


@dataclass(frozen=True)
class DataFile:
    path: str
    bounds: tuple[Bounds, ...] = ()


@dataclass
class SnapshotChanges:
    """The files one master commit touched."""

    snapshot: SnapshotInfo
    ordinal: int
    added: list[DataFile] = field(default_factory=list)
    removed: list[DataFile] = field(default_factory=list)
    deleted_from: list[DataFile] = field(default_factory=list)  # merge-on-read deletes
    delete_files: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.delete_files)


def _column_term(b: Bounds) -> str | None:
    column = ident(b.column)
    if b.all_null:
        return f"{column} IS NULL"
    if b.lower is None or b.upper is None:
        return None  # no usable bounds: this column cannot narrow the read
    if b.type == "timestamp":  # bounds read as microseconds since the epoch
        lower, upper = f"timestamp_micros({int(b.lower)})", f"timestamp_micros({int(b.upper)})"
    else:
        lower = f"CAST({string(b.lower)} AS {b.type})"
        upper = f"CAST({string(b.upper)} AS {b.type})"
    term = f"{column} BETWEEN {lower} AND {upper}"
    return f"({column} IS NULL OR {term})" if b.has_nulls else term


def prune_predicate(
    files: Sequence[DataFile], table_files: int | None = None, at: mt.AtSnapshot | None = None
) -> str:
    """A predicate Iceberg can prune files with, true for every row of ``files``.

    Per file, the AND of its column ranges; across files, the OR. Many files collapse to
    one envelope per column; ``files`` that are half the table's ``table_files`` or more
    get none (``TRUE``): see ``MAX_PRUNE_FILES``. ``at``: the read is of a snapshot with
    an older schema, where the columns it ``differs`` in are not what they are now (not
    named so, or of another type): they get no range.
    """
    if not files:
        return "FALSE"
    if table_files is not None and 2 * len(files) >= table_files:
        return "TRUE"
    if len(files) > MAX_PRUNE_FILES:
        files = [_envelope(files)]
    disjuncts: list[str] = []
    skip = at.differs if at else frozenset()
    for f in files:
        terms = [t for t in (_column_term(b) for b in f.bounds if b.column not in skip) if t]
        if not terms:
            return "TRUE"
        conj = " AND ".join(terms)
        if conj not in disjuncts:
            disjuncts.append(conj)
    return "(" + " OR ".join(f"({d})" for d in disjuncts) + ")"


def _envelope(files: Sequence[DataFile]) -> DataFile:
    """One pseudo-file whose ranges cover every file (for string/number/date types)."""
    merged: dict[str, Bounds] = {}
    for f in files:
        for b in f.bounds:
            m = merged.get(b.column)
            if m is None:
                merged[b.column] = b
                continue
            if m.lower is None or b.lower is None or m.upper is None or b.upper is None:
                lower = upper = None
            else:
                lower = min(m.lower, b.lower, key=lambda v: _sort_key(v, b.type))
                upper = max(m.upper, b.upper, key=lambda v: _sort_key(v, b.type))
            merged[b.column] = Bounds(
                b.column, b.type, lower, upper, m.has_nulls or b.has_nulls,
                m.all_null and b.all_null,
            )  # fmt: skip
    # A column missing from any file's bounds cannot be used.
    common = [
        b
        for name, b in merged.items()
        if all(any(x.column == name for x in f.bounds) for f in files)
    ]
    return DataFile("<envelope>", tuple(common))


def _sort_key(value: str, sql_type: str) -> Any:
    numeric = ("tinyint", "smallint", "int", "bigint", "timestamp")  # timestamp: microseconds
    if sql_type in numeric or sql_type.startswith("decimal"):
        from decimal import Decimal

        return Decimal(value)
    return value  # ISO dates/timestamps and strings order as text


def _prune_columns(key_columns: Sequence[str], columns: Sequence[mt.Column]) -> list[mt.Column]:
    by_name = {c.name: c for c in columns}
    ordered = [by_name[k] for k in key_columns if k in by_name]
    ordered += [c for c in columns if c.name not in key_columns]
    return [c for c in ordered if c.prunable][:MAX_PRUNE_COLUMNS]


def _bounds_select(prune: Sequence[mt.Column], prefix: str) -> str:
    parts = []
    for c in prune:
        metric = f"{prefix}readable_metrics.{ident(c.name)}"
        # A timestamp's text is local to the session's time zone, and in the hour a
        # daylight-saving change repeats it reads back as the earlier instant (an upper
        # bound an hour short): its bounds are read as microseconds instead.
        bound = "CAST(unix_micros({}) AS STRING)" if c.type == "timestamp" else "CAST({} AS STRING)"
        parts += [
            bound.format(f"{metric}.lower_bound"),
            bound.format(f"{metric}.upper_bound"),
            f"{metric}.null_value_count",
            f"{metric}.value_count",
        ]
    return ", ".join(parts) if parts else "NULL"


def _parse_bounds(prune: Sequence[mt.Column], values: Sequence[object]) -> tuple[Bounds, ...]:
    out = []
    for i, c in enumerate(prune):
        lower, upper, nulls, count = values[4 * i : 4 * i + 4]
        if nulls is None and lower is None:
            continue  # no metrics for this column
        n_nulls, n_values = int(nulls or 0), int(count or 0)  # type: ignore[call-overload]
        out.append(
            Bounds(
                c.name,
                c.type,
                None if lower is None else str(lower),
                None if upper is None else str(upper),
                has_nulls=n_nulls > 0,
                all_null=n_values > 0 and n_nulls == n_values,
            )
        )
    return tuple(out)


def equality_delete_error(master: TableName, snapshot_id: int) -> FastRefreshError:
    return FastRefreshError(
        f"Snapshot {snapshot_id} of {master} wrote equality delete files (as Flink and some "
        "streaming writers do); capture reads position deletes only. Fix: compact the master "
        f"(CALL system.rewrite_data_files('{master}')) before it gets equality deletes, or "
        "write it with Spark."
    )


def entries_at_commits(chain: Sequence[SnapshotInfo], history_size: int | None) -> bool:
    """Whether the commits' manifest entries are read at each commit's own snapshot
    (``entries VERSION AS OF``), not from ``all_entries`` (pure; both give the same rows).

    Iceberg prunes neither metadata table by snapshot id. ``all_entries`` reads every
    snapshot's manifest list and every manifest any of them names, so it grows with the
    table's history, however few the commits: 0.16-0.24 s for 4 snapshots, 0.7-0.87 s for
    101 (a table of two manifests). ``entries`` at a snapshot reads that snapshot's list
    and its live manifests: 70-80 ms at any history, but a chain of 20 commits on a table
    of 62 manifests read 1,260 of them (1.63 s against 0.31 s). So:

    - one commit: at its snapshot. Its list and manifests are among those ``all_entries``
      reads, so that read is never the larger;
    - more: at each snapshot when a bound of what that reads is at most the history's
      length, which ``all_entries`` reads at least. A snapshot's live manifests are not
      in its summary; each holds a file live there, or one the commit removed, so
      ``1 + total-data-files + total-delete-files + deleted-data-files`` bounds a read at
      it (a table of few files with a long history: copy-on-write updates, compacted);
    - ``all_entries`` when a summary lacks a count (another writer) or the history's
      length is not known."""
    if history_size is None:
        return False
    if len(chain) == 1:
        return True
    bound = 0
    for s in chain:
        counts = [s.count(k) for k in ("total-data-files", "total-delete-files")]
        if None in counts:
            return False
        bound += 1 + sum(c or 0 for c in counts) + (s.count("deleted-data-files") or 0)
    return bound <= history_size


def read_changes(
    x: Executor,
    master: TableName,
    columns: Sequence[mt.Column],
    key_columns: Sequence[str],
    chain: Sequence[SnapshotInfo],
    *,
    history_size: int | None = None,
    at_commits: bool | None = None,
) -> list[SnapshotChanges]:
    """The files each snapshot of ``chain`` added, removed or deleted rows from.
    ``history_size``: the snapshots in the master's metadata (``entries_at_commits``);
    ``at_commits``: that choice made by the caller (tests)."""
    prune = _prune_columns(key_columns, columns)
    relevant = [s for s in chain if s.operation != "replace"]
    if not relevant:
        return []
    if at_commits is None:
        at_commits = entries_at_commits(relevant, history_size)
    bounds = _bounds_select(prune, "")
    picks = f"snapshot_id, status, data_file.content, data_file.file_path, {bounds}"
    if at_commits:
        reads = " UNION ALL ".join(
            f"SELECT {picks} FROM {master.metadata('entries')} VERSION AS OF {s.snapshot_id} "
            f"WHERE snapshot_id = {s.snapshot_id} AND status IN (1, 2)"
            for s in relevant
        )
        rows = x.query(f"SELECT DISTINCT * FROM ({reads})")
    else:
        ids = ", ".join(str(s.snapshot_id) for s in relevant)
        rows = x.query(
            f"SELECT DISTINCT {picks} FROM {master.metadata('all_entries')} "
            f"WHERE snapshot_id IN ({ids}) AND status IN (1, 2)"
        )
    changes = {s.snapshot_id: SnapshotChanges(s, i) for i, s in enumerate(relevant)}
    for row in rows:
        snapshot_id, status, content, path = int(row[0]), int(row[1]), int(row[2]), str(row[3])
        change = changes[snapshot_id]
        if content == 2:
            raise equality_delete_error(master, snapshot_id)
        if content == 1:
            if status == 1:
                change.delete_files.append(path)
            continue  # a delete file dropped by a commit deletes nothing new
        data_file = DataFile(path, _parse_bounds(prune, row[4:]))
        (change.added if status == 1 else change.removed).append(data_file)
    with_deletes = [c for c in changes.values() if c.delete_files]
    if with_deletes:
        _resolve_deleted_from(x, master, prune, with_deletes, at_parents=at_commits)
    return [c for c in changes.values() if not c.empty]


def _resolve_deleted_from(
    x: Executor,
    master: TableName,
    prune: Sequence[mt.Column],
    changes: list[SnapshotChanges],
    *,
    at_parents: bool,
) -> None:
    """For merge-on-read commits: which data files their delete files point into, and
    their bounds: from ``all_data_files``, or (``at_parents``, ``entries_at_commits``)
    from ``data_files`` at each commit's parent, where those files are live."""
    parts = [
        f"SELECT {c.snapshot.snapshot_id} AS sid, file_path FROM "
        f"{master.metadata('position_deletes')} VERSION AS OF {c.snapshot.snapshot_id} "
        f"WHERE delete_file_path IN ({', '.join(literal(p) for p in c.delete_files)})"
        for c in changes
    ]
    pairs = x.query("SELECT DISTINCT sid, file_path FROM (" + " UNION ALL ".join(parts) + ")")
    by_snapshot: dict[int, set[str]] = {}
    for sid, path in pairs:
        by_snapshot.setdefault(int(sid), set()).add(str(path))
    bounds: dict[str, tuple[Bounds, ...]] = {}
    for query in _bounds_queries(master, prune, changes, by_snapshot, at_parents=at_parents):
        bounds.update({str(r[0]): _parse_bounds(prune, r[1:]) for r in x.query(query)})
    for change in changes:
        for path in sorted(by_snapshot.get(change.snapshot.snapshot_id, ())):
            change.deleted_from.append(DataFile(path, bounds.get(path, ())))


def _bounds_queries(
    master: TableName,
    prune: Sequence[mt.Column],
    changes: list[SnapshotChanges],
    by_snapshot: Mapping[int, set[str]],
    *,
    at_parents: bool,
) -> list[str]:
    """The queries of the bounds of the data files ``by_snapshot`` names, 500 paths a
    query: from ``all_data_files``, or (``at_parents``) from ``data_files`` at the parent
    of the commit whose deletes point into them, where they are live."""
    picks = f"file_path, {_bounds_select(prune, '')}"
    wanted = sorted(
        {
            (c.snapshot.parent_id if at_parents else None, path)
            for c in changes
            for path in by_snapshot.get(c.snapshot.snapshot_id, ())
        },
        key=lambda pair: (pair[0] is None, pair[0] or 0, pair[1]),
    )
    queries = []
    for start in range(0, len(wanted), 500):
        by_parent: dict[int | None, list[str]] = {}
        for parent, path in wanted[start : start + 500]:
            by_parent.setdefault(parent, []).append(path)
        reads = [
            f"SELECT {picks} FROM "
            + (
                f"{master.metadata('data_files')} VERSION AS OF {parent}"
                if parent is not None
                else master.metadata("all_data_files")
            )
            + f" WHERE file_path IN ({', '.join(literal(p) for p in paths)})"
            for parent, paths in by_parent.items()
        ]
        queries.append(f"SELECT DISTINCT * FROM ({' UNION ALL '.join(reads)})")
    return queries


def _in_files(files: Sequence[DataFile]) -> str:
    return ", ".join(literal(f.path) for f in files)


def reads_of(
    master: TableName,
    columns: Sequence[mt.Column],
    changes: Sequence[SnapshotChanges],
    *,
    absent: Mapping[int, mt.AtSnapshot] | None = None,
) -> CaptureReads:
    """The SQL path's row sources of each commit's removed and added rows (pure). A file one
    commit added and the next removed is read once, at the snapshot between them.
    ``absent``: how a snapshot committed under an older schema reads the columns
    (``LogConfig.absent_at``)."""
    m, absent = master.sql, absent or {}
    by_read: dict[int, dict[str, tuple[DataFile, dict[int, int]]]] = {}
    sources: list[RowSource] = []
    for ch in changes:
        sid, parent = ch.snapshot.snapshot_id, ch.snapshot.parent_id
        for f in ch.removed:
            assert parent is not None
            by_read.setdefault(parent, {}).setdefault(f.path, (f, {}))[1][ch.ordinal] = -1
        for f in ch.added:
            by_read.setdefault(sid, {}).setdefault(f.path, (f, {}))[1][ch.ordinal] = 1
        if ch.deleted_from:
            gone = absent.get(parent) if parent is not None else None
            sources.append(_deleted_rows(master, columns, ch, gone))
    totals = {ch.snapshot.snapshot_id: ch.snapshot.data_files for ch in changes}
    for snapshot, files in sorted(by_read.items()):
        groups: dict[tuple[tuple[int, int], ...], list[DataFile]] = {}
        for f, signs in files.values():
            groups.setdefault(tuple(sorted(signs.items())), []).append(f)
        for signs_key, group in sorted(groups.items()):
            at = absent.get(snapshot)
            where = f"_file IN ({_in_files(group)}) AND " + prune_predicate(
                group, totals.get(snapshot), at
            )
            sources.append(
                RowSource(
                    f"SELECT {select_list(columns, at)} FROM {m} "
                    f"VERSION AS OF {snapshot} WHERE {where}",
                    dict(signs_key),
                    whole_files=True,
                )
            )
    return CaptureReads(tuple((ch.ordinal, ch.snapshot) for ch in changes), tuple(sources))


def _deleted_rows(
    master: TableName,
    columns: Sequence[mt.Column],
    ch: SnapshotChanges,
    absent: mt.AtSnapshot | None,
) -> RowSource:
    """The rows a commit's delete files delete: live at the parent at the positions they
    name (a deletion vector also repeats earlier deletes: those rows were not live)."""
    sid, parent = ch.snapshot.snapshot_id, ch.snapshot.parent_id
    where = (
        f"_file IN ({_in_files(ch.deleted_from)}) AND "
        f"{prune_predicate(ch.deleted_from, ch.snapshot.data_files, absent)}"
    )
    before = (
        f"SELECT {select_list(columns, absent)}, _file AS f__, _pos AS p__ FROM {master.sql} "
        f"VERSION AS OF {parent} WHERE {where}"
    )
    deletes = (
        f"SELECT file_path AS f__, pos AS p__ FROM {master.metadata('position_deletes')} "
        f"VERSION AS OF {sid} WHERE delete_file_path IN "
        f"({', '.join(literal(p) for p in ch.delete_files)})"
    )
    return RowSource(
        f"SELECT {', '.join('b.' + ident(c.name) for c in columns)} FROM ({before}) b "
        f"LEFT SEMI JOIN ({deletes}) d ON b.f__ = d.f__ AND b.p__ = d.p__",
        {ch.ordinal: -1},
    )


def sql_commit_reads(
    x: Executor,
    master: TableName,
    columns: Sequence[mt.Column],
    key_columns: Sequence[str],
    snapshots: Sequence[SnapshotInfo],
    *,
    absent: Mapping[int, mt.AtSnapshot] | None = None,
    history_size: int | None = None,
) -> CaptureReads:
    """``Tables.capture_reads`` of the SQL path: metadata tables, then ``reads_of``.
    ``history_size``: the snapshots in the master's metadata (``entries_at_commits``)."""
    changes = read_changes(x, master, columns, key_columns, snapshots, history_size=history_size)
    return reads_of(master, columns, changes, absent=absent)


def select_list(columns: Sequence[mt.Column], at: mt.AtSnapshot | None = None) -> str:
    """``columns`` as a read of a snapshot committed under an older schema selects them
    (``at``: how that schema differs; see ``AtSnapshot``)."""
    return ", ".join(at.read(c) if at else ident(c.name) for c in columns)
