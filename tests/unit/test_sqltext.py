"""SQL literals, table names, and property values Spark never redacts."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.sqltext import DEFAULT_REDACTION, TableName, literal, property_json


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


# Text heavy in the words Spark's default redaction patterns look for, in any case, next
# to characters JSON escapes (a backslash, a quote, controls, non-ASCII: ``\uacce`` before
# ``ss.key`` reads "access.key" as written).
_WORDS = ["url", "URL", "uRl", "secret", "password", "token", "access.key", "ACCESS.KEY", "ur",
          "l", "s", "ss.key", "t", "oken", "\\", '"', "\t", "\n", "\uacce", "\u0ccc", "é", "_"]  # fmt: skip
_WORDISH = st.lists(st.sampled_from(_WORDS) | st.text(max_size=3), max_size=12).map("".join)
_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | _WORDISH,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_WORDISH, inner, max_size=4),
    max_leaves=12,
)


@given(_JSONISH)
def test_property_json_is_never_redacted_and_reads_back_the_same(value: object) -> None:
    text = property_json(value)
    assert DEFAULT_REDACTION.search(text) is None, text
    assert json.loads(text) == value
    assert text.isascii()


def test_property_json_escapes_one_character_of_each_word_and_no_more() -> None:
    assert property_json({"columns": ["page_url", "API_TOKEN", "x"]}) == (
        '{"columns":["page_\\u0075rl","API_\\u0054OKEN","x"]}'
    )
    assert property_json(["s.hits"]) == '["s.hits"]'  # nothing to hide: plain JSON
    # A word that begins inside an escape: a character after it is escaped.
    assert property_json("\uacce" + "ss.key") == '"\\uacce\\u0073s.key"'
