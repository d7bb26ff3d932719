"""Helpers for the tests that drive the protocol directly (without dbt): an environment on
the test session, a small keyed master with its log, and a refresh checked against its
query recomputed."""

from __future__ import annotations

import os
from typing import Any

from dbt.adapters.fastrefresh.engine import refresh
from dbt.adapters.fastrefresh.mlog import ddl as mlog
from dbt.adapters.fastrefresh.protocol.env import Env
from dbt.adapters.fastrefresh.sqltext import TableName

# The two ways to the same state (iceberg/tables.py): tests that care run on both.
PATHS = ("java", "sql")
# Under `make test-shared` the session's catalog is shared (tests/conftest.py).
SHARED = os.environ.get("FASTREFRESH_TEST_CATALOG") == "jdbc"


def env_for(spark: Any, registry: str, path: str = "java") -> Env:
    """A protocol environment on the test session (``path``: Java API or SQL only)."""
    return Env.for_spark(spark, registry, java=path == "java", shared=SHARED)


def keyed_master_with_log(
    spark: Any, schema: str, rows: int, groups: int, path: str = "java", **log: Any
) -> Env:
    """Schema ``schema`` with a master ``m`` (key ``k``, group ``g`` = k % ``groups``,
    ``x`` = 1) of ``rows`` rows and its full log; the registry is ``<schema>_registry``."""
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(f"CREATE TABLE {schema}.m (k BIGINT NOT NULL, g INT, x INT) USING iceberg")
    spark.sql(f"ALTER TABLE {schema}.m SET IDENTIFIER FIELDS k")
    spark.sql(f"INSERT INTO {schema}.m SELECT id, CAST(id % {groups} AS INT), 1 FROM range({rows})")
    env = env_for(spark, f"{schema}_registry", path)
    mlog.create_mview_log(env, f"{schema}.m", **log)
    return env


def latest_snapshot(spark: Any, table: str) -> int:
    """The id of the newest snapshot of ``table`` (its last commit)."""
    return spark.sql(
        f"SELECT snapshot_id FROM {table}.snapshots ORDER BY committed_at DESC LIMIT 1"
    ).collect()[0][0]


def user_columns(spark: Any, table: str) -> list[str]:
    return [c for c in spark.table(table).columns if not c.startswith("__fr_")]


def matches(spark: Any, view: TableName, sql: str) -> bool:
    """Whether the view (its user columns, duplicates counted) equals ``sql`` run now."""
    columns = ", ".join(f"`{c}`" for c in spark.sql(sql).columns)
    # Each row's count in the view less its count in the query, for every distinct row:
    # the two sides are equal as multisets when no count is left. One aggregation reads
    # each side once; EXCEPT ALL both ways read each twice and cost 1.7x as long here
    # (each Spark job costs about 0.1-0.2 s on small tables).
    return spark.sql(
        f"SELECT 1 FROM (SELECT {columns}, 1 AS side__ FROM {view.sql} UNION ALL "
        f"SELECT {columns}, -1 AS side__ FROM ({sql}) expected__) "
        f"GROUP BY {columns} HAVING sum(side__) <> 0"
    ).isEmpty()


def refresh_and_check(
    spark: Any,
    env: Env,
    view: TableName,
    sql: str,
    *,
    exists: bool,
    expect: str,
    table: refresh.TableSpec | None = None,
) -> refresh.RefreshResult:
    """Refresh ``view`` under ``force``; assert its refresh type is ``expect`` and that it
    holds what ``sql`` returns when recomputed now (the view's hidden columns aside)."""
    result = refresh.refresh_view(
        env, view=view, sql=sql, method="force", exists=exists, table=table
    )
    assert result.refresh_type == expect, (str(view), str(result.reason))
    assert matches(spark, view, sql), f"{view} differs from its query"
    return result


def views_follow_rounds(
    spark: Any,
    env: Env,
    schema: str,
    views: dict[str, str],
    rounds: list[list[str]],
    expect: dict[str, str] | None = None,
) -> None:
    """Build each of ``views`` (name: query) in ``schema`` completely, then after each round
    of statements refresh every one and check it against its query recomputed. Each
    refreshes FAST unless ``expect`` gives it another refresh type."""
    for name, sql in views.items():
        refresh_and_check(spark, env, TableName(schema, name), sql, exists=False, expect="COMPLETE")
    for statements in rounds:
        for statement in statements:
            spark.sql(statement)
        for name, sql in views.items():
            refresh_and_check(
                spark, env, TableName(schema, name), sql, exists=True,
                expect=(expect or {}).get(name, "FAST"),
            )  # fmt: skip
