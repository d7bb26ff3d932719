"""The capture statement: numbering, stamps, pairing by key (pure)."""

from __future__ import annotations

import datetime as dt

import pytest

from dbt.adapters.fastrefresh.iceberg.changes import select_list
from dbt.adapters.fastrefresh.iceberg.columns import AtSnapshot, Column, ambiguous, at_snapshot
from dbt.adapters.fastrefresh.iceberg.tables import CaptureReads, RowSource, SnapshotInfo
from dbt.adapters.fastrefresh.mlog import capture_sql
from dbt.adapters.fastrefresh.mlog.capture_sql import capture_statement
from dbt.adapters.fastrefresh.protocol.state import Flavour, LogConfig
from dbt.adapters.fastrefresh.sqltext import TableName

T0 = dt.datetime(2026, 1, 1)


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
            RowSource("SELECT k, v FROM r", {0: -1}, whole_files=True),
            RowSource("SELECT k, v FROM a", {0: 1, 1: -1}, whole_files=True),
            RowSource("SELECT k, v FROM b", {1: 1}, whole_files=True),
        ),
    )
    assert reads.carries_over
    keyed = capture_statement(_config(Flavour.TIMESTAMP, ("k",)), columns, reads, 41, T0)
    run = "'base__', 41L, 'stamp__', TIMESTAMP_NTZ'2026-01-01 00:00:00.000000'"
    commits = f"map(0, named_struct('xid__', 7L, {run}), 1, named_struct('xid__', 8L, {run}))"
    assert keyed.endswith(
        "INSERT INTO `s`.`mlog__t`\nSELECT o.`k`, o.`v`, o.c__.stamp__ AS snaptime__, "
        "o.dmltype__, o.old_new__, o.change_vector__, o.c__.base__ + row_number() OVER (ORDER "
        "BY o.ord__, o.`k`, o.half__) AS sequence__, o.c__.xid__, o.c__.base__ + 1 AS "
        f"capture__ FROM (SELECT *, element_at({commits}, ord__) AS c__ FROM o) o"
    )
    # What changes between captures is one map literal, looked up per row: Spark passes a
    # map literal to the compiled code as an object, so the code is the same. No VALUES
    # relation is joined in (a join is broadcast: one more Spark job).
    assert "VALUES" not in keyed and " JOIN " not in keyed
    assert "cast(element_at(" + commits + ", ord__).xid__ AS STRING)" in keyed
    assert "SELECT `k`, `v`, 1 AS s0__, -1 AS s1__ FROM (SELECT k, v FROM a)" in keyed
    # One shuffle, by key, serves the multiset difference and the pairing by key.
    assert (
        "sum(s0__) AS n0__, sum(s1__) AS n1__ FROM (SELECT * FROM src DISTRIBUTE BY `k`) "
        "GROUP BY `k`, `v`"
    ) in keyed
    assert "GROUP BY ord__, `k`" in keyed, "a keyed log pairs old and new images by key"
    unmarked = capture_statement(_config(Flavour.TIMESTAMP, ("k",)), columns, reads, 0)
    assert (
        "named_struct('xid__', 7L, 'base__', 0L, 'stamp__', TIMESTAMP_NTZ'4000-01-01 00:00:00')"
        in unmarked
    )
    scn = capture_statement(_config(Flavour.COMMIT_SCN, ()), columns, reads, 0)
    assert "snaptime__" not in scn and "explode(sequence(1, abs(n__)))" in scn


def _merge_on_read(summaries: list[dict[str, str]]) -> CaptureReads:
    """An UPDATE's deleted rows and added file, then a DELETE's, as the Java path stages
    them (no whole file removed)."""
    return CaptureReads(
        tuple(
            (o, SnapshotInfo(7 + o, 6 + o, "overwrite", None, s)) for o, s in enumerate(summaries)
        ),
        (
            RowSource("SELECT k, v FROM d", {0: -1, 1: -1}, by_row=True),
            RowSource("SELECT k, v FROM a", {0: 1}, whole_files=True),
        ),
    )


def test_a_merge_on_read_capture_of_few_changed_rows_pairs_them_in_one_task(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    columns = [Column("k", "bigint"), Column("v", "int")]
    counted = [
        {"total-records": "100", "added-records": "40", "added-position-deletes": "40"},
        {"total-records": "80", "added-position-deletes": "20"},  # added no row: no entry
    ]
    reads = _merge_on_read(counted)
    assert not reads.carries_over and reads.changed_rows == 100
    one_task = "FROM (SELECT /*+ REPARTITION(1) */ * FROM net) GROUP BY ord__, `k`"
    sql = capture_statement(_config(Flavour.TIMESTAMP, ("k",)), columns, reads, 0)
    assert one_task in sql and "DISTRIBUTE BY" not in sql
    # The bound is inclusive; above it, or without counts, the pairing keeps its shuffle.
    for limit, expected in ((100, True), (99, False)):
        monkeypatch.setattr(capture_sql, "ONE_TASK_ROWS", limit)
        sql = capture_statement(_config(Flavour.TIMESTAMP, ("k",)), columns, reads, 0)
        assert (one_task in sql) is expected, limit
        assert ("FROM net GROUP BY ord__, `k`" in sql) is not expected, limit
    uncounted = _merge_on_read([counted[0], {"added-position-deletes": "20"}])
    assert uncounted.changed_rows is None, "a writer that keeps no total keeps no counts"
    sql = capture_statement(_config(Flavour.TIMESTAMP, ("k",)), columns, uncounted, 0)
    assert "REPARTITION" not in sql and "FROM net GROUP BY ord__, `k`" in sql


def test_positions_a_delete_file_carries_over_are_not_counted_as_changed() -> None:
    # A file-scoped delete file repeats its data file's earlier positions and replaces the
    # delete file that held them: added 52,500 positions, 50,000 of them removed with it.
    carried = {
        "total-records": "10050000",
        "added-position-deletes": "52500",
        "removed-position-deletes": "50000",
    }
    reads = _merge_on_read([{**carried, "added-records": "5000"}, carried])
    assert reads.changed_rows == 5000 + 2500 + 2500
    sql = capture_statement(
        _config(Flavour.TIMESTAMP, ("k",)), [Column("k", "bigint"), Column("v", "int")], reads, 0
    )
    assert "FROM (SELECT /*+ REPARTITION(1) */ * FROM net)" in sql
    # Never a negative count, whatever a writer records.
    merged = {**carried, "removed-position-deletes": "60000"}
    assert _merge_on_read([merged]).changed_rows == 0


def test_rows_carried_over_are_not_counted_as_changed() -> None:
    # Copy-on-write: a rewritten file's rows are read whole, however few changed.
    reads = CaptureReads(
        ((0, SnapshotInfo(7, 6, "overwrite", None, {"total-records": "9", "added-records": "9"})),),
        (
            RowSource("SELECT k, v FROM r", {0: -1}, whole_files=True),
            RowSource("SELECT k, v FROM a", {0: 1}, whole_files=True),
        ),
    )
    assert reads.carries_over and reads.changed_rows is None
    sql = capture_statement(
        _config(Flavour.TIMESTAMP, ("k",)), [Column("k", "bigint"), Column("v", "int")], reads, 0
    )
    assert "REPARTITION" not in sql


def test_a_capture_of_appends_only_nets_nothing() -> None:
    columns = [Column("k", "bigint"), Column("v", "int")]
    reads = CaptureReads(
        ((0, SnapshotInfo(7, 6, "append", None)),), (RowSource("SELECT k, v FROM a", {0: 1}),)
    )
    sql = capture_statement(_config(Flavour.TIMESTAMP, ("k",)), columns, reads, 0)
    assert "GROUP BY" not in sql.split("o AS", 1)[0], "inserts need no netting, nor pairing"
    assert "SELECT 0 AS ord__, `k`, `v`, 1 AS n__ FROM (SELECT k, v FROM a)" in sql


def test_rows_one_read_serves_for_several_commits_count_for_the_commit_they_name() -> None:
    columns = [Column("k", "bigint"), Column("v", "int")]
    # Commits 7 and 8 both deleted positions of one data file, read once: each row
    # carries the ordinal of the commit that deleted it, and counts for that one only.
    reads = CaptureReads(
        ((0, SnapshotInfo(7, 6, "overwrite", None)), (1, SnapshotInfo(8, 7, "delete", None))),
        (
            RowSource("SELECT k, v, ord__ FROM d", {0: -1, 1: -1}, by_row=True),
            RowSource("SELECT k, v FROM a", {0: 1}),
        ),
    )
    sql = capture_statement(_config(Flavour.TIMESTAMP, ("k",)), columns, reads, 0)
    assert (
        "SELECT `k`, `v`, IF(r__.ord__ = 0, -1, 0) AS s0__, IF(r__.ord__ = 1, -1, 0) AS s1__ "
        "FROM (SELECT k, v, ord__ FROM d) r__"
    ) in sql
    assert "SELECT `k`, `v`, 1 AS s0__, 0 AS s1__ FROM (SELECT k, v FROM a) r__" in sql


def _rewrites(rows: int | None) -> CaptureReads:
    """One copy-on-write commit that rewrote file r as a, ``rows`` rows read in all."""
    return CaptureReads(
        ((0, SnapshotInfo(7, 6, "overwrite", None)),),
        (
            RowSource("SELECT k, v, s FROM r", {0: -1}, whole_files=True),
            RowSource("SELECT k, v, s FROM a", {0: 1}, whole_files=True),
        ),
        rows,
    )


def test_the_multiset_difference_gets_a_partition_per_128_mb_of_rows_beyond_the_sessions() -> None:
    # k, v, s and one commit's sign: 4 fields of 8 bytes, the null bits' word, and the
    # string's bytes counted as 24: 64 bytes a row, so 2,097,152 rows a partition.
    columns = [Column("k", "bigint"), Column("v", "decimal(12,2)"), Column("s", "string")]
    per_partition = capture_sql.PARTITION_BYTES // 64
    assert per_partition == 2_097_152
    partitions = capture_sql.netting_partitions
    assert partitions(_rewrites(4 * per_partition), columns, 4) is None, "the session's 4 do"
    assert partitions(_rewrites(4 * per_partition + 1), columns, 4) == 5
    assert partitions(_rewrites(100_000_000), columns, 4) == 48
    assert partitions(_rewrites(100_000_000), columns, 200) is None, "never fewer"
    assert partitions(_rewrites(None), columns, 4) is None, "rows not known: the session's"
    assert partitions(_rewrites(100_000_000), columns, None) is None, "session not known"
    # A decimal above 18 digits is not a long in Spark's rows: counted like a string.
    wide = [Column("k", "bigint"), Column("v", "decimal(38,2)"), Column("s", "string")]
    assert partitions(_rewrites(100_000_000), wide, 4) == 66  # 88 bytes a row


@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "keyless"])
def test_many_rows_rewritten_are_netted_over_more_partitions_in_one_shuffle(keyed: bool) -> None:
    columns = [Column("k", "bigint"), Column("v", "int"), Column("s", "string")]
    config = _config(Flavour.TIMESTAMP, ("k",) if keyed else ())
    sql = capture_statement(config, columns, _rewrites(100_000_000), 0, session_partitions=4)
    by = "`k`" if keyed else "`k`, `v`, `s`"  # a key-less log: as its aggregation groups
    assert (
        f"sum(s0__) AS n0__ FROM (SELECT /*+ REPARTITION(48, {by}) */ * FROM src) "
        "GROUP BY `k`, `v`, `s`"
    ) in sql
    assert "DISTRIBUTE BY" not in sql
    few = capture_statement(config, columns, _rewrites(1_000_000), 0, session_partitions=4)
    assert "REPARTITION(" not in few, "the session's partitions suffice"
    assert ("FROM (SELECT * FROM src DISTRIBUTE BY `k`)" in few) is keyed


def test_without_copy_on_write_rewrites_rows_pair_by_key_at_once() -> None:
    columns = [Column("k", "bigint"), Column("v", "int")]
    # Merge-on-read: commit 7 deleted rows of d by position and added a; no whole data
    # file was removed, so nothing is carried over and the multiset difference is skipped.
    reads = CaptureReads(
        ((0, SnapshotInfo(7, 6, "overwrite", None)),),
        (
            RowSource("SELECT k, v FROM d", {0: -1}),
            RowSource("SELECT k, v FROM a", {0: 1}, whole_files=True),
        ),
    )
    assert not reads.carries_over, "a whole file added is no rewrite"
    keyed = capture_statement(_config(Flavour.TIMESTAMP, ("k",)), columns, reads, 0)
    assert "GROUP BY `k`, `v`" not in keyed, "no multiset difference"
    assert (
        "net AS (SELECT e__.ord__, src.`k`, src.`v`, e__.n__ FROM src LATERAL VIEW "
        "inline(filter(array(named_struct('ord__', 0, 'n__', s0__)), x__ -> x__.n__ <> 0)) e__)"
    ) in keyed
    assert "GROUP BY ord__, `k`" in keyed
    # An update that changed nothing leaves two equal images: they cancel in the pairing.
    assert "WHERE NOT (nold__ = 1 AND nnew__ = 1 AND o__ <=> w__) AND" in keyed
    # A key-less log has no pairing to cancel them in: it still nets.
    keyless = capture_statement(_config(Flavour.COMMIT_SCN, ()), columns, reads, 0)
    assert "FROM src GROUP BY `k`, `v`" in keyless, "no pairing by key: no distribution by key"


def test_a_snapshot_older_than_some_columns_is_read_with_them_as_null() -> None:
    columns = [Column("k", "bigint"), Column("v", "decimal(10,2)")]
    assert select_list(columns) == "`k`, `v`"
    at = AtSnapshot(absent=frozenset({"v"}))
    assert select_list(columns, at) == "`k`, CAST(NULL AS decimal(10,2)) AS `v`"
    # Renamed since (read by its old name), promoted since (cast to the type it has now).
    at = AtSnapshot(renamed={"v": "old_v"}, retyped=frozenset({"k"}))
    assert select_list(columns, at) == "CAST(`k` AS bigint) AS `k`, `old_v` AS `v`"
    assert at.differs == {"k", "v"}


def test_a_snapshots_schema_is_matched_to_the_current_one_by_field_id() -> None:
    """With field ids: a rename, a drop and an add under the old name, an added column
    and a promotion are each told apart; by name alone only additions and promotions."""
    then = [Column("k", "bigint", 1), Column("x", "int", 2), Column("y", "int", 3)]
    now = [Column("k", "bigint", 1), Column("x2", "bigint", 2), Column("y", "int", 5),
           Column("z", "string", 6)]  # fmt: skip
    assert at_snapshot(now, then) == AtSnapshot(
        absent=frozenset({"y", "z"}), renamed={"x2": "x"}, retyped=frozenset({"x2"})
    )
    assert at_snapshot(then, then) is None
    # A struct that gained a field is read as it was there: Spark casts no struct to one
    # with more fields.
    nested = [Column("s", "struct<a:int>", 7)]
    assert at_snapshot([Column("s", "struct<a:int,b:int>", 7)], nested) is None
    # The SQL path without ids: y looks unchanged, and x gone with x2 new is ambiguous.
    plain = [Column(c.name, c.type) for c in now]
    assert ambiguous(plain, [Column(c.name, c.type) for c in then])
    assert not ambiguous([*then, Column("z", "string")], then)  # an ADD COLUMN alone
    assert at_snapshot([*then, Column("z", "string")], then) == AtSnapshot(absent=frozenset({"z"}))
