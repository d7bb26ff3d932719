"""A view's storage table, or a log, whose columns were changed by hand (``ALTER TABLE``).

An ``ALTER TABLE`` makes no snapshot, so neither table's history tells. A storage table
lacking a column the view's plan writes or reads (renamed or dropped: a visible or a
hidden one) failed every refresh with a bare ``KeyError`` or Spark's UNRESOLVED_COLUMN
and its plan; it is found from the columns the view's record read (no statement) and,
under ``force``, the view is rebuilt saying which column is missing; under ``fast`` the
refresh fails naming the column and the fix.
"""

from __future__ import annotations

from typing import Any

import pytest

from dbt.adapters.fastrefresh.engine import refresh
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.protocol.decisions import ReasonCode
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.functional.sites import PATHS, keyed_master_with_log, matches, refresh_and_check

STORAGE_EDITS = {
    # (view, its query, the ALTER on its storage table, the column then missing)
    "renamed": (
        "rows",
        "SELECT k, g, x FROM {s}.m WHERE x > 0",
        "ALTER TABLE {s}.rows__fr_data RENAME COLUMN x TO x_renamed",
        "x",
    ),
    "hidden_dropped": (
        "totals",
        "SELECT g, count(*) AS n, sum(x) AS sx FROM {s}.m GROUP BY g",
        "ALTER TABLE {s}.totals__fr_data DROP COLUMN __fr_count",
        "__fr_count",
    ),
}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("edit", sorted(STORAGE_EDITS))
def test_a_storage_table_edited_by_hand_rebuilds_its_view_once(
    spark: Any, edit: str, path: str
) -> None:
    s = f"storage_edit_{edit}_{path}"
    env = keyed_master_with_log(spark, s, 20, 3, path)
    name, query, alter, missing = STORAGE_EDITS[edit]
    view, sql = TableName(s, name), query.format(s=s)
    refresh_and_check(spark, env, view, sql, exists=False, expect="COMPLETE")
    spark.sql(alter.format(s=s))
    spark.sql(f"UPDATE {s}.m SET x = 7 WHERE k IN (1, 2)")
    with pytest.raises(FastRefreshError) as failed:
        refresh.refresh_view(env, view=view, sql=sql, method="fast", exists=True)
    message = str(failed.value)
    assert f"{s}.{name}__fr_data was changed outside dbt-fastrefresh" in message, message
    assert f"column(s) {missing} missing" in message and "Fix:" in message, message
    result = refresh_and_check(spark, env, view, sql, exists=True, expect="COMPLETE")
    assert result.reason is not None and result.reason.code is ReasonCode.UNFINISHED
    assert f"column(s) {missing} missing" in str(result.reason), result.reason
    spark.sql(f"INSERT INTO {s}.m VALUES (1001, 1, 5)")
    refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")
    assert matches(spark, view, sql)
