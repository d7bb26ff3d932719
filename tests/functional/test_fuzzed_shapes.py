"""Query shapes a differential fuzzer found wrong (random queries over the supported
shapes, random DML, each view compared with its query recomputed after every refresh).

A group or partition expression that is itself a condition (``GROUP BY t.bo AND t.i > 1``,
``PARTITION BY i IS NULL``) was written under the ``<=>`` that picks the groups or
partitions a change touched without parentheses: ``t.bo AND t.i > 1 <=> g`` reads as
``t.bo AND (t.i > 1 <=> g)``, which recomputed the wrong groups and left the view wrong
without an error, and ``t.i IS NULL <=> g`` did not parse. Shapes it found refused
that can be planned are here too."""

from __future__ import annotations

from typing import Any

import pytest

from dbt.adapters.fastrefresh.engine import refresh
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.mlog import ddl as mlog
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.functional.sites import env_for, refresh_and_check, views_follow_rounds

CONDITION_GROUPS = {
    "min_by_and": "SELECT t.bo AND t.i > 1 AS g, min(t.i) AS m FROM {t} t GROUP BY t.bo AND t.i > 1",
    "max_by_is_null": "SELECT t.i IS NULL AS g, max(t.i) AS m FROM {t} t GROUP BY t.i IS NULL",
    "distinct_count_by_or": (
        "SELECT t.i > 3 OR t.bo AS g, count(DISTINCT t.i) AS n FROM {t} t GROUP BY t.i > 3 OR t.bo"
    ),
    "join_min_by_and": (
        "SELECT t.bo AND t.i > 1 AS g, min(u.i) AS m FROM {t} t JOIN {u} u ON t.k = u.id "
        "GROUP BY t.bo AND t.i > 1"
    ),
    "window_by_and": (
        "SELECT k, i, row_number() OVER (PARTITION BY bo AND i > 1 ORDER BY k) AS rn FROM {t}"
    ),
    "window_by_is_null": "SELECT k, i, count(*) OVER (PARTITION BY i IS NULL) AS c FROM {t}",
}


def test_groups_and_partitions_by_a_condition_equal_their_queries(spark: Any) -> None:
    schema = "fuzzed_conditions"
    t, u = f"{schema}.t", f"{schema}.u"
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(f"CREATE TABLE {t} (k BIGINT NOT NULL, i INT, bo BOOLEAN) USING iceberg")
    spark.sql(f"CREATE TABLE {u} (id BIGINT NOT NULL, i INT) USING iceberg")
    spark.sql(f"INSERT INTO {t} VALUES (1, 1, true), (2, 5, false), (3, NULL, NULL), (4, 2, true)")
    spark.sql(f"INSERT INTO {u} VALUES (1, 1), (2, 5), (3, NULL), (4, 2)")
    env = env_for(spark, f"{schema}_registry", "java")
    mlog.create_mview_log(env, t, key=["k"])
    mlog.create_mview_log(env, u, key=["id"])
    rounds = [
        # k = 1 leaves the group (true AND 1 > 1) = false for (false AND ...) = false, and
        # the other conditions move it too; k = 3 leaves the NULL groups.
        [f"UPDATE {t} SET i = 7, bo = false WHERE k = 1", f"UPDATE {t} SET i = 9 WHERE k = 3"],
        [
            f"INSERT INTO {t} VALUES (5, NULL, true), (6, 4, NULL)",
            f"UPDATE {u} SET i = 0 WHERE id = 4",
        ],
        [f"DELETE FROM {t} WHERE k IN (2, 4)", f"UPDATE {t} SET bo = NULL WHERE k = 5"],
    ]
    views = {name: sql.format(t=t, u=u) for name, sql in CONDITION_GROUPS.items()}
    views_follow_rounds(spark, env, schema, views, rounds)


# A constant output of an inner join of a key-less table (counted as a bag: GROUP BY the
# outputs) and a constant GROUP BY beside a column were refused as "GROUP BY by position":
# a literal in the GROUP BY the planner wrote, or the user's string literal, which Spark
# reads as a position only when it is an integer.
CONSTANTS = {
    "bag_join_constant": "SELECT b.k, 2 AS two, 'x' AS l FROM {t3} a JOIN {t1} b ON a.s = b.s",
    "bag_join_constants_only": "SELECT 2 AS two FROM {t3} a JOIN {t1} b ON a.s = b.s",
    "group_by_constant_and_column": (
        "SELECT 'b' AS l, s, count(*) AS c, min(k) AS m FROM {t1} GROUP BY 'b', s"
    ),
    # Positions are read as the outputs they name (sqlglot's qualification), as Spark does.
    "group_by_position": "SELECT s, count(*) AS c FROM {t1} GROUP BY 1",
    # A repeated group expression (refused: "a GROUP BY expression is repeated") groups
    # once; each output of it is that group.
    "group_by_repeated": "SELECT s, s AS s2, count(*) AS c FROM {t1} GROUP BY s, s",
    "distinct_repeated": "SELECT DISTINCT a.s, a.s AS s2, a.i FROM {t3} a",
    "join_group_by_repeated": (
        "SELECT b.s, b.s AS s2, sum(a.i) AS t FROM {t3} a JOIN {t1} b ON a.s = b.s "
        "GROUP BY b.s, b.s"
    ),
}


def test_constant_outputs_and_groups_equal_their_queries(spark: Any) -> None:
    schema = "fuzzed_constants"
    t1, t3 = f"{schema}.t1", f"{schema}.t3"
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(f"CREATE TABLE {t1} (k BIGINT NOT NULL, s STRING) USING iceberg")
    spark.sql(f"CREATE TABLE {t3} (s STRING, i INT) USING iceberg")
    spark.sql(f"INSERT INTO {t1} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT INTO {t3} VALUES ('a', 1), ('a', 1)")
    env = env_for(spark, f"{schema}_registry", "java")
    mlog.create_mview_log(env, t1, key=["k"])
    mlog.create_mview_log(env, t3, key=[])
    rounds = [
        [f"INSERT INTO {t3} VALUES ('b', 2), ('c', 3)", f"INSERT INTO {t1} VALUES (3, 'c')"],
        [f"DELETE FROM {t3} WHERE s = 'a'", f"UPDATE {t1} SET s = 'a' WHERE k = 2"],
        # Nothing joins: the constants-only view is empty, and its count row stays at 0.
        [f"DELETE FROM {t3}"],
        [f"INSERT INTO {t3} VALUES ('c', 1), ('c', 1)"],
    ]
    views = {name: sql.format(t1=t1, t3=t3) for name, sql in CONSTANTS.items()}
    views_follow_rounds(spark, env, schema, views, rounds)
    with pytest.raises(FastRefreshError, match=r"GROUP BY of constants only \('b'\)"):
        refresh.refresh_view(
            env, view=TableName(schema, "constant_group"), method="fast", exists=False,
            sql=f"SELECT 'b' AS l, count(*) AS c FROM {t1} GROUP BY 'b'",
        )  # fmt: skip


# A single RIGHT JOIN keeping every row of a filtered CTE was refused ("it filters a table
# a RIGHT or FULL OUTER join keeps every row of"), where its mirror, the LEFT JOIN, was
# planned: it is planned as that LEFT JOIN.
RIGHT_JOINS = {
    "right_keeps_filtered": (
        "WITH c AS (SELECT * FROM {b} WHERE x > 0) SELECT a.k, c.id, c.x FROM {a} a "
        "RIGHT JOIN c ON a.s = c.s"
    ),
    "right_keeps_filtered_by_group": (
        "WITH c AS (SELECT * FROM {b} WHERE x > 0) SELECT c.s, count(a.k) AS n, "
        "max(c.x) AS mx FROM {a} a RIGHT JOIN c ON a.s = c.s GROUP BY c.s"
    ),
    "right_both_filtered": (
        "SELECT a.k, c.id FROM (SELECT * FROM {a} WHERE k < 4) a RIGHT JOIN "
        "(SELECT * FROM {b} WHERE x > 0) c ON a.s = c.s"
    ),
}


def test_a_right_join_keeping_a_filtered_table_equals_its_query(spark: Any) -> None:
    schema = "fuzzed_right"
    a, b = f"{schema}.a", f"{schema}.b"
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(f"CREATE TABLE {a} (k BIGINT NOT NULL, s STRING) USING iceberg")
    spark.sql(f"CREATE TABLE {b} (id BIGINT NOT NULL, s STRING, x INT) USING iceberg")
    spark.sql(f"INSERT INTO {a} VALUES (1, 'a'), (2, 'b'), (3, 'a')")
    spark.sql(f"INSERT INTO {b} VALUES (1, 'a', 1), (2, 'c', 5), (3, 'b', -1)")
    env = env_for(spark, f"{schema}_registry", "java")
    mlog.create_mview_log(env, a, key=["k"])
    mlog.create_mview_log(env, b, key=["id"])
    rounds = [
        [f"UPDATE {b} SET x = 2 WHERE id = 3", f"INSERT INTO {a} VALUES (4, 'c')"],
        [f"UPDATE {b} SET x = -5 WHERE id = 1", f"UPDATE {a} SET s = 'b' WHERE k = 3"],
        [f"DELETE FROM {a} WHERE k = 2", f"INSERT INTO {b} VALUES (4, 'a', 3), (5, NULL, 9)"],
    ]
    views = {name: sql.format(a=a, b=b) for name, sql in RIGHT_JOINS.items()}
    views_follow_rounds(spark, env, schema, views, rounds)


# An aggregate over a join of a table created empty (an Iceberg table without a snapshot):
# the view's state records no snapshot of it, and every refresh was complete ("the
# snapshot of ... that the view last reflected is unknown"), though the delta rule reads a
# table as the view last reflected it only when that table has changes.
EMPTY_JOINED = {
    "agg": "SELECT a.i, count(*) AS n, sum(e.k) AS s FROM {a} a JOIN {e} e ON a.i = e.i GROUP BY a.i",
    "agg_empty_first": (
        "SELECT e.i, count(*) AS n FROM {e} e JOIN {a} a ON a.i = e.i GROUP BY e.i"
    ),
}


def test_a_join_aggregate_over_a_table_created_empty_refreshes_fast(spark: Any) -> None:
    schema = "fuzzed_empty"
    a, e = f"{schema}.a", f"{schema}.e"
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(f"CREATE TABLE {a} (k BIGINT NOT NULL, i INT) USING iceberg")
    spark.sql(f"CREATE TABLE {e} (k BIGINT NOT NULL, i INT) USING iceberg")  # no snapshot
    spark.sql(f"INSERT INTO {a} VALUES (1, 1), (2, 2)")
    env = env_for(spark, f"{schema}_registry", "java")
    mlog.create_mview_log(env, a, key=["k"])
    mlog.create_mview_log(env, e, key=["k"])
    views = {name: sql.format(a=a, e=e) for name, sql in EMPTY_JOINED.items()}
    rounds = [[f"INSERT INTO {a} VALUES (3, 3)"], [f"UPDATE {a} SET i = 1 WHERE k = 2"]]
    views_follow_rounds(spark, env, schema, views, rounds)
    # The empty table's first rows: as the view last reflected it, it had no snapshot to
    # time-travel to, so the refresh is complete once, saying so; fast after.
    spark.sql(f"INSERT INTO {e} VALUES (10, 1), (11, 3)")
    for name, sql in views.items():
        result = refresh_and_check(
            spark, env, TableName(schema, name), sql, exists=True, expect="COMPLETE"
        )
        assert "that the view last reflected is unknown" in str(result.reason)
    spark.sql(f"INSERT INTO {e} VALUES (12, 2)")
    spark.sql(f"DELETE FROM {a} WHERE k = 1")
    for name, sql in views.items():
        refresh_and_check(spark, env, TableName(schema, name), sql, exists=True, expect="FAST")
