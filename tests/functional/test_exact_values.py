"""Arithmetic over aggregates refreshes fast to exactly the value a recompute gives: the
same digits at the same scale, not a nearby decimal.

Spark types ``sum(y) / count(*)`` over ``DECIMAL(10,2)`` from the operands' precisions. A
fast refresh computes the new sums from the old ones plus a delta, in wider decimals; if
it divided those as they are, the quotient would be rounded to fewer digits (the view
stored 0.91666667000000000000 where the query gives 0.91666666666666666667).
"""

from __future__ import annotations

from decimal import Decimal

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
    "sum(m.x) / 7 AS sx7"
)


@pytest.mark.parametrize(("shape", "path"), [("aggregate", "java"), ("join_aggregate", "sql")])
def test_arithmetic_over_aggregates_refreshes_to_the_recomputed_digits(
    spark,  # type: ignore[no-untyped-def]
    shape: str,
    path: str,
) -> None:
    schema = f"exact_{shape}"
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(
        f"CREATE TABLE {schema}.m (k BIGINT NOT NULL, g STRING, x INT, y DECIMAL(10,2), "
        "d DOUBLE) USING iceberg"
    )
    spark.sql(f"CREATE TABLE {schema}.dim (g STRING NOT NULL, region STRING) USING iceberg")
    spark.sql(
        f"INSERT INTO {schema}.m VALUES (1, 'a', 1, 1.50, 0.5), (2, 'a', 2, 2.25, 0.25), "
        "(3, 'b', 4, NULL, NULL), (4, 'b', 5, 0.01, 1e300)"
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
        f"({k}, 'a', {k}, {'7.25' if k == 5 else '0.00'}, 0.75)" for k in range(5, 15)
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
