"""How views consume a log: usability of a log, purge plans, refresh times (pure)."""

from __future__ import annotations

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from dbt.adapters.fastrefresh.iceberg.tables import Found, TableMeta
from dbt.adapters.fastrefresh.mlog.consumers import (
    holds_everything,
    plan_purge,
    purge_order,
    usability_problem,
)
from dbt.adapters.fastrefresh.mlog.ddl import LoadedLog
from dbt.adapters.fastrefresh.protocol.decisions import ReasonCode
from dbt.adapters.fastrefresh.protocol.state import (
    Claim,
    Flavour,
    LogConfig,
    Position,
    new_log_state,
)
from dbt.adapters.fastrefresh.runtime.process import PurgeHint, Runtime
from dbt.adapters.fastrefresh.sqltext import TableName

T0 = dt.datetime(2026, 1, 1)
T1, T2, T3 = (T0 + dt.timedelta(hours=h) for h in (1, 2, 3))
V = TableName("s", "v")


def log(**changes: object) -> LoadedLog:
    config = LogConfig(
        TableName("s", "t"), TableName("s", "mlog__t"), Flavour.TIMESTAMP, ("k",), ("v",),
        ("k", "v"), False, T0, "inc",
    )  # fmt: skip
    state = new_log_state(T0, 1).replace(last_sequence=10, marked_sequence=10, **changes)
    meta = TableMeta(config.log_table, True, "iceberg", (), 5, {})
    return LoadedLog(config, state, meta, Found(state.to_json(), 5, True))


def at(sequence: int, when: dt.datetime = T1, epoch: str = "inc/1") -> Position:
    return Position(epoch, sequence, when)


def test_usability_problems_name_the_oracle_cases() -> None:
    registered = log(users={"s.v": Claim(T0, 0, T0)})
    assert usability_problem(registered, V, at(4)) is None
    assert usability_problem(log(), V, at(4)).code is ReasonCode.NOT_REGISTERED_ON_LOG  # type: ignore[union-attr]
    younger = usability_problem(registered, V, at(4, epoch="inc/0"))
    assert younger is not None and younger.code is ReasonCode.LOG_YOUNGER
    assert "ORA-12034" in str(younger)
    recreated = usability_problem(registered, V, at(4, epoch="other/1"))
    assert recreated is not None and recreated.code is ReasonCode.LOG_YOUNGER
    purged = usability_problem(log(users={"s.v": Claim(T0, 0, T0)}, purged_sequence=6), V, at(4))
    assert purged is not None and purged.code is ReasonCode.PURGED and "purge_log" in str(purged)
    # A view refreshed before the log existed and never on it (seed 004): the log is
    # younger than its last refresh; one refreshed after the log's creation is not on it.
    before = usability_problem(log(younger_than=T1), V, None, last_refresh=T0)
    assert before is not None and before.code is ReasonCode.LOG_YOUNGER
    after = usability_problem(log(younger_than=T1), V, None, last_refresh=T2)
    assert after is not None and after.code is ReasonCode.NOT_REGISTERED_ON_LOG


def test_a_purge_keeps_what_the_least_advanced_view_needs() -> None:
    users = {"s.a": Claim(T0, 0, T0), "s.b": Claim(T0, 0, T0)}
    plan = plan_purge(log(users=users), {"s.a": at(4, T1), "s.b": at(7, T2)}, T3)
    assert plan is not None and (plan.through, plan.rows, plan.doomed) == (4, 4, ())
    assert plan.state.purged_sequence == 4 and plan.state.last_purge_time == T3
    assert plan.state.oldest == T1, "oldest: the least recent refresh of a registered view"
    assert plan_purge(log(users=users, purged_sequence=4), {"s.a": at(4), "s.b": at(7)}, T3) is None


def test_an_orphan_holds_the_log_where_it_registered() -> None:
    users = {"s.a": Claim(T0, 2, T0), "s.gone": Claim(T0, 3, T0)}
    plan = plan_purge(log(users=users), {"s.a": at(9), "s.gone": None}, T3)
    assert plan is not None and plan.through == 3


def test_views_needing_a_complete_refresh_hold_nothing_back() -> None:
    users = {"s.a": Claim(T0, 0, T0), "s.old": Claim(T0, 0, T0), "s.cut": Claim(T0, 0, T0)}
    positions = {"s.a": at(8), "s.old": at(1, epoch="inc/0"), "s.cut": at(2)}
    plan = plan_purge(log(users=users, purged_sequence=3), positions, T3)
    assert plan is not None and plan.through == 8, "another epoch, or purged past: ignored"


def test_purge_log_dooms_the_views_it_does_not_keep() -> None:
    users = {"s.a": Claim(T0, 0, T0), "s.b": Claim(T0, 0, T0)}
    positions = {"s.a": at(3), "s.b": at(7)}
    plan = plan_purge(log(users=users), positions, T3, keep=["s.b"])
    assert plan is not None and plan.through == 7 and plan.doomed == ("s.a",)
    nobody = plan_purge(log(users=users), positions, T3, keep=[])
    assert nobody is not None and nobody.through == 10, "kept by none: every row goes"


positions = st.one_of(
    st.none(),
    st.builds(at, st.integers(0, 10), st.just(T1), st.sampled_from(["inc/1", "inc/0"])),
)


@given(
    st.dictionaries(
        st.sampled_from(["s.a", "s.b", "s.c"]),
        st.tuples(st.integers(0, 10), positions),
        min_size=1,
    ),
    st.integers(0, 10),
)
def test_a_view_holding_every_row_is_exactly_what_leaves_nothing_to_purge(
    views: dict[str, tuple[int, Position | None]], purged: int
) -> None:
    """``holds_everything`` (a purge's early stop after reading one view) agrees with the
    full plan: with a view holding every row no plan exists; without one, a plan exists
    unless every row was purged already (the log's last sequence is 10)."""
    loaded = log(
        users={v: Claim(T0, claim, T0) for v, (claim, _) in views.items()},
        purged_sequence=purged,
    )
    read = {v: position for v, (_, position) in views.items()}
    holding = any(holds_everything(loaded, v, p) for v, p in read.items())
    plan = plan_purge(loaded, read, T3)
    assert (plan is None) == (holding or purged == 10)


def test_a_purge_reads_the_views_likeliest_to_hold_the_log_back_first() -> None:
    users = {f"s.v{i}": Claim(T0 + dt.timedelta(minutes=i), 0, T0) for i in range(4)}
    registered = log(users=users)
    # Nothing known: the latest registered first.
    assert purge_order(registered, PurgeHint("inc/1", 0)) == ["s.v3", "s.v2", "s.v1", "s.v0"]
    # The last blocker first; the views known to have moved on last, latest registered first.
    hint = PurgeHint("inc/1", 0, blocker="s.v1", moved={"s.v3", "s.v0"})
    assert purge_order(registered, hint) == ["s.v1", "s.v2", "s.v3", "s.v0"]
    # A blocker read since as moved on goes with the moved views.
    hint = PurgeHint("inc/1", 0, blocker="s.v1", moved={"s.v1"})
    assert purge_order(registered, hint) == ["s.v3", "s.v2", "s.v0", "s.v1"]


def test_refresh_times_strictly_increase_per_log() -> None:
    runtime = Runtime()
    assert runtime.choose_time("l", T1, None) == T1
    assert runtime.choose_time("l", T1, None) == T1 + dt.timedelta(microseconds=1)
    assert runtime.choose_time("l", T0, None) == T1 + dt.timedelta(microseconds=2), (
        "a clock that steps back does not take the time back"
    )
    assert runtime.choose_time("m", T0, T2) == T2 + dt.timedelta(microseconds=1)
    assert runtime.choose_time("n", T3, T2) == T3
