"""Query shapes a review found wrong, each equal to its query after changes of every
kind: ``SELECT DISTINCT`` over a ``GROUP BY`` (the DISTINCT matters only when a group
expression is not output; such a view refreshes completely), ``count`` of several
arguments (the rows where none is NULL, recomputed per changed group), and a window's
derived table aliased as its table (the outer query's columns were taken for the
master's, and every fast refresh failed)."""

from __future__ import annotations

from typing import Any

from dbt.adapters.fastrefresh.mlog import ddl as mlog
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.functional.sites import env_for, refresh_and_check

VIEWS = {
    # Two groups (a, 1) and (a, 2) are one row: the view held it twice.
    "distinct_over_groups": ("SELECT DISTINCT m.g FROM {m} m GROUP BY m.g, m.h", "COMPLETE"),
    "distinct_whole_groups": (
        "SELECT DISTINCT m.h, m.g, count(*) AS n FROM {m} m GROUP BY m.g, m.h",
        "FAST",
    ),
    # count(x, h) counted the rows where x is not NULL, whatever h.
    "count_of_two": ("SELECT m.g, count(m.x, m.h) AS c FROM {m} m GROUP BY m.g", "FAST"),
    "window_same_alias": (
        "SELECT m.k, m.g, m.rn FROM (SELECT m.k, m.g, row_number() OVER (PARTITION BY m.g "
        "ORDER BY m.k) AS rn FROM {m} m) m WHERE m.rn = 1",
        "FAST",
    ),
}


def test_edge_shapes_equal_their_queries(spark: Any) -> None:
    schema = "shape_edges"
    master = f"{schema}.m"
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(f"CREATE TABLE {master} (k BIGINT NOT NULL, g STRING, h INT, x INT) USING iceberg")
    spark.sql(
        f"INSERT INTO {master} VALUES (1, 'a', 1, 1), (2, 'a', 2, NULL), (3, 'b', NULL, 3), "
        "(6, 'b', 4, 4)"
    )
    env = env_for(spark, f"{schema}_registry", "java")
    mlog.create_mview_log(env, master, key=["k"])
    for name, (sql, _) in VIEWS.items():
        refresh_and_check(
            spark, env, TableName(schema, name), sql.format(m=master), exists=False,
            expect="COMPLETE",
        )  # fmt: skip
    rounds = [
        f"INSERT INTO {master} VALUES (4, 'a', NULL, 5), (5, 'b', 7, 7), (7, 'a', 1, 9)",
        f"UPDATE {master} SET h = NULL WHERE k = 1",
        f"UPDATE {master} SET x = 2, h = 3 WHERE k = 2",
        f"DELETE FROM {master} WHERE k IN (3, 7)",
        f"UPDATE {master} SET g = 'a' WHERE k = 6",
    ]
    for statement in rounds:
        spark.sql(statement)
        for name, (sql, expect) in VIEWS.items():
            refresh_and_check(
                spark, env, TableName(schema, name), sql.format(m=master), exists=True,
                expect=expect,
            )  # fmt: skip
