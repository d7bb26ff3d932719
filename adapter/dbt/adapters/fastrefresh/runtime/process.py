"""What one process remembers between statements, in one object tests can reset.

- ``locks``: named locks that serialize this process's writes to one log (capture, mark,
  purge, registration) and one view's refresh. The embedded catalog does no commit locking
  of its own (two threads committing to one Iceberg table can silently lose a commit) and
  its Derby metastore admits one JVM, so within it these locks are complete; on a shared
  catalog the locks of logs and views are leases too (``protocol.env.Env.holding``).
- ``chosen``: the latest refresh time this process chose per log, so that times chosen
  in one process strictly increase even when the wall clock steps back.
- ``journal``: what happened (refreshes, captures, which logs and views changed), kept
  until ``registry.publish`` writes it to the registry in one commit per invocation.
- ``plans``: query analyses, by query text and master schemas.
- ``ensured``: registry schemas known to exist and be current.
- ``commits``/``reading``: the upkeep of dbt-fastrefresh's own tables (``protocol/upkeep.py``).
- ``leases``: the leases this process holds on a shared catalog (``runtime/leases.py``).
- ``purge_hints``: per log table, what this process last learned of the views a purge
  reads (``PurgeHint``, the order of ``mlog/consumers.purge_positions``); a hint, never
  a fact.
- ``in_use``: the logs a refresh of this process works on, from its setup to its wrap-up
  (``drop_mview_log`` refuses them meanwhile: the refresh would fail half-way).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.fastrefresh.runtime.leases import Leases

ONE_TICK = dt.timedelta(microseconds=1)


@dataclass
class RefreshRecord:
    """One refresh, as ``refresh_runs`` shows it."""

    run_id: str
    mview: str
    started: dt.datetime
    ended: dt.datetime
    refresh_type: str
    reason: str | None
    reason_code: str | None
    log_rows_read: int
    status: str
    error: str | None
    phases: dict[str, float]


@dataclass
class CaptureRecord:
    """One non-empty capture, as ``capture_runs`` shows it."""

    log_table: str
    master: str
    captured_at: dt.datetime
    from_snapshot: int | None
    to_snapshot: int | None
    snapshots: int
    first_sequence: int
    last_sequence: int
    log_rows: int
    oldest_commit: dt.datetime | None
    newest_commit: dt.datetime | None
    seconds: float


@dataclass
class PurgeHint:
    """What this process last learned of the views on one log since its last purge,
    at ``purged_sequence`` of history ``epoch``: the order in which a purge reads them.

    ``blocker`` held the log back (it had consumed nothing since that purge); the views in
    ``moved`` had consumed rows since. A view's position only grows while the purge stays,
    so a view once moved is not the one that holds the log back: it is read last."""

    epoch: str
    purged_sequence: int
    blocker: str | None = None
    moved: set[str] = field(default_factory=set)


@dataclass
class Journal:
    """What this process did since the last publish (per registry schema)."""

    refreshes: list[RefreshRecord] = field(default_factory=list)
    captures: list[CaptureRecord] = field(default_factory=list)
    logs: set[str] = field(default_factory=set)  # masters whose log changed
    views: set[str] = field(default_factory=set)  # views whose state changed
    dropped_logs: set[str] = field(default_factory=set)  # log tables dropped
    released: set[tuple[str, str]] = field(default_factory=set)  # (log table, view)
    unregistered: set[str] = field(default_factory=set)
    to_purge: set[str] = field(default_factory=set)  # masters whose logs wait for a purge
    # The log tables each view's last successful refresh here read (release_orphans
    # releases a view from a log its query no longer reads without reading its state)
    reads: dict[str, frozenset[str]] = field(default_factory=dict)
    # Storage tables a refresh wrote: a view over one (read through its log) is stale now
    written: set[str] = field(default_factory=set)

    def empty(self) -> bool:
        return not (
            self.refreshes or self.captures or self.logs or self.views or self.dropped_logs
            or self.released or self.unregistered or self.to_purge or self.written
        )  # fmt: skip


class Runtime:
    """The process state of dbt-fastrefresh (see the module docstring)."""

    def __init__(self) -> None:
        self._guard = threading.RLock()
        self._locks: dict[str, threading.RLock] = {}
        self.chosen: dict[str, dt.datetime] = {}
        self.journals: dict[str, Journal] = {}
        self.plans: dict[Any, Any] = {}
        self.ensured: set[str] = set()
        self.commits: dict[str, int] = {}
        self.reading: dict[str, int] = {}
        self.in_use: dict[str, int] = {}
        self.purge_hints: dict[str, PurgeHint] = {}
        old = getattr(self, "leases", None)
        if old is not None:
            old.stop()
        self.leases = Leases()

    def reset(self) -> None:
        """Forget everything (tests; a process that starts over)."""
        with self._guard:
            self.__init__()  # type: ignore[misc]

    # -- locks ---------------------------------------------------------------------------

    def _lock(self, name: str) -> threading.RLock:
        with self._guard:
            lock = self._locks.get(name)
            if lock is None:
                lock = self._locks[name] = threading.RLock()
            return lock

    @contextlib.contextmanager
    def holding(self, names: Iterable[str]) -> Iterator[None]:
        """Hold the locks of all ``names`` (taken in sorted order, so threads never
        deadlock; released in reverse)."""
        ordered = sorted(set(names))
        with contextlib.ExitStack() as stack:
            for name in ordered:
                stack.enter_context(self._lock(name))
            yield

    @contextlib.contextmanager
    def using(self, names: Iterable[str]) -> Iterator[None]:
        """Count ``names`` in ``in_use`` for as long as the block runs."""
        keys = list(names)
        with self._guard:
            for key in keys:
                self.in_use[key] = self.in_use.get(key, 0) + 1
        try:
            yield
        finally:
            with self._guard:
                for key in keys:
                    left = self.in_use[key] - 1
                    if left:
                        self.in_use[key] = left
                    else:
                        del self.in_use[key]

    # -- refresh times -------------------------------------------------------------------

    def choose_time(
        self, log: str, clock: dt.datetime, youngest: dt.datetime | None
    ) -> dt.datetime:
        """A refresh time for ``log``: the clock, but strictly after ``youngest`` and after
        every time this process chose for the log before (caller holds the log's lock).

        >>> r = Runtime(); t = dt.datetime(2026, 1, 1)
        >>> r.choose_time("l", t, t) == t + ONE_TICK
        True
        >>> r.choose_time("l", t, None) == t + 2 * ONE_TICK
        True
        """
        with self._guard:
            floor = max(
                [v for v in (youngest, self.chosen.get(log)) if v is not None], default=None
            )
            now = clock if floor is None or clock > floor else floor + ONE_TICK
            self.chosen[log] = now
            return now

    # -- the journal ---------------------------------------------------------------------

    def journal(self, registry: str) -> Journal:
        with self._guard:
            return self.journals.setdefault(registry, Journal())

    def take_journal(self, registry: str) -> Journal:
        """The journal of ``registry``, emptied for the next publish."""
        with self._guard:
            return self.journals.pop(registry, Journal())

    def restore_journal(self, registry: str, journal: Journal) -> None:
        """Put back a journal whose publish failed, before what happened since."""
        with self._guard:
            later = self.journals.pop(registry, Journal())
            journal.refreshes += later.refreshes
            journal.captures += later.captures
            names = ("logs", "views", "dropped_logs", "released", "unregistered", "to_purge")
            for name in (*names, "written"):
                getattr(journal, name).update(getattr(later, name))
            journal.reads.update(later.reads)
            self.journals[registry] = journal


RUNTIME = Runtime()
