"""The planner's dialect writes back as read the Spark functions sqlglot's Spark dialect
rewrites into others that compute other values (ivm/dialect.py)."""

from __future__ import annotations

import pytest
import sqlglot

from dbt.adapters.fastrefresh.ivm.dialect import DIALECT


@pytest.mark.parametrize(
    ("sql", "spark_writes"),
    [
        ("LOG10(x)", "LOG(10, x)"),
        ("LOG2(x)", "LOG(2, x)"),
        ("TO_CHAR(d, '000.00')", "CAST(d AS STRING)"),
        ("TO_DATE(s, 'yyyy-MM-dd')", "TO_DATE(s)"),
        ("ARRAY_SIZE(a)", "SIZE(a)"),
        ("UNIX_DATE(d)", "DATEDIFF(DAY, CAST('1970-01-01' AS DATE), d)"),
        ("NAMED_STRUCT('Key', s)", "STRUCT(s AS Key)"),
        ("TRUNC(d, f)", "TRUNC(d, 'F')"),
        ("PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY x DESC)", "PERCENTILE_APPROX(x, 0.5)"),
        ("PERCENTILE_DISC(0.25) WITHIN GROUP (ORDER BY x)", "PERCENTILE_APPROX(x, 0.25)"),
    ],
)
def test_a_function_spark_would_rewrite_is_written_as_read(sql: str, spark_writes: str) -> None:
    query = f"SELECT {sql} FROM t"
    # What sqlglot's own Spark dialect writes (the reason for ours): if this changes,
    # sqlglot changed, and VERBATIM may hold a function it no longer needs to.
    assert (
        sqlglot.transpile(query, read="spark", write="spark")[0] == f"SELECT {spark_writes} FROM t"
    )
    assert sqlglot.transpile(query, read=DIALECT, write=DIALECT)[0] == query


def test_other_functions_are_read_as_spark_reads_them() -> None:
    tree = sqlglot.parse_one(
        "SELECT sum(x), count(DISTINCT y), coalesce(a, b) FROM t", read=DIALECT
    )
    names = [type(node).__name__ for node in tree.expressions]
    assert names == ["Sum", "Count", "Coalesce"]
