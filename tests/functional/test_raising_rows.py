"""A row that lived only between two refreshes, whose values make the query's expression
raise (``raise_error``, ``assert_true``, ``element_at(a, 0)``...), never reaches a complete
refresh, which reads the current rows. A fast refresh evaluates the query's expressions
over the log's rows: that row's insert and its delete (or the old image of its update).
Its delta raised on every run, under ``force`` too, and the view never refreshed again
until it was rebuilt by hand. Now the delta's statement stops before it commits, and the
refresh is complete under ``force``, saying why; under ``fast`` it fails naming the fix."""

from __future__ import annotations

from typing import Any

import pytest

from dbt.adapters.fastrefresh.engine import refresh
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.mlog import ddl as mlog
from dbt.adapters.fastrefresh.protocol.decisions import ReasonCode
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.functional.sites import env_for

# element_at(a, 0) raises [INVALID_INDEX_OF_ZERO] whatever spark.sql.ansi.enabled says;
# raise_error raises [USER_RAISED_EXCEPTION].
PART = "cast(element_at(split(m.parts, ','), m.i) AS INT)"
GUARD = "CASE WHEN m.i < 0 THEN raise_error('negative i') ELSE m.i END"
VIEWS = {
    "agg": f"SELECT m.g, sum({PART}) AS s, count(*) AS n FROM {{m}} m GROUP BY m.g",
    "agg_min": f"SELECT m.g, min({PART}) AS lo, count(*) AS n FROM {{m}} m GROUP BY m.g",
    "agg_guard": f"SELECT m.g, sum({GUARD}) AS s FROM {{m}} m GROUP BY m.g",
    "proj": f"SELECT m.k, m.g, {GUARD} AS i FROM {{m}} m",
    "join_agg": (
        f"SELECT d.region, sum({PART}) AS s, count(*) AS n FROM {{m}} m "
        "JOIN {d} d ON m.g = d.g GROUP BY d.region"
    ),
    "join": f"SELECT m.k, d.region, {GUARD} AS i FROM {{m}} m JOIN {{d}} d ON m.g = d.g",
}

# What the delta of each view raises over those rows (the others do not evaluate the
# query's expressions over old images: a MIN recomputes its groups from the master, a
# projection inserts the current rows of the changed keys).
INDEX_ZERO = "[INVALID_INDEX_OF_ZERO] The index 0 is invalid"
RAISES = {
    "agg": INDEX_ZERO,
    "join_agg": INDEX_ZERO,
    "agg_guard": "raise_error/assert_true said 'negative i'",
}


def test_a_row_that_raised_between_two_refreshes_rebuilds_under_force_and_fails_under_fast(
    spark: Any,
) -> None:
    # What the delta raises, and what the refresh does then, are the same on both metadata
    # paths (checked when this was written): the SQL path's alone.
    path = "sql"
    schema = f"raising_rows_{path}"
    master, dim = f"{schema}.m", f"{schema}.dim"
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(
        f"CREATE TABLE {master} (k BIGINT NOT NULL, g STRING, parts STRING, i INT) USING iceberg"
    )
    spark.sql(f"CREATE TABLE {dim} (g STRING NOT NULL, region STRING) USING iceberg")
    spark.sql(
        f"INSERT INTO {master} VALUES (1, 'a', '10,20', 1), (2, 'a', '5', 1), (3, 'b', '7,8', 2)"
    )
    spark.sql(f"INSERT INTO {dim} VALUES ('a', 'north'), ('b', 'south')")
    env = env_for(spark, f"{schema}_registry", path)
    mlog.create_mview_log(env, master, key=["k"])
    mlog.create_mview_log(env, dim, key=["g"])
    views = {TableName(schema, n): q.format(m=master, d=dim) for n, q in VIEWS.items()}
    fast_only = TableName(schema, "fast_only")
    views[fast_only] = views[TableName(schema, "agg")]

    def run(view: TableName, *, exists: bool = True, full: bool = False) -> Any:
        method = "fast" if view == fast_only else "force"
        return refresh.refresh_view(
            env, view=view, sql=views[view], method=method, exists=exists, full_refresh=full
        )

    def check(view: TableName) -> None:
        columns = ", ".join(spark.sql(views[view]).columns)
        got = sorted(map(str, spark.sql(f"SELECT {columns} FROM {view.sql}").collect()))
        assert got == sorted(map(str, spark.sql(views[view]).collect())), view

    for view in views:
        assert run(view, exists=False).refresh_type == "COMPLETE"
    # A row the query cannot evaluate (index 0, a negative i), deleted before the refresh,
    # and a row updated from such values to good ones: the master's rows all evaluate.
    spark.sql(f"INSERT INTO {master} VALUES (4, 'a', '1,2', 0), (5, 'b', '3', -1)")
    spark.sql(f"INSERT INTO {master} VALUES (6, 'b', '9', 0)")
    spark.sql(f"DELETE FROM {master} WHERE k IN (4, 5)")
    spark.sql(f"UPDATE {master} SET i = 1 WHERE k = 6")
    storage = f"{schema}.fast_only__fr_data"
    before = spark.sql(f"SELECT snapshot_id FROM {storage}.snapshots").count()
    with pytest.raises(FastRefreshError) as failed:
        run(fast_only)
    message = str(failed.value)
    # The task's error reaches the caller, stack trace and all; the executor and the
    # scheduler no longer print it to stderr as well, as ERROR lines of their own (the
    # session's log4j2.properties; the JVM's stderr is not this process's to capture).
    manager = spark._jvm.org.apache.logging.log4j.LogManager
    for logger in (
        "org.apache.spark.executor.Executor",
        "org.apache.spark.scheduler.TaskSetManager",
    ):
        assert str(manager.getLogger(logger).getLevel()) == "FATAL", logger
    # (The task's and the write's own abort lines: test_embedded_session.py reads stderr.)
    assert f"Fast refresh of {fast_only} is not possible" in message
    assert "[INVALID_INDEX_OF_ZERO]" in message
    assert "a complete refresh over the current rows only" in message
    assert "Fix: refresh it once with method 'complete'" in message
    assert spark.sql(f"SELECT snapshot_id FROM {storage}.snapshots").count() == before
    for view in views:
        if view == fast_only:
            assert run(view, full=True).refresh_type == "COMPLETE"
        else:
            result = run(view)
            raised = RAISES.get(view.table)
            if raised is None:  # the old images' values are not evaluated: fast
                assert result.refresh_type == "FAST", view
            else:
                assert result.refresh_type == "COMPLETE", view
                assert result.reason is not None
                assert result.reason.code is ReasonCode.DELTA_RAISED, view
                assert raised in str(result.reason), (view, str(result.reason))
        check(view)
    # Once rebuilt, the views refresh fast again, the dimension's changes too.
    spark.sql(f"INSERT INTO {master} VALUES (7, 'b', '4,6', 2)")
    spark.sql(f"UPDATE {dim} SET region = 'north' WHERE g = 'b'")
    for view in views:
        assert run(view).refresh_type == "FAST", view
        check(view)
