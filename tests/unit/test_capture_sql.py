"""Capture's SQL path pruning predicates and its statement (pure)."""

from __future__ import annotations

import datetime as dt

from dbt.adapters.fastrefresh.capture_sql import (
    MAX_PRUNE_FILES,
    Bounds,
    DataFile,
    capture_statement,
    prune_predicate,
)
from dbt.adapters.fastrefresh.master import Column
from dbt.adapters.fastrefresh.sqltext import TableName
from dbt.adapters.fastrefresh.state import Flavour, LogConfig
from dbt.adapters.fastrefresh.tables import CaptureReads, RowSource, SnapshotInfo

T0 = dt.datetime(2026, 1, 1)


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


def _config(flavour: Flavour, key: tuple[str, ...]) -> LogConfig:
    return LogConfig(
        TableName("s", "t"), TableName("s", "mlog__t"), flavour, key, ("v",), ("k", "v"),
        not key, T0, "abc",
    )  # fmt: skip


def test_capture_statement_numbers_stamps_and_pairs() -> None:
    columns = [Column("k", "bigint"), Column("v", "int")]
    # Commit 7 rewrote file r as a; commit 8 rewrote a as b: a is read once, for both.
    reads = CaptureReads(
        ((0, SnapshotInfo(7, 6, "overwrite", None)), (1, SnapshotInfo(8, 7, "overwrite", None))),
        (
            RowSource("SELECT k, v FROM r", {0: -1}),
            RowSource("SELECT k, v FROM a", {0: 1, 1: -1}),
            RowSource("SELECT k, v FROM b", {1: 1}),
        ),
    )
    keyed = capture_statement(_config(Flavour.TIMESTAMP, ("k",)), columns, reads, 41, T0)
    assert keyed.endswith(
        "INSERT INTO `s`.`mlog__t`\nSELECT o.`k`, o.`v`, run__.stamp__ AS snaptime__, "
        "o.dmltype__, o.old_new__, o.change_vector__, run__.base__ + row_number() OVER (ORDER "
        "BY o.ord__, o.`k`, o.half__) AS sequence__, commits__.xid__, run__.base__ + 1 AS "
        "capture__ FROM o JOIN commits__ ON o.ord__ = commits__.ord__ CROSS JOIN run__"
    )
    # What changes between captures is data (VALUES), not literals in the query's code.
    assert "VALUES (0, 7L), (1, 8L) AS c__(ord__, xid__)" in keyed
    assert "VALUES (41L, TIMESTAMP_NTZ'2026-01-01 00:00:00.000000') AS r__" in keyed
    assert "SELECT `k`, `v`, 1 AS s0__, -1 AS s1__ FROM (SELECT k, v FROM a)" in keyed
    assert "sum(s0__) AS n0__, sum(s1__) AS n1__ FROM src GROUP BY `k`, `v`" in keyed
    assert "GROUP BY ord__, `k`" in keyed, "a keyed log pairs old and new images by key"
    unmarked = capture_statement(_config(Flavour.TIMESTAMP, ("k",)), columns, reads, 0)
    assert "VALUES (0L, TIMESTAMP_NTZ'4000-01-01 00:00:00')" in unmarked
    scn = capture_statement(_config(Flavour.COMMIT_SCN, ()), columns, reads, 0)
    assert "snaptime__" not in scn and "explode(sequence(1, abs(n__)))" in scn


def test_a_capture_of_appends_only_nets_nothing() -> None:
    columns = [Column("k", "bigint"), Column("v", "int")]
    reads = CaptureReads(
        ((0, SnapshotInfo(7, 6, "append", None)),), (RowSource("SELECT k, v FROM a", {0: 1}),)
    )
    sql = capture_statement(_config(Flavour.TIMESTAMP, ("k",)), columns, reads, 0)
    assert "GROUP BY" not in sql.split("o AS", 1)[0], "inserts need no netting, nor pairing"
    assert "SELECT 0 AS ord__, `k`, `v`, 1 AS n__ FROM (SELECT k, v FROM a)" in sql
