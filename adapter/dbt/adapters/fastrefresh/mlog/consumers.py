"""The master side of a refresh: setup (capture, choose the time, mark) and purge.

Oracle's DBMS_SNAPSHOT.SET_UP / VERIFY_LOG and the purge of WRAP_UP, per log. A refresh
calls ``setup`` for each master's log, reads its range, applies it, and records where it
got to in the view's own state (``protocol/state.py``); then ``purge`` deletes the log rows every
registered view has consumed.

- **Setup**, under the log's lock: choose the refresh time ``now``, strictly after the
  log's youngest time and every time this process chose for it; **mark** rows still at
  ``4000-01-01`` (captured outside a refresh) with ``now`` (only the first refresher
  stamps a row); **capture** the master's new commits, appending them already stamped
  with ``now``, since this refresh is their first refresher. Each of these writes records
  the log's state with it (its new ``youngest``, ``marked_sequence``, sequence).
- **Range**: the view's changes are the rows ``position < sequence__ <= through``, where
  ``position`` is where the view's last refresh got to on this log and ``through`` the
  log's last sequence after setup. Stamps grow with sequences, so this is exactly
  Oracle's ``last_refresh < snaptime__ <= now``. Every place a view reaches ends a
  capture, so the range is whole captures, read by ``capture__`` (the log's partition).
- **Purge**: rows up to the least position of the views registered on the log go: whole
  partitions, so a purge is a metadata-only commit.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dbt.adapters.fastrefresh.iceberg.tables import TableMeta, latest_state, require_iceberg
from dbt.adapters.fastrefresh.mlog.capture import CaptureResult, capture_locked
from dbt.adapters.fastrefresh.mlog.capture_sql import UNMARKED_SQL
from dbt.adapters.fastrefresh.mlog.ddl import (
    LoadedLog,
    commit_with_state,
    load_log,
    load_log_for_write,
    load_log_locked,
    log_lock,
    record_state,
)
from dbt.adapters.fastrefresh.protocol.decisions import Reason, ReasonCode
from dbt.adapters.fastrefresh.protocol.env import Env
from dbt.adapters.fastrefresh.protocol.state import (
    LOG_STATE,
    VIEW_CONFIG,
    VIEW_STATE,
    Claim,
    LogState,
    Position,
    PurgeMode,
    ViewState,
)
from dbt.adapters.fastrefresh.runtime import faults
from dbt.adapters.fastrefresh.runtime.process import PurgeHint
from dbt.adapters.fastrefresh.sqltext import TableName, log_table_for, storage_of, timestamp


@dataclass(frozen=True)
class Setup:
    """What one view's refresh may read from one log: the rows
    ``after_sequence < sequence__ <= through_sequence``."""

    log: LoadedLog
    mview: TableName
    now: dt.datetime
    master_snapshot: int | None
    position: Position | None
    capture: CaptureResult
    problem: Reason | None  # why this log cannot serve a fast refresh of the view

    @property
    def state(self) -> LogState:
        return self.log.state

    @property
    def after_sequence(self) -> int:
        return self.position.last_sequence if self.position else 0

    @property
    def through_sequence(self) -> int:
        return self.log.state.last_sequence

    @property
    def pending(self) -> bool:
        return self.through_sequence > self.after_sequence

    @property
    def epoch(self) -> str:
        return self.log.state.epoch_id(self.log.config)

    @property
    def log_snapshot(self) -> int | None:
        """The log's snapshot the view reads its range at: the log as the setup read it,
        or as its capture's last append left it (a mark changes only stamps, which the
        range's read does not use). Every row of the range is in it, and a purge after
        the setup (``purge_log`` may doom a view meanwhile) changes nothing in it."""
        return self.log.meta.current_snapshot

    def range_predicate(self) -> str:
        """The SQL predicate of the view's rows in this log: whole captures (partitions),
        since every place a view reaches ends a capture."""
        return f"capture__ > {self.after_sequence} AND capture__ <= {self.through_sequence}"

    def new_position(self) -> Position:
        return Position(self.epoch, self.through_sequence, self.now)


def usability_problem(
    log: LoadedLog,
    mview: TableName,
    position: Position | None,
    last_refresh: dt.datetime | None = None,
    read_through: int | None = None,
) -> Reason | None:
    """Why ``log`` cannot give the view all changes since its last refresh (pure).
    ``last_refresh``: the view's last refresh, when it has one (a log created after it,
    the view never on it, is younger than the view: Oracle's ORA-12034 too).
    ``read_through``: the log's last sequence as read before this setup captured (default:
    as ``log`` says). A view past it consumed rows the log no longer records: its state
    went back (the log table rolled back or restored), and the same sequences now hold
    other changes."""
    state = log.state
    if position is None and last_refresh is not None and last_refresh < state.younger_than:
        return Reason(
            ReasonCode.LOG_YOUNGER,
            f"the materialized view log {log.log_table} is younger than the view's last "
            f"refresh (created after it; Oracle: ORA-12034)",
        )
    if position is not None and position.epoch != state.epoch_id(log.config):
        why = state.younger_reason or "log recreated"
        return Reason(
            ReasonCode.LOG_YOUNGER,
            f"the materialized view log {log.log_table} is younger than the view's last "
            f"refresh ({why}; Oracle: ORA-12034)",
        )
    through = state.last_sequence if read_through is None else read_through
    if position is not None and position.last_sequence > through:
        return Reason(
            ReasonCode.LOG_YOUNGER,
            f"the materialized view log {log.log_table} is younger than the view's last "
            f"refresh (the view consumed its rows up to sequence {position.last_sequence}, "
            f"and the log records {through}: the log was rolled back or restored; Oracle: "
            "ORA-12034)",
        )
    if str(mview) not in state.users or position is None:
        return Reason(
            ReasonCode.NOT_REGISTERED_ON_LOG,
            f"the view is not registered on the materialized view log {log.log_table}",
        )
    if position.last_sequence < state.purged_sequence:
        return Reason(
            ReasonCode.PURGED,
            f"rows the view still needed were purged from {log.log_table} (purge_log)",
        )
    return None


def setup(
    env: Env,
    master: TableMeta,
    mview: TableName,
    position: Position | None,
    last_refresh: dt.datetime | None = None,
    *,
    log: LoadedLog | None = None,
    leased: bool = False,
) -> Setup:
    """Choose the refresh time, mark and capture, under the log's lock (on a shared
    catalog, its lease), taken only when there is something to write.

    ``log``: the log as the caller read it after ``master``, before the view's state
    (``position``). On a shared catalog, where it does not serve that state
    (``_serves``), it is read again here. A log with nothing to write for ``master`` is
    taken as read: the
    view reads its rows up to the last sequence as read, which later writes leave as
    they are: appends go after them, a stamp goes on unmarked rows only (it has none),
    and the wrap-up's purge takes only rows every view on the log has consumed.
    ``purge_log`` may take more, with or without this lock held here: the view reads the
    log at ``Setup.log_snapshot``, which still holds those rows.

    ``leased``: the caller holds the log's lease already (on a shared catalog; taken
    with its view's, since its first read found writes to do). The log is then read once,
    under the lock, and that read decides, where a read to decide whether to take the
    lease came first; and the master is not read again first: no other process writes
    the log meanwhile, and where another captured commits newer than the master as read
    before the lease, capture finds the log's position off the master's history as read
    and reads the master again then (``capture_locked``'s ``read_before``), as on the
    embedded default, where other threads may have. Five statements fewer on the SQL
    path for a capturing refresh, none more for one with nothing to write."""
    name = master.name
    leased = leased and env.shared_catalog
    read = log
    if env.shared_catalog and not leased and not _serves(log, mview, position):
        read = load_log(env, name, log, read=master)
    if read is not None and not leased and _taken_as_read(read, master, position):
        return _setup_of(env, read, master, mview, position=position, last_refresh=last_refresh)
    with env.holding([log_lock(log_table_for(name))], purpose=f"setup of {mview}"):
        if env.shared_catalog and not leased:
            # Another process may have captured commits newer than the master as read
            # before the lease: read it again, so the log is never ahead of it.
            master = require_iceberg(env.tables.load(name, fresh=True), name)
        log = load_log_for_write(env, name, read)
        if _rolled_back(log, position):
            log = _new_epoch(env, log, mview, position)
        if leased and not setup_writes(log, master):
            return _setup_of(env, log, master, mview, position=position, last_refresh=last_refresh)
        before = log.state.last_sequence
        # (Where the master was read before the lock, another thread's or process's
        # capture may have taken the log past it since: capture reads it again then.)
        now, captured, log = _mark_and_capture(
            env, log, master, read_before=leased or not env.shared_catalog
        )
    problem = usability_problem(log, mview, position, last_refresh, before)
    return Setup(log, mview, now, log.state.captured_through, position, captured, problem)


def _taken_as_read(log: LoadedLog, master: TableMeta, position: Position | None) -> bool:
    """Whether a setup takes ``log`` as read, without its lock: nothing to write."""
    return not setup_writes(log, master) and not _rolled_back(log, position)


def _rolled_back(log: LoadedLog | None, position: Position | None) -> bool:
    """Whether the view at ``position`` consumed rows ``log`` no longer records, in its
    epoch: the log table was rolled back or restored (its state with it), so the next
    capture writes those sequences again, with other changes."""
    if log is None or position is None:
        return False
    state = log.state
    return position.epoch == state.epoch_id(log.config) and (
        position.last_sequence > state.last_sequence
    )


def _new_epoch(env: Env, log: LoadedLog, mview: TableName, position: Position | None) -> LoadedLog:
    """``log`` in a new epoch, recorded before any capture (caller holds its lock): once
    it was rolled back, a view past what it records would never read the changes the
    next capture writes at its sequences, and a view behind that point cannot be told
    from one past it that has not refreshed since (its place is in its own state). Every
    view on the log refreshes completely once, as after a log changed by hand."""
    assert position is not None
    why = (
        f"the log was rolled back or restored: {mview} had consumed its rows up to "
        f"sequence {position.last_sequence}, and it records {log.state.last_sequence}"
    )
    record_state(env, log, log.state.younger(env.clock(), why))
    faults.point("setup.after_new_epoch")
    reloaded = load_log(env, log.master, log)
    assert reloaded is not None
    return reloaded


def _mark_and_capture(
    env: Env, log: LoadedLog, master: TableMeta, *, read_before: bool
) -> tuple[dt.datetime, CaptureResult, LoadedLog]:
    """A setup's writes, under the log's lock: the refresh time chosen, the rows captured
    outside a refresh stamped with it, the master's new commits captured. Returns the
    time, the capture and the log as they left it."""
    state = log.state
    now = env.runtime.choose_time(str(log.log_table), env.clock(), state.youngest)
    if not log.config.commit_scn and state.last_sequence > state.marked_sequence:
        # Rows captured outside a refresh: only the first refresher stamps them, and
        # rows already stamped keep their time.
        marked = state.replace(
            marked_sequence=state.last_sequence, youngest=max(state.youngest, now)
        )
        commit_with_state(
            env, log,
            f"UPDATE {log.log_table.sql} SET snaptime__ = {timestamp(now)} "
            f"WHERE capture__ > {state.marked_sequence} AND capture__ <= "
            f"{state.last_sequence} AND snaptime__ = {UNMARKED_SQL}",
            marked, fault="setup.after_mark",
        )  # fmt: skip
        log = dataclasses.replace(log, state=marked)
    captured, log = capture_locked(env, log, master, stamp=now, read_before=read_before)
    return now, captured, log


def _serves(log: LoadedLog | None, mview: TableName, position: Position | None) -> bool:
    """Whether ``log``, as read before the view's state, serves that state (a shared
    catalog, the log's lease not held): the view is registered on it, in its epoch, and
    not past its last sequence. Another process may have captured and refreshed the
    view between the two reads (a refresh reads the view after its log): a log read
    before would then be taken for rolled back, and the view rebuilt. So it is read
    again, after the view, only then: two statements on the SQL path that a refresh
    with nothing to capture paid every time. A log that does serve the view is a
    consistent read of it, with all the view needs: the view reads its rows up to the
    last sequence as read, at the snapshot read (``Setup.log_snapshot``), which later
    writes and purges leave as they are."""
    if log is None or position is None or str(mview) not in log.state.users:
        return False
    state = log.state
    return position.epoch == state.epoch_id(log.config) and (
        position.last_sequence <= state.last_sequence
    )


def setup_writes(log: LoadedLog, master: TableMeta) -> bool:
    """Whether a setup on ``log`` would write (capture, mark, or clear leftovers)."""
    state = log.state
    unmarked = not log.config.commit_scn and state.last_sequence > state.marked_sequence
    return log.leftovers or unmarked or master.current_snapshot != state.captured_through


def _setup_of(
    env: Env,
    log: LoadedLog,
    master: TableMeta,
    mview: TableName,
    *,
    position: Position | None,
    last_refresh: dt.datetime | None,
) -> Setup:
    """The setup of a log with nothing to write: its range is what it holds now."""
    now = env.runtime.choose_time(str(log.log_table), env.clock(), log.state.youngest)
    current = master.current_snapshot
    unchanged = CaptureResult(log.master, log.log_table, current, current, 0, 0, 0.0)
    problem = usability_problem(log, mview, position, last_refresh)
    return Setup(log, mview, now, log.state.captured_through, position, unchanged, problem)


def register(env: Env, setups: Sequence[Setup]) -> None:
    """Register the view on each log it is not registered on yet (a complete refresh just
    built it at ``through``). One property commit per such log; none for the others. The
    logs' locks (on a shared catalog, their leases) are taken together: one swap."""
    todo = [done for done in setups if str(done.mview) not in done.state.users]
    if not todo:
        return
    locks = [log_lock(done.log.log_table) for done in todo]
    with env.holding(locks, purpose=f"registration of {todo[0].mview}"):
        for done in todo:
            log = load_log_locked(env, done.log.master, columns=False)
            if log is None or str(done.mview) in log.state.users:
                continue
            claim = Claim(done.now, done.through_sequence, done.now)
            users = {**log.state.users, str(done.mview): claim}
            record_state(env, log, log.state.replace(users=users), current=True)


# -- purge -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PurgePlan:
    """One log's purge: the rows up to ``through`` go; ``state`` is the log's state after."""

    through: int
    rows: int
    state: LogState
    doomed: tuple[str, ...]


def view_positions(env: Env, log: LoadedLog) -> dict[str, Position | None]:
    """Where each registered view is on ``log``, read from the view's own state (None: the
    view cannot be read: it was dropped or unregistered)."""
    return {
        view: read_position(env, TableName.parse(view), log.log_table) for view in log.state.users
    }


def read_view_state(env: Env, view: TableName, meta: TableMeta | None = None) -> ViewState | None:
    """The view's newest state, from its storage table (None: no fast_refresh view);
    ``meta``: the storage table as the caller has just read it (not read again)."""
    storage = storage_of(view)
    if meta is None:
        meta = env.tables.load_state(storage, fresh=env.shared_catalog)
    if meta is None or VIEW_CONFIG not in meta.properties:
        return None
    found = latest_state(meta, VIEW_STATE, env.tables.history(storage))
    return ViewState.from_json(found.text) if found.text else None


def read_position(env: Env, view: TableName, log_table: TableName) -> Position | None:
    state = read_view_state(env, view)
    return state.positions.get(str(log_table)) if state else None


def place_on(log: LoadedLog, view: str, position: Position | None) -> Position | None:
    """Where registered ``view`` holds ``log`` back from a purge (pure): its own
    ``position``, or its claim's when the view cannot be read (an orphan holds the log where
    it registered, as in Oracle); None when it holds nothing back: it needs a complete
    refresh anyway (another epoch, or rows it needed already purged)."""
    state = log.state
    epoch = state.epoch_id(log.config)
    if position is None:
        claim = state.users[view]
        position = Position(epoch, claim.position, claim.since)
    if position.epoch == epoch and position.last_sequence >= state.purged_sequence:
        return position
    return None


def holds_everything(log: LoadedLog, view: str, position: Position | None) -> bool:
    """Whether ``view`` at ``position`` has consumed nothing since the log's last purge, so
    that no row of the log can go (pure)."""
    place = place_on(log, view, position)
    return place is not None and place.last_sequence <= log.state.purged_sequence


def purge_positions(env: Env, log: LoadedLog) -> dict[str, Position | None] | None:
    """The positions a purge of everything consumed needs (``view_positions``), read one
    view at a time; None as soon as one view has consumed nothing since the last purge: no
    row can go, and the other views need not be read.

    On a log many views share, most purges after a refresh stop at the first view read
    instead of reading every view's state (on the SQL path one to three statements per
    view). The order (``purge_order``) puts first the view likeliest to hold the log back.
    """
    hint = _purge_hint(env, log)
    positions: dict[str, Position | None] = {}
    for view in purge_order(log, hint):
        position = read_position(env, TableName.parse(view), log.log_table)
        if holds_everything(log, view, position):
            hint.blocker = view
            return None
        hint.moved.add(view)
        positions[view] = position
    return positions


def purge_order(log: LoadedLog, hint: PurgeHint) -> list[str]:
    """The registered views of ``log`` in the order a purge reads them (pure): the view that
    held the log back last time, then the others from the latest registered (the views of
    a dbt run refresh in the order of its DAG, which their first builds followed: the
    latest registered is usually refreshed last, and holds the log back until then), and
    last the views known to have consumed rows since the last purge (``hint.moved``).
    Reading those first made the purges after a run's refreshes quadratic in its views:
    each read again every view refreshed before it."""
    users = log.state.users
    return sorted(
        users,
        key=lambda view: (
            view in hint.moved,
            view != hint.blocker,
            -users[view].registered_at.timestamp(),
        ),
    )


def _purge_hint(env: Env, log: LoadedLog) -> PurgeHint:
    """This process's ``PurgeHint`` of ``log`` (the caller holds the log's lock): a new one
    after a purge, or when the log's history changed."""
    state = log.state
    epoch = state.epoch_id(log.config)
    key = str(log.log_table)
    hint = env.runtime.purge_hints.get(key)
    if hint is None or (hint.epoch, hint.purged_sequence) != (epoch, state.purged_sequence):
        hint = PurgeHint(epoch, state.purged_sequence)
        env.runtime.purge_hints[key] = hint
    return hint


def plan_purge(
    log: LoadedLog,
    positions: Mapping[str, Position | None],
    now: dt.datetime,
    keep: Sequence[str] | None = None,
) -> PurgePlan | None:
    """What a purge keeping the rows the views in ``keep`` (default: every registered
    view) still need deletes (pure); None when nothing can go.

    A view's place is its own position, or, when that cannot be read, its claim's (the
    place it registered at: an orphan holds the log there, as in Oracle). Views not in
    ``keep`` lose the rows they still needed: they are ``doomed`` to a complete refresh.
    """
    state = log.state
    kept = list(state.users if keep is None else keep)
    places: dict[str, Position] = {}
    for view in state.users:
        place = place_on(log, view, positions.get(view))
        if place is not None:
            places[view] = place
    kept = [v for v in kept if v in places]
    # With no registered view needing a row, every row goes.
    through = min(places[v].last_sequence for v in kept) if kept else state.last_sequence
    if through <= state.purged_sequence:
        return None
    oldest = min((places[v].last_refresh for v in kept), default=None) or state.oldest
    after = state.replace(
        purged_sequence=through, last_purge_time=now,
        last_purge_rows=through - state.purged_sequence,
        purged_through=max(t for t in (state.purged_through, oldest) if t is not None),
        oldest=oldest,
    )  # fmt: skip
    doomed = tuple(sorted(v for v, p in places.items() if p.last_sequence < through))
    return PurgePlan(through, through - state.purged_sequence, after, doomed)


def execute_purge(env: Env, log: LoadedLog, plan: PurgePlan, *, released: bool = False) -> None:
    """Delete the rows of ``plan`` and record the log's state with them (caller holds the
    log's lock): whole files in one metadata-only commit where they line up, else by rows.

    A plan that dooms views (``purge_log``), or whose state drops a view's claim
    (``released``: ``purge_mview_from_log``), deletes rows a view has not consumed, which
    only the new state tells it. The SQL path records a state after its delete, not in
    it: there the state goes first as well, so that a kill between the two leaves those
    rows announced as purged (the views refresh completely) or the view no longer
    registered, never rows gone unannounced."""
    env.check_leases([log_lock(log.log_table)])
    if (plan.doomed or released) and env.tables.kind != "java":
        log = record_state(env, log, plan.state)
        faults.point("purge.after_announce")
    summary = {LOG_STATE: plan.state.to_json()}
    dropped = env.tables.delete_through(log.log_table, "capture__", plan.through, summary)
    if dropped and env.tables.kind == "java":
        faults.point("purge.after_delete")
        env.upkeep_commit(log.log_table)
        env.runtime.journal(env.registry).logs.add(str(log.master))
        return
    if not dropped:
        commit_with_state(
            env, log, f"DELETE FROM {log.log_table.sql} WHERE capture__ <= {plan.through}",
            plan.state, fault="purge.after_delete",
        )  # fmt: skip
        return
    env.upkeep_commit(log.log_table)
    faults.point("purge.after_delete")
    record_state(env, log, plan.state)


def purge(
    env: Env, master: TableName, *, now: dt.datetime | None = None, record_empty: bool = False
) -> PurgePlan | None:
    """Purge what every registered view of ``master``'s log has consumed (the wrap-up's
    purge); returns what was purged.

    ``now``: the purge's time (the refresh's, after a refresh). ``record_empty``: record
    the purge's time even when nothing goes (Oracle's LAST_PURGE_DATE moves on every
    synchronous wrap-up, seed 003); it costs a commit, so only synchronous purges do.
    """
    with env.holding([log_lock(log_table_for(master))], purpose="purge"):
        log = load_log_locked(env, master, columns=False)
        if log is None:
            return None
        when = now or env.clock()
        positions = purge_positions(env, log)
        plan = None if positions is None else plan_purge(log, positions, when)
        if plan is not None:
            execute_purge(env, log, plan)
            _hint_after(env, log, positions or {}, plan)
        elif record_empty:
            state = log.state.replace(last_purge_time=when, last_purge_rows=0)
            record_state(env, log, state, current=True)
        return plan


def _hint_after(
    env: Env, log: LoadedLog, positions: Mapping[str, Position | None], plan: PurgePlan
) -> None:
    """The hint a purge leaves for the next one: the views it read past its new purged
    sequence have moved on already."""
    moved = set()
    for view in log.state.users:
        place = place_on(log, view, positions.get(view))
        if place is None or place.last_sequence > plan.through:
            moved.add(view)
    hint = PurgeHint(plan.state.epoch_id(log.config), plan.state.purged_sequence, moved=moved)
    env.runtime.purge_hints[str(log.log_table)] = hint


def purge_after_refresh(env: Env, setups: Sequence[Setup]) -> None:
    """The wrap-up's purge of each log the refresh read, by each log's purge mode: now
    (``synchronous``), or at the end of the dbt invocation (``deferred``: ``publish``
    purges each log once, however many views refreshed from it)."""
    for done in setups:
        log = done.log
        if log.config.purge is PurgeMode.SYNCHRONOUS:
            purge(env, log.master, now=done.now, record_empty=True)
        else:
            env.runtime.journal(env.registry).to_purge.add(str(log.master))
