"""When a capture warns that its master rewrites whole files (``capture.rewrite_note``, pure)."""

from __future__ import annotations

from dbt.adapters.fastrefresh.iceberg.tables import SnapshotInfo
from dbt.adapters.fastrefresh.mlog import capture
from dbt.adapters.fastrefresh.sqltext import TableName

M = TableName("db", "orders")


def _commit(operation: str = "overwrite", /, **summary: int) -> SnapshotInfo:
    return SnapshotInfo(
        2, 1, operation, None, {k.replace("_", "-"): str(v) for k, v in summary.items()}
    )


def test_a_rewrite_far_larger_than_its_changes_is_named_with_its_fix() -> None:
    # An UPDATE rewrote a 2.5M-row file, a DELETE rewrote it again: 5M rows rewritten, 3,000
    # logged.
    update = _commit(deleted_data_files=1, deleted_records=2_500_000, added_records=2_500_000)
    delete = _commit(deleted_data_files=1, deleted_records=2_500_000, added_records=2_499_000)
    note = capture.rewrite_note(M, [update, delete], 3_000)
    assert note is not None
    assert "rewrote 2 whole data file(s) holding 5,000,000 rows (about 2,500,000 a file)" in note
    assert "for 3,000 log row(s)" in note
    assert (
        "ALTER TABLE db.orders SET TBLPROPERTIES ('write.update.mode'='merge-on-read', "
        "'write.delete.mode'='merge-on-read', 'write.merge.mode'='merge-on-read')"
    ) in note


def test_a_commit_that_replaced_every_row_is_named_so() -> None:
    # A dbt `table` model kept with fast_refresh_keep_table: 2M rows out and in again.
    whole = _commit(
        deleted_data_files=2, deleted_records=2_000_000, added_records=2_000_000,
        total_records=2_000_000,
    )  # fmt: skip
    note = capture.rewrite_note(M, [whole], 2_000)
    assert note is not None
    assert note.startswith("its commits rewrote 2 whole data file(s) holding 2,000,000 rows")
    # (A copy-on-write update of a table's only file reads the same: its fix stays.)
    assert "ALTER TABLE db.orders SET TBLPROPERTIES" in note
    assert note.endswith(
        "These commits left only the rows they added: where they replace its rows whole (a "
        "dbt `table` model configured fast_refresh_keep_table, a job that rewrites the "
        "table), let the table be replaced where the models over it rebuild for less than "
        "two reads of it (drop fast_refresh_keep_table), else change only the rows that "
        "change (an incremental model, a MERGE)."
    )
    # With a commit that left other rows beside its own, that sentence is not said.
    update = _commit(
        deleted_data_files=1, deleted_records=2_000_000, added_records=2_000_000,
        total_records=3_000_000,
    )  # fmt: skip
    note = capture.rewrite_note(M, [whole, update], 2_000)
    assert note is not None and "left only the rows" not in note


def test_small_or_proportionate_rewrites_and_other_commits_say_nothing() -> None:
    big = {"deleted_data_files": 4, "deleted_records": 2_000_000}
    # Under REWRITE_WARN_ROWS, however few the changes.
    assert (
        capture.rewrite_note(M, [_commit(deleted_data_files=1, deleted_records=999_999)], 1) is None
    )
    # A TRUNCATE or a whole-partition DELETE logs what it removed: under the ratio.
    assert capture.rewrite_note(M, [_commit("delete", **big)], 2_000_000) is None
    at_ratio = 2_000_000 // capture.REWRITE_WARN_RATIO
    assert capture.rewrite_note(M, [_commit(**big)], at_ratio + 1) is None
    assert capture.rewrite_note(M, [_commit(**big)], at_ratio)
    # A compaction (skipped by capture), merge-on-read deletes, appends, unknown summaries.
    assert capture.rewrite_note(M, [_commit("replace", **big)], 0) is None
    assert capture.rewrite_note(M, [_commit(added_position_deletes=5_000_000)], 0) is None
    assert capture.rewrite_note(M, [_commit("append", added_records=9_000_000)], 0) is None
    assert capture.rewrite_note(M, [SnapshotInfo(2, 1, "overwrite", None)], 0) is None


def test_the_capture_message_carries_the_note() -> None:
    result = capture.CaptureResult(
        M, TableName("db", "mlog__orders"), 1, 2, 1, 3, 9.5, note="its x."
    )
    assert result.message().endswith("-> 3 log row(s) in db.mlog__orders (9.50s). Its x.")
    quiet = capture.CaptureResult(M, TableName("db", "mlog__orders"), 1, 2, 1, 3, 0.5)
    assert quiet.message().endswith("(0.50s)")
