"""Arithmetic over aggregates refreshes fast to exactly the value a recompute gives: the
same digits at the same scale, not a nearby decimal.

Spark types ``sum(y) / count(*)`` over ``DECIMAL(10,2)`` from the operands' precisions. A
fast refresh computes the new sums from the old ones plus a delta, in wider decimals; if
it divided those as they are, the quotient would be rounded to fewer digits (the view
stored 0.91666667000000000000 where the query gives 0.91666666666666666667).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest

from dbt.adapters.fastrefresh.engine import refresh
from dbt.adapters.fastrefresh.mlog import ddl as mlog
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.functional.sites import env_for

# The doubles are binary fractions, so their sums are exact in any order (sums of other
# doubles, added in another order than the recompute's, may differ in the last bit).
OUTPUTS = (
    "sum(m.y) / count(*) AS r, sum(m.y) * 2 AS s2, avg(m.y) AS ay, avg(m.y) * 3 AS a3, "
    "sum(m.y) / count(m.y) + 1 AS r1, sum(m.d) / count(*) AS rd, avg(m.x) AS ax, "
    "sum(m.x) / 7 AS sx7, avg(m.w) AS aw"
)


@pytest.mark.parametrize(("shape", "path"), [("aggregate", "java"), ("join_aggregate", "sql")])
def test_arithmetic_over_aggregates_refreshes_to_the_recomputed_digits(
    spark: Any,
    shape: str,
    path: str,
) -> None:
    schema = f"exact_{shape}"
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(
        f"CREATE TABLE {schema}.m (k BIGINT NOT NULL, g STRING, x INT, y DECIMAL(10,2), "
        "d DOUBLE, w DECIMAL(38,6)) USING iceberg"
    )
    spark.sql(f"CREATE TABLE {schema}.dim (g STRING NOT NULL, region STRING) USING iceberg")
    spark.sql(
        f"INSERT INTO {schema}.m VALUES (1, 'a', 1, 1.50, 0.5, 1.000001), "
        "(2, 'a', 2, 2.25, 0.25, 2.5), (3, 'b', 4, NULL, NULL, NULL), (4, 'b', 5, 0.01, 1e300, 7)"
    )
    spark.sql(f"INSERT INTO {schema}.dim VALUES ('a', 'north'), ('b', 'south')")
    env = env_for(spark, f"{schema}_registry", path)
    mlog.create_mview_log(env, f"{schema}.m", key=["k"])
    if shape == "aggregate":
        sql = f"SELECT m.g, {OUTPUTS} FROM {schema}.m m GROUP BY m.g"
    else:
        mlog.create_mview_log(env, f"{schema}.dim", key=["g"])
        sql = (
            f"SELECT d.region, {OUTPUTS} FROM {schema}.m m JOIN {schema}.dim d ON m.g = d.g "
            "GROUP BY d.region"
        )
    view = TableName(schema, "v")
    columns = ", ".join(spark.sql(sql).columns)

    def run(exists: bool) -> str:
        result = refresh.refresh_view(env, view=view, sql=sql, method="fast", exists=exists)
        return result.refresh_type

    def check() -> None:
        got = sorted(spark.sql(f"SELECT {columns} FROM {view.sql}").collect(), key=str)
        want = sorted(spark.sql(sql).collect(), key=str)
        assert got == want
        for a, b in zip(got, want, strict=True):  # Decimal('1.0') == Decimal('1.00'): scales too
            assert [str(v) for v in a] == [str(v) for v in b]

    assert run(False) == "COMPLETE"
    check()
    # 'a' becomes (1.50 + 2.25 + 7.25) / 12 rows = 11 / 12: digits a short scale would round.
    values = ", ".join(
        f"({k}, 'a', {k}, {'7.25' if k == 5 else '0.00'}, 0.75, {k}.000003)" for k in range(5, 15)
    )
    spark.sql(f"INSERT INTO {schema}.m VALUES {values}")
    spark.sql(f"UPDATE {schema}.m SET y = y + 0.01, d = d * 2 WHERE k = 4")
    assert run(True) == "FAST"
    check()
    assert any(
        isinstance(v, Decimal) and str(v).startswith("0.916666666666")
        for row in spark.sql(f"SELECT r FROM {view.sql}").collect()
        for v in row
    ), "the example reaches the repeating quotient it is about"
    spark.sql(f"DELETE FROM {schema}.m WHERE k IN (1, 4)")
    assert run(True) == "FAST"
    check()


# (precision, scale) of AVG arguments: scales below AVG's minimum quotient scale of 6,
# at it and above it, sums narrower and wider than 38 - 6 integer digits.
DECIMALS = [(5, 0), (12, 0), (38, 0), (10, 1), (10, 2), (23, 2), (38, 2), (6, 3), (38, 6), (28, 10)]


@pytest.mark.parametrize(("precision", "scale"), DECIMALS)
def test_average_from_sum_and_count_equals_sparks_avg(spark, precision: int, scale: int) -> None:  # type: ignore[no-untyped-def]
    """The AVG a fast refresh writes (``average`` over a group's sum and count) has every
    digit of Spark's AVG over the group's rows: random groups of random sizes, negative
    values, and a tie that a second rounding gets wrong (354435.50 / 2803 = 126.4486265)."""
    import random

    from sqlglot import exp

    from dbt.adapters.fastrefresh.ivm.analysis import DIALECT
    from dbt.adapters.fastrefresh.ivm.sqlgen.aggregate import average

    rng = random.Random(precision * 100 + scale)
    bound = 10 ** min(precision, 15) - 1
    rows = [
        (g, str(Decimal(rng.randint(-bound // 3, bound)).scaleb(-scale)))
        for g in range(400)
        for _ in range(rng.choice([1, 2, 3, 7, 16, 40, 75]))
    ]
    has_tie = scale >= 2 and precision - scale >= 3
    if has_tie:  # the tie: 2802 rows of 126.45 and one of 122.60
        rows += [(-1, "126.45")] * 2802 + [(-1, "122.60")]
    frame = spark.createDataFrame(rows, "g INT, v STRING")
    frame.selectExpr("g", f"CAST(v AS DECIMAL({precision},{scale})) AS v").createOrReplaceTempView(
        "avg_rows"
    )
    groups = spark.sql(
        "SELECT g, avg(v) AS a, sum(v) AS total, count(v) AS n, typeof(sum(v)) AS sum_type, "
        "typeof(avg(v)) AS avg_type FROM avg_rows GROUP BY g"
    )
    groups.createOrReplaceTempView("avg_groups")
    first = groups.first()
    expression = average(
        exp.column("total"), exp.column("n"), first["sum_type"], first["avg_type"]
    ).sql(dialect=DIALECT)
    got = spark.sql(
        f"SELECT g, a, {expression} AS b, total, n FROM avg_groups WHERE NOT (a <=> {expression})"
    ).collect()
    assert got == [], f"{len(got)} groups differ, e.g. {got[:3]}"
    if has_tie:
        tie = spark.sql("SELECT a FROM avg_groups WHERE g = -1").first()["a"]
        assert str(tie).startswith("126.448626"), tie  # Spark's own digits, rounded once


def test_average_of_a_sum_too_wide_to_divide_exactly_stops_with_the_fix(spark) -> None:  # type: ignore[no-untyped-def]
    """A DECIMAL(38,2) sum of 10^32 or more cannot be divided to AVG's six decimals in
    Spark's types: the refresh stops and says what to do, rather than write a NULL."""
    from sqlglot import exp

    from dbt.adapters.fastrefresh.ivm.analysis import DIALECT
    from dbt.adapters.fastrefresh.ivm.sqlgen.aggregate import average

    sql = average(exp.column("total"), exp.column("n"), "decimal(38,2)", "decimal(38,6)").sql(
        dialect=DIALECT
    )
    narrow = "CAST(99999999999999999999999999999999.99 AS DECIMAL(38,2))"  # 10^32 - 0.01
    assert (
        spark.sql(f"SELECT {sql} FROM (SELECT {narrow} AS total, 3L AS n)").first()[0]
        == (spark.sql(f"SELECT CAST({narrow} / 3 AS DECIMAL(38,6))").first()[0])
    )
    with pytest.raises(Exception, match="full-refresh"):
        wide = "CAST(100000000000000000000000000000000.00 AS DECIMAL(38,2))"
        spark.sql(f"SELECT {sql} FROM (SELECT {wide} AS total, 3L AS n)").collect()


# Each fast refresh of these views wrote a wrong value or failed before (a review's
# findings): a DECIMAL(38,18) sum kept 6 or 17 of its 18 digits after the point (the
# sign was multiplied in, widening the decimal past 38 digits, and the old sum and the
# delta were added in 39); an INT sum wrapped when the row holding -2^31 left (its
# negation overflowed INT); a min/max view whose group is not an output failed on a
# duplicated column; try_sum/try_avg/mean/every were taken for row-level functions; a
# DISTINCT's integer constant became GROUP BY's position.
EDGE_VIEWS = {
    "wide_sums": "SELECT g, sum(y) AS sy, avg(y) AS ay, sum(y) / count(*) AS r, sum(x) AS sx, "
                 "avg(x) AS ax, count(*) AS n FROM {m} GROUP BY g",
    "hidden_group": "SELECT max(x) AS mx, count(DISTINCT y) AS cd FROM {m} GROUP BY g",
    "spark_aggregates": "SELECT g, try_sum(x) AS ts, try_avg(y) AS ta, mean(x) AS mx, "
                        "every(x > 0) AS e FROM {m} GROUP BY ALL",
    "global_try_sum": "SELECT try_sum(x) AS s FROM {m}",
    "distinct_constant": "SELECT DISTINCT g, 0 AS z, 3 AS w FROM {m}",
}  # fmt: skip


@pytest.mark.parametrize("path", ["java", "sql"])
def test_edge_values_and_aggregates_refresh_to_the_recomputed_values(spark, path: str) -> None:  # type: ignore[no-untyped-def]
    schema = f"exact_edges_{path}"
    master = f"{schema}.m"
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(
        f"CREATE TABLE {master} (k BIGINT NOT NULL, g STRING, x INT, y DECIMAL(38,18)) "
        "USING iceberg"
    )
    spark.sql(
        f"INSERT INTO {master} VALUES (1, 'a', -2147483648, 1.5), "
        "(2, 'a', 5, 0.000000000000000001), (3, 'b', 7, NULL)"
    )
    env = env_for(spark, f"{schema}_registry", path)
    mlog.create_mview_log(env, master, key=["k"])
    views = {TableName(schema, n): sql.format(m=master) for n, sql in EDGE_VIEWS.items()}

    def refresh_all(exists: bool) -> None:
        for view, sql in views.items():
            result = refresh.refresh_view(env, view=view, sql=sql, method="force", exists=exists)
            assert result.refresh_type == ("FAST" if exists else "COMPLETE"), (view, result.reason)
            columns = ", ".join(spark.sql(sql).columns)
            got = sorted(spark.sql(f"SELECT {columns} FROM {view.sql}").collect(), key=str)
            want = sorted(spark.sql(sql).collect(), key=str)
            assert [[str(v) for v in r] for r in got] == [[str(v) for v in r] for r in want], view

    refresh_all(False)
    for statement in (
        f"UPDATE {master} SET y = 0.123456789 WHERE k = 1",
        f"INSERT INTO {master} VALUES (4, 'a', 1, 12.111111111111111111), (5, 'b', 2, 0.5)",
        f"DELETE FROM {master} WHERE k = 1",
    ):
        spark.sql(statement)
        refresh_all(True)


NON_FINITE_VIEWS = {
    # (query, method, view write mode): a small copy-on-write view takes its delta as an
    # overwrite, a merge-on-read one as a MERGE; the global aggregate as a MERGE.
    "grouped": ("SELECT g, sum(d) AS sd, avg(d) AS ad, sum(f) AS sf, count(*) AS n "
                "FROM {m} GROUP BY g", "force", None),
    "grouped_mor": ("SELECT g, sum(d) AS sd, avg(f) AS af FROM {m} GROUP BY g", "force", "mor"),
    "global": ("SELECT sum(d) AS sd, avg(d) AS ad, count(*) AS n FROM {m}", "force", None),
    "fast_only": ("SELECT g, sum(d) AS sd FROM {m} GROUP BY g", "fast", None),
}  # fmt: skip


@pytest.mark.parametrize("path", ["java", "sql"])
def test_a_nan_or_infinity_comes_into_a_float_sum_fast_and_leaving_it_rebuilds(  # type: ignore[no-untyped-def]
    spark, path: str
) -> None:
    """Spark's SUM of a group holding a NaN is NaN, holding +Infinity (and no -Infinity)
    +Infinity. Such a value comes into a kept sum as it would into SUM, but cannot be
    taken out of it (NaN - NaN is NaN): a fast refresh kept the view's sum NaN for good
    after the row left. Now its statement stops, commits nothing, and the refresh is
    complete under force, or fails naming the fix under fast."""
    from dbt.adapters.fastrefresh.errors import FastRefreshError
    from dbt.adapters.fastrefresh.protocol.decisions import ReasonCode

    schema = f"exact_nonfinite_{path}"
    master = f"{schema}.m"
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(
        f"CREATE TABLE {master} (k BIGINT NOT NULL, g STRING, d DOUBLE, f FLOAT) USING iceberg"
    )
    spark.sql(
        f"INSERT INTO {master} VALUES (1, 'a', 0.5, 1.5), (2, 'b', 0.25, 2.0), (3, 'c', 1.0, 0.5)"
    )
    env = env_for(spark, f"{schema}_registry", path)
    mlog.create_mview_log(env, master, key=["k"])
    mor = refresh.TableSpec(properties={"write.merge.mode": "merge-on-read", "format-version": "2"})
    views = {
        TableName(schema, name): (sql.format(m=master), method, mor if mode else None)
        for name, (sql, method, mode) in NON_FINITE_VIEWS.items()
    }

    def refresh_one(view: TableName, *, exists: bool = True, full: bool = False):  # type: ignore[no-untyped-def]
        sql, method, table = views[view]
        return refresh.refresh_view(
            env, view=view, sql=sql, method=method, exists=exists, full_refresh=full, table=table
        )

    def rows(view: TableName, sql: str) -> tuple[list[list[str]], list[list[str]]]:
        columns = ", ".join(spark.sql(sql).columns)
        got = spark.sql(f"SELECT {columns} FROM {view.sql}").collect()
        want = spark.sql(sql).collect()
        return sorted([str(v) for v in r] for r in got), sorted([str(v) for v in r] for r in want)

    def check(view: TableName) -> None:
        got, want = rows(view, views[view][0])
        assert got == want, view

    for view in views:
        assert refresh_one(view, exists=False).refresh_type == "COMPLETE"
    # In: a NaN into 'a', +Infinity into 'b', -Infinity and +Infinity into 'c' (NaN).
    spark.sql(
        f"INSERT INTO {master} VALUES (4, 'a', double('NaN'), float('NaN')), "
        "(5, 'b', double('Infinity'), float('Infinity')), (6, 'c', double('-Infinity'), 1.0), "
        "(7, 'c', double('Infinity'), float('-Infinity')), (8, 'a', 2.0, 2.0)"
    )
    for view in views:
        assert refresh_one(view).refresh_type == "FAST", view
        check(view)
    assert (
        rows(TableName(schema, "grouped"), views[TableName(schema, "grouped")][0])[1][0][1] == "nan"
    )
    # A row holding -Infinity in d updated in another column: its old image takes the
    # -Infinity out and its new one brings it back, so the group keeps it: fast (every
    # such refresh was a rebuild).
    spark.sql(f"UPDATE {master} SET f = 1.75 WHERE k = 6")
    for view in views:
        assert refresh_one(view).refresh_type == "FAST", view
        check(view)
    # A finite value leaving a group that keeps its infinity, and a new finite row: fast.
    spark.sql(f"DELETE FROM {master} WHERE k = 2")
    spark.sql(f"INSERT INTO {master} VALUES (9, 'b', 4.0, 4.0)")
    for view in views:
        assert refresh_one(view).refresh_type == "FAST", view
        check(view)
    # Out: the NaN of 'a' is updated to a number, 'c''s -Infinity deleted.
    spark.sql(f"UPDATE {master} SET d = 3.0, f = 3.0 WHERE k = 4")
    spark.sql(f"DELETE FROM {master} WHERE k = 6")
    fast_only = TableName(schema, "fast_only")
    storage = f"{schema}.fast_only__fr_data"
    before = spark.sql(f"SELECT snapshot_id FROM {storage}.snapshots").count()
    # Refreshed by name, not by dbt: the fix is a refresh with method 'complete'.
    rebuild = r"Fix: refresh it once with method 'complete'"
    with pytest.raises(FastRefreshError, match=rf"floating-point SUM/AVG of m\.d, .*{rebuild}"):
        refresh_one(fast_only)
    assert spark.sql(f"SELECT snapshot_id FROM {storage}.snapshots").count() == before
    for view in views:
        if view == fast_only:
            result = refresh_one(view, full=True)
            assert result.refresh_type == "COMPLETE"
        else:
            result = refresh_one(view)
            assert result.refresh_type == "COMPLETE", view
            assert result.reason is not None and result.reason.code is ReasonCode.NON_FINITE_LEFT
            assert re.search(r"NaN or an infinity left .* of m\.[df], ", str(result.reason))
        check(view)
    # Once rebuilt, the views refresh fast again.
    spark.sql(f"INSERT INTO {master} VALUES (10, 'a', 1.25, 1.25)")
    for view in views:
        assert refresh_one(view).refresh_type == "FAST", view
        check(view)


def test_a_nan_leaving_a_join_aggregate_with_its_dimension_row_rebuilds(spark) -> None:  # type: ignore[no-untyped-def]
    """Over a join, a row of the join leaves when either side changes: a dimension row
    moving its fact rows, NaN among them, to another group takes the NaN out of the old
    group's sum. The delta rule's old join rows stop the statement as a fact's would."""
    from dbt.adapters.fastrefresh.protocol.decisions import ReasonCode

    schema = "exact_nonfinite_join"
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(f"CREATE TABLE {schema}.m (k BIGINT NOT NULL, g STRING, d DOUBLE) USING iceberg")
    spark.sql(f"CREATE TABLE {schema}.dim (g STRING NOT NULL, region STRING) USING iceberg")
    spark.sql(f"INSERT INTO {schema}.m VALUES (1, 'a', 0.5), (2, 'b', 0.25), (4, 'c', 1.0)")
    spark.sql(f"INSERT INTO {schema}.dim VALUES ('a', 'north'), ('b', 'south'), ('c', 'north')")
    env = env_for(spark, f"{schema}_registry")
    mlog.create_mview_log(env, f"{schema}.m", key=["k"])
    mlog.create_mview_log(env, f"{schema}.dim", key=["g"])
    sql = (
        f"SELECT d.region, sum(m.d) AS sd, count(*) AS n FROM {schema}.m m "
        f"JOIN {schema}.dim d ON m.g = d.g GROUP BY d.region"
    )
    view = TableName(schema, "v")

    def run():  # type: ignore[no-untyped-def]
        return refresh.refresh_view(env, view=view, sql=sql, method="force", exists=True)

    def check() -> None:
        got = spark.sql(f"SELECT region, sd, n FROM {view.sql}").collect()
        assert sorted(map(str, got)) == sorted(map(str, spark.sql(sql).collect()))

    refresh.refresh_view(env, view=view, sql=sql, method="force", exists=False)
    spark.sql(f"INSERT INTO {schema}.m VALUES (3, 'a', double('NaN'))")
    assert run().refresh_type == "FAST"
    check()
    assert str(spark.sql(f"SELECT sd FROM {view.sql} WHERE region = 'north'").first()[0]) == "nan"
    # 'a' and its NaN move south: north keeps 'c' alone, its sum 1.0 (NaN kept, before).
    spark.sql(f"UPDATE {schema}.dim SET region = 'south' WHERE g = 'a'")
    result = run()
    assert result.refresh_type == "COMPLETE" and result.reason is not None
    assert result.reason.code is ReasonCode.NON_FINITE_LEFT
    check()


WIDE_VIEWS = {
    # (query, merge-on-read): a small copy-on-write view takes its delta as an overwrite
    # of every group, a merge-on-read one as a MERGE of the changed groups.
    "grouped": ("SELECT g, avg(x) AS ax, sum(x) AS sx, count(*) AS n FROM {m} GROUP BY g", False),
    "grouped_mor": ("SELECT g, avg(x) AS ax, sum(x) AS sx FROM {m} GROUP BY g", True),
    "global": ("SELECT avg(x) AS ax, sum(x) AS sx, count(*) AS n FROM {m}", False),
}


@pytest.mark.parametrize("path", ["java", "sql"])
def test_a_bigint_sum_past_2_63_rebuilds_and_averages_stay_sparks(spark, path: str) -> None:  # type: ignore[no-untyped-def]
    """Spark's SUM of BIGINTs wraps past 2^63 (ANSI off) and its AVG, summing in DOUBLE,
    does not: a kept BIGINT sum wrapped, and the view's AVG went negative (-2.1e18 for three
    rows of 4e18). A changed group's sum is now added up exactly and the statement stops
    where it passes the BIGINT range, or where the build's sum had (try_sum's NULL):
    under force the view is rebuilt, saying so; a group back in range refreshes fast."""
    # 'a' passes 2^63 (1.2e19): every view rebuilds.
    _walk_a_sum_out_of_its_range(
        spark, path, ("BIGINT", 4_000_000_000_000_000_000), WIDE_VIEWS,
        past=["COMPLETE"] * 3, said="BIGINT sum passed 2^63",
    )  # fmt: skip


@pytest.mark.parametrize("path", ["java", "sql"])
def test_a_decimal_sum_past_its_type_stays_null_as_sparks(spark: Any, path: str) -> None:
    """Spark's SUM of DECIMAL(38,2) is NULL where a group's exact sum passes 10^36 (ANSI
    off). The view kept that NULL, and its next fast refresh added the changes to it as to
    0: the view showed a number where the query gives NULL (a hunt through dbt found it).
    A kept NULL over values now stops the statement, and 'force' rebuilds; a sum that
    passes its type in a fast refresh is NULL, as Spark's."""
    views = {
        "grouped": ("SELECT g, sum(x) AS sx, count(*) AS n FROM {m} GROUP BY g", False),
        "grouped_mor": ("SELECT g, sum(x) AS sx FROM {m} GROUP BY g", True),
        "global": ("SELECT sum(x) AS sx, count(*) AS n FROM {m}", False),
    }
    # 4e35: three of them pass 10^36, NULL as Spark's SUM gives it, fast.
    _walk_a_sum_out_of_its_range(
        spark, path, ("DECIMAL(38,2)", "400000000000000000000000000000000000.00"), views,
        past=["FAST"] * 3, said="DECIMAL sum passed its type",
    )  # fmt: skip


def _walk_a_sum_out_of_its_range(
    spark: Any,
    path: str,
    column: tuple[str, object],
    views: dict[str, tuple[str, bool]],
    *,
    past: list[str],
    said: str,
) -> None:
    """Three views (a copy-on-write one written by an overwrite of every group, a
    merge-on-read one by a MERGE, a global aggregate), each checked against its query
    after every refresh, over a master whose group 'a' holds two rows of ``column``'s
    ``big`` value: a third takes the group's sum out of its type's range (the views'
    refresh types then ``past``), a change of 'b' alone follows, then 'a' back in range. A
    rebuild not asked for must say ``said`` (``sum_out_of_range``)."""
    from dbt.adapters.fastrefresh.protocol.decisions import ReasonCode

    sql_type, big = column
    schema = f"exact_{sql_type.split('(')[0].lower()}_past_{path}"
    master = f"{schema}.m"
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(f"CREATE TABLE {master} (k BIGINT NOT NULL, g STRING, x {sql_type}) USING iceberg")
    spark.sql(f"INSERT INTO {master} VALUES (1, 'a', {big}), (2, 'a', {big}), (3, 'b', 1)")
    env = env_for(spark, f"{schema}_registry", path)
    mlog.create_mview_log(env, master, key=["k"])
    mor = refresh.TableSpec(properties={"write.merge.mode": "merge-on-read", "format-version": "2"})
    tables = {
        TableName(schema, name): (sql.format(m=master), mor if merge_on_read else None)
        for name, (sql, merge_on_read) in views.items()
    }

    def refreshed(view: TableName, exists: bool = True) -> str:
        sql, table = tables[view]
        result = refresh.refresh_view(
            env, view=view, sql=sql, method="force", exists=exists, table=table
        )
        columns = ", ".join(spark.sql(sql).columns)
        got = spark.sql(f"SELECT {columns} FROM {view.sql}").collect()
        assert sorted(map(str, got)) == sorted(map(str, spark.sql(sql).collect())), view
        if result.refresh_type == "COMPLETE" and exists:
            assert result.reason is not None, view
            assert result.reason.code is ReasonCode.SUM_OUT_OF_RANGE, result.reason
            assert said in str(result.reason), result.reason
        return str(result.refresh_type)

    assert [refreshed(v, exists=False) for v in tables] == ["COMPLETE"] * 3
    expected = [
        (f"INSERT INTO {master} VALUES (4, 'a', {big})", past),
        # Only 'b' changes: the MERGE leaves 'a' as it is; the overwrite reads 'a''s sum,
        # NULL over values past the range, and rebuilds; so does the global aggregate.
        (f"INSERT INTO {master} VALUES (5, 'b', 2)", ["COMPLETE", "FAST", "COMPLETE"]),
        # 'a' back in range: its kept sum is NULL, so every view rebuilds once...
        (f"DELETE FROM {master} WHERE k = 4", ["COMPLETE"] * 3),
        # ... and then refreshes fast.
        (f"INSERT INTO {master} VALUES (6, 'b', 3), (7, 'a', -5)", ["FAST"] * 3),
    ]
    for statement, types in expected:
        spark.sql(statement)
        assert [refreshed(v) for v in tables] == types, statement


def _as_shown(spark: Any, sql: str) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` as strings, sorted: a -0.0 shows as '-0.0', where Spark's
    equality, GROUP BY and EXCEPT ALL (``sites.matches``) take it for 0.0."""
    columns = ", ".join(f"CAST(`{c}` AS STRING)" for c in spark.sql(sql).columns)
    return sorted(tuple(r) for r in spark.sql(f"SELECT {columns} FROM ({sql})").collect())


def test_a_negative_zero_keeps_its_sign_from_the_log_to_the_views(spark: Any) -> None:
    """A DOUBLE -0.0 is 0.0 to Spark's comparisons and GROUP BY (which returns 0.0 for
    it), inside an array too, but a cast to a string shows its sign. Capture cancelled an
    update from 0.0 to -0.0 as no change (keyed log: its two images compared equal;
    key-less: its two rows netted out), and logged a -0.0 that a copy-on-write commit
    carried over as 0.0; a key-less projection's delta grouped it into 0.0 too. Views of a
    keyed and a key-less master (the capture's pairing by key and its netting) follow
    changes between the two zeros."""
    schema = "negative_zero"
    spark.sql(f"CREATE SCHEMA {schema}")
    env = env_for(spark, f"{schema}_registry")
    views = {}
    for master, key in (("keyed", ["k"]), ("keyless", None)):
        m = f"{schema}.{master}"
        spark.sql(
            f"CREATE TABLE {m} (k BIGINT NOT NULL, d DOUBLE, a ARRAY<DOUBLE>, s STRING, x INT) "
            "USING iceberg"
        )
        if key:
            spark.sql(f"ALTER TABLE {m} SET IDENTIFIER FIELDS k")
        spark.sql(
            f"INSERT INTO {m} VALUES (1, 0.0D, array(0.0D), 'a', 1), "
            "(2, -0.0D, array(-0.0D), 'a', 2), (3, 1.5D, array(1.5D), 'b', 3)"
        )
        mlog.create_mview_log(env, m, key=key)
        views[f"{master}_rows"] = (
            f"SELECT k, d, CAST(d AS STRING) AS ds, CAST(a AS STRING) AS sa FROM {m}"
        )
    m = f"{schema}.keyed"
    # Groups the sign tells apart; rows equal but for the sign of a zero, and computed from
    # one (a projection without the key: counted rows).
    views["signs"] = f"SELECT CAST(d AS STRING) AS ds, count(*) AS n FROM {m} GROUP BY 1"
    views["counted"] = f"SELECT d, -d AS nd, a, s FROM {schema}.keyless"
    for name, sql in views.items():
        refresh.refresh_view(
            env, view=TableName(schema, name), sql=sql, method="force", exists=False
        )
    rounds = [
        # 0.0 to -0.0; another column of a -0.0 row (its file rewritten, copy-on-write).
        ["UPDATE {m} SET d = -0.0D WHERE k = 1", "UPDATE {m} SET x = 9 WHERE k = 2"],
        [
            "INSERT INTO {m} VALUES (4, -0.0D, array(0.0D), 'a', 4), (5, 0.0D, array(0.0D), 'a', 5)",
            "DELETE FROM {m} WHERE k = 3",
        ],
        # -0.0 to 0.0, and the rows of both zeros touched at once.
        [
            "UPDATE {m} SET d = 0.0D WHERE k IN (2, 4)",
            "UPDATE {m} SET s = 'c' WHERE k IN (1, 5)",
            # A -0.0 inside a value alone.
            "UPDATE {m} SET a = array(-0.0D) WHERE k = 5",
        ],
    ]
    for statements in rounds:
        for master in ("keyed", "keyless"):
            for statement in statements:
                spark.sql(statement.format(m=f"{schema}.{master}"))
        for name, sql in views.items():
            view = TableName(schema, name)
            result = refresh.refresh_view(env, view=view, sql=sql, method="fast", exists=True)
            assert result.refresh_type == "FAST", (name, str(result.reason))
            assert _as_shown(spark, f"SELECT * FROM {view.sql}") == _as_shown(spark, sql), name
