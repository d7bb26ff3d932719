"""Upkeep of our own tables: when snapshots are expired, and the statement that does it."""

from __future__ import annotations

import datetime as dt

import pytest

from dbt.adapters.fastrefresh.runtime.process import Runtime
from dbt.adapters.fastrefresh.sqltext import TableName

T0 = dt.datetime(2026, 1, 1)
T1, T2, T3 = (T0 + dt.timedelta(hours=h) for h in (1, 2, 3))
V = TableName("s", "v")


def test_upkeep_expires_every_nth_commit_of_each_table(monkeypatch: pytest.MonkeyPatch) -> None:
    from dbt.adapters.fastrefresh.protocol import upkeep

    monkeypatch.setattr(upkeep, "EVERY", 3)
    runtime = Runtime()
    a, b = TableName("s", "a"), TableName("s", "b")
    assert [upkeep.due(runtime, a) for _ in range(7)] == [
        False,
        False,
        True,
        False,
        False,
        True,
        False,
    ]
    assert [upkeep.due(runtime, b) for _ in range(3)] == [False, False, True], "each table alone"
    with upkeep.reading(runtime, [b, b]):
        assert [upkeep.due(runtime, b) for _ in range(5)] == [False] * 5, "not while being read"
        with upkeep.reading(runtime, [a]):
            pass
        assert upkeep.due(runtime, a) is False
    assert upkeep.due(runtime, b) is True, "due at the first commit after the reads end"
    assert upkeep.due(runtime, b) is False


def test_a_process_starts_each_count_at_a_random_point_of_the_cycle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A process whose count starts at the cycle's last commit expires at its first: over
    many one-commit processes, about one in ``EVERY`` does."""
    import random

    from dbt.adapters.fastrefresh.protocol import upkeep
    from tests.conftest import RANDOM_START

    monkeypatch.setattr(upkeep, "start", RANDOM_START)
    monkeypatch.setattr(upkeep, "_random", random.Random(5))
    monkeypatch.setattr(upkeep, "EVERY", 4)
    starts = {upkeep.start(4) for _ in range(200)}
    assert starts == {0, 1, 2, 3}
    expired = sum(upkeep.due(Runtime(), V) for _ in range(4000))
    assert 850 < expired < 1150, expired  # 1000 expected; the seed fixes the draw
    monkeypatch.setattr(upkeep, "start", lambda every: every - 1)
    assert upkeep.due(Runtime(), V) is True


def test_upkeep_expiry_statement_keeps_the_young_and_the_last() -> None:
    from dbt.adapters.fastrefresh.sqltext import expire_sql

    sql = expire_sql(TableName("reg", "registry"), dt.datetime(2026, 1, 2, 3, 4, 5, 6), 10)
    assert sql == (
        "CALL system.expire_snapshots(table => 'reg.registry', "
        "older_than => TIMESTAMP'2026-01-02 03:04:05.000006+00:00', retain_last => 10)"
    )


def test_the_registry_packing_statement_names_the_table() -> None:
    from dbt.adapters.fastrefresh.sqltext import pack_sql

    assert pack_sql(TableName("reg", "registry")) == (
        "CALL system.rewrite_data_files(table => 'reg.registry')"
    )
