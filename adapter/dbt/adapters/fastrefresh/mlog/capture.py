"""Capture: the stand-in for Oracle's log trigger. Master commits become log rows.

Every master snapshot after the log's ``captured_through`` (oldest first) is read for what
it touched and turned into log rows by one INSERT (``mlog.capture_sql``), appended with
``sequence__`` numbers after the log's ``last_sequence``. Compaction (``replace``) commits
change no data and are skipped.

Idempotence and crash safety: the log's new state (``captured_through``, the sequence)
goes with the append itself, in its snapshot summary (Java path), so a capture that dies
leaves both or neither. On the SQL path the state follows as a table property; a capture
that died between the two left rows past the recorded ``last_sequence``, which the next
capture deletes before capturing the same commits again. Either way no change is ever
duplicated or lost.

If the history is gone (snapshots expired, table dropped and recreated, rolled back), the
log starts a new epoch: views that reflected an earlier one need a complete refresh
(Oracle's ORA-12034) — never a silent gap.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Sequence
from dataclasses import dataclass

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.fastrefresh.iceberg import columns as mt
from dbt.adapters.fastrefresh.iceberg.tables import (
    History,
    SnapshotInfo,
    TableMeta,
    chain_after,
    require_iceberg,
)
from dbt.adapters.fastrefresh.mlog.capture_sql import capture_statement, one_partition
from dbt.adapters.fastrefresh.mlog.ddl import (
    LoadedLog,
    load_log_for_write,
    log_lock,
    master_columns,
    record_state,
    reread_after_write,
)
from dbt.adapters.fastrefresh.protocol.env import Env
from dbt.adapters.fastrefresh.protocol.keys import duplicate_key_failure
from dbt.adapters.fastrefresh.protocol.state import LOG_STATE, LogState
from dbt.adapters.fastrefresh.runtime import faults
from dbt.adapters.fastrefresh.runtime.process import CaptureRecord
from dbt.adapters.fastrefresh.sqltext import TableName, log_table_for

logger = AdapterLogger("fastrefresh")

# Commits one append captures at most (a long run goes in several).
COMMITS_PER_APPEND = 20

# A capture warns (``rewrite_note``) when its commits removed whole data files holding at
# least REWRITE_WARN_ROWS rows, and at least REWRITE_WARN_RATIO times the rows it logged:
# a copy-on-write master whose updates rewrite large files. Capture reads every row of
# such a file before and after the commit to find the few that changed, so it costs
# about what the rewrite did (the benchmark's 10M-row master loaded by INSERTs: 9.6 s of
# capture for 10,000 changes, where the dbt `table` model rebuilt the view in 2.9 s;
# docs/logs-and-capture.md). A TRUNCATE or a whole-partition DELETE removes whole files
# too, but logs every row it removed: it stays below the ratio.
REWRITE_WARN_ROWS = 1_000_000
REWRITE_WARN_RATIO = 200


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
    note: str | None = None  # what made it costly, and the fix (``rewrite_note``)

    def message(self) -> str:
        if self.gap:
            return (
                f"capture {self.master}: history lost ({self.gap}); the log is now younger "
                "than the views registered on it, which need a complete refresh"
            )
        if not self.snapshots:
            return f"capture {self.master}: no new commits"
        done = (
            f"capture {self.master}: {self.snapshots} commit(s) up to snapshot "
            f"{self.to_snapshot} -> {self.log_rows} log row(s) in {self.log_table} "
            f"({self.seconds:.2f}s)"
        )
        return f"{done}. {self.note[0].upper()}{self.note[1:]}" if self.note else done


def rewrite_note(master: TableName, snapshots: Sequence[SnapshotInfo], log_rows: int) -> str | None:
    """Why a capture that logged ``log_rows`` rows of ``snapshots`` read far more, and the
    fix; None when it did not (``REWRITE_WARN_ROWS``, ``REWRITE_WARN_RATIO``; pure).

    >>> s = SnapshotInfo(2, 1, "overwrite", None, {"deleted-data-files": "2",
    ...                  "deleted-records": "3000000"})
    >>> print(rewrite_note(TableName("db", "m"), [s], 20_000))
    None
    >>> rewrite_note(TableName("db", "m"), [s], 2_000)[:77]
    'its commits rewrote 2 whole data file(s) holding 3,000,000 rows (about 1,500,'
    """
    rewriting = [s for s in snapshots if s.operation != "replace" and s.rewritten[0]]
    counts = [s.rewritten for s in rewriting]
    files, rows = sum(f for f, _ in counts), sum(r for _, r in counts)
    if not files or rows < REWRITE_WARN_ROWS or rows < REWRITE_WARN_RATIO * max(log_rows, 1):
        return None
    return (
        f"its commits rewrote {files:,} whole data file(s) holding {rows:,} rows (about "
        f"{rows // files:,} a file) for {log_rows:,} log row(s): capture reads every row of "
        "a rewritten file, as it was and as it is, to find the few that changed, so it "
        f"costs about what the rewrite did. {master} rewrites whole files on each update, "
        "delete or merge (copy-on-write), or a job overwrites it. Fix: ALTER TABLE "
        f"{master} SET TBLPROPERTIES ('write.update.mode'='merge-on-read', "
        "'write.delete.mode'='merge-on-read', 'write.merge.mode'='merge-on-read') "
        "(capture then reads only the rows the deletes name), or write it in smaller files "
        "('write.target-file-size-bytes'); a job that overwrites it: make it update the "
        "rows in place (MERGE)."
        + (_WHOLE if all(_replaced_every_row(s) for s in rewriting) else "")
    )


# Said too when every rewriting commit left only the rows it added: a copy-on-write
# update of a table's only file reads so, and so does a table whose rows were replaced
# whole, where merge-on-read does not help.
_WHOLE = (
    " These commits left only the rows they added: where they replace its rows whole (a dbt "
    "`table` model configured fast_refresh_keep_table, a job that rewrites the table), let "
    "the table be replaced where the models over it rebuild for less than two reads of it "
    "(drop fast_refresh_keep_table), else change only the rows that change (an incremental "
    "model, a MERGE)."
)


def _replaced_every_row(snapshot: SnapshotInfo) -> bool:
    """Whether ``snapshot``'s commit removed rows and left only the rows it added (an
    ``INSERT ... REPLACE WHERE TRUE``, an ``INSERT OVERWRITE`` of the whole table)."""
    added, total = snapshot.count("added-records"), snapshot.count("total-records")
    return added is not None and added == total and bool(snapshot.count("deleted-records"))


def capture(env: Env, master: TableName) -> CaptureResult:
    """Capture every new commit of ``master`` into its log, unmarked (``4000-01-01``).
    The master is read under the log's lock: read before it, a capture that another
    thread or process made meanwhile would leave the log ahead of the master as read, and
    the walk from it back to the log's position would take that for lost history."""
    with env.holding([log_lock(log_table_for(master))], purpose="capture"):
        meta = require_iceberg(env.tables.load(master, fresh=True), master)
        return capture_locked(env, load_log_for_write(env, master), meta)[0]


def capture_locked(
    env: Env,
    log: LoadedLog,
    master: TableMeta,
    *,
    stamp: dt.datetime | None = None,
    read_before: bool = False,
) -> tuple[CaptureResult, LoadedLog]:
    """Capture with the log's lock held, its state just read and its leftovers removed.

    ``stamp`` (timestamp flavour, inside a refresh's setup, every earlier row marked):
    append the rows stamped with that refresh time instead of unmarked, which saves the
    marking UPDATE. ``read_before``: ``master`` was read before the lock was taken, so
    another thread's capture may have taken the log past it meanwhile; where the log's
    position is not on its history, the master is read again before that counts as
    history lost (one table load, only then). Returns the result and the log as this
    capture left it.
    """
    started = time.monotonic()
    state = log.state
    current = master.current_snapshot
    name = log.master
    if current == state.captured_through:
        return CaptureResult(name, log.log_table, current, current, 0, 0, 0.0), log
    now = env.clock()
    chain = chain_after(history := env.tables.history(name), current, state.captured_through)
    if chain.gap and read_before:
        fresh = require_iceberg(env.tables.load(name, fresh=True), name)
        return capture_locked(env, log, fresh, stamp=stamp)
    if chain.gap:
        return _history_lost(env, log, current, chain.gap, now=now, started=started, at=stamp)
    columns = master_columns(log, master)
    relevant = [s for s in chain.snapshots if s.operation != "replace"]
    if log.config.commit_scn or state.marked_sequence < state.last_sequence:
        stamp = None
    first_sequence = state.last_sequence
    # Long runs of commits go in batches, each its own append with its own state: a crash
    # between two leaves the first recorded, and no statement grows without bound.
    batches = [
        relevant[i : i + COMMITS_PER_APPEND] for i in range(0, len(relevant), COMMITS_PER_APPEND)
    ]
    for number, batch in enumerate(batches or [[]], start=1):
        through = current if number == len(batches) or not batches else batch[-1].snapshot_id
        log = _append(
            env, log, master, columns,
            batch=batch, through=through, now=now, stamp=stamp, history=history,
        )  # fmt: skip
    rows = log.state.last_sequence - first_sequence
    seconds = time.monotonic() - started
    if rows:
        _journal(env, log, chain.snapshots, before=state, now=now, seconds=seconds)
    note = rewrite_note(name, chain.snapshots, rows)
    if note:
        logger.warning(f"dbt-fastrefresh: capture of {name} took {seconds:.1f}s: {note}")
    result = CaptureResult(
        name, log.log_table, state.captured_through, current, len(chain.snapshots), rows,
        seconds, note=note,
    )  # fmt: skip
    return result, log


def _history_lost(
    env: Env,
    log: LoadedLog,
    current: int | None,
    gap: str,
    *,
    now: dt.datetime,
    started: float,
    at: dt.datetime | None = None,
) -> tuple[CaptureResult, LoadedLog]:
    """The commits since the last capture are gone (``gap`` says how): the log starts a
    new epoch at ``current``, younger than every view on it (they refresh completely
    once). ``at``: the time of the refresh whose setup found it (chosen before this
    capture, after every refresh of the old epoch), which the new epoch starts at: the
    registry's models find a view older than its log by time, and the refresh that
    rebuilds the view here is not (``now``, read later, was a few milliseconds after it,
    and the view showed UNUSABLE until its next refresh that wrote its place)."""
    state = log.state
    gone = state.younger(
        at or now, f"history lost: {gap}", captured_through=current, captured_at=now
    )
    log = record_state(env, log, gone)
    result = CaptureResult(
        log.master, log.log_table, state.captured_through, current, 0, 0,
        time.monotonic() - started, gap,
    )  # fmt: skip
    return result, log


def _journal(
    env: Env,
    log: LoadedLog,
    snapshots: Sequence[SnapshotInfo],
    *,
    before: LogState,
    now: dt.datetime,
    seconds: float,
) -> None:
    """Note the capture for the registry's ``capture_runs`` (published at the end)."""
    rows = log.state.last_sequence - before.last_sequence
    env.runtime.journal(env.registry).captures.append(
        CaptureRecord(
            log_table=str(log.log_table),
            master=str(log.master),
            captured_at=now,
            from_snapshot=before.captured_through,
            to_snapshot=log.state.captured_through,
            snapshots=len(snapshots),
            first_sequence=before.last_sequence + 1,
            last_sequence=before.last_sequence + rows,
            log_rows=rows,
            oldest_commit=_naive(snapshots[0].committed_at),
            newest_commit=_naive(snapshots[-1].committed_at),
            seconds=seconds,
        )
    )


def _append(
    env: Env,
    log: LoadedLog,
    master: TableMeta,
    columns: list[mt.Column],
    *,
    batch: list[SnapshotInfo],
    through: int | None,
    now: dt.datetime,
    stamp: dt.datetime | None,
    history: History,
) -> LoadedLog:
    """Append the log rows of ``batch`` with the state that says the master is captured
    ``through`` that snapshot (``history``: the master's, as walked); returns the log as
    the append left it."""
    state = log.state
    moved = state.replace(captured_through=through, captured_at=now)
    with env.tables.capture_reads(
        master.name, columns, log.config.key_columns, batch,
        absent=log.config.absent_at(), history=history,
    ) as reads:  # fmt: skip
        if not reads.commits:
            # Only compactions or DML that matched nothing: no row to log, but the
            # position moves (the snapshots passed may be expired later).
            return record_state(env, log, moved)
        statement = capture_statement(
            log.config,
            columns,
            reads,
            state.last_sequence,
            stamp,
            session_partitions=env.sql.shuffle_partitions() if reads.rows is not None else None,
        )
        pending = moved.replace(
            sequence_base=state.last_sequence,
            marked_sequence=-1 if stamp is not None else state.marked_sequence,
            youngest=max(state.youngest, stamp) if stamp is not None else state.youngest,
        )
        before = log.meta.current_snapshot
        env.check_leases([log_lock(log.log_table)])
        # Small (the files read, on the Java path): without generated code.
        summary = env.tables.summary({LOG_STATE: pending.to_json()})
        small = env.sql.small(reads.rows, one_partition=one_partition(log.config, reads))
        with summary as attached, small:
            _execute(env, statement, log.master)
    env.upkeep_commit(log.log_table)
    faults.point("capture.after_log_append")
    after = reread_after_write(env, log)
    own = _own_append(env, log, after.current_snapshot, before)
    rows = (own.count("added-records") or 0) if own is not None else 0
    final = pending.replace(
        sequence_base=None,
        last_sequence=state.last_sequence + rows,
        marked_sequence=state.last_sequence + rows if stamp is not None else state.marked_sequence,
    )
    if attached and own is not None:
        env.runtime.journal(env.registry).logs.add(str(log.master))
        return dataclasses.replace(log, state=final, meta=after)
    # The SQL path, or an append that committed nothing.
    return record_state(env, dataclasses.replace(log, meta=after), final, current=True)


def _execute(env: Env, statement: str, master: TableName) -> None:
    """Run the capture's append of ``master``'s commits. One that stops at a key two of
    its rows share (``raise_error`` in the statement) appends nothing, and fails with the
    capture's message alone (the cause and the fix), not inside Spark's stack trace."""
    try:
        env.sql.execute(statement)
    except Exception as exc:
        failure = duplicate_key_failure(exc, master)
        if failure is None:
            raise
        raise failure from exc


def _own_append(
    env: Env, log: LoadedLog, after: int | None, before: int | None
) -> SnapshotInfo | None:
    """The capture's own commit to the log (None: its append committed nothing): the
    newest append on the log's history after ``before`` up to ``after``.

    Other commits may sit on either side of it. Before it, the writes this capture's
    caller made under the same lock since it read ``before``: a refresh's setup marks
    the rows captured outside a refresh (an UPDATE, an ``overwrite``) and then captures,
    on the log as read before the mark. After it, a user's ``rewrite_data_files`` on the
    log (a ``replace``), which the lock does not hold off. Each one's summary counts the
    rows it rewrote, not the rows appended: taken for the append's, the log's position
    would run ahead of its rows or behind them. No other capture appends to the log
    while its lock is held."""
    chain = chain_after(env.tables.history(log.log_table), after, before)
    return next((s for s in reversed(chain.snapshots) if s.operation == "append"), None)


def _naive(value: dt.datetime | None) -> dt.datetime | None:
    if value is None or value.tzinfo is None:
        return value
    return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
