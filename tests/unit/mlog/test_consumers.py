"""The protocol's pure decisions: usability of a log, purge plans, refresh times, the
fallback reasons, upkeep counting."""

from __future__ import annotations

import datetime as dt

import pytest

from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.iceberg.tables import Found, TableMeta
from dbt.adapters.fastrefresh.mlog.consumers import plan_purge, usability_problem
from dbt.adapters.fastrefresh.mlog.ddl import LoadedLog
from dbt.adapters.fastrefresh.protocol.decisions import ReasonCode
from dbt.adapters.fastrefresh.protocol.env import Env
from dbt.adapters.fastrefresh.protocol.state import (
    Claim,
    Flavour,
    LogConfig,
    Position,
    new_log_state,
)
from dbt.adapters.fastrefresh.runtime.process import Runtime
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


def test_refresh_times_strictly_increase_per_log() -> None:
    runtime = Runtime()
    assert runtime.choose_time("l", T1, None) == T1
    assert runtime.choose_time("l", T1, None) == T1 + dt.timedelta(microseconds=1)
    assert runtime.choose_time("l", T0, None) == T1 + dt.timedelta(microseconds=2), (
        "a clock that steps back does not take the time back"
    )
    assert runtime.choose_time("m", T0, T2) == T2 + dt.timedelta(microseconds=1)
    assert runtime.choose_time("n", T3, T2) == T3


def test_decide_orders_the_fallback_reasons() -> None:
    from dbt.adapters.fastrefresh.engine.refresh import MasterState, ViewRecord, decide
    from dbt.adapters.fastrefresh.iceberg.columns import Column
    from dbt.adapters.fastrefresh.iceberg.tables import SnapshotInfo
    from dbt.adapters.fastrefresh.ivm.analysis import analyze
    from dbt.adapters.fastrefresh.protocol.state import ViewConfig, ViewState

    name = TableName("s", "t")
    columns = (Column("k", "bigint"), Column("v", "int"))
    plan = analyze("select k, v from s.t", {name: list(columns)}, {name: ["k"]})
    masters = [MasterState(TableMeta(name, True, "iceberg", columns, 3, {}), log())]
    config = ViewConfig(plan.sql, plan.query_hash, "h", "projection", (name,), "", T0)
    state = ViewState("force", "FAST", T1, None)
    meta = TableMeta(V, True, "iceberg", (), 42, {})
    view = ViewRecord(meta, config, state, Found("{}", 42, True))

    def code(**kw: object) -> ReasonCode | None:
        args = {"method": "fast", "full_refresh": False, "view": view, "plan": plan,
                "masters": masters, "columns_hash": "h", **kw}  # fmt: skip
        reason = decide(**args)  # type: ignore[arg-type]
        return None if reason is None else reason.code

    assert code() is None
    assert code(method="complete") is ReasonCode.METHOD_COMPLETE
    assert code(full_refresh=True) is ReasonCode.FULL_REFRESH
    assert code(view=None) is ReasonCode.FIRST_BUILD
    unregistered = ViewRecord(meta, None, state, view.found)
    assert code(view=unregistered) is ReasonCode.NOT_REGISTERED
    changed = analyze("select k from s.t", {name: list(columns)}, {name: ["k"]})
    assert code(plan=changed) is ReasonCode.DEFINITION_CHANGED
    assert code(columns_hash="other") is ReasonCode.MASTER_COLUMNS_CHANGED
    written = Found("{}", 41, True, (SnapshotInfo(42, 41, "overwrite", None),))
    assert code(view=ViewRecord(meta, config, state, written)) is ReasonCode.UNFINISHED
    compacted = Found("{}", 41, True, (SnapshotInfo(42, 41, "replace", None),))
    assert code(view=ViewRecord(meta, config, state, compacted)) is None, "compaction is no change"
    no_log = [MasterState(masters[0].meta, None)]
    assert code(masters=no_log) is ReasonCode.NO_LOG


def test_an_unknown_refresh_method_is_refused_before_any_statement() -> None:
    from dbt.adapters.fastrefresh.engine.inspection import refresh_mviews

    class NoStatements:
        kind = "sql"

        def __getattr__(self, name: str) -> object:
            raise AssertionError(f"nothing may be read or written: {name}")

    env = Env(NoStatements(), NoStatements(), "reg")  # type: ignore[arg-type]
    with pytest.raises(FastRefreshError, match=r"method must be one of.*got 'fats'.*Fix: "):
        refresh_mviews(env, ["s.v"], "fats")


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


def test_upkeep_expiry_statement_keeps_the_young_and_the_last() -> None:
    from dbt.adapters.fastrefresh.protocol.upkeep import expire_sql

    sql = expire_sql(TableName("reg", "registry"), dt.datetime(2026, 1, 2, 3, 4, 5, 6), 10)
    assert sql == (
        "CALL system.expire_snapshots(table => 'reg.registry', "
        "older_than => TIMESTAMP'2026-01-02 03:04:05.000006+00:00', retain_last => 10)"
    )


def test_every_reason_code_renders_a_fix_naming_its_objects() -> None:
    """Each code's fix is a format string: it must render (a stray brace is a crash in the
    error path) and keep no placeholder unfilled."""
    from dbt.adapters.fastrefresh.protocol.decisions import Reason, ReasonCode

    for code in ReasonCode:
        fix = Reason(code, "detail").fix(master="db.t")
        assert fix and "{master}" not in fix, code
    no_log = Reason(ReasonCode.NO_LOG, "d").fix(master="db.t")
    assert "{master: 'db.t'}" in no_log
    keyed = Reason(ReasonCode.NO_KEYED_LOG, "d").fix(master="db.t")
    assert "{master: '<table>', key: ['<key column>']}" in keyed
