"""The registry's versioning: foreign and newer tables are refused, an earlier release's
registry is brought up to date in place, and what it holds is kept."""

from __future__ import annotations

from typing import Any

import pytest

from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.executor import SparkExecutor
from dbt.adapters.fastrefresh.registry import (
    TABLES,
    VERSION_PROPERTY,
    Registry,
)
from dbt.adapters.fastrefresh.sqltext import TableName


def _create(spark: Any, schema: str, name: str, properties: str) -> None:
    cols = ", ".join(f"`{c}` {t}" for c, t in TABLES[name])
    spark.sql(f"CREATE TABLE {schema}.{name} ({cols}) USING iceberg TBLPROPERTIES ({properties})")


def _properties(spark: Any, table: str) -> dict[str, str]:
    return {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}


def test_a_table_without_the_version_is_refused_and_nothing_is_created(spark: Any) -> None:
    spark.sql("CREATE SCHEMA reg_foreign")
    _create(spark, "reg_foreign", "mview_logs", "'format-version'='2'")
    with pytest.raises(FastRefreshError, match=r"not a dbt-fastrefresh registry table.*Fix:"):
        Registry(SparkExecutor(spark), "reg_foreign").ensure()
    # SHOW TABLES also lists the session's temporary views (another test's, in this worker).
    rows = spark.sql("SHOW TABLES IN reg_foreign").collect()
    tables = {r[1] for r in rows if not r[2]}
    assert tables == {"mview_logs"}, "no registry table was created beside a foreign one"


def test_a_temporary_view_is_not_taken_for_a_table(spark: Any) -> None:
    """SHOW TABLES lists the session's temporary views in every schema: a view named like
    a registry table or a master must not pass for it."""
    from dbt.adapters.fastrefresh import master as mt

    spark.sql("CREATE OR REPLACE TEMPORARY VIEW mviews AS SELECT 1 AS x")
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW orders_tmp AS SELECT 1 AS x")
    try:
        x = SparkExecutor(spark)
        Registry(x, "reg_temp").ensure()
        rows = spark.sql("SHOW TABLES IN reg_temp").collect()
        assert {r[1] for r in rows if not r[2]} == set(TABLES), "every registry table created"
        assert mt.table_exists(x, TableName("reg_temp", "mviews"))
        assert not mt.table_exists(x, TableName("reg_temp", "orders_tmp"))
    finally:
        spark.sql("DROP VIEW IF EXISTS mviews")
        spark.sql("DROP VIEW IF EXISTS orders_tmp")


def test_a_registry_of_a_newer_release_is_refused(spark: Any) -> None:
    spark.sql("CREATE SCHEMA reg_newer")
    _create(spark, "reg_newer", "mview_logs", f"'{VERSION_PROPERTY}'='99'")
    with pytest.raises(FastRefreshError, match=r"newer dbt-fastrefresh.*version 99.*upgrade"):
        Registry(SparkExecutor(spark), "reg_newer").ensure()


def test_an_earlier_registry_gets_the_missing_properties_and_keeps_its_rows(spark: Any) -> None:
    # As release 0.1 created it: the version and the format, nothing else.
    spark.sql("CREATE SCHEMA reg_old")
    for name in TABLES:
        _create(spark, "reg_old", name, f"'{VERSION_PROPERTY}'='1', 'format-version'='2'")
    # A property set by hand stays as it is.
    spark.sql(
        "ALTER TABLE reg_old.mviews SET TBLPROPERTIES "
        "('write.metadata.previous-versions-max'='100')"
    )
    registry = Registry(SparkExecutor(spark), "reg_old")
    registry.insert("mviews", [{"mview": "s.v", "query_hash": "h", "staleness": "FRESH"}])
    registry.ensure()
    for name in TABLES:
        properties = _properties(spark, f"reg_old.{name}")
        expected = {  # spelled out: the test must notice a property dropped from the code
            "write.update.distribution-mode": "none",
            "write.delete.distribution-mode": "none",
            "write.merge.distribution-mode": "none",
            "write.metadata.delete-after-commit.enabled": "true",
            "write.metadata.previous-versions-max": "10",
        }
        if name == "mviews":
            expected["write.metadata.previous-versions-max"] = "100"
        assert {k: properties.get(k) for k in expected} == expected, name
        assert properties[VERSION_PROPERTY] == "1"
    row = registry.mview(TableName("s", "v"))
    assert row is not None and row.query_hash == "h" and row.staleness == "FRESH"


def test_update_rows_sets_each_rows_own_columns_in_one_commit(spark: Any) -> None:
    registry = Registry(SparkExecutor(spark), "reg_rows")
    registry.ensure()
    registry.insert(
        "mview_log_users",
        [
            {"log_table": log, "mview": view, "last_sequence": 1, "master_snapshot": 7}
            for log in ("s.mlog__a", "s.mlog__b")
            for view in ("s.v", "s.w")
        ],
    )
    table = "reg_rows.mview_log_users"
    snapshots = spark.sql(f"SELECT count(*) FROM {table}.snapshots").collect()[0][0]
    registry.update_rows(
        "mview_log_users",
        ["log_table", "mview"],
        [
            {"log_table": "s.mlog__a", "mview": "s.v", "last_sequence": 5},
            {"log_table": "s.mlog__b", "mview": "s.v", "last_sequence": 6, "master_snapshot": None},
        ],
    )
    rows = spark.sql(
        f"SELECT log_table, mview, last_sequence, master_snapshot FROM {table} "
        "ORDER BY log_table, mview"
    ).collect()
    assert [tuple(r) for r in rows] == [
        ("s.mlog__a", "s.v", 5, 7),  # a column the row does not name keeps its value
        ("s.mlog__a", "s.w", 1, 7),  # a row not named is left alone
        ("s.mlog__b", "s.v", 6, None),  # NULL is a value like any other
        ("s.mlog__b", "s.w", 1, 7),
    ]
    after = spark.sql(f"SELECT count(*) FROM {table}.snapshots").collect()[0][0]
    assert after == snapshots + 1, "one commit for both rows"


def test_update_sets_the_picked_rows_and_leaves_the_others(spark: Any) -> None:
    registry = Registry(SparkExecutor(spark), "reg_update")
    registry.ensure()
    registry.insert("mviews", [{"mview": "s.v", "staleness": "FRESH", "view_snapshot": 1}])
    registry.insert("mviews", [{"mview": "s.w", "staleness": "FRESH", "view_snapshot": 2}])
    registry.insert("mviews", [{"mview": "s.x", "staleness": None, "view_snapshot": None}])
    table = "reg_update.mviews"
    snapshots = spark.sql(f"SELECT count(*) FROM {table}.snapshots").collect()[0][0]
    registry.update("mviews", "mview = 's.v' OR mview = 's.x'", {"staleness": "STALE"})
    registry.update("mviews", "view_snapshot <> 1", {"staleness": "UNUSABLE"})
    rows = spark.sql(f"SELECT mview, staleness, view_snapshot FROM {table} ORDER BY mview")
    assert [tuple(r) for r in rows.collect()] == [
        ("s.v", "STALE", 1),
        ("s.w", "UNUSABLE", 2),
        ("s.x", "STALE", None),  # NULL <> 1 is not true: not picked, as by a WHERE
    ]
    after = spark.sql(f"SELECT count(*) FROM {table}.snapshots").collect()[0][0]
    assert after == snapshots + 2, "one commit per update"
