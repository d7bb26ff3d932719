"""The SQL path's capture reads: pruning predicates from data files' bounds, and where the
commits' files are read from (pure)."""

from __future__ import annotations

from dbt.adapters.fastrefresh.iceberg.changes import (
    MAX_PRUNE_FILES,
    Bounds,
    DataFile,
    entries_at_commits,
    prune_predicate,
)
from dbt.adapters.fastrefresh.iceberg.tables import SnapshotInfo


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


def test_timestamp_bounds_are_microseconds_whatever_the_session_time_zone() -> None:
    # As text, a timestamp bound is local to the session's time zone and ambiguous in the
    # hour a daylight-saving change repeats; as microseconds it is exact.
    def file(lo: int, hi: int) -> DataFile:
        return DataFile(str(lo), (Bounds("ts", "timestamp", str(lo), str(hi), False, False),))

    sql = prune_predicate([file(999, 1_000)])
    assert sql == "((`ts` BETWEEN timestamp_micros(999) AND timestamp_micros(1000)))"
    # The envelope orders them as numbers (as text, '999' > '1000').
    many = [file(999, 1_000), *(file(10**6 + i, 10**6 + i) for i in range(MAX_PRUNE_FILES))]
    assert prune_predicate(many) == (
        "((`ts` BETWEEN timestamp_micros(999) AND timestamp_micros(1000007)))"
    )


def commit(files: int, deletes: int | None = 0, removed: int = 0) -> SnapshotInfo:
    summary = {"total-data-files": str(files), "deleted-data-files": str(removed)}
    if deletes is not None:
        summary["total-delete-files"] = str(deletes)
    return SnapshotInfo(1, 0, "overwrite", None, summary)


def test_one_commit_is_read_at_its_snapshot_whatever_the_table() -> None:
    assert entries_at_commits([commit(5_000, 900, 3)], history_size=2)
    assert entries_at_commits([commit(1, None)], history_size=1), "no count is needed"
    assert not entries_at_commits([commit(1)], history_size=None), "history not known"


def test_several_commits_are_read_at_their_snapshots_while_their_bound_is_the_history() -> None:
    # Each commit's read is bounded by 1 + its data and delete files + the files it removed.
    few = [commit(1, 0, 1)] * 3  # 3 a commit
    assert entries_at_commits(few, history_size=9)
    assert not entries_at_commits(few, history_size=8)
    assert not entries_at_commits([commit(40, 20), commit(41, 21)], history_size=100)
    assert entries_at_commits([commit(40, 20), commit(41, 21)], history_size=124)
    assert not entries_at_commits([commit(1), commit(1, None)], history_size=1_000), (
        "a summary without the counts (another writer): all_entries"
    )
