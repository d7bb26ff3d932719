"""Leases (runtime/leases.py) over an in-memory compare-and-swap store: who may take a
lease, waiting, taking over expired and orphaned ones, renewing, losing, giving back.
The same protocol runs on the Iceberg table in tests/shared/ with real processes."""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.runtime import leases
from dbt.adapters.fastrefresh.runtime.leases import Lease, Leases, Me, free


class MemoryStore:
    """A lease table with a version per swap: a swap against an older version fails."""

    def __init__(self) -> None:
        self.rows: dict[str, Lease] = {}
        self.version = 0
        self.swaps = 0
        self.lock = threading.Lock()

    def read(self, names: Sequence[str]) -> tuple[Any, dict[str, Lease]]:
        with self.lock:
            return self.version, {n: self.rows[n] for n in names if n in self.rows}

    def swap(self, version: Any, names: Sequence[str], new: Mapping[str, Lease]) -> bool:
        with self.lock:
            if version != self.version:
                return False
            for n in names:
                self.rows.pop(n, None)
            self.rows.update(new)
            self.version += 1
            self.swaps += 1
            return True

    def give_back(self, leases: Mapping[str, Lease]) -> bool:
        return False  # read and swap, as the Java path does


T0 = dt.datetime(2026, 1, 1)
FAR = dt.datetime(2100, 1, 1)


def lease(holder: Me, *, expires: dt.datetime, name: str = "log:s.mlog__t") -> Lease:
    return Lease(name, holder.holder, holder.host, holder.pid, T0, expires, "test")


def test_a_lease_is_given_back_without_a_read_where_the_store_can() -> None:
    """A store that gives leases back as last written (the SQL path) is asked first: no
    read, no swap after it when it did; when it could not tell (a renewal in between),
    the lease is read and swapped as before."""

    class Blind(MemoryStore):
        def __init__(self, answer: bool) -> None:
            super().__init__()
            self.answer, self.reads, self.given = answer, 0, list[dict[str, Lease]]()

        def read(self, names: Sequence[str]) -> tuple[Any, dict[str, Lease]]:
            self.reads += 1
            return super().read(names)

        def give_back(self, leases: Mapping[str, Lease]) -> bool:
            self.given.append(dict(leases))
            if self.answer:
                with self.lock:
                    for n, held in leases.items():
                        if self.rows.get(n) == held:
                            del self.rows[n]
            return self.answer

    for answer in (True, False):
        store, mine = Blind(answer), Leases(Me("h", 1, "a"))
        with mine.holding(store, ["view:s.v", "log:s.l"], ttl=60, wait=0, purpose="p"):
            held = dict(store.rows)
            reads = store.reads
        assert store.given == [held], "given back as written"
        assert store.rows == {}
        assert store.reads - reads == (0 if answer else 1), answer
        assert store.swaps == (1 if answer else 2), answer


def test_free_decides_by_holder_expiry_and_a_gone_process() -> None:
    me, other = Me("h", 1, "a"), Me("h", 2, "b")
    far = T0 + dt.timedelta(hours=1)
    assert free(None, me, T0) == (True, None)
    assert free(lease(me, expires=T0), me, T0 + dt.timedelta(days=1)) == (True, None)
    assert free(lease(other, expires=far), me, T0, alive=lambda pid: True) == (False, None)
    ok, why = free(lease(other, expires=T0), me, T0, alive=lambda pid: True)
    assert ok and why and "expired" in why
    ok, why = free(lease(other, expires=far), me, T0, alive=lambda pid: False)
    assert ok and why == "its process 2 on h is gone"
    remote = Me("elsewhere", 2, "c")  # another machine's process cannot be checked
    assert free(lease(remote, expires=far), me, T0, alive=lambda pid: False) == (False, None)


def test_a_lease_is_taken_held_reentrantly_and_given_back() -> None:
    store, mine = MemoryStore(), Leases(Me("h", 1, "a"))
    with mine.holding(store, ["log:s.l", "process:other"], ttl=60, wait=0, purpose="p"):
        assert set(store.rows) == {"log:s.l"}, "only logs and views are leased"
        with mine.holding(store, ["log:s.l"], ttl=60, wait=0, purpose="p"):
            assert store.swaps == 1, "held already: no second swap"
        assert "log:s.l" in store.rows, "the outer block still holds it"
    assert store.rows == {}
    assert store.swaps == 2


def test_a_held_lease_makes_another_process_wait_then_fail_naming_the_holder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(leases, "process_alive", lambda pid: True)
    store = MemoryStore()
    first, second = Leases(Me("h", 1, "a")), Leases(Me("h", 2, "b"))
    with first.holding(store, ["view:s.v"], ttl=60, wait=0, purpose="refresh of s.v"):
        started = time.monotonic()
        with (
            pytest.raises(FastRefreshError, match=r"(?s)the view s.v is leased by process 1.*Fix"),
            second.holding(store, ["view:s.v"], ttl=60, wait=0.3, purpose="x"),
        ):
            pass
        assert time.monotonic() - started >= 0.3
    assert store.rows == {}, "the failed taker left nothing"


def test_a_waiter_gets_the_lease_when_it_is_given_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(leases, "process_alive", lambda pid: True)
    store = MemoryStore()
    first, second = Leases(Me("h", 1, "a")), Leases(Me("h", 2, "b"))
    order: list[str] = []
    taken = threading.Event()

    def hold_then_give_back() -> None:
        with first.holding(store, ["log:s.l"], ttl=60, wait=0, purpose="p"):
            taken.set()
            time.sleep(0.3)
            order.append("first done")

    thread = threading.Thread(target=hold_then_give_back)
    thread.start()
    taken.wait(5)
    with second.holding(store, ["log:s.l"], ttl=60, wait=10, purpose="p"):
        order.append("second in")
        assert store.rows["log:s.l"].pid == 2
    thread.join()
    assert order == ["first done", "second in"]


def test_an_expired_or_orphaned_lease_is_taken_over_and_said(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = MemoryStore()
    dead = Me("h", 99, "z")
    store.rows["log:s.l"] = lease(dead, expires=dt.datetime(2100, 1, 1), name="log:s.l")
    monkeypatch.setattr(leases, "process_alive", lambda pid: pid != 99)
    mine = Leases(Me("h", 1, "a"))
    with mine.holding(store, ["log:s.l"], ttl=60, wait=0, purpose="p"):
        assert store.rows["log:s.l"].pid == 1
    assert mine.taken_over and "process 99 on h is gone" in mine.taken_over[0]

    remote = Me("other-host", 5, "r")
    store.rows["log:s.l"] = lease(remote, expires=T0, name="log:s.l")  # long expired
    with mine.holding(store, ["log:s.l"], ttl=60, wait=0, purpose="p"):
        pass
    assert "expired" in mine.taken_over[-1]


def test_renewal_pushes_the_expiry_and_a_lost_lease_stops_the_next_write() -> None:
    store = MemoryStore()
    mine = Leases(Me("h", 1, "a"))
    with mine.holding(store, ["log:s.l"], ttl=60, wait=0, purpose="p"):
        before = store.rows["log:s.l"].expires
        time.sleep(0.01)
        mine.renew()
        assert store.rows["log:s.l"].expires > before
        mine.check(["log:s.l"])  # still ours
        # Another process takes it over (as after this one stalled past the expiry).
        store.rows["log:s.l"] = lease(Me("h", 2, "b"), expires=dt.datetime(2100, 1, 1))
        store.version += 1
        mine.renew()
        with pytest.raises(FastRefreshError, match=r"(?s)lease on s.l was lost.*Fix"):
            mine.check(["log:s.l"])
    assert store.rows["log:s.l"].holder == Me("h", 2, "b").holder, (
        "giving back never removes another's lease"
    )


def test_a_lease_whose_renewals_fail_stops_the_write_before_it_expires() -> None:
    class Failing(MemoryStore):
        broken = False

        def swap(self, version: Any, names: Sequence[str], new: Mapping[str, Lease]) -> bool:
            if self.broken:
                raise RuntimeError("catalog unreachable")
            return super().swap(version, names, new)

    store = Failing()
    mine = Leases(Me("h", 1, "a"))
    with mine.holding(store, ["view:s.v"], ttl=0.8, wait=0, purpose="p"):
        store.broken = True  # every renewal from now on fails
        mine.check(["view:s.v"])  # most of its ttl is left
        time.sleep(0.7)  # the renewals failed: less than a quarter of the ttl is left
        with pytest.raises(FastRefreshError, match=r"(?s)lease on s.v was lost.*expires at.*Fix"):
            mine.check(["view:s.v"])
        mine.check(["log:s.other"])  # only the leases named are checked
        store.broken = False
    mine.stop()


def test_a_gone_pid_in_another_pid_namespace_is_not_taken_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(leases, "process_alive", lambda pid: False)  # no such pid *here*
    store = MemoryStore()
    container = Me("h", 7, "c", space="another-namespace")  # same host name, own pids
    store.rows["view:s.v"] = lease(container, expires=dt.datetime(2100, 1, 1), name="view:s.v")
    with (
        pytest.raises(FastRefreshError, match="leased by process 7 on h"),
        Leases(Me("h", 1, "a")).holding(store, ["view:s.v"], ttl=60, wait=0.1, purpose="p"),
    ):
        pass
    assert store.rows["view:s.v"].holder == container.holder


def test_the_heartbeat_renews_while_held() -> None:
    store = MemoryStore()
    mine = Leases(Me("h", 1, "a"))
    with mine.holding(store, ["view:s.v"], ttl=0.3, wait=0, purpose="p"):
        first = store.rows["view:s.v"].expires
        time.sleep(0.5)
        assert store.rows["view:s.v"].expires > first, "renewed every ttl/3"
    mine.stop()


def test_the_heartbeat_renews_a_lease_once_a_third_of_its_ttl_has_passed() -> None:
    """Not at every tick whatever its age: a lease taken just before another's renewal
    is left alone (a renewal is a commit; one between a take and its give-back makes the
    give-back read and swap), and renewed a third of its ttl after its take."""
    store = MemoryStore()
    mine = Leases(Me("h", 1, "a"))
    with mine.holding(store, ["log:s.a"], ttl=6.0, wait=0, purpose="p"):
        a = store.rows["log:s.a"].expires
        time.sleep(1.6)
        with mine.holding(store, ["log:s.b"], ttl=6.0, wait=0, purpose="p"):
            b = store.rows["log:s.b"].expires
            time.sleep(1.0)  # a's renewal was due at 2 s
            assert store.rows["log:s.a"].expires > a, "renewed a third of its ttl after"
            assert store.rows["log:s.b"].expires == b, "taken 1 s before: not renewed"
            time.sleep(1.4)  # b's was due at 3.6 s
            assert store.rows["log:s.b"].expires > b
    mine.stop()


def test_a_swap_lost_to_a_racer_is_retried_against_what_it_wrote() -> None:
    class Racy(MemoryStore):
        raced = False

        def swap(self, version: Any, names: Sequence[str], new: Mapping[str, Lease]) -> bool:
            if not self.raced:  # another process's swap lands first, then gives it back
                self.raced = True
                with self.lock:
                    self.version += 1
                return False
            return super().swap(version, names, new)

    store = Racy()
    with Leases(Me("h", 1, "a")).holding(store, ["log:s.l"], ttl=60, wait=0, purpose="p"):
        assert store.rows["log:s.l"].pid == 1


def test_a_swap_lost_to_a_racer_that_keeps_the_lease_waits_for_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(leases, "process_alive", lambda pid: True)
    racer = Me("h", 2, "b")

    class Racy(MemoryStore):
        def swap(self, version: Any, names: Sequence[str], new: Mapping[str, Lease]) -> bool:
            if "log:s.l" not in self.rows and racer.holder not in str(new):
                # the racer's swap lands first and it keeps the lease
                super().swap(version, names, {"log:s.l": lease(racer, expires=FAR)})
                return False
            return super().swap(version, names, new)

    store = Racy()
    with (
        pytest.raises(FastRefreshError, match="leased by process 2 on h"),
        Leases(Me("h", 1, "a")).holding(store, ["log:s.l"], ttl=60, wait=0.2, purpose="p"),
    ):
        pass
    assert store.rows["log:s.l"].holder == racer.holder


def test_a_renewal_racing_a_give_back_and_take_again_loses_nothing() -> None:
    """The heartbeat reads the leases while a thread of the same process gives one back
    and takes it again: the renewal sees the row absent, but the lease held now is a new
    one, not lost (the race a shared-catalog run with --threads 2 met)."""

    class Hooked(MemoryStore):
        hook: Any = None

        def read(self, names: Sequence[str]) -> tuple[Any, dict[str, Lease]]:
            hook, self.hook = self.hook, None
            if hook is None:
                return super().read(names)
            hook("give back")
            stale = super().read(names)  # the row is absent at this moment
            hook("take again")
            return stale

    store, mine = Hooked(), Leases(Me("h", 1, "a"))
    first = mine.holding(store, ["log:s.l"], ttl=60, wait=0, purpose="first")
    again = mine.holding(store, ["log:s.l"], ttl=60, wait=0, purpose="again")
    first.__enter__()

    def race(step: str) -> None:
        if step == "give back":
            first.__exit__(None, None, None)
        else:
            again.__enter__()

    store.hook = race
    mine.renew()
    assert store.rows["log:s.l"].purpose == "again"
    mine.check(["log:s.l"])  # not lost: the lease held now was taken after the read
    again.__exit__(None, None, None)
    assert store.rows == {}
    mine.stop()


def test_two_threads_taking_one_lease_at_once_take_it_once_and_count_each_other() -> None:
    """A refresh takes its logs' leases with its view's (``engine/refresh._leases``), under
    no lock of those logs: two of dbt's threads may take one log's lease at once. The second
    waits for the first's take and counts itself a holder: the lease is given back when
    both are done, not when the first is."""
    entered = threading.Event()

    class Slow(MemoryStore):
        def swap(self, version: Any, names: Sequence[str], new: Mapping[str, Lease]) -> bool:
            if new:
                entered.set()
                time.sleep(0.3)  # the other thread asks for the lease meanwhile
            return super().swap(version, names, new)

    store, mine = Slow(), Leases(Me("h", 1, "a"))
    first_done, second_in = threading.Event(), threading.Event()

    def first() -> None:
        with mine.holding(store, ["view:s.a", "log:s.l"], ttl=60, wait=0, purpose="a"):
            second_in.wait(5)
        first_done.set()

    thread = threading.Thread(target=first)
    thread.start()
    entered.wait(5)
    with mine.holding(store, ["view:s.b", "log:s.l"], ttl=60, wait=0, purpose="b"):
        second_in.set()
        first_done.wait(5)
        assert first_done.is_set()
        assert "log:s.l" in store.rows, "still held by this thread"
        mine.check(["log:s.l"])
    thread.join()
    assert store.rows == {}
    # Taken once for both, given back once: a + l, then b, then a, then b + l.
    assert store.swaps == 4


def test_a_take_that_won_some_rows_and_lost_others_gives_them_back_before_waiting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The SQL path's MERGE swaps row by row: where another process took one of the
    leases between the read and the MERGE, the others are this process's now. They are
    given back, so that nobody waits for a lease this process does not know it holds."""
    monkeypatch.setattr(leases, "process_alive", lambda pid: True)
    racer = Me("h", 2, "b")

    class RowByRow(MemoryStore):
        raced = False

        def swap(self, version: Any, names: Sequence[str], new: Mapping[str, Lease]) -> bool:
            expected: dict[str, Lease] = version
            with self.lock:
                if not self.raced and new:
                    self.raced = True  # the racer takes the log between read and swap
                    self.rows["log:s.l"] = lease(racer, expires=FAR)
                for n in names:
                    if self.rows.get(n) == expected.get(n):
                        self.rows.pop(n, None)
                        if n in new:
                            self.rows[n] = new[n]
                self.swaps += 1
                return all(self.rows.get(n) == new.get(n) for n in names)

        def read(self, names: Sequence[str]) -> tuple[Any, dict[str, Lease]]:
            with self.lock:
                found = {n: self.rows[n] for n in names if n in self.rows}
            return found, found

    store = RowByRow()
    with (
        pytest.raises(FastRefreshError, match="leased by process 2 on h"),
        Leases(Me("h", 1, "a")).holding(
            store, ["view:s.v", "log:s.l"], ttl=60, wait=0.2, purpose="p"
        ),
    ):
        pass
    assert store.rows == {"log:s.l": lease(racer, expires=FAR)}
