"""A log's rows deleted or doubled by hand, after capture wrote them.

A view reads a log's rows as the master's changes: a row deleted by hand was a change
every view on the log missed, for good, while each went on refreshing FAST (and the
registry showed it FRESH). On the Java path every write of dbt-fastrefresh to a log
carries the log's state in its snapshot summary, so a commit past the recorded state
that changed rows is someone else's; where the log then no longer holds each row its
state records once, it starts a new epoch and each view on it refreshes completely once,
saying why (``mlog/ddl.changed_by_hand``). Seed 001's reorganization (rows copied out,
the log truncated, the rows inserted again) keeps them all, and a compaction changes no
row: the views refresh fast on. The SQL path records its state after its commit, and
cannot tell a delete by hand from a purge of its own that died.
"""

from __future__ import annotations

from typing import Any

import pytest

from dbt.adapters.fastrefresh.mlog import capture
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.functional.sites import keyed_master_with_log, refresh_and_check

HAND_CHANGES = {
    "delete": (["DELETE FROM {s}.mlog__m WHERE k = 1001"], "COMPLETE"),
    "insert": (["INSERT INTO {s}.mlog__m SELECT * FROM {s}.mlog__m WHERE k = 1001"], "COMPLETE"),
    "truncate": (["TRUNCATE TABLE {s}.mlog__m"], "COMPLETE"),
    "reorganize": (
        [
            "CREATE TABLE {s}.kept USING iceberg AS SELECT * FROM {s}.mlog__m",
            "TRUNCATE TABLE {s}.mlog__m",
            "INSERT INTO {s}.mlog__m SELECT * FROM {s}.kept",
        ],
        "FAST",
    ),
}


def _views(s: str) -> dict[TableName, str]:
    return {
        TableName(s, "totals"): f"SELECT g, count(*) AS n, sum(x) AS sx FROM {s}.m GROUP BY g",
        TableName(s, "rows"): f"SELECT k, g, x FROM {s}.m WHERE x > 0",
    }


@pytest.mark.parametrize("commit_scn", [False, True], ids=["timestamp", "commit_scn"])
@pytest.mark.parametrize("change", sorted(HAND_CHANGES))
def test_a_log_that_lost_rows_by_hand_rebuilds_its_views_once(
    spark: Any, change: str, commit_scn: bool
) -> None:
    s = f"by_hand_{change}_{'scn' if commit_scn else 'ts'}"
    env = keyed_master_with_log(spark, s, 20, 3, commit_scn=commit_scn)
    views = _views(s)
    for view, sql in views.items():
        refresh_and_check(spark, env, view, sql, exists=False, expect="COMPLETE")
    spark.sql(f"INSERT INTO {s}.m VALUES (1001, 1, 5), (1002, 2, 7)")
    spark.sql(f"DELETE FROM {s}.m WHERE k = 4")
    assert capture.capture(env, TableName(s, "m")).log_rows == 3
    statements, expect = HAND_CHANGES[change]
    for statement in statements:
        spark.sql(statement.format(s=s))
    for view, sql in views.items():
        result = refresh_and_check(spark, env, view, sql, exists=True, expect=expect)
        if expect == "COMPLETE":
            assert "changed outside dbt-fastrefresh" in str(result.reason), result.reason
    # Once: the log's new rows are read fast again, and a compaction of the log (no
    # row changed) is nobody's change.
    spark.sql(f"UPDATE {s}.m SET x = 3 WHERE k IN (1001, 2)")
    assert capture.capture(env, TableName(s, "m")).log_rows == 4
    spark.sql(
        f"CALL system.rewrite_data_files(table => '{s}.mlog__m', "
        "options => map('rewrite-all', 'true'))"
    )
    newest = f"SELECT operation FROM {s}.mlog__m.snapshots ORDER BY committed_at DESC LIMIT 1"
    assert spark.sql(newest).collect()[0][0] == "replace"
    spark.sql(f"INSERT INTO {s}.m VALUES (1003, 0, 1)")
    for view, sql in views.items():
        refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")
