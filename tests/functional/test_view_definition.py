"""A model's view follows its query when the query's columns, or the way its storage
table is read, change.

Iceberg's views (1.10, through Spark's session catalog) take a CREATE OR REPLACE VIEW's new
properties but keep their old query: the view over a model's storage table showed the old
columns, or read columns the new storage no longer has. The view is dropped and created
when its definition changes (``engine/surface.py``).
"""

from __future__ import annotations

from typing import Any

import pytest

from dbt.adapters.fastrefresh.engine import refresh
from dbt.adapters.fastrefresh.mlog import ddl as mlog
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.functional.sites import PATHS, env_for, matches, refresh_and_check, user_columns


def test_the_view_follows_a_changed_query_and_a_changed_storage_layout(spark: Any) -> None:
    s = "view_definition"
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {s}")
    env = env_for(spark, f"{s}_registry")
    spark.sql(
        f"CREATE OR REPLACE TABLE {s}.orders (oid BIGINT NOT NULL, cid INT, amount INT) USING iceberg"
    )
    spark.sql(
        f"CREATE OR REPLACE TABLE {s}.customers (cid INT NOT NULL, region STRING) USING iceberg"
    )
    spark.sql(f"INSERT INTO {s}.orders VALUES (1, 0, 5), (2, 1, 7), (3, 1, 9)")
    spark.sql(f"INSERT INTO {s}.customers VALUES (0, 'north'), (1, 'south')")
    mlog.create_mview_log(env, f"{s}.orders", key=["oid"])
    view = TableName(s, "mv")

    # New columns: the view shows them.
    narrow = f"SELECT oid, amount FROM {s}.orders"
    refresh_and_check(spark, env, view, narrow, exists=False, expect="COMPLETE")
    wide = f"SELECT oid, cid, amount FROM {s}.orders WHERE amount > 5"
    refresh_and_check(spark, env, view, wide, exists=True, expect="COMPLETE")
    assert user_columns(spark, f"{s}.mv") == ["oid", "cid", "amount"]

    # A join of a key-less log's table is kept as counted rows the view repeats; once the
    # table's log has a key, it is a keyed join and the view reads its rows as they are.
    mlog.create_mview_log(env, f"{s}.customers", key=[])
    join = f"SELECT o.oid, c.region FROM {s}.orders o JOIN {s}.customers c ON o.cid = c.cid"
    refresh_and_check(spark, env, view, join, exists=True, expect="COMPLETE")
    spark.sql(f"INSERT INTO {s}.customers VALUES (1, 'south')")  # a duplicate: rows twice
    refresh_and_check(spark, env, view, join, exists=True, expect="FAST")
    mlog.drop_mview_log(env, f"{s}.customers")
    spark.sql(f"DELETE FROM {s}.customers WHERE cid = 1")
    spark.sql(f"INSERT INTO {s}.customers VALUES (1, 'south')")
    mlog.create_mview_log(env, f"{s}.customers", key=["cid"], columns=[])
    refresh_and_check(spark, env, view, join, exists=True, expect="COMPLETE")
    spark.sql(f"UPDATE {s}.customers SET region = 'east' WHERE cid = 0")
    refresh_and_check(spark, env, view, join, exists=True, expect="FAST")


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("replacement", ["table", "view"])
def test_a_model_rebuilt_by_another_materialization_is_read_as_it_is(
    spark: Any, path: str, replacement: str
) -> None:
    """A query naming a fast_refresh model reads its storage table. When that model is
    rebuilt by another materialization (a dbt ``table`` or ``view`` in its place, over
    other rows), its old storage table stays behind with its state: a view over the
    model must read the model as it is now, not the table left behind."""
    s = f"rebuilt_{replacement}_{path}"
    spark.sql(f"CREATE SCHEMA {s}")
    env = env_for(spark, f"{s}_registry", path)
    spark.sql(f"CREATE TABLE {s}.m (k BIGINT NOT NULL, x INT) USING iceberg")
    spark.sql(f"INSERT INTO {s}.m VALUES (1, 10), (2, 20)")
    mlog.create_mview_log(env, f"{s}.m", key=["k"])
    upstream = TableName(s, "up")
    refresh_and_check(
        spark, env, upstream, f"SELECT k, x FROM {s}.m", exists=False, expect="COMPLETE"
    )
    downstream = TableName(s, "down")
    query = f"SELECT k, x FROM {s}.up WHERE x > 0"
    refresh_and_check(spark, env, downstream, query, exists=False, expect="COMPLETE")

    # dbt's table or view materialization drops the model's view and builds its own.
    spark.sql(f"DROP VIEW {s}.up")
    if replacement == "table":
        spark.sql(f"CREATE TABLE {s}.up USING iceberg AS SELECT k, x + 1 AS x FROM {s}.m")
    else:
        spark.sql(f"CREATE VIEW {s}.up AS SELECT k, x + 2 AS x FROM {s}.m")
    result = refresh.refresh_view(env, view=downstream, sql=query, method="force", exists=True)
    assert matches(spark, downstream, query), f"{downstream} read {s}.up__fr_data, left behind"
    assert result.refresh_type == "COMPLETE", str(result.reason)
