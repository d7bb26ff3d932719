"""A view's storage table, or a log, whose columns were changed by hand (``ALTER TABLE``).

An ``ALTER TABLE`` makes no snapshot, so neither table's history tells. A storage table
lacking a column the view's plan writes or reads (renamed or dropped: a visible or a
hidden one) failed every refresh with a bare ``KeyError`` or Spark's UNRESOLVED_COLUMN
and its plan; it is found from the columns the view's record read (no statement) and,
under ``force``, the view is rebuilt saying which column is missing; under ``fast`` the
refresh fails naming the column and the fix.

A log whose own columns were changed by hand is found too (``mlog/ddl.log_table_altered``)
and treated like a log that no longer fits its master.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from dbt.adapters.fastrefresh.engine import refresh
from dbt.adapters.fastrefresh.engine.upstream import Upstream
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.mlog.ddl import create_mview_log, drop_mview_log, load_log
from dbt.adapters.fastrefresh.protocol.decisions import ReasonCode, RefreshType
from dbt.adapters.fastrefresh.runtime import faults
from dbt.adapters.fastrefresh.runtime.process import Runtime
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


LOG_EDITS = {
    "added": "ALTER TABLE {s}.mlog__m ADD COLUMN extra STRING",
    "dropped": "ALTER TABLE {s}.mlog__m DROP COLUMN x",
    "renamed": "ALTER TABLE {s}.mlog__m RENAME COLUMN x TO x_renamed",
}


def _log_views(s: str) -> dict[TableName, str]:
    return {
        TableName(s, "totals"): f"SELECT g, count(*) AS n, sum(x) AS sx FROM {s}.m GROUP BY g",
        TableName(s, "rows"): f"SELECT k, g, x FROM {s}.m WHERE x > 0",
    }


def _forced(spark: Any, env: Any, view: TableName, sql: str, up: Any) -> refresh.RefreshResult:
    result = refresh.refresh_view(env, view=view, sql=sql, method="force", exists=True, upstream=up)
    assert matches(spark, view, sql), f"{view} differs from its query"
    return result


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("edit", sorted(LOG_EDITS))
def test_a_log_edited_by_hand_is_found_and_created_again(spark: Any, edit: str, path: str) -> None:
    """A log whose columns were changed by hand failed every refresh of every view on it
    with Spark's INSERT_COLUMN_ARITY_MISMATCH (capture's append) or UNRESOLVED_COLUMN,
    under 'force' and ``--full-refresh`` too. The Java path finds it from the log's
    columns as loaded, the SQL path once a statement fails: under 'fast' the refresh
    fails naming the log, the change and the fix; under 'force', on a dbt node, the log
    is created again and the views rebuild once, then refresh fast."""
    s = f"log_edit_{edit}_{path}"
    env = keyed_master_with_log(spark, s, 20, 3, path)
    up = (Upstream(TableName(s, "m"), "source.p.s.m"),)
    views = _log_views(s)
    for view, sql in views.items():
        refresh_and_check(spark, env, view, sql, exists=False, expect="COMPLETE")
    spark.sql(LOG_EDITS[edit].format(s=s))
    spark.sql(f"UPDATE {s}.m SET x = 7 WHERE k IN (1, 2)")
    view, sql = next(iter(views.items()))
    with pytest.raises(FastRefreshError) as failed:
        refresh.refresh_view(env, view=view, sql=sql, method="fast", exists=True)
    message = str(failed.value)
    assert f"{s}.mlog__m was changed outside dbt-fastrefresh" in message, message
    assert "drop_mview_log" in message, message
    journal = env.runtime.journal(env.registry)
    recorded = len(journal.refreshes)
    first = _forced(spark, env, view, sql, up)
    assert first.refresh_type is RefreshType.COMPLETE, first.reason
    # The failure that found the log (SQL path) is not recorded: the refresh succeeded.
    assert [r.status for r in journal.refreshes[recorded:]] == ["SUCCESS"]
    assert any("changed outside dbt-fastrefresh" in said for said in first.logs_created)
    for view, sql in list(views.items())[1:]:
        assert _forced(spark, env, view, sql, up).refresh_type is RefreshType.COMPLETE
    spark.sql(f"INSERT INTO {s}.m VALUES (1001, 1, 5)")
    for view, sql in views.items():
        assert _forced(spark, env, view, sql, up).refresh_type is RefreshType.FAST


@pytest.mark.parametrize("path", PATHS)
def test_a_log_keyed_by_identifier_fields_follows_them(spark: Any, path: str) -> None:
    """A log created without a key takes the master's identifier fields as its key, and
    kept that key after they were dropped (`ALTER TABLE ... DROP IDENTIFIER FIELDS`, which
    says the key may repeat). Two rows then given one key in two commits, one of them
    deleted, left a keyed view without the other: wrong rows, no error. On a dbt node
    the log is now created again (key-less), the views rebuild once and follow the rows;
    under 'fast' the refresh fails first, naming the cause and the fix, and leaves the
    log as it was. Identifier fields set again key the log again."""
    s = f"log_rekeyed_{path}"
    env = keyed_master_with_log(spark, s, 6, 2, path)  # key k: m's identifier fields
    up = (Upstream(TableName(s, "m"), "source.p.s.m"),)
    views = {
        TableName(s, "rows"): f"SELECT k, g, x FROM {s}.m WHERE x > 0",
        TableName(s, "totals"): f"SELECT g, count(*) AS n, sum(x) AS sx FROM {s}.m GROUP BY g",
    }
    for view, sql in views.items():
        refresh_and_check(spark, env, view, sql, exists=False, expect="COMPLETE")
    spark.sql(f"ALTER TABLE {s}.m DROP IDENTIFIER FIELDS k")
    rows = TableName(s, "rows")
    incarnation = _log_config(env, s).incarnation
    journal = env.runtime.journal(env.registry)
    recorded = len(journal.refreshes)
    with pytest.raises(FastRefreshError) as refused:
        refresh.refresh_view(
            env, view=rows, sql=views[rows], method="fast", exists=True, upstream=up
        )
    message = str(refused.value)
    moved = f"the identifier fields of {s}.m are now (none: key-less), and its log took them"
    assert moved in message and "its key when it was created: (k)" in message, message
    assert "Fix: " in message and "rebuilds once" in message, message
    assert _log_config(env, s).incarnation == incarnation
    assert [r.status for r in journal.refreshes[recorded:]] == ["FAILED"]
    created = _forced_all(spark, env, views, up, RefreshType.COMPLETE)
    assert len(created) == 1, created
    assert "key-less (full row images)" in created[0], created
    assert f"(again: {moved}" in created[0], created
    # Two rows with key 1, added in two commits; then one of them deleted.
    spark.sql(f"INSERT INTO {s}.m VALUES (1, 0, 7)")
    assert _forced_all(spark, env, views, up, RefreshType.FAST) == []
    spark.sql(f"DELETE FROM {s}.m WHERE k = 1 AND x = 7")
    assert _forced_all(spark, env, views, up, RefreshType.FAST) == []
    # The key-less log follows identifier fields set again: keyed by them, views rebuilt.
    spark.sql(f"ALTER TABLE {s}.m SET IDENTIFIER FIELDS k")
    created = _forced_all(spark, env, views, up, RefreshType.COMPLETE)
    assert len(created) == 1 and "keyed by (k)" in created[0], created
    spark.sql(f"UPDATE {s}.m SET x = 3 WHERE k = 2")
    assert _forced_all(spark, env, views, up, RefreshType.FAST) == []


def test_a_log_killed_between_its_drop_and_its_creation_is_created_by_the_next_run(
    spark: Any,
) -> None:
    """Creating a log again is a drop and a create. A process killed between them leaves
    the master without a log: the next run over the dbt node creates it, with the key the
    identifier fields give now, and every view on it rebuilds once (a view's claims were
    on the log dropped), then refreshes fast, keyed rightly."""
    s = "log_rekey_killed"
    env = keyed_master_with_log(spark, s, 6, 2, "java")
    up = (Upstream(TableName(s, "m"), "source.p.s.m"),)
    views = {
        TableName(s, "rows"): f"SELECT k, g, x FROM {s}.m WHERE x > 0",
        TableName(s, "totals"): f"SELECT g, count(*) AS n, sum(x) AS sx FROM {s}.m GROUP BY g",
    }
    _forced_all(spark, env, views, up, RefreshType.COMPLETE)
    spark.sql(f"ALTER TABLE {s}.m DROP IDENTIFIER FIELDS k")
    spark.sql(f"INSERT INTO {s}.m VALUES (1, 0, 7)")  # key 1 twice now
    rows = TableName(s, "rows")
    with pytest.raises(faults.Crash), faults.crash_at("log.after_drop"):
        _forced(spark, env, rows, views[rows], up)
    env = dataclasses.replace(env, runtime=Runtime())  # a new process
    assert load_log(env, TableName(s, "m"), columns=False) is None
    created = _forced_all(spark, env, views, up, RefreshType.COMPLETE)
    assert len(created) == 1 and "key-less (full row images)" in created[0], created
    spark.sql(f"DELETE FROM {s}.m WHERE k = 1 AND x = 7")
    assert _forced_all(spark, env, views, up, RefreshType.FAST) == []


def test_a_log_keyed_since_the_views_build_is_not_taken_for_a_hand_edit(spark: Any) -> None:
    """A join view over a key-less log keeps no key of that table; once the log is
    created again with a key, the view's plan needs that key's hidden columns, which its
    storage table never had. The rebuild said the table "was changed outside
    dbt-fastrefresh", which no one had done: the reason is the log's."""
    s = "log_keyed_since"
    env = keyed_master_with_log(spark, s, 6, 2, "java")
    spark.sql(f"CREATE TABLE {s}.b (bk BIGINT, g INT, y INT) USING iceberg")
    spark.sql(f"INSERT INTO {s}.b VALUES (1, 0, 10), (2, 1, 20)")
    create_mview_log(env, f"{s}.b", key=[])
    view, sql = TableName(s, "j"), f"SELECT m.k, b.y FROM {s}.m m JOIN {s}.b b ON m.g = b.g"
    refresh_and_check(spark, env, view, sql, exists=False, expect="COMPLETE")
    spark.sql(f"INSERT INTO {s}.b VALUES (3, 0, 30)")
    refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")
    drop_mview_log(env, f"{s}.b")
    create_mview_log(env, f"{s}.b", key=["bk"])
    result = refresh_and_check(spark, env, view, sql, exists=True, expect="COMPLETE")
    assert result.reason is not None and result.reason.code is ReasonCode.LOG_YOUNGER, result.reason
    assert "outside dbt-fastrefresh" not in str(result.reason)
    spark.sql(f"UPDATE {s}.b SET y = 31 WHERE bk = 3")
    refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")


def _forced_all(
    spark: Any, env: Any, views: dict[TableName, str], up: Any, expect: RefreshType
) -> list[str]:
    """Each view refreshed under 'force' (equal to its query, of type ``expect``); what
    the refreshes said of the logs they created."""
    created: list[str] = []
    for view, sql in views.items():
        result = _forced(spark, env, view, sql, up)
        assert result.refresh_type is expect, (view, result.reason)
        created += result.logs_created
    return created


def test_a_log_given_its_key_keeps_it_when_the_identifier_fields_change(spark: Any) -> None:
    """A log given its key (`key=[...]`, or `mview_log: {key: ...}`) keeps it: only a key
    taken from the identifier fields follows them."""
    s = "log_kept_key"
    env = keyed_master_with_log(spark, s, 6, 2, "java", key=["k"])
    up = (Upstream(TableName(s, "m"), "source.p.s.m"),)
    views = {TableName(s, "rows"): f"SELECT k, g, x FROM {s}.m WHERE x > 0"}
    _forced_all(spark, env, views, up, RefreshType.COMPLETE)
    spark.sql(f"ALTER TABLE {s}.m DROP IDENTIFIER FIELDS k")
    spark.sql(f"UPDATE {s}.m SET x = 3 WHERE k = 2")
    assert _forced_all(spark, env, views, up, RefreshType.FAST) == []
    assert _log_config(env, s).key_columns == ("k",)


def _log_config(env: Any, s: str) -> Any:
    log = load_log(env, TableName(s, "m"), columns=False)
    assert log is not None, f"{s}.m has no log"
    return log.config
