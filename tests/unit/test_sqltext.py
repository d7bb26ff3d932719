"""SQL literals and table names."""

from __future__ import annotations

import datetime as dt

import pytest

from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.sqltext import TableName, literal


@pytest.mark.parametrize(
    ("value", "sql"),
    [
        (None, "NULL"), (True, "TRUE"), (7, "7"), (2**40, "1099511627776L"), (1.5, "1.5D"),
        ("it's", "'it\\'s'"), (b"\xfe", "X'FE'"), (dt.date(2026, 1, 2), "DATE'2026-01-02'"),
        (dt.datetime(2026, 1, 2, 3, 4, 5, 6), "TIMESTAMP_NTZ'2026-01-02 03:04:05.000006'"),
    ],
)  # fmt: skip
def test_literals(value: object, sql: str) -> None:
    assert literal(value) == sql


def test_table_names_parse_and_refuse_clearly() -> None:
    assert TableName.parse("Shop.Orders") == TableName("shop", "orders")
    assert TableName.parse("`spark_catalog`.`shop`.`orders`") == TableName("shop", "orders")
    assert TableName.parse("orders", default_schema="shop") == TableName("shop", "orders")
    with pytest.raises(FastRefreshError, match="not a table name"):
        TableName.parse("a.b.c.d")
