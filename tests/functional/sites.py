"""A small keyed master with its log and a registry, for the tests that call the
refresh protocol directly (without dbt), and a refresh checked against its query."""

from __future__ import annotations

from typing import Any

from dbt.adapters.fastrefresh import logs, refresh
from dbt.adapters.fastrefresh.clock import utcnow
from dbt.adapters.fastrefresh.executor import SparkExecutor
from dbt.adapters.fastrefresh.registry import Registry
from dbt.adapters.fastrefresh.sqltext import TableName


def keyed_master_with_log(
    spark: Any, schema: str, rows: int, groups: int
) -> tuple[SparkExecutor, Registry]:
    """Schema ``schema`` with a master ``m`` (key ``k``, group ``g`` = k % ``groups``,
    ``x`` = 1) of ``rows`` rows, its full log, and the registry ``<schema>_registry``."""
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(f"CREATE TABLE {schema}.m (k BIGINT NOT NULL, g INT, x INT) USING iceberg")
    spark.sql(f"ALTER TABLE {schema}.m SET IDENTIFIER FIELDS k")
    spark.sql(f"INSERT INTO {schema}.m SELECT id, CAST(id % {groups} AS INT), 1 FROM range({rows})")
    x = SparkExecutor(spark)
    registry = Registry(x, f"{schema}_registry")
    registry.ensure()
    logs.create_mview_log(x, registry, f"{schema}.m", None, False, None, utcnow)
    return x, registry


def refresh_and_check(
    spark: Any,
    x: SparkExecutor,
    registry: Registry,
    view: TableName,
    sql: str,
    *,
    exists: bool,
    expect: str,
    table_options: str = "",
) -> refresh.RefreshResult:
    """Refresh ``view`` under ``force``; assert its refresh type is ``expect`` and that it
    holds what ``sql`` returns when recomputed now (the view's hidden columns aside)."""
    result = refresh.refresh_view(
        x, registry, view, sql, "force", False, exists, table_options, utcnow
    )
    assert result.refresh_type == expect, (str(view), result.reason)
    query = spark.sql(sql)
    columns = ", ".join(f"`{c}`" for c in query.columns)
    stored = spark.sql(f"SELECT {columns} FROM {view.sql}").collect()
    assert sorted(stored) == sorted(query.collect()), f"{view} differs from its query"
    return result
