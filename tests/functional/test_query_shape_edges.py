"""Query shapes a review found wrong, each equal to its query after changes of every
kind: ``SELECT DISTINCT`` over a ``GROUP BY`` (the DISTINCT matters only when a group
expression is not output; such a view refreshes completely), ``count`` of several
arguments (the rows where none is NULL, recomputed per changed group), and a window's
derived table aliased as its table (the outer query's columns were taken for the
master's, and every fast refresh failed). And the shapes the planner learned from it: a
filtered CTE or derived table an outer join extends with NULLs (the dbt model's "customers
left join completed orders"), whose filter goes into the join's ON, and ``GROUP BY ALL``."""

from __future__ import annotations

from typing import Any

import pytest

from dbt.adapters.fastrefresh.mlog import ddl as mlog
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.functional.sites import env_for, refresh_and_check, views_follow_rounds

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
    rounds = [
        [f"INSERT INTO {master} VALUES (4, 'a', NULL, 5), (5, 'b', 7, 7), (7, 'a', 1, 9)"],
        [f"UPDATE {master} SET h = NULL WHERE k = 1"],
        [f"UPDATE {master} SET x = 2, h = 3 WHERE k = 2"],
        [f"DELETE FROM {master} WHERE k IN (3, 7)"],
        [f"UPDATE {master} SET g = 'a' WHERE k = 6"],
    ]
    views = {name: sql.format(m=master) for name, (sql, _) in VIEWS.items()}
    expect = {name: expect for name, (_, expect) in VIEWS.items()}
    views_follow_rounds(spark, env, schema, views, rounds, expect)


ORDERS_VIEWS = {
    "completed_left": (
        "WITH completed AS (SELECT * FROM {o} WHERE status = 'done' OR amount > 50) "
        "SELECT c.id AS customer_id, c.region, o.id AS order_id, o.amount FROM {c} c "
        "LEFT JOIN completed o ON o.customer = c.id"
    ),
    # A preserved side's condition in ON beside the moved filter: customers outside
    # region 'n' are kept, never matched.
    "completed_left_in_region": (
        "SELECT c.id AS customer_id, o.id AS order_id FROM {c} c LEFT JOIN (SELECT id, "
        "customer FROM {o} WHERE status = 'done') o ON (o.customer = c.id AND c.region = 'n')"
    ),
    "completed_right": (
        "SELECT c.id AS customer_id, o.id AS order_id, o.status FROM (SELECT * FROM {o} "
        "WHERE status <> 'void') o RIGHT JOIN {c} c USING (id)"
    ),
    "completed_by_region": (
        "WITH completed AS (SELECT * FROM {o} WHERE status = 'done') SELECT c.region, "
        "count(o.id) AS n, sum(o.amount) AS total FROM {c} c LEFT JOIN completed o "
        "ON o.customer = c.id GROUP BY ALL"
    ),
    # A joined intermediate model of inner joins: merged from the front.
    "orders_with_region": (
        "WITH oc AS (SELECT o.id, o.amount, c.region, o.customer FROM {o} o JOIN {c} c "
        "ON c.id = o.customer WHERE o.status <> 'void') SELECT d.id AS customer_id, "
        "oc.id AS order_id, oc.region, oc.amount FROM {c} d JOIN oc ON oc.customer = d.id"
    ),
    # ON and WHERE conditions in parentheses (refused before as having no equality, or as
    # a subquery).
    "paren_on": (
        "SELECT c.id AS customer_id, o.id AS order_id FROM {c} c LEFT JOIN {o} o "
        "ON (o.customer = c.id)"
    ),
    "paren_exists": (
        "SELECT c.id, c.region FROM {c} c WHERE (c.region IS NOT NULL AND EXISTS "
        "(SELECT 1 FROM {o} o WHERE (o.customer = c.id) AND o.status = 'done'))"
    ),
    "by_status": ("SELECT status, amount > 50 AS big, count(*) AS n, max(amount) AS top "
                  "FROM {o} GROUP BY ALL"),
}  # fmt: skip


def test_filtered_outer_join_sides_and_group_by_all_equal_their_queries(spark: Any) -> None:
    schema = "shape_edges_join"
    orders, customers = f"{schema}.orders", f"{schema}.customers"
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(f"CREATE TABLE {customers} (id BIGINT NOT NULL, region STRING) USING iceberg")
    spark.sql(
        f"CREATE TABLE {orders} (id BIGINT NOT NULL, customer BIGINT, status STRING, "
        "amount INT) USING iceberg"
    )
    spark.sql(f"INSERT INTO {customers} VALUES (1, 'n'), (2, 's'), (3, 'n'), (4, NULL)")
    spark.sql(
        f"INSERT INTO {orders} VALUES (10, 1, 'done', 10), (11, 1, 'open', 60), "
        "(12, 2, 'void', 5), (13, 3, 'done', 70), (14, NULL, 'done', 1)"
    )
    env = env_for(spark, f"{schema}_registry", "java")
    mlog.create_mview_log(env, orders, key=["id"])
    mlog.create_mview_log(env, customers, key=["id"])
    queries = {name: sql.format(o=orders, c=customers) for name, sql in ORDERS_VIEWS.items()}
    # An output that is not NULL on the rows an outer join fills with NULLs: merged, the
    # view held 1 there where the query gives NULL, from the first build on. Refused, the
    # view is the query, rebuilt.
    refused = {
        "flag_left": f"SELECT c.id, o.flag FROM {customers} c LEFT JOIN (SELECT customer, 1 AS "
        f"flag FROM {orders}) o ON o.customer = c.id",
    }
    for name, sql in {**queries, **refused}.items():
        refresh_and_check(spark, env, TableName(schema, name), sql, exists=False, expect="COMPLETE")
    rounds = [
        [  # an order becomes completed, one stops being; a new customer
            f"UPDATE {orders} SET status = 'done' WHERE id = 11",
            f"UPDATE {orders} SET status = 'open', amount = 20 WHERE id = 10",
            f"INSERT INTO {customers} VALUES (5, 'n')",
        ],
        [  # its orders, a customer leaves region 'n', orders move to another customer
            f"INSERT INTO {orders} VALUES (15, 5, 'done', 3), (16, 4, 'void', 99), "
            "(17, 2, 'done', 0)",
            f"UPDATE {customers} SET region = 's' WHERE id = 1",
            f"UPDATE {orders} SET customer = 3 WHERE id IN (13, 14)",
        ],
        [
            f"DELETE FROM {customers} WHERE id = 3",
            f"DELETE FROM {orders} WHERE status = 'void' OR id = 17",
        ],
    ]
    for statements in rounds:
        for statement in statements:
            spark.sql(statement)
        for name, sql in queries.items():
            refresh_and_check(spark, env, TableName(schema, name), sql, exists=True, expect="FAST")
        for name, sql in refused.items():
            refresh_and_check(
                spark, env, TableName(schema, name), sql, exists=True, expect="COMPLETE"
            )


KEYLESS_VIEWS = {
    # They read no column of the key-less master: its images are the sign alone (the
    # statement selected an empty column list, and every fast refresh failed to parse).
    "rows_of_b": "SELECT count(*) AS n FROM {b}",
    "counts": "SELECT count(*) AS n, 'f' AS src FROM {f} UNION ALL SELECT count(*), 'b' FROM {b}",
    "rows_by_branch": (
        "SELECT g, count(*) AS n FROM {f} GROUP BY g UNION ALL SELECT 'all', count(*) FROM {b}"
    ),
    "a_row_per_row": "SELECT k, g FROM {f} UNION ALL SELECT 0, 'b-row' FROM {b}",
    # A key-less projection's delta groups by its outputs: an integer constant there was
    # read as a GROUP BY position, and every fast refresh failed (0 and 7: out of range; 1
    # or 2 would group by another output).
    "constant_zero": "SELECT g, 0 AS zero FROM {b}",
    "constant_seven": "SELECT g, x, 7 AS seven, 2 AS two FROM {b}",
    # Spark's parser reads -1 as an integer literal too: a position, out of range.
    "constant_negative": "SELECT g, -1 AS sign FROM {b}",
    "distinct_negative": "SELECT DISTINCT g, -1 AS sign, (2) AS two FROM {b}",
}


def test_views_reading_no_column_of_a_keyless_master_refresh_fast(spark: Any) -> None:
    schema = "shape_edges_keyless"
    f, b = f"{schema}.f", f"{schema}.b"
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(f"CREATE TABLE {f} (k INT NOT NULL, g STRING) USING iceberg")
    spark.sql(f"CREATE TABLE {b} (g STRING, x INT) USING iceberg")
    spark.sql(f"INSERT INTO {f} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT INTO {b} VALUES ('a', 1), ('a', 1)")
    env = env_for(spark, f"{schema}_registry", "java")
    mlog.create_mview_log(env, f, key=["k"])
    mlog.create_mview_log(env, b, key=[])
    rounds = [
        [f"INSERT INTO {b} VALUES ('c', 3), ('a', 1)"],
        [f"UPDATE {b} SET g = 'd' WHERE x = 3"],
        [f"DELETE FROM {b} WHERE g = 'a'"],
    ]
    views = {name: sql.format(f=f, b=b) for name, sql in KEYLESS_VIEWS.items()}
    views_follow_rounds(spark, env, schema, views, rounds)


def test_columns_whose_names_need_quotes_refresh_fast(spark: Any) -> None:
    """A master column named `my col` or `select`: a star expanded to it was written
    unquoted (`sp.my col`), and the view could not even be built. One named `x.y` on a
    merge-on-read master: capture selected the positions' rows by unquoted names, read
    as field y of a column x, and every view over the master failed on every run after
    its first UPDATE or DELETE (a hunt through dbt found it)."""
    schema = "shape_edges_quoted"
    sp = f"{schema}.sp"
    spark.sql(f"CREATE SCHEMA {schema}")
    mor = ", ".join(f"'write.{o}.mode'='merge-on-read'" for o in ("update", "delete", "merge"))
    spark.sql(
        f"CREATE TABLE {sp} (k BIGINT NOT NULL, `my col` STRING, `select` INT, `x.y` DOUBLE) "
        f"USING iceberg TBLPROPERTIES ('format-version'='2', {mor})"
    )
    spark.sql(f"INSERT INTO {sp} VALUES (1, 'a', 1, 0.5), (2, 'b', 2, 1.5), (3, 'a', 3, 2.5)")
    env = env_for(spark, f"{schema}_registry", "java")
    mlog.create_mview_log(env, sp, key=["k"])
    views = {
        "everything": f"SELECT * FROM {sp}",
        "filtered": f"SELECT s.* FROM {sp} s WHERE s.`select` > 1",
        "by_name": f"SELECT `my col`, count(*) AS n, sum(`select`) AS total FROM {sp} GROUP BY 1",
        "dotted": f"SELECT k, `x.y` * 2 AS twice FROM {sp}",
    }
    rounds = [
        [
            f"INSERT INTO {sp} VALUES (4, 'c', 4, 3.5)",
            f"UPDATE {sp} SET `my col` = 'b' WHERE k = 1",
        ],
        [f"DELETE FROM {sp} WHERE `select` = 2", f"UPDATE {sp} SET `x.y` = 9.5 WHERE k = 3"],
    ]
    views_follow_rounds(spark, env, schema, views, rounds)


FUNCTION_VIEWS = {
    # sqlglot's Spark dialect wrote each as another function (ivm/dialect.py): LOG(10, x)
    # is 2.9999999999999996 for 1000; PERCENTILE_APPROX, no interpolation; the format
    # dropped (CAST); SIZE, -1 for NULL; DATEDIFF, a BIGINT; STRUCT(s AS key).
    "log10": "SELECT m.k, floor(log10(m.x)) AS mag, log2(m.x) AS l2 FROM {m} m",
    "percentiles": (
        "SELECT m.g, percentile_cont(0.5) WITHIN GROUP (ORDER BY m.x) AS med, "
        "percentile_disc(0.5) WITHIN GROUP (ORDER BY m.x DESC) AS hi FROM {m} m GROUP BY m.g"
    ),
    "formats": (
        "SELECT m.k, to_char(m.d, '000.00') AS c, to_date(m.s, 'yyyy-MM-dd') AS dt, "
        "unix_date(to_date(m.s)) AS days FROM {m} m"
    ),
    "structs": (
        "SELECT m.k, array_size(split(nullif(m.g, 'b'), ',')) AS n, "
        "to_json(named_struct('Key', m.s)) AS j FROM {m} m"
    ),
}


def test_functions_run_as_written(spark: Any) -> None:
    """Each view's columns (names and types) and rows, as JSON (a struct's field names
    count), equal its query's, after the build and after a fast refresh."""
    schema = "shape_edges_functions"
    m = f"{schema}.m"
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(
        f"CREATE TABLE {m} (k BIGINT NOT NULL, g STRING, x DOUBLE, d DECIMAL(10,2), s STRING) "
        "USING iceberg"
    )
    spark.sql(
        f"INSERT INTO {m} VALUES (1, 'a', 1000.0, 12.5, '2024-01-05'), "
        "(2, 'a', 2.0, 3.25, '2024-01-06'), (3, 'b', 100.0, 1.0, '2024-01-07')"
    )
    env = env_for(spark, f"{schema}_registry", "java")
    mlog.create_mview_log(env, m, key=["k"])
    views = {name: sql.format(m=m) for name, sql in FUNCTION_VIEWS.items()}

    def same(name: str) -> None:
        sql = views[name]
        view = spark.sql(f"SELECT * FROM {schema}.{name}")
        query = spark.sql(sql)
        assert view.schema.simpleString() == query.schema.simpleString(), name
        columns = ", ".join(f"`{c}`" for c in query.columns)
        differ = spark.sql(
            f"SELECT j FROM (SELECT to_json(struct({columns})) AS j, 1 AS side FROM "
            f"{schema}.{name} UNION ALL SELECT to_json(struct({columns})), -1 FROM ({sql})) "
            "GROUP BY j HAVING sum(side) <> 0"
        ).collect()
        assert not differ, (name, differ)

    for name in views:
        refresh_and_check(spark, env, TableName(schema, name), views[name], exists=False,
                          expect="COMPLETE")  # fmt: skip
        same(name)
    spark.sql(
        f"INSERT INTO {m} VALUES (4, 'b', 1000.0, 7.5, '2023-02-03'), (5, 'a', 10.0, 0.5, 'y')"
    )
    spark.sql(f"UPDATE {m} SET x = 10000.0 WHERE k = 2")
    for name in views:
        refresh_and_check(spark, env, TableName(schema, name), views[name], exists=True,
                          expect="FAST")  # fmt: skip
        same(name)


@pytest.mark.parametrize("path", ["java", "sql"])
def test_a_key_inserted_then_updated_reaches_views_over_a_key_only_log(
    spark: Any, path: str
) -> None:
    """A key-only log (``columns=[]``) writes an update as one 'U' row. A view that reads
    the key alone, or no column, reads its images from the log; a key inserted and then
    updated in one range ended with that 'U' row, and the net window, which keeps a key's
    last new image, dropped the key's insert: the view lost the row (found by review)."""
    schema = f"edges_keyonly_{path}"
    t = f"{schema}.t"
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(f"CREATE TABLE {t} (k BIGINT NOT NULL, x INT) USING iceberg")
    spark.sql(f"ALTER TABLE {t} SET IDENTIFIER FIELDS k")
    spark.sql(f"INSERT INTO {t} VALUES (1, 1), (2, 2)")
    env = env_for(spark, f"{schema}_registry", path)
    mlog.create_mview_log(env, t, columns=[])
    views = {
        TableName(schema, "tags"): f"SELECT 'row' AS tag FROM {t}",
        TableName(schema, "keys"): f"SELECT k FROM {t} WHERE k > 1",
        TableName(schema, "n"): f"SELECT count(*) AS n FROM {t}",
    }
    for view, sql in views.items():
        refresh_and_check(spark, env, view, sql, exists=False, expect="COMPLETE")
    spark.sql(f"INSERT INTO {t} VALUES (3, 3), (4, 4)")
    spark.sql(f"UPDATE {t} SET x = 30 WHERE k IN (3, 1)")
    for view, sql in views.items():
        refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")
    spark.sql(f"UPDATE {t} SET x = 40 WHERE k = 4")
    spark.sql(f"DELETE FROM {t} WHERE k = 4")
    spark.sql(f"INSERT INTO {t} VALUES (5, 5)")
    spark.sql(f"UPDATE {t} SET x = 50 WHERE k = 5")
    for view, sql in views.items():
        refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")
