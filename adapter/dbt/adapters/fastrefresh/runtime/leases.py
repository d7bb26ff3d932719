"""Leases: what keeps the protocol's multi-commit steps apart across processes.

Within one process, named locks serialize the writes to one log and one view's refresh
(``process.Runtime.holding``). On a shared catalog other processes, on this machine or
another, write the same tables; Iceberg's atomic commits keep each commit whole, but a
capture (read the log's state, append the master's new commits with the new state), a
purge or a view's refresh (read its place, MERGE the delta with its new place) spans
reads and commits, and two of them interleaved would capture a change twice or apply a
delta twice. So on a shared catalog each such step that writes also holds a **lease** on
its log or view (a refresh with nothing to apply writes nothing, and takes none:
``engine/refresh._unchanged``; one that writes its masters' logs takes their leases with
its view's, in one swap: ``engine/refresh._Refresh._leases``): a row of the registry's
``leases`` table naming the holder (host, process, a token of this process) and when the
lease expires.

- **Taking and giving back** a lease is a compare-and-swap on that table (``LeaseStore``:
  an Iceberg commit validated against every change to those rows since they were read),
  so two processes can never both think they hold it.
- **Expiry**: the holder renews each lease once a third of ``ttl`` has passed since it
  was taken or last renewed, from a background thread (those past a sixth go with it, in
  one swap; a failed renewal is tried again every twelfth); a lease given back sooner is
  never renewed. A process that dies stops renewing, and its leases can be taken over
  once expired. On the holder's own machine a lease whose process is gone is taken over
  at once.
- **Waiting**: a process that finds a lease held waits for it (``wait`` seconds at most),
  then fails naming the holder and the fix.
- **Lost**: a holder whose renewal finds its lease taken over (it stalled longer than
  ``ttl``) stops before its next write (``check``) instead of writing without it.

Leases live in a table because the registry shows them (``fast_refresh_leases``): who
holds which log or view, since when, until when. The decisions here are pure; the store
does the reading and the swapping.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import os
import random
import socket
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.runtime.clock import utcnow

logger = AdapterLogger("fastrefresh")

LEASED_PREFIXES = ("log:", "view:")  # the process locks that are leases too
# A holder writes only while its lease has this much of its ttl left (each lease is
# renewed when a third of it has passed, so one late renewal does not stop a refresh; two
# do).
SAFE_FRACTION = 0.25
# A lease is due for renewal with this much of its ttl left; renewing it, the heartbeat
# renews those with ``RENEW_WITH`` left or less too, in the same swap; a failed renewal
# is tried again after ``RETRY`` of the ttl.
RENEW_DUE, RENEW_WITH, RETRY = 2 / 3, 5 / 6, 1 / 12
MIN_RACES = 5  # swaps lost to other processes retried even past the wait


@dataclass(frozen=True)
class Lease:
    """One lease as its row says: ``name`` (``log:<log table>`` or ``view:<view>``)."""

    name: str
    holder: str  # <host>:<pid>:<pid space>.<token>, unique per process
    host: str
    pid: int
    acquired: dt.datetime  # naive UTC
    expires: dt.datetime  # naive UTC
    purpose: str

    def describe(self) -> str:
        return (
            f"process {self.pid} on {self.host} ({self.purpose}), since "
            f"{self.acquired:%Y-%m-%d %H:%M:%S} UTC, until {self.expires:%H:%M:%S} UTC"
        )


class LeaseStore(Protocol):
    """Where leases are kept: read some, and swap them all or none."""

    swaps: int  # swaps that took, each a commit (figures for tests and logs)

    def read(self, names: Sequence[str]) -> tuple[Any, dict[str, Lease]]:
        """The leases of ``names`` that exist now, and a version to swap against."""
        ...

    def swap(self, version: Any, names: Sequence[str], new: Mapping[str, Lease]) -> bool:
        """Make the leases of ``names`` exactly ``new`` (a name not in ``new``: none), if
        none of them changed since ``version``; False when one did, changing nothing (the
        Java path) or only the rows still as read (the SQL path: ``Leases._take`` gives
        back what such a take won)."""
        ...

    def give_back(self, leases: Mapping[str, Lease]) -> bool:
        """Give back ``leases`` as this process last wrote them, without reading first:
        True when none of them is this holder's any more (given back, or taken over
        since); False when that is not known (one changed since, a renewal in between,
        or this store reads first anyway): the caller reads and swaps."""
        ...


def _this_space() -> str:
    """Which process-id space this process lives in: the machine's boot and its pid
    namespace (containers sharing a host name do not share pids), '' where unknown."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip().replace("-", "")
        return f"{boot[:12]}{os.stat('/proc/self/ns/pid').st_ino:x}"
    except OSError:
        return ""


@dataclass(frozen=True)
class Me:
    """This process, as its leases name it."""

    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)
    token: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    space: str = field(default_factory=_this_space)

    @property
    def holder(self) -> str:
        return f"{self.host}:{self.pid}:{self.space}.{self.token}"


def _space(holder: str) -> str | None:
    """The pid space a holder named (None: a holder written without one)."""
    last = holder.rsplit(":", 1)[-1]
    return last.partition(".")[0] if "." in last else None


def process_alive(pid: int) -> bool:
    """Whether a process of this machine with ``pid`` exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def free(
    lease: Lease | None, me: Me, now: dt.datetime, alive: Any = None
) -> tuple[bool, str | None]:
    """Whether ``lease`` lets ``me`` take it (pure but for ``alive``), and why it may be
    taken over when it is someone else's (None: it is not). A lease is free when there
    is none, when it is ``me``'s, when it has expired, or when its holder was a process of
    this machine (same host name and pid space) that is gone.

    >>> t = dt.datetime(2026, 1, 1)
    >>> holder = Me("h", 1, "x", "s").holder
    >>> other = Lease("log:a", holder, "h", 1, t, t + dt.timedelta(seconds=60), "refresh")
    >>> free(other, Me("h", 2, "y", "s"), t, alive=lambda pid: True)
    (False, None)
    >>> free(other, Me("h", 2, "y", "s"), t + dt.timedelta(seconds=61), alive=lambda pid: True)[0]
    True
    >>> free(other, Me("h", 2, "y", "s"), t, alive=lambda pid: False)[1]
    'its process 1 on h is gone'
    >>> free(other, Me("h", 2, "y", "another pid namespace"), t, alive=lambda pid: False)
    (False, None)
    """
    if lease is None or lease.holder == me.holder:
        return True, None
    if lease.expires <= now:
        return True, f"it expired at {lease.expires:%Y-%m-%d %H:%M:%S} UTC"
    if (
        lease.host == me.host
        and _space(lease.holder) == me.space
        and lease.pid != me.pid
        and not (alive or process_alive)(lease.pid)
    ):
        return True, f"its process {lease.pid} on {lease.host} is gone"
    return False, None


@dataclass
class _Held:
    lease: Lease
    store: LeaseStore
    ttl: float
    count: int = 1
    lost: str | None = None


class Leases:
    """This process's leases: taken, renewed, given back (see the module docstring)."""

    def __init__(self, me: Me | None = None) -> None:
        self.me = me or Me()
        self._guard = threading.RLock()
        self._held: dict[str, _Held] = {}
        self._taking: dict[str, threading.Event] = {}  # names a thread is taking now
        self._beat: threading.Thread | None = None
        self._stop = threading.Event()
        self.taken_over: list[str] = []  # what was taken over, and why (for the journal)
        self.taken = 0  # leases taken (figures for tests and logs)
        self.waited = 0  # of which found held by another process first

    # -- the public steps ----------------------------------------------------------------

    @contextlib.contextmanager
    def holding(
        self,
        store: LeaseStore,
        names: Sequence[str],
        *,
        ttl: float,
        wait: float,
        purpose: str,
    ) -> Iterator[None]:
        """Hold the leases of ``names`` for the block (re-entrant in this process: a lease
        another thread holds is counted, not taken again)."""
        wanted = sorted({n for n in names if n.startswith(LEASED_PREFIXES)})
        new = self._count_in(wanted)
        try:
            if new:
                self._take(store, new, ttl=ttl, wait=wait, purpose=purpose)
        except BaseException:
            self._drop_counts([n for n in wanted if n not in new])
            raise
        finally:
            self._taken_or_not(new)
        try:
            yield
        finally:
            self._give_back(wanted)

    def check(self, names: Sequence[str] | None = None) -> None:
        """Raise, before a write, when a lease this process holds was taken over or may
        be: a renewal found it taken, or the last renewal that passed leaves it less
        than a quarter of its ``ttl`` (two renewals in a row failed or were late, so
        another process may take it over before the write commits)."""
        now = utcnow()
        with self._guard:
            reasons = {
                n: h.lost or _running_out(h, now)
                for n, h in self._held.items()
                if names is None or n in names
            }
        lost = [(n, w) for n, w in reasons.items() if w]
        if lost:
            name, why = lost[0]
            raise FastRefreshError(
                f"The lease on {name[name.index(':') + 1 :]} was lost ({why}): another process "
                "may be writing it now, so this refresh stops before writing. Fix: run it "
                "again; if this process stalls (garbage collection, a paused machine), raise "
                "the profile's catalog.lease_seconds."
            )

    def held(self) -> dict[str, Lease]:
        with self._guard:
            return {n: h.lease for n, h in self._held.items()}

    def stop(self) -> None:
        """Stop renewing (tests; a process that ends). Held leases then expire."""
        self._stop.set()

    # -- taking --------------------------------------------------------------------------

    def _count_in(self, wanted: Sequence[str]) -> list[str]:
        """Count one holder more of each of ``wanted`` this process holds, and return the
        others, which this thread then takes. While another thread is taking one of them
        it waits for that take to end (the lease is then held, or not): two threads
        taking one lease would each count themselves its only holder."""
        while True:
            with self._guard:
                busy = next((self._taking[n] for n in wanted if n in self._taking), None)
                if busy is None:
                    new = [n for n in wanted if n not in self._held]
                    for n in wanted:
                        if n in self._held:
                            self._held[n].count += 1
                    done = threading.Event()
                    for n in new:
                        self._taking[n] = done
                    return new
            busy.wait()

    def _taken_or_not(self, new: Sequence[str]) -> None:
        with self._guard:
            ended = {id(e): e for e in (self._taking.pop(n, None) for n in new) if e}
        for event in ended.values():
            event.set()

    def _take(
        self, store: LeaseStore, names: Sequence[str], *, ttl: float, wait: float, purpose: str
    ) -> None:
        deadline = time.monotonic() + wait
        pause, races = 0.05, 0
        said: set[str] = set()
        while True:
            version, current = store.read(names)
            now = utcnow()
            verdicts = {n: free(current.get(n), self.me, now) for n in names}
            blocking = [current[n] for n, (ok, _) in verdicts.items() if not ok]
            if not blocking:
                expires = now + dt.timedelta(seconds=ttl)
                mine = {
                    n: Lease(n, self.me.holder, self.me.host, self.me.pid, now, expires, purpose)
                    for n in names
                }
                if store.swap(version, names, mine):
                    self._record(store, mine, ttl, current, verdicts)
                    with self._guard:
                        self.taken += len(names)
                        self.waited += len(names) if said else 0
                    return
                # Another process committed first (on the SQL path any change to the
                # table, a renewal too): read again after a short random pause. The SQL
                # path swaps row by row, so some of them may be ours now: given back
                # first, so that no other process waits for a lease this one does not
                # hold while it waits for another.
                try:
                    self._swap_mine(store, names, lambda lease: None)
                except Exception as exc:  # they expire, or this loop takes them again
                    logger.debug(f"could not give back a part of {', '.join(names)}: {exc}")
                races += 1
                if races > MIN_RACES and time.monotonic() >= deadline:
                    raise FastRefreshError(
                        f"The leases table kept changing while this process took the lease "
                        f"on {', '.join(_what(n) for n in names)} for {wait:g} s. Nothing "
                        "was written. Fix: run it again, or raise catalog.lease_wait_seconds."
                    )
                time.sleep(random.uniform(0.02, 0.25))
                continue
            if time.monotonic() >= deadline:
                lease = blocking[0]
                raise FastRefreshError(
                    f"{_what(lease.name)} is leased by {lease.describe()}, and it was not "
                    f"given back within {wait:g} s. Nothing was written. Fix: let that run "
                    "finish and start this one again, or raise catalog.lease_wait_seconds; "
                    "if that process is gone for good, its lease is free once it expires."
                )
            for lease in blocking:
                if lease.holder not in said:
                    said.add(lease.holder)
                    logger.info(f"waiting for {_what(lease.name)}: leased by {lease.describe()}")
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 2, 2.0)

    def _record(
        self,
        store: LeaseStore,
        mine: Mapping[str, Lease],
        ttl: float,
        current: Mapping[str, Lease],
        verdicts: Mapping[str, tuple[bool, str | None]],
    ) -> None:
        with self._guard:
            for name, lease in mine.items():
                self._held[name] = _Held(lease, store, ttl)
                why = verdicts[name][1]
                if why:
                    old = current[name]
                    note = f"took over the lease on {_what(name)} from {old.describe()}: {why}"
                    self.taken_over.append(note)
                    logger.warning(note)
            self._ensure_heartbeat()

    # -- giving back ---------------------------------------------------------------------

    def _drop_counts(self, names: Sequence[str]) -> list[str]:
        """Count one holder less of each of ``names``; the ones no longer held, by store."""
        done = []
        with self._guard:
            for n in names:
                held = self._held.get(n)
                if held is None:
                    continue
                held.count -= 1
                if held.count <= 0:
                    done.append(n)
        return done

    def _give_back(self, names: Sequence[str]) -> None:
        done = self._drop_counts(names)
        with self._guard:
            held = {n: self._held.pop(n) for n in done if n in self._held}
        by_store: dict[int, tuple[LeaseStore, list[str]]] = {}
        for n, h in held.items():
            if not h.lost:
                by_store.setdefault(id(h.store), (h.store, []))[1].append(n)
        for store, group in by_store.values():
            try:
                if not store.give_back({n: held[n].lease for n in group}):
                    self._swap_mine(store, group, lambda lease: None)
            except Exception as exc:  # the lease then expires by itself
                logger.warning(
                    f"could not give back the lease(s) {', '.join(group)}: {exc}; they "
                    "expire by themselves."
                )

    def _swap_mine(self, store: LeaseStore, names: Sequence[str], change: Any) -> list[str]:
        """Swap each of ``names`` still ours for ``change(lease)`` (None: gone); returns
        the names found no longer ours."""
        for _ in range(20):
            version, current = store.read(names)
            ours = [n for n in names if n in current and current[n].holder == self.me.holder]
            new = {n: lease for n in ours if (lease := change(current[n])) is not None}
            if not ours or store.swap(version, ours, new):
                return [n for n in names if n not in ours]
        raise FastRefreshError(
            f"the leases {', '.join(names)} kept changing under this process; giving up."
        )

    # -- renewing ------------------------------------------------------------------------

    def _ensure_heartbeat(self) -> None:
        if self._beat is not None and self._beat.is_alive():
            return
        self._stop.clear()
        self._beat = threading.Thread(
            target=self._heartbeat, name="fastrefresh-leases", daemon=True
        )
        self._beat.start()

    def _heartbeat(self) -> None:
        while not self._stop.is_set():
            with self._guard:
                if not self._held:
                    self._beat = None
                    return
                wait = _until_due(self._held.values(), utcnow())
            if self._stop.wait(wait):
                return
            self.renew(due=True)

    def renew(self, *, due: bool = False) -> None:
        """Push the expiry of every lease held forward by its ``ttl``; ``due`` (the
        heartbeat): of those with ``RENEW_WITH`` of their ttl left or less. A lease taken
        and given back within a third of its ttl is never renewed: a renewal is a commit
        to the leases table (a ``MERGE`` on the SQL path), and one between a take and its
        give-back makes the give-back read and swap."""
        now = utcnow()
        with self._guard:
            held = {
                n: h
                for n, h in self._held.items()
                if not due or (h.lease.expires - now).total_seconds() <= h.ttl * RENEW_WITH
            }
        by_store: dict[int, tuple[LeaseStore, list[str], float]] = {}
        for n, h in held.items():
            if not h.lost:
                store, group, ttl = by_store.setdefault(id(h.store), (h.store, [], h.ttl))
                group.append(n)
        for store, group, ttl in by_store.values():
            expires = utcnow() + dt.timedelta(seconds=ttl)
            try:
                gone = self._swap_mine(store, group, functools.partial(_replace, expires=expires))
            except Exception as exc:  # keep beating: the next renewal may pass
                logger.warning(f"could not renew the lease(s) {', '.join(group)}: {exc}")
                continue
            with self._guard:
                for n in group:
                    found = self._held.get(n)
                    # Only the very lease read above: a thread of this process may have
                    # given it back and taken it again meanwhile (the row was then absent
                    # for a moment, and is not lost).
                    if found is None or found is not held[n]:
                        continue
                    if n in gone:
                        found.lost = "another process took it over after it expired"
                    else:
                        found.lease = _replace(found.lease, expires=expires)


def _until_due(held: Iterable[_Held], now: dt.datetime) -> float:
    """Seconds until the first of ``held`` is due for renewal (``RENEW_DUE`` of its ttl
    left), at least ``RETRY`` of the shortest ttl: a renewal that failed left its lease
    due, and is tried again then. Leases lost are never renewed.

    >>> t = dt.datetime(2026, 1, 1)
    >>> fresh = _Held(Lease("view:v", "x", "h", 1, t, t + dt.timedelta(seconds=60), "p"), None, 60)
    >>> _until_due([fresh], t)  # taken now: due when 40 s are left
    20.0
    >>> _until_due([fresh], t + dt.timedelta(seconds=50))  # overdue: retried in 5 s
    5.0
    """
    held = list(held)
    shortest = min(h.ttl for h in held)
    due = [(h.lease.expires - now).total_seconds() - h.ttl * RENEW_DUE for h in held if not h.lost]
    return max(min(due, default=shortest / 3), shortest * RETRY)


def _running_out(held: _Held, now: dt.datetime) -> str | None:
    """Why ``held`` is too close to its expiry to write under (None: it is not)."""
    left = (held.lease.expires - now).total_seconds()
    if left >= held.ttl * SAFE_FRACTION:
        return None
    return (
        f"its renewals failed or came late, so it expires at "
        f"{held.lease.expires:%H:%M:%S} UTC, {max(left, 0):.0f} s from now"
    )


def _replace(lease: Lease, **changes: Any) -> Lease:
    import dataclasses

    return dataclasses.replace(lease, **changes)


def _what(name: str) -> str:
    kind, _, what = name.partition(":")
    return f"the materialized view log {what}" if kind == "log" else f"the view {what}"
