"""Capture: the stand-in for Oracle's log trigger. Master commits become log rows.

For every master snapshot after the log's ``captured_through`` (oldest first), capture
reads what the commit touched, from Iceberg's metadata:

- rows of data files the commit removed (copy-on-write rewrites, whole-file deletes,
  truncates, overwrites), read at the parent snapshot;
- rows the commit's delete files deleted (merge-on-read: position deletes or deletion
  vectors): rows of the referenced data files live at the parent, at the positions the
  delete files name;
- rows of the data files the commit added, read at the commit.

Rows both removed and added by one commit are copy-on-write carry-overs and cancel
(multiset difference). On a keyed log, the rest pair up by key into updates (old and new
image, ``change_vector__`` of the changed columns); unpaired rows are deletes and inserts,
so a key update is a delete plus an insert. A key-less log logs every change as a delete
of the old row image and an insert of the new one. Compaction (``replace``) commits
change no data and are skipped.

Reads are pinned by ``VERSION AS OF`` and narrowed to the touched files by a predicate on
the files' column bounds (Iceberg does not prune on ``_file``), so the cost follows the
size of the commits, not of the master, wherever the table's layout allows.

Idempotence: rows are appended with ``sequence__`` numbers above the registry's
``last_sequence``; the registry advances only after the append. A capture that died in
between left rows above ``last_sequence``: the next capture deletes them first and
captures the same snapshots again, so no change is ever duplicated or lost.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.fastrefresh import changevector as cv
from dbt.adapters.fastrefresh import locks, upkeep
from dbt.adapters.fastrefresh import master as mt
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.executor import Executor
from dbt.adapters.fastrefresh.registry import LogInfo, Registry
from dbt.adapters.fastrefresh.sqltext import (
    TableName,
    ident,
    literal,
    log_table_for,
    string,
    timestamp,
)

UNMARKED = dt.datetime(4000, 1, 1)
UNMARKED_SQL = "TIMESTAMP_NTZ'4000-01-01 00:00:00'"
SNAPSHOTS_PER_STATEMENT = 20
# Spark evaluates the pruning predicate again on every row it reads (Iceberg prunes files
# with it, but reports it as not fully applied). Per-file ranges prune best but cost a
# disjunct per file: at 40 files of a 10M-row master they made the read 25-43 s instead
# of about 1 s. Above MAX_PRUNE_FILES files, one envelope per column; when the files are
# half the table or more, no ranges at all (pruning could spare at most half the scan).
MAX_PRUNE_FILES = 8
MAX_PRUNE_COLUMNS = 6
LOG_META_COLUMNS = (
    "snaptime__",
    "dmltype__",
    "old_new__",
    "change_vector__",
    "sequence__",
    "xid__",
)


def log_lock(log_table: TableName) -> str:
    return f"log:{log_table}"


def fault_point(name: str) -> None:
    """Die here when ``DBT_FASTREFRESH_FAULT`` names this point (crash-safety tests)."""
    if os.environ.get("DBT_FASTREFRESH_FAULT") == name:
        os._exit(99)


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

    snapshot: mt.Snapshot
    ordinal: int
    added: list[DataFile] = field(default_factory=list)
    removed: list[DataFile] = field(default_factory=list)
    deleted_from: list[DataFile] = field(default_factory=list)  # merge-on-read deletes
    delete_files: list[str] = field(default_factory=list)

    @property
    def parent(self) -> int | None:
        return self.snapshot.parent_id

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.delete_files)


@dataclass(frozen=True)
class CaptureResult:
    master: TableName
    log_table: TableName
    from_snapshot: int | None
    to_snapshot: int | None
    snapshots: int
    log_rows: int
    seconds: float
    gap: str | None = None

    def message(self) -> str:
        if self.gap:
            return (
                f"capture {self.master}: history lost ({self.gap}); the log is now younger "
                "than the views registered on it, which need a complete refresh"
            )
        if not self.snapshots:
            return f"capture {self.master}: no new commits"
        return (
            f"capture {self.master}: {self.snapshots} commit(s) up to snapshot "
            f"{self.to_snapshot} -> {self.log_rows} log row(s) in {self.log_table} "
            f"({self.seconds:.2f}s)"
        )


# -- pruning --------------------------------------------------------------------------


def _column_term(b: Bounds) -> str | None:
    column = ident(b.column)
    if b.all_null:
        return f"{column} IS NULL"
    if b.lower is None or b.upper is None:
        return None  # no usable bounds: this column cannot narrow the read
    lower = f"CAST({string(b.lower)} AS {b.type})"
    upper = f"CAST({string(b.upper)} AS {b.type})"
    term = f"{column} BETWEEN {lower} AND {upper}"
    return f"({column} IS NULL OR {term})" if b.has_nulls else term


def prune_predicate(files: Sequence[DataFile], table_files: int | None = None) -> str:
    """A predicate Iceberg can prune files with, true for every row of ``files``.

    Per file, the AND of its column ranges; across files, the OR. Many files collapse to
    one envelope per column; ``files`` that are half the table's ``table_files`` or more
    get none (``TRUE``): see ``MAX_PRUNE_FILES``.
    """
    if not files:
        return "FALSE"
    if table_files is not None and 2 * len(files) >= table_files:
        return "TRUE"
    if len(files) > MAX_PRUNE_FILES:
        files = [_envelope(files)]
    disjuncts: list[str] = []
    for f in files:
        terms = [t for t in (_column_term(b) for b in f.bounds) if t]
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
    if sql_type in ("tinyint", "smallint", "int", "bigint") or sql_type.startswith("decimal"):
        from decimal import Decimal

        return Decimal(value)
    return value  # ISO dates/timestamps and strings order as text


# -- reading what the commits touched ---------------------------------------------------


def _prune_columns(log: LogInfo, columns: Sequence[mt.Column]) -> list[mt.Column]:
    by_name = {c.name: c for c in columns}
    ordered = [by_name[k] for k in log.key_columns if k in by_name]
    ordered += [c for c in columns if c.name not in log.key_columns]
    return [c for c in ordered if c.prunable][:MAX_PRUNE_COLUMNS]


def _bounds_select(prune: Sequence[mt.Column], prefix: str) -> str:
    parts = []
    for c in prune:
        metric = f"{prefix}readable_metrics.{ident(c.name)}"
        parts += [
            f"CAST({metric}.lower_bound AS STRING)",
            f"CAST({metric}.upper_bound AS STRING)",
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


def read_changes(
    x: Executor, log: LogInfo, columns: Sequence[mt.Column], chain: Sequence[mt.Snapshot]
) -> list[SnapshotChanges]:
    """The files each snapshot of ``chain`` added, removed or deleted rows from."""
    master = log.master
    prune = _prune_columns(log, columns)
    relevant = [s for s in chain if s.operation != "replace"]
    if not relevant:
        return []
    ids = ", ".join(str(s.snapshot_id) for s in relevant)
    rows = x.query(
        "SELECT DISTINCT snapshot_id, status, data_file.content, data_file.file_path, "
        f"{_bounds_select(prune, '')} FROM {master.metadata('all_entries')} "
        f"WHERE snapshot_id IN ({ids}) AND status IN (1, 2)"
    )
    changes = {s.snapshot_id: SnapshotChanges(s, i) for i, s in enumerate(relevant)}
    for row in rows:
        snapshot_id, status, content, path = int(row[0]), int(row[1]), int(row[2]), str(row[3])
        change = changes[snapshot_id]
        if content == 2:
            raise FastRefreshError(
                f"Snapshot {snapshot_id} of {master} wrote equality delete files (as Flink "
                "and some streaming writers do); capture reads position deletes only. Fix: "
                f"compact the master (CALL system.rewrite_data_files('{master}')) before it "
                "gets equality deletes, or write it with Spark."
            )
        if content == 1:
            if status == 1:
                change.delete_files.append(path)
            continue  # a delete file dropped by a commit deletes nothing new
        data_file = DataFile(path, _parse_bounds(prune, row[4:]))
        (change.added if status == 1 else change.removed).append(data_file)
    with_deletes = [c for c in changes.values() if c.delete_files]
    if with_deletes:
        _resolve_deleted_from(x, master, prune, with_deletes)
    return [c for c in changes.values() if not c.empty]


def _resolve_deleted_from(
    x: Executor, master: TableName, prune: Sequence[mt.Column], changes: list[SnapshotChanges]
) -> None:
    """For merge-on-read commits: which data files their delete files point into."""
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
    paths = sorted({p for ps in by_snapshot.values() for p in ps})
    bounds: dict[str, tuple[Bounds, ...]] = {}
    for start in range(0, len(paths), 500):
        chunk = paths[start : start + 500]
        rows = x.query(
            f"SELECT DISTINCT file_path, {_bounds_select(prune, '')} FROM "
            f"{master.metadata('all_data_files')} "
            f"WHERE file_path IN ({', '.join(literal(p) for p in chunk)})"
        )
        bounds.update({str(r[0]): _parse_bounds(prune, r[1:]) for r in rows})
    for change in changes:
        for path in sorted(by_snapshot.get(change.snapshot.snapshot_id, ())):
            change.deleted_from.append(DataFile(path, bounds.get(path, ())))


# -- the capture statement ----------------------------------------------------------------


def _in_files(files: Sequence[DataFile]) -> str:
    return ", ".join(literal(f.path) for f in files)


def capture_sql(
    log: LogInfo,
    columns: Sequence[mt.Column],
    batch: Sequence[SnapshotChanges],
    start_sequence: int,
    stamp: dt.datetime | None = None,
) -> str:
    """One INSERT that appends the log rows of ``batch`` (pure).

    ``stamp``: the refresh time to stamp the rows with, when capture runs inside a
    refresh's setup (the first refresher would stamp them at once); otherwise rows are
    appended unmarked (``4000-01-01``).
    """
    m = log.master.sql
    names = [c.name for c in columns]
    sel = ", ".join(ident(n) for n in names)
    removed_parts: list[str] = []
    added_parts: list[str] = []
    for ch in batch:
        sid, parent, ordinal = ch.snapshot.snapshot_id, ch.parent, ch.ordinal
        head = f"SELECT {sid}L AS xid__, {ordinal} AS ord__"
        total = ch.snapshot.data_files  # at the parent too, give or take this commit's files
        if ch.removed:
            removed_parts.append(
                f"{head}, {sel} FROM {m} VERSION AS OF {parent} "
                f"WHERE _file IN ({_in_files(ch.removed)}) AND {prune_predicate(ch.removed, total)}"
            )
        if ch.deleted_from:
            # The rows live at the parent at the positions the commit's delete files name
            # (a deletion vector also repeats earlier deletes: those rows were not live).
            where = f"_file IN ({_in_files(ch.deleted_from)}) AND {prune_predicate(ch.deleted_from, total)}"
            before = f"SELECT {sel}, _file AS f__, _pos AS p__ FROM {m} VERSION AS OF {parent} WHERE {where}"
            deletes = (
                f"SELECT file_path AS f__, pos AS p__ FROM {log.master.metadata('position_deletes')} "
                f"VERSION AS OF {sid} WHERE delete_file_path IN ({', '.join(literal(p) for p in ch.delete_files)})"
            )
            removed_parts.append(
                f"{head}, {', '.join('b.' + ident(n) for n in names)} FROM ({before}) b "
                f"LEFT SEMI JOIN ({deletes}) d ON b.f__ = d.f__ AND b.p__ = d.p__"
            )
        if ch.added:
            added_parts.append(
                f"{head}, {sel} FROM {m} VERSION AS OF {sid} "
                f"WHERE _file IN ({_in_files(ch.added)}) AND {prune_predicate(ch.added, total)}"
            )
    empty = f"SELECT 0L AS xid__, 0 AS ord__, {sel} FROM {m} WHERE FALSE"
    ctes = [
        "removed AS (" + ("\n  UNION ALL ".join(removed_parts) or empty) + ")",
        "added AS (" + ("\n  UNION ALL ".join(added_parts) or empty) + ")",
    ]
    ncols = len(names)
    log_cols = list(log.columns)
    keyed = not log.keyless
    key_only = keyed and not [c for c in log.logged_columns if c not in log.key_columns]
    delete_vector = cv.sql_bytes(cv.delete_vector(ncols))
    insert_vector = cv.sql_bytes(cv.insert_vector(ncols))
    if removed_parts and added_parts:
        # One pass: rows removed and added by the same commit (copy-on-write carry-overs)
        # cancel in a signed count per distinct row; what is left was really deleted
        # (n__ < 0) or inserted (n__ > 0), |n__| times.
        ctes += [
            f"u AS (SELECT xid__, ord__, {sel}, -1 AS s__ FROM removed "
            f"UNION ALL SELECT xid__, ord__, {sel}, 1 AS s__ FROM added)",
            f"net AS (SELECT xid__, ord__, {sel}, sum(s__) AS n__ FROM u "
            f"GROUP BY xid__, ord__, {sel} HAVING sum(s__) <> 0)",
        ]
    else:
        side, sign = ("removed", -1) if removed_parts else ("added", 1)
        ctes.append(f"net AS (SELECT xid__, ord__, {sel}, {sign} AS n__ FROM {side})")

    if keyed and removed_parts and added_parts:
        # Pair what is left by key: an old and a new image of one key is an update.
        keys = [ident(k) for k in log.key_columns]
        row = ", ".join(f"{string(n)}, {ident(n)}" for n in names)
        key_text = " || ', ' || ".join(f"cast({k} AS STRING)" for k in keys)
        old = [f"o__.{ident(n)}" for n in names]
        new = [f"w__.{ident(n)}" for n in names]
        ctes += [
            "k AS (SELECT xid__, ord__, "
            "sum(IF(n__ < 0, -n__, 0)) AS nold__, sum(IF(n__ > 0, n__, 0)) AS nnew__, "
            f"first(IF(n__ < 0, named_struct({row}), NULL), TRUE) AS o__, "
            f"first(IF(n__ > 0, named_struct({row}), NULL), TRUE) AS w__, "
            f"{', '.join(keys)} FROM net GROUP BY xid__, ord__, {', '.join(keys)})",
            "j AS (SELECT xid__, ord__, nold__ > 0 AS has_old__, nnew__ > 0 AS has_new__, o__, "
            f"w__, {', '.join(keys)} FROM k WHERE IF(greatest(nold__, nnew__) > 1, CAST(raise_error("
            f"concat({string(f'dbt-fastrefresh: master {log.master} has more than one row with key (')}, "
            f"{key_text}, {string(') in snapshot ')}, cast(xid__ AS STRING), "
            f"{string('; a keyed log needs a unique key. Fix: make the key unique, or drop the log and create it with another key, or key-less (key=[]).')})) "
            "AS BOOLEAN), TRUE))",
        ]
        vector = cv.sql_update_vector(old, new)
        old_cols = ", ".join(f"{string(c)}, o__.{ident(c)}" for c in log_cols)
        new_cols = ", ".join(f"{string(c)}, w__.{ident(c)}" for c in log_cols)
        old_filter = "has_old__ AND NOT has_new__" if key_only else "has_old__"
        new_old_new = "IF(has_old__, 'U', 'N')" if key_only else "'N'"
        halves = (
            f"IF({old_filter}, named_struct('half__', 0, {old_cols}, "
            "'dmltype__', IF(has_new__, 'U', 'D'), 'old_new__', 'O', 'change_vector__', "
            f"IF(has_new__, {vector}, {delete_vector})), NULL), "
            f"IF(has_new__, named_struct('half__', 1, {new_cols}, "
            f"'dmltype__', IF(has_old__, 'U', 'I'), 'old_new__', {new_old_new}, "
            f"'change_vector__', IF(has_old__, {vector}, {insert_vector})), NULL)"
        )
        ctes.append(
            "o AS (SELECT xid__, ord__, h__.* FROM j LATERAL VIEW "
            f"inline(filter(array({halves}), e__ -> e__ IS NOT NULL)) h__)"
        )
    else:
        sel_log = ", ".join(ident(c) for c in log_cols)
        ctes.append(
            "o AS (\n  "
            f"SELECT xid__, ord__, IF(n__ < 0, 0, 1) AS half__, {sel_log}, "
            "IF(n__ < 0, 'D', 'I') AS dmltype__, IF(n__ < 0, 'O', 'N') AS old_new__, "
            f"IF(n__ < 0, {delete_vector}, {insert_vector}) AS change_vector__ FROM net "
            "LATERAL VIEW explode(sequence(1, abs(n__))) r__ AS rep__)"
        )
    order_cols = (
        list(log.key_columns)
        if keyed
        else [c.name for c in columns if c.comparable and c.name in log_cols]
    )
    order = ", ".join(["ord__", *(ident(c) for c in order_cols), "half__"])
    if log.commit_scn:
        snaptime = ""
    else:
        snaptime = f"{UNMARKED_SQL if stamp is None else timestamp(stamp)} AS snaptime__, "
    select = (
        f"SELECT {', '.join(ident(c) for c in log_cols)}, {snaptime}dmltype__, old_new__, "
        f"change_vector__, {start_sequence}L + row_number() OVER (ORDER BY {order}) AS sequence__, "
        "xid__ FROM o"
    )
    return "WITH " + ",\n".join(ctes) + f"\nINSERT INTO {log.log_table.sql}\n{select}"


# -- orchestration ------------------------------------------------------------------------


def master_columns(
    x: Executor, log: LogInfo, described: Sequence[mt.Column] | None = None
) -> list[mt.Column]:
    """The master columns recorded at log creation, checked against the master today
    (``described``: its columns as the caller just read them)."""
    current = {c.name: c for c in (described or mt.require_iceberg(x, log.master))}
    missing = [c for c in log.master_columns if c not in current]
    if missing:
        raise FastRefreshError(
            f"Column(s) {', '.join(missing)} of {log.master} were dropped or renamed since "
            f"its log {log.log_table} was created; the log cannot record changes without them. "
            f"Fix: run drop_mview_log('{log.master}') and create_mview_log('{log.master}') "
            "again (views on it then refresh completely once)."
        )
    return [current[c] for c in log.master_columns]


@contextmanager
def holding_log(registry: Registry, master: TableName) -> Iterator[LogInfo]:
    """Hold the lock of ``master``'s log and yield its registry row, read under the lock
    (the lock's name follows from the master, so the row is read once)."""
    with locks.holding([log_lock(log_table_for(master))]):
        log = registry.log_for_master(master)
        if log is None:
            raise no_log_error(master)
        yield log


def capture(
    x: Executor, registry: Registry, master: TableName, now: Callable[[], dt.datetime]
) -> CaptureResult:
    """Capture every new commit of ``master`` into its log (under the log's lock)."""
    with holding_log(registry, master) as log:
        return capture_locked(x, registry, log, now)[0]


def capture_locked(
    x: Executor,
    registry: Registry,
    log: LogInfo,
    now: Callable[[], dt.datetime],
    stamp: dt.datetime | None = None,
    columns: Sequence[mt.Column] | None = None,
    defer: bool = False,
) -> tuple[CaptureResult, LogInfo]:
    """Capture with the log's lock held and its registry row just read.

    ``stamp`` (timestamp flavour, inside a refresh's setup, every earlier row already
    marked): append the rows stamped with the refresh time instead of unmarked, which
    saves the marking UPDATE. ``columns``: the master's columns as just described.
    ``defer`` (a refresh's setup): leave the registry write to the wrap-up's
    (``Registry.defer_log``). Returns the result and the log's registry row as this
    capture left it (without reading it back).
    """
    started = time.monotonic()
    master = log.master
    current = mt.current_snapshot(x, master)
    if current == log.captured_through:
        return CaptureResult(master, log.log_table, current, current, 0, 0, 0.0), log
    chain = mt.chain_after(mt.snapshots(x, master), current, log.captured_through)
    if chain.gap:
        stamp = now()
        values: dict[str, Any] = {
            "captured_through": current,
            "captured_at": stamp,
            "younger_than": stamp,
            "younger_reason": f"history lost: {chain.gap}",
        }
        registry.update_log(log, **values)
        result = CaptureResult(
            master, log.log_table, log.captured_through, current, 0, 0,
            time.monotonic() - started, chain.gap,
        )  # fmt: skip
        return result, dataclasses.replace(log, **values)
    columns = master_columns(x, log, columns)
    _remove_leftovers(x, log)
    changes = read_changes(x, log, columns, chain.snapshots)
    if log.commit_scn or log.marked_sequence < log.last_sequence:
        stamp = None
    sequence = log.last_sequence
    for start in range(0, len(changes), SNAPSHOTS_PER_STATEMENT):
        batch = changes[start : start + SNAPSHOTS_PER_STATEMENT]
        x.execute(capture_sql(log, columns, batch, sequence, stamp))
        upkeep.committed(x, log.log_table)
        sequence = _max_sequence(x, log.log_table, sequence)
    fault_point("capture.after_log_append")
    captured_at = now()
    values = {"captured_through": current, "captured_at": captured_at, "last_sequence": sequence}
    if stamp is not None:
        values["marked_sequence"] = sequence
    if defer:
        registry.defer_log(log, **values)
    else:
        registry.update_log(log, **values)
    seconds = time.monotonic() - started
    rows = sequence - log.last_sequence
    if rows:
        registry.insert(
            "capture_runs",
            [
                {
                    "log_table": str(log.log_table),
                    "master": str(master),
                    "captured_at": captured_at,
                    "from_snapshot": log.captured_through,
                    "to_snapshot": current,
                    "snapshots": len(chain.snapshots),
                    "first_sequence": log.last_sequence + 1,
                    "last_sequence": sequence,
                    "log_rows": rows,
                    "oldest_commit": _naive(chain.snapshots[0].committed_at),
                    "newest_commit": _naive(chain.snapshots[-1].committed_at),
                    "seconds": seconds,
                }
            ],
        )
    result = CaptureResult(
        master, log.log_table, log.captured_through, current, len(chain.snapshots), rows,
        seconds,
    )  # fmt: skip
    return result, dataclasses.replace(log, **values)


def _naive(value: dt.datetime | None) -> dt.datetime | None:
    if value is None or value.tzinfo is None:
        return value
    return value.astimezone(dt.timezone.utc).replace(tzinfo=None)


def _max_sequence(x: Executor, log_table: TableName, above: int) -> int:
    rows = x.query(f"SELECT max(sequence__) FROM {log_table.sql} WHERE sequence__ > {above}")
    value = rows[0][0] if rows else None
    return int(value) if value is not None else above


def _remove_leftovers(x: Executor, log: LogInfo) -> None:
    """Delete rows a capture appended but never recorded (it died before the registry)."""
    if _max_sequence(x, log.log_table, log.last_sequence) > log.last_sequence:
        x.execute(f"DELETE FROM {log.log_table.sql} WHERE sequence__ > {log.last_sequence}")
        upkeep.committed(x, log.log_table)


def no_log_error(master: TableName) -> FastRefreshError:
    return FastRefreshError(
        f"The master table {master} has no materialized view log (Oracle: ORA-23413). Fix: "
        f"dbt run-operation fast_refresh.create_mview_log --args \"{{master: '{master}'}}\""
    )
