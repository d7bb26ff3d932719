"""The consistency check every functional test leans on (``sites.matches``) tells a view
from its query by multiset: a missing, extra or duplicated row, a changed value or a NULL
for a value all count; row order does not."""

from __future__ import annotations

from typing import Any

import pytest

from dbt.adapters.fastrefresh.sqltext import TableName
from tests.functional.sites import matches

ROWS = "(1, 'a', 1.5D), (1, 'a', 1.5D), (2, NULL, NULL), (3, 'c', -0.0D)"
QUERY = f"SELECT * FROM VALUES {ROWS} AS q(k, g, x)"


@pytest.fixture(scope="module")
def schema(spark: Any) -> str:
    spark.sql("CREATE SCHEMA IF NOT EXISTS sites_check")
    return "sites_check"


@pytest.mark.parametrize(
    ("name", "rows", "equal"),
    [
        # The same rows in another order; 0.0 equals -0.0, as EXCEPT ALL has it.
        ("same", "(3, 'c', 0.0D), (2, NULL, NULL), (1, 'a', 1.5D), (1, 'a', 1.5D)", True),
        ("one_duplicate_missing", "(1, 'a', 1.5D), (2, NULL, NULL), (3, 'c', 0.0D)", False),
        ("one_extra", f"{ROWS}, (4, 'd', 4.0D)", False),
        ("a_duplicate_too_many", f"{ROWS}, (2, NULL, NULL)", False),
        (
            "a_value_changed",
            "(1, 'a', 1.5D), (1, 'a', 1.5D), (2, NULL, NULL), (3, 'c', 1.0D)",
            False,
        ),
        (
            "a_null_for_a_value",
            "(1, 'a', 1.5D), (1, NULL, 1.5D), (2, NULL, NULL), (3, 'c', 0.0D)",
            False,
        ),
        # Two rows' g swapped: every column holds the same values as often, the rows differ.
        ("swapped", "(1, 'c', 1.5D), (1, 'a', 1.5D), (2, NULL, NULL), (3, 'a', 0.0D)", False),
    ],
)
def test_matches_compares_multisets(
    spark: Any, schema: str, name: str, rows: str, equal: bool
) -> None:
    spark.sql(f"CREATE OR REPLACE TABLE {schema}.{name} USING iceberg AS "
              f"SELECT * FROM VALUES {rows} AS v(k, g, x)")  # fmt: skip
    assert matches(spark, TableName(schema, name), QUERY) is equal
