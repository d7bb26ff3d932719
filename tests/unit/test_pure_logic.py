"""Pure pieces of capture and the protocol: vectors, pruning, times, decisions."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from dbt.adapters.fastrefresh import changevector as cv
from dbt.adapters.fastrefresh.admin import doomed_views
from dbt.adapters.fastrefresh.capture import (
    MAX_PRUNE_FILES,
    Bounds,
    CaptureResult,
    DataFile,
    prune_predicate,
)
from dbt.adapters.fastrefresh.logsite import Setup, _with_claim, refresh_time, usability_problem
from dbt.adapters.fastrefresh.master import Snapshot, chain_after
from dbt.adapters.fastrefresh.registry import LogInfo, LogUser
from dbt.adapters.fastrefresh.sqltext import TableName, literal

T0 = dt.datetime(2026, 1, 1)


def test_change_vectors_follow_the_seed_encoding() -> None:
    # Seed 004: insert FE, delete 00, key-update insert FF, update of the 2nd column 04.
    assert cv.insert_vector(2).hex() == "fe"
    assert cv.delete_vector(2).hex() == "00"
    assert cv.key_update_vector(2).hex() == "ff"
    assert cv.update_vector([2], 2).hex() == "04"
    assert cv.update_vector([1], 2).hex() == "02"
    assert cv.update_vector([3, 5], 5).hex() == "28"
    # More than 8 columns: extra bytes, little-endian (11th and 17th → 00 08 02).
    assert cv.update_vector([11, 17], 17).hex() == "000802"
    assert cv.insert_vector(9).hex() == "feff"
    assert cv.changed_columns(bytes.fromhex("000802")) == [11, 17]
    with pytest.raises(ValueError):
        cv.update_vector([3], 2)


def test_touches_sql_tests_the_right_bytes() -> None:
    sql = cv.sql_touches("v", [2, 11], 17)
    assert "substring(v, 1, 1)" in sql and "& 4" in sql
    assert "substring(v, 2, 1)" in sql and "& 8" in sql
    assert cv.sql_touches("v", [], 3) == "FALSE"


def bounds(lo: str | None, hi: str | None, nulls: bool = False) -> Bounds:
    return Bounds("k", "bigint", lo, hi, nulls, lo is None and hi is None and nulls)


def test_prune_predicate_covers_each_file_and_keeps_nulls() -> None:
    files = [DataFile("a", (bounds("1", "9"),)), DataFile("b", (bounds("20", "30", nulls=True),))]
    sql = prune_predicate(files)
    assert "`k` BETWEEN CAST('1' AS bigint) AND CAST('9' AS bigint)" in sql
    assert "(`k` IS NULL OR `k` BETWEEN CAST('20' AS bigint) AND CAST('30' AS bigint))" in sql
    assert prune_predicate([]) == "FALSE"
    assert prune_predicate([DataFile("c", ())]) == "TRUE", "no bounds: read everything"


def test_prune_predicate_collapses_many_files_to_an_envelope() -> None:
    files = [DataFile(str(i), (bounds(str(i), str(i + 5)),)) for i in range(100)]
    envelope = "((`k` BETWEEN CAST('0' AS bigint) AND CAST('104' AS bigint)))"
    assert prune_predicate(files) == envelope
    assert prune_predicate(files, table_files=1_000) == envelope
    assert prune_predicate(files[:MAX_PRUNE_FILES]).count(" OR ") == MAX_PRUNE_FILES - 1
    assert prune_predicate(files[: MAX_PRUNE_FILES + 1]) == (
        "((`k` BETWEEN CAST('0' AS bigint) AND CAST('13' AS bigint)))"
    )


def test_prune_predicate_is_dropped_when_the_files_are_half_the_table() -> None:
    # Spark evaluates the predicate on every row it reads; pruning a table whose files
    # are half touched could spare at most half the scan.
    files = [DataFile(str(i), (bounds(str(10 * i), str(10 * i + 9)),)) for i in range(3)]
    assert prune_predicate(files, table_files=6) == "TRUE"
    assert prune_predicate(files, table_files=3) == "TRUE"
    per_file = prune_predicate(files, table_files=7)
    assert per_file == prune_predicate(files) and per_file.count(" OR ") == 2
    assert prune_predicate([], table_files=1) == "FALSE"


def test_chain_after_finds_the_new_commits_or_the_gap() -> None:
    s = {i: Snapshot(i, i - 1 if i > 1 else None, "append", T0) for i in range(1, 5)}
    assert [x.snapshot_id for x in chain_after(s, 4, 2).snapshots] == [3, 4]
    assert [x.snapshot_id for x in chain_after(s, 4, None).snapshots] == [1, 2, 3, 4]
    assert chain_after(s, 4, 4).snapshots == ()
    assert "not an ancestor" in (chain_after(s, 4, 99).gap or "")
    del s[2]
    assert "expired" in (chain_after(s, 4, 1).gap or "")
    assert "dropped and recreated" in (chain_after({}, None, 3).gap or "")


def test_refresh_time_is_strictly_after_the_youngest() -> None:
    assert refresh_time(T0, None) == T0
    assert refresh_time(T0, T0 - dt.timedelta(seconds=1)) == T0
    assert refresh_time(T0, T0) > T0
    assert refresh_time(T0, T0 + dt.timedelta(hours=1)) == T0 + dt.timedelta(
        hours=1, microseconds=1
    )


def log(**changes: object) -> LogInfo:
    values: dict[str, object] = dict(
        master=TableName("s", "t"), log_table=TableName("s", "mlog__t"), flavour="TIMESTAMP",
        key_columns=("k",), logged_columns=("v",), master_columns=("k", "v"), keyless=False,
        created=T0, oldest=T0, youngest=T0, last_purge_time=None, last_purge_rows=0,
        captured_through=1, captured_at=T0, last_sequence=0, marked_sequence=0,
        purged_through=None, purged_sequence=0, younger_than=T0, younger_reason="log created",
    )  # fmt: skip
    values.update(changes)
    return LogInfo(**values)  # type: ignore[arg-type]


def user(last: dt.datetime, sequence: int = 0) -> LogUser:
    return LogUser(
        TableName("s", "mlog__t"), TableName("s", "t"), TableName("s", "v"), T0, last, sequence, 1
    )


def test_usability_problems_name_the_oracle_cases() -> None:
    later = T0 + dt.timedelta(hours=1)
    assert usability_problem(log(), user(later), None) is None
    assert "not registered" in (usability_problem(log(), None, None) or "")
    younger = usability_problem(log(younger_than=later), user(T0), None) or ""
    assert "younger" in younger and "ORA-12034" in younger
    assert "purge_log" in (usability_problem(log(purged_through=later), user(T0), None) or "")
    scn = log(flavour="COMMIT_SCN", purged_sequence=10)
    assert "purge_log" in (usability_problem(scn, user(later, sequence=5), None) or "")
    assert usability_problem(scn, user(later, sequence=10), None) is None


def test_wrap_up_keeps_the_users_it_read_with_the_views_claim_written() -> None:
    """The purge after a wrap-up plans with the users read before its write, updated as
    that write updates the table: the view's row moved on, added, or left gone."""
    later = T0 + dt.timedelta(hours=1)
    other = dataclasses.replace(user(T0, 3), mview=TableName("s", "other"))
    mine = user(T0, 5)
    captured = CaptureResult(TableName("s", "t"), TableName("s", "mlog__t"), 1, 2, 1, 0, 0.0)

    def done(registered: LogUser | None) -> Setup:
        return Setup(log(), TableName("s", "v"), later, 7, registered, 9, captured, None)

    moved = _with_claim([other, mine], log(), done(mine))
    assert moved == [other, dataclasses.replace(mine, last_refresh=later, last_sequence=9,
                                                master_snapshot=7)]  # fmt: skip
    added = _with_claim([other], log(), done(None))
    assert added[0] == other and len(added) == 2
    assert (added[1].mview, added[1].registered_at, added[1].last_sequence) == (
        TableName("s", "v"), later, 9,
    )  # fmt: skip
    # Released meanwhile (purge_mview_from_log): the UPDATE finds no row, nor does this.
    assert _with_claim([other], log(), done(mine)) == [other]


def test_doomed_views_are_those_behind_the_purge() -> None:
    later = T0 + dt.timedelta(hours=1)
    users = [user(T0), user(later)]
    assert doomed_views(log(purged_through=later), users) == ["s.v"]
    assert doomed_views(log(purged_through=T0), users) == []


@pytest.mark.parametrize(
    ("value", "sql"),
    [
        (None, "NULL"), (True, "TRUE"), (7, "7"), (2**40, "1099511627776L"), (1.5, "1.5D"),
        ("it's", "'it\\'s'"), (b"\xfe", "X'FE'"), (dt.date(2026, 1, 2), "DATE'2026-01-02'"),
        (dt.datetime(2026, 1, 2, 3, 4, 5, 6), "TIMESTAMP_NTZ'2026-01-02 03:04:05.000006'"),
    ],
)  # fmt: skip
def test_literals(value: object, sql: str) -> None:
    assert literal(value) == sql


def test_table_names_parse_and_refuse_clearly() -> None:
    assert TableName.parse("Shop.Orders") == TableName("shop", "orders")
    assert TableName.parse("`spark_catalog`.`shop`.`orders`") == TableName("shop", "orders")
    assert TableName.parse("orders", default_schema="shop") == TableName("shop", "orders")
    from dbt.adapters.fastrefresh.errors import FastRefreshError

    with pytest.raises(FastRefreshError, match="not a table name"):
        TableName.parse("a.b.c.d")


def test_decide_orders_the_fallback_reasons() -> None:
    from dbt.adapters.fastrefresh.ivm.analysis import analyze
    from dbt.adapters.fastrefresh.master import Column
    from dbt.adapters.fastrefresh.refresh import MasterState, decide
    from dbt.adapters.fastrefresh.registry import MviewInfo

    name = TableName("s", "t")
    columns = [Column("k", "bigint"), Column("v", "int")]
    plan = analyze("select k, v from s.t", {name: columns}, {name: ["k"]})
    masters = [MasterState(name, columns, log())]
    row = MviewInfo(TableName("s", "v"), plan.query_hash, "force", (name,), "projection",
                    "FAST", T0, "FRESH", None, 42, {}, "h")  # fmt: skip
    assert decide("force", False, True, plan, row, masters, "h", 42) == (None, True)
    assert decide("complete", False, True, plan, row, masters, "h", 42)[1] is True
    assert decide("fast", True, True, plan, row, masters, "h", 42) == ("--full-refresh", True)
    assert decide("fast", False, False, plan, row, masters, "h", 42) == ("first build", True)
    assert "not registered" in str(decide("fast", False, True, plan, None, masters, "h", 42)[0])
    changed = analyze("select k from s.t", {name: columns}, {name: ["k"]})
    assert (
        decide("fast", False, True, changed, row, masters, "h", 42)[0]
        == "the view's definition changed"
    )
    assert "columns changed" in str(decide("fast", False, True, plan, row, masters, "other", 42)[0])
    assert "did not finish" in str(decide("fast", False, True, plan, row, masters, "h", 43)[0])
    no_log = [MasterState(name, columns, None)]
    reason, expected = decide("fast", False, True, plan, row, no_log, "h", 42)
    assert "has no materialized view log" in str(reason) and expected is False


def test_an_unknown_refresh_method_is_refused_before_any_statement() -> None:
    from dbt.adapters.fastrefresh.errors import FastRefreshError
    from dbt.adapters.fastrefresh.refresh import refresh_mviews

    class NoStatements:
        def execute(self, sql: str) -> None:
            raise AssertionError(f"no statement may run: {sql}")

        def query(self, sql: str) -> list[tuple[object, ...]]:
            raise AssertionError(f"no statement may run: {sql}")

    with pytest.raises(FastRefreshError, match=r"method must be one of.*got 'fats'.*Fix: "):
        refresh_mviews(NoStatements(), None, ["s.v"], "fats", lambda: T0)  # type: ignore[arg-type]


def test_upkeep_expires_every_nth_commit_of_each_table(monkeypatch: pytest.MonkeyPatch) -> None:
    from dbt.adapters.fastrefresh import upkeep

    monkeypatch.setattr(upkeep, "EVERY", 3)
    monkeypatch.setattr(upkeep, "_COMMITS", {})
    a, b = TableName("s", "a"), TableName("s", "b")
    assert [upkeep.due(a) for _ in range(7)] == [False, False, True, False, False, True, False]
    assert [upkeep.due(b) for _ in range(3)] == [False, False, True], "each table counts alone"
    upkeep.forget(a)
    assert [upkeep.due(a) for _ in range(3)] == [False, False, True], "a dropped table restarts"
    with upkeep.reading([b, b]):
        assert [upkeep.due(b) for _ in range(5)] == [False] * 5, "not while being read"
        with upkeep.reading([a]):
            pass
        assert upkeep.due(a) is False
    assert upkeep.due(b) is True, "due at the first commit after the reads end"
    assert upkeep.due(b) is False


def test_upkeep_expiry_statement_keeps_the_young_and_the_last() -> None:
    from dbt.adapters.fastrefresh.upkeep import expire_sql

    sql = expire_sql(TableName("reg", "mviews"), dt.datetime(2026, 1, 2, 3, 4, 5, 6), 10)
    assert sql == (
        "CALL system.expire_snapshots(table => 'reg.mviews', "
        "older_than => TIMESTAMP'2026-01-02 03:04:05.000006+00:00', retain_last => 10)"
    )
