"""The IVM planner's classification, on SQL alone (no Spark)."""

from __future__ import annotations

import pytest

from dbt.adapters.fastrefresh.ivm.analysis import analyze, query_hash, tables_of
from dbt.adapters.fastrefresh.master import Column
from dbt.adapters.fastrefresh.sqltext import TableName

M = TableName("shop", "orders")
COLUMNS = {
    M: [
        Column("order_id", "bigint"),
        Column("customer_id", "bigint"),
        Column("amount", "decimal(12,2)"),
        Column("status", "string"),
    ]
}
KEYED = {M: ["order_id"]}


def plan(sql: str, keys: dict[TableName, list[str]] = KEYED):  # type: ignore[no-untyped-def]
    return analyze(sql, COLUMNS, keys)


def test_projection_with_its_key_needs_no_hidden_column() -> None:
    p = plan("select order_id, amount from shop.orders where status = 'open'")
    assert p.shape == "projection" and p.keyed
    assert p.hidden == () and p.key_view_columns == ("order_id",)
    assert p.filter == "orders.status = 'open'"
    assert p.columns_read == ("amount", "order_id", "status")


def test_projection_without_its_key_gets_a_hidden_key() -> None:
    p = plan("select o.amount as a from `shop`.`orders` o")
    assert p.hidden == (("__fr_k_order_id", "o.order_id"),)
    assert p.view_columns == ("a", "__fr_k_order_id")


def test_keyless_projection_counts_rows() -> None:
    p = plan("select status from shop.orders", keys={})
    assert not p.keyed and p.hidden == (("__fr_multiplicity", ""),)


def test_algebraic_aggregate_components_are_shared_per_argument() -> None:
    p = plan(
        "select status, count(*) c, sum(amount) s, avg(amount) a, count(amount) n, "
        "sum(amount) / count(*) r from shop.orders group by status"
    )
    assert p.shape == "aggregate" and p.algebraic
    assert [n for n, _ in p.hidden] == ["__fr_count", "__fr_cnt_0", "__fr_sum_0"]
    assert p.group_columns == ("status",)
    assert [a.kind for a in p.aggregates] == [
        "count_star",
        "sum",
        "avg",
        "count",
        "sum",
        "count_star",
    ]


def test_group_expression_not_output_gets_a_hidden_column() -> None:
    p = plan("select count(*) c from shop.orders group by status")
    assert p.group_columns == ("__fr_g_0",)
    assert ("__fr_g_0", "orders.status") in p.hidden


def test_min_max_and_count_distinct_recompute_groups() -> None:
    p = plan(
        "select status, max(amount) m, count(distinct customer_id) d from shop.orders group by status"
    )
    assert p.shape == "aggregate" and not p.algebraic
    assert "recompute of the affected groups" in p.describe()


def test_distinct_is_a_group_by_and_global_aggregates_have_no_groups() -> None:
    assert plan("select distinct status from shop.orders").groups == ("orders.status",)
    g = plan("select count(*) c from shop.orders")
    assert g.global_aggregate and g.groups == ()


@pytest.mark.parametrize(
    ("sql", "construct"),
    [
        (
            "select a.order_id from shop.orders a join shop.orders b on a.order_id = b.order_id",
            "join",
        ),
        (
            "select order_id from shop.orders union all select order_id from shop.orders",
            "set operation",
        ),
        (
            "select order_id, row_number() over (order by order_id) from shop.orders",
            "window function",
        ),
        ("select status, count(*) from shop.orders group by status having count(*) > 1", "HAVING"),
        ("select order_id from shop.orders limit 5", "LIMIT"),
        ("select order_id, rand() r from shop.orders", "rand()"),
        ("select order_id, current_timestamp() t from shop.orders", "current_timestamp"),
        ("with x as (select * from shop.orders) select * from x", "WITH"),
        ("select order_id from shop.orders where customer_id in (select 1)", "subquery"),
        ("select order_id from shop.other", "not a known master"),
        ("select order_id as __fr_x from shop.orders", "reserved"),
    ],
)
def test_unsupported_constructs_are_named(sql: str, construct: str) -> None:
    p = plan(sql)
    assert p.shape == "unsupported"
    assert construct in (p.reason or "")


def test_query_hash_ignores_formatting_but_not_meaning() -> None:
    a = query_hash("select  a from t")
    assert a == query_hash("SELECT a\nFROM t")
    assert a != query_hash("select b from t")


def test_group_by_position_resolves_to_the_expression() -> None:
    p = plan("select status, count(*) c from shop.orders group by 1")
    assert p.shape == "aggregate" and p.groups == ("orders.status",)


def test_tables_of_skips_ctes() -> None:
    assert tables_of("with c as (select * from s.t) select * from c join s.u on true") == [
        TableName("s", "t"), TableName("s", "u"),
    ]  # fmt: skip
