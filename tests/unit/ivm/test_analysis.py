"""The IVM planner's classification, on SQL alone (no Spark)."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from dbt.adapters.fastrefresh.iceberg.columns import Column
from dbt.adapters.fastrefresh.ivm.analysis import analyze, query_hash, tables_of
from dbt.adapters.fastrefresh.sqltext import TableName

M = TableName("shop", "orders")
C = TableName("shop", "customers")
COLUMNS = {
    M: [
        Column("order_id", "bigint"),
        Column("customer_id", "bigint"),
        Column("amount", "decimal(12,2)"),
        Column("status", "string"),
    ],
    C: [Column("customer_id", "bigint"), Column("region", "string")],
}
KEYED = {M: ["order_id"], C: ["customer_id"]}


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
    assert p.hidden == (("__fr_k_order_id", "`o`.`order_id`"),)
    # A key whose name needs quoting reads as a column, not as two words.
    spaced = TableName("shop", "spaced")
    q = analyze(
        "select s.amount from shop.spaced s",
        {spaced: [Column("order id", "bigint"), Column("amount", "int")]},
        {spaced: ["order id"]},
    )
    assert q.hidden == (("__fr_k_order id", "`s`.`order id`"),)
    sqlglot.parse_one(f"select {q.hidden[0][1]} from t s", read="spark")  # parses
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
            "select a.order_id, b.order_id b_id from shop.orders a "
            "left join shop.orders b on a.order_id = b.order_id "
            "left join shop.customers c on c.customer_id = a.customer_id",
            "LEFT OUTER join",
        ),
        ("select a.order_id from shop.orders a natural join shop.customers b", "NATURAL join"),
        (
            "select a.order_id from shop.orders a left semi join shop.customers b "
            "on a.customer_id = b.customer_id",
            "LEFT SEMI join",
        ),
        (
            "select a.customer_id, b.customer_id from shop.orders a, shop.customers b",
            "two output columns have the same name",
        ),
        (
            "select order_id from shop.orders union select order_id from shop.orders",
            "UNION (without ALL)",
        ),
        (
            "select order_id from shop.orders intersect select order_id from shop.orders",
            "the query uses INTERSECT, which is not fast-refreshable",
        ),
        (
            "select order_id from shop.orders except all select order_id from shop.orders",
            "the query uses EXCEPT ALL, which is not fast-refreshable",
        ),
        (
            "select order_id from shop.orders union all (select order_id from shop.orders "
            "minus select customer_id from shop.orders)",
            "the query uses EXCEPT, which is not fast-refreshable",
        ),
        (
            "select order_id, (select max(region) from shop.customers c "
            "where c.customer_id = o.customer_id) as region from shop.orders o",
            "the query uses a scalar subquery in the SELECT list",
        ),
        (
            "select order_id from shop.orders where amount > (select avg(amount) from shop.orders)",
            "the query uses a scalar subquery in WHERE",
        ),
        (
            "select order_id from shop.orders union all select order_id, status from shop.orders",
            "branch 2 of the UNION ALL has 2 columns",
        ),
        (
            "select order_id from shop.orders union all select customer_id from shop.orders "
            "where customer_id in (select 1)",
            "branch 2 of the UNION ALL: ",
        ),
        (
            "select order_id from shop.orders union all select o.order_id from shop.orders o "
            "left join shop.customers c on o.customer_id = c.customer_id",
            "branch 2 of the UNION ALL is an outer join",
        ),
        (
            "select order_id from shop.orders union all select order_id from shop.orders "
            "order by 1",
            "ORDER BY on a UNION ALL",
        ),
        (
            "select order_id, row_number() over (order by order_id) from shop.orders",
            "window function",
        ),
        ("select status from shop.orders having status > 'a'", "HAVING without GROUP BY"),
        ("select order_id from shop.orders limit 5", "LIMIT"),
        ("select order_id, rand() r from shop.orders", "rand()"),
        ("select order_id, current_timestamp() t from shop.orders", "current_timestamp"),
        (
            "with x as (select status, count(*) n from shop.orders group by status) "
            "select * from x where n > 1",
            "the CTE or derived table x, which cannot be merged",
        ),
        ("select * from (select order_id from shop.orders limit 3) top3", "LIMIT"),
        (
            "select distinct status from shop.orders group by status, customer_id",
            "SELECT DISTINCT over a GROUP BY",
        ),
        # Non-deterministic parts inside subqueries, derived tables and CTEs: only the rows
        # a refresh's changes reach are recomputed, so these would go stale there too.
        (
            "select o.order_id from shop.orders o where exists (select 1 from "
            "shop.customers c where c.customer_id = o.customer_id "
            "and c.region >= cast(current_date() as string))",
            "current_date",
        ),
        (
            "select order_id from shop.orders where customer_id in "
            "(select customer_id from shop.customers where rand() < 0.5)",
            "rand()",
        ),
        (
            "with ranked as (select *, row_number() over (partition by customer_id order by "
            "order_id desc) rn from shop.orders where order_id > unix_timestamp()) "
            "select order_id from ranked where rn = 1",
            "non-deterministic function",
        ),
        (
            "select order_id from (select order_id, row_number() over (partition by "
            "customer_id order by order_id) rn from shop.orders limit 10) q where rn = 1",
            "LIMIT",
        ),
        (
            "select order_id from shop.orders where customer_id in "
            "(select customer_id from shop.customers tablesample (10 percent))",
            "TABLESAMPLE",
        ),
        ("with x as (select * from shop.other) select * from x", "not a known master"),
        ("select order_id from shop.orders where customer_id in (select 1)", "subquery"),
        ("select order_id from shop.other", "not a known master"),
        ("select order_id as __fr_x from shop.orders", "reserved"),
    ],
)
def test_unsupported_constructs_are_named(sql: str, construct: str) -> None:
    p = plan(sql)
    assert p.shape == "unsupported"
    assert construct in (p.reason or "")


E = TableName("shop", "events")
E_COLUMNS = {
    E: [
        Column("id", "bigint"),
        Column("d", "date"),
        Column("ts", "timestamp"),
        Column("note", "string"),
        Column("n", "int"),
    ]
}
CLOCK = "which Spark reads as the clock"


@pytest.mark.parametrize(
    "sql",
    [
        "select id, ts from shop.events where ts <= timestamp'now'",
        "select id from shop.events where ts <= cast('now' as timestamp)",
        "select count(*) as c from shop.events where ts <= timestamp_ntz'now'",
        "select id from shop.events where d < date'tomorrow'",
        "select id from shop.events where d < 'today'",  # the cast Spark adds
        "select id from shop.events where d between 'yesterday' and d",
        "select id from shop.events where d in ('today')",
        "select id from shop.events where year('today') = n",
        "select id, coalesce(d, 'today') as x from shop.events",
        "select id from shop.events where to_date('today') > d",
        "select id, case when d is null then 'today' else d end as x from shop.events",
        "select id from shop.events where ts + interval 1 day < ' Now '",
        "select id, date_format('now', 'yyyy') as y from shop.events",
        "select id from shop.events where datediff('today', d) < 3",
        "select id from shop.events where from_utc_timestamp('now', 'UTC') > ts",
        "select id from shop.events where ts > 'now' - interval 1 day",  # "the last day"
        "select id from shop.events where d >= 'today' - interval 30 days",
        "select id, case d when 'today' then 1 else 0 end as c from shop.events",
        "select id from shop.events where extract(year from 'today') = n",
        "select id from shop.events where trunc('today', 'MM') < d",
        "select id from shop.events where ts < timestamp'today UTC'",
        "select id from shop.events e where exists (select 1 from shop.events f "
        "where f.id = e.id and f.d > 'yesterday')",
    ],
)
def test_strings_spark_reads_as_the_clock_are_refused(sql: str) -> None:
    """Spark reads 'now', 'today', 'yesterday' and 'tomorrow' as the clock wherever it
    takes them for a date or a timestamp: typed literals, casts of constants, and the
    casts it adds to compare them with one. Such filters refreshed FAST and the view went
    stale as the clock moved (a hunt through dbt found timestamp'now' and date'tomorrow')."""
    p = analyze(sql, E_COLUMNS, {E: ["id"]})
    assert p.shape == "unsupported" and CLOCK in (p.reason or ""), p.reason


@pytest.mark.parametrize(
    "sql",
    [
        "select id from shop.events where note = 'today'",
        "select id from shop.events where note in ('now', 'later')",
        "select id, case when n = 0 then 'today' when n = 1 then 'yesterday' else 'older' "
        "end as bucket from shop.events",
        "select id, 'today' as label from shop.events",
        "select id from shop.events where upper(note) = upper('now')",
        "select id, concat('now', note) as c from shop.events",
        "select id from shop.events where contains(note, 'now') or note like 'today%'",
        "select id from shop.events where note || 'x' = 'today'",
        "select id, case note when 'today' then 1 else 0 end as c from shop.events",
        "select id, struct('now' as x) as s, d || 'now' as t from shop.events",
        "select id from shop.events where d like 'today'",
        "select id from shop.events where d > date'epoch'",  # a constant
    ],
)
def test_the_same_strings_as_strings_refresh_fast(sql: str) -> None:
    p = analyze(sql, E_COLUMNS, {E: ["id"]})
    assert p.supported, p.reason


def test_refusals_name_what_the_query_says() -> None:
    """sqlglot reads ``unix_timestamp()`` as ``unix_timestamp(current_timestamp())`` and
    names an unaliased derived table ``_0``: the reasons named neither as written."""
    reason = plan("select order_id, unix_timestamp() as u from shop.orders").reason or ""
    assert "non-deterministic function unix_timestamp()" in reason, reason
    reason = (
        plan(
            "select distinct status from (select status, customer_id, count(*) as n "
            "from shop.orders group by status, customer_id)"
        ).reason
        or ""
    )
    assert "derived table without an alias" in reason and "_0" not in reason, reason


def test_a_master_column_named_like_a_hidden_one_is_named_as_such() -> None:
    """A master column ``__fr_count`` (not a storage table's): the query that reads it
    was refused as "could not be resolved" (the planner leaves such names out of what a
    query may read), which said the column was not there; a hunt through dbt found it."""
    from dbt.adapters.fastrefresh.iceberg.columns import Column
    from dbt.adapters.fastrefresh.ivm.analysis import analyze

    b = TableName("shop", "b")
    columns = {b: [Column("id", "int"), Column("__fr_count", "int")]}
    for sql in (
        "select id, `__fr_count` as c from shop.b",
        "select id, sum(__fr_count) as s from shop.b group by id",
    ):
        reason = analyze(sql, columns, {b: ["id"]}).reason or ""
        assert reason.startswith("the query reads column __fr_count of shop.b, a name"), reason
    other = analyze("select id, nope from shop.b", columns, {b: ["id"]}).reason or ""
    assert other.startswith("the query could not be resolved against shop.b"), other


def test_import_and_renaming_ctes_are_inlined() -> None:
    """dbt's style: an import CTE, a renaming and casting CTE, a final select *."""
    p = plan(
        "with source as (select * from shop.orders), "
        "renamed as (select order_id as id, cast(amount as double) as amount_usd, status "
        "from source where status <> 'void'), "
        "final as (select * from renamed) select * from final"
    )
    assert p.shape == "projection" and p.keyed, p.reason
    assert [o.name for o in p.outputs] == ["id", "amount_usd", "status"]
    assert p.key_view_columns == ("id",) and p.hidden == ()
    assert p.filter == "orders.status <> 'void'"


def test_ctes_and_derived_tables_under_joins_and_aggregates() -> None:
    p = plan(
        "with o as (select * from shop.orders), c as (select customer_id as cid, region "
        "from shop.customers) select c.region, sum(o.amount) as total from o "
        "join c on o.customer_id = c.cid group by c.region"
    )
    assert p.shape == "aggregate" and [i.master for i in p.inputs] == [M, C], p.reason
    assert p.groups == ("customers.region",)
    d = plan(
        "select x.customer_id, count(*) as n from (select * from shop.orders "
        "where amount > 0) x group by x.customer_id"
    )
    assert d.shape == "aggregate" and d.filter == "orders.amount > 0", d.reason
    # An ephemeral model, as dbt compiles it, read twice (a self-join).
    e = plan(
        "with __dbt__cte__stg as (select order_id, customer_id from shop.orders) "
        "select a.order_id, b.order_id as other from __dbt__cte__stg a "
        "join __dbt__cte__stg b on a.customer_id = b.customer_id"
    )
    assert e.shape == "join" and len(e.inputs) == 2, e.reason


def test_inlining_keeps_the_original_query_for_the_hash() -> None:
    sql = "with s as (select * from shop.orders) select order_id from s"
    p = plan(sql)
    assert p.sql == sql and p.query_hash == query_hash(sql)
    assert p.qualified == "SELECT orders.order_id AS order_id FROM shop.orders AS orders"


def test_a_views_hidden_columns_are_not_part_of_its_star() -> None:
    """A view over a fast_refresh view: ``select *`` gives the user's columns only."""
    view = TableName("marts", "revenue")
    columns = {
        view: [Column("customer_id", "bigint"), Column("total", "double"),
               Column("__fr_count", "bigint"), Column("__fr_sum_0", "double")],
    }  # fmt: skip
    p = analyze("select * from marts.revenue where total > 0", columns, {view: ["customer_id"]})
    assert p.shape == "projection" and [o.name for o in p.outputs] == ["customer_id", "total"]
    named = analyze("select customer_id, __fr_count from marts.revenue", columns, {})
    assert named.shape == "unsupported" and "__fr_count" in (named.reason or "")


def test_inner_join_keeps_every_tables_key() -> None:
    p = plan(
        "select o.order_id, o.amount, c.region from shop.orders o "
        "join shop.customers c on o.customer_id = c.customer_id where c.region <> 'x'"
    )
    assert p.shape == "join", p.reason
    assert [(i.alias, i.master, i.key_view_columns) for i in p.inputs] == [
        ("o", M, ("order_id",)), ("c", C, ("__fr_j1_customer_id",)),
    ]  # fmt: skip
    assert p.hidden == (("__fr_j1_customer_id", "c.customer_id"),)
    assert p.inputs[0].columns_read == ("amount", "customer_id", "order_id")
    assert p.inputs[1].columns_read == ("customer_id", "region")
    assert p.filter == "c.region <> 'x'"


def test_self_join_and_using_and_comma_joins_are_inner_joins() -> None:
    p = plan(
        "select a.order_id, b.order_id as other from shop.orders a, shop.orders b "
        "where a.customer_id = b.customer_id"
    )
    assert p.shape == "join" and [i.master for i in p.inputs] == [M, M]
    assert p.key_view_columns == ("order_id", "other") and p.hidden == ()
    u = plan("select customer_id, amount from shop.orders join shop.customers using (customer_id)")
    assert u.shape == "join", u.reason
    assert [n for n, _ in u.hidden] == ["__fr_j0_order_id", "__fr_j1_customer_id"]


def test_aggregate_over_a_join_is_planned_like_an_aggregate_with_its_inputs() -> None:
    p = plan(
        "select c.region, count(*) n, sum(o.amount) s, max(o.amount) m from shop.orders o "
        "join shop.customers c on o.customer_id = c.customer_id group by c.region"
    )
    assert p.shape == "aggregate" and not p.algebraic
    assert [i.alias for i in p.inputs] == ["o", "c"] and p.groups == ("c.region",)
    assert p.components == ("o.amount",) and p.key_view_columns == ()
    assert [n for n, _ in p.hidden] == ["__fr_count", "__fr_cnt_0", "__fr_sum_0"]
    assert "aggregate of a join of shop.orders o, shop.customers c" in p.describe()


def test_an_outer_join_needs_a_keyed_log_on_both_tables() -> None:
    p = plan(
        "select o.order_id, c.region from shop.orders o left join shop.customers c "
        "on o.customer_id = c.customer_id",
        keys={M: ["order_id"]},
    )
    assert p.shape == "unsupported"
    assert "reads shop.customers, which has no keyed materialized view log" in (p.reason or "")
    # Both without one: both named (the first alone was named, though the other was the
    # one its user had to key).
    p = plan(
        "select o.order_id, c.region from shop.orders o left join shop.customers c "
        "on o.customer_id = c.customer_id",
        keys={},
    )
    reason = p.reason or ""
    assert "reads shop.orders and shop.customers, which have no keyed" in reason, reason


def test_query_hash_ignores_formatting_but_not_meaning() -> None:
    a = query_hash("select  a from t")
    assert a == query_hash("SELECT a\nFROM t")
    assert a == query_hash("-- a note\nselect a /* the column */ from t -- why\n")
    assert a != query_hash("select b from t")


def test_group_by_position_resolves_to_the_expression() -> None:
    p = plan("select status, count(*) c from shop.orders group by 1")
    assert p.shape == "aggregate" and p.groups == ("orders.status",)


def test_tables_of_skips_ctes() -> None:
    assert tables_of("with c as (select * from s.t) select * from c join s.u on true") == [
        TableName("s", "t"), TableName("s", "u"),
    ]  # fmt: skip


def test_an_import_cte_named_like_its_table_leaves_the_table_a_master() -> None:
    # dbt's style: `with orders as (select * from {{ ref('orders') }}) ... from orders`.
    sql = "with orders as (select * from shop.orders) select order_id, amount from orders"
    assert tables_of(sql) == [M]
    p = plan(sql)
    assert p.supported, p.reason
    assert p.masters == (M,)


@pytest.mark.parametrize(
    ("group", "cast"),
    [("0", True), ("-1", True), ("(2)", True), ("-(3)", True), ("-2147483648", True),
     ("2147483648", False), ("-x", False), ("'1'", False), ("1.5", False)],
)  # fmt: skip
def test_an_integer_constant_is_grouped_as_a_value_not_a_position(group: str, cast: bool) -> None:
    from dbt.adapters.fastrefresh.ivm.sqlgen.complete import not_ordinal

    out = not_ordinal(sqlglot.parse_one(group, read="spark"))  # type: ignore[arg-type]
    assert isinstance(out, exp.Cast) is cast, out.sql("spark")


def _join_merge(changed: tuple[TableName, ...]) -> str:
    """The join view's MERGE with the changes of ``changed`` (orders: a full log;
    customers: a key-only log)."""
    from dbt.adapters.fastrefresh.ivm.sqlgen import LogSource, Target, join_merge

    p = plan(
        "select o.order_id, o.amount, c.region from shop.orders o "
        "join shop.customers c on o.customer_id = c.customer_id"
    )
    orders = LogSource(
        TableName("shop", "mlog__orders"), "sequence__ > 5", ("order_id",),
        ("order_id", "customer_id", "amount", "status"), ("order_id", "customer_id", "amount"),
    )  # fmt: skip
    customers = LogSource(
        TableName("shop", "mlog__customers"), "sequence__ > 7", ("customer_id",),
        ("customer_id", "region"), ("customer_id",),
    )  # fmt: skip
    types = {"order_id": "BIGINT", "amount": "DECIMAL(12,2)", "region": "STRING",
             "__fr_j1_customer_id": "BIGINT"}  # fmt: skip
    pins = {M: 11, C: 12}
    sources = {M: orders, C: customers}
    target = Target(TableName("shop", "v"), types)
    return join_merge(p, target, {m: sources[m] for m in changed}, pins=pins)


def test_join_delta_reads_a_full_log_not_its_master() -> None:
    """A table whose log holds what the view reads contributes its log images; a table with
    a key-only log is read from the master for its changed keys (parsed, not run)."""
    merge = _join_merge((M, C))
    # The orders part reads the orders log's images and customers as pinned; the customers
    # part reads orders as pinned (less the changed orders) and the changed customers' rows
    # from the master (its log holds only the key).
    old_rows, orders_part, customers_part = merge.split(" UNION ALL ")
    assert "LEFT JOIN __fr_ck1 __fr_h0" in old_rows and "LEFT JOIN __fr_ck0 __fr_h1" in old_rows
    assert "FROM __fr_img1 WHERE __fr_sign = 1) AS o" in orders_part
    assert "shop.orders" not in orders_part
    assert "shop.customers VERSION AS OF 12 AS c" in orders_part
    assert "shop.orders VERSION AS OF 11 AS o" in customers_part
    assert "LEFT SEMI JOIN __fr_ck0 AS __fr_in1" in customers_part
    assert "LEFT ANTI JOIN __fr_ck1 AS __fr_out0" in customers_part
    assert "__fr_img0" not in merge
    sqlglot.parse_one(merge, read="spark")  # one well-formed statement


def test_join_with_one_table_changed_deletes_its_changed_keys_without_reading_the_view() -> None:
    """Only orders changed: the rows to delete are its changed keys, matched on the view's
    order_id; the view is read only as the MERGE's target."""
    merge = _join_merge((M,))
    source = merge.split(" USING (", 1)[1]
    assert "`shop`.`v`" not in source and "`shop`.`v`" in merge
    assert "__fr_old AS (SELECT CAST(`order_id` AS BIGINT) AS `order_id`" in source
    # __fr_ck1: the orders' changed keys, a key the range added a check ('C'), not a delete
    assert "IF(__fr_added IS NULL, 'D', 'C') AS __fr_op, __fr_added FROM __fr_ck1)" in source
    match = merge.split(") s ON ", 1)[1]
    assert match.startswith("t.`order_id` <=> s.`order_id` AND s.__fr_op IN ('D', 'C')")
    assert "WHEN MATCHED AND s.__fr_op = 'D' THEN DELETE WHEN MATCHED AND CAST(" in match
    sqlglot.parse_one(merge, read="spark")


def test_a_small_keyed_projection_takes_its_delta_as_one_overwrite() -> None:
    """The overwrite form keeps the view's rows but the changed keys' old rows and adds the
    new rows that pass the filter: the MERGE's effect, without its pass to find files. The
    rows to delete, and the keys the range added (checked: the view must hold none of
    them), come from one aggregate of the range, not from a second pass over the
    images."""
    from dbt.adapters.fastrefresh.ivm.sqlgen import LogSource, Target, delta_statement

    p = plan("select order_id, amount from shop.orders where status = 'open'")
    log = LogSource(
        TableName("shop", "mlog__orders"), "sequence__ > 5", ("order_id",),
        ("order_id", "customer_id", "amount", "status"), ("order_id", "amount", "status"),
    )  # fmt: skip
    types = {"order_id": "BIGINT", "amount": "DECIMAL(12,2)"}
    view = TableName("shop", "v")
    pins = {"pins": {M: 11}, "old_pins": {M: 11}}
    merge = delta_statement(p, Target(view, types), {M: log}, **pins)
    overwrite = delta_statement(p, Target(view, types, overwrite=True), {M: log}, **pins)
    assert merge.startswith("MERGE INTO `shop`.`v` t USING (")
    # Every row replaced whatever Spark's partition overwrite mode (sqltext.replace_all).
    head = "INSERT INTO `shop`.`v` REPLACE WHERE TRUE SELECT `order_id`, `amount` FROM ("
    assert overwrite.startswith(head)
    kept, added = overwrite.split(" UNION ALL ")
    deleted = (
        "(SELECT `order_id` AS `order_id`, __fr_op, __fr_added FROM (SELECT `order_id`, "
        "IF(__fr_added IS NULL, 'D', 'C') AS __fr_op, __fr_added FROM (SELECT `order_id`, "
        "IF(min(IF(old_new__ = 'N', sequence__, NULL)) = min(sequence__), "
        "min_by(xid__, sequence__), CAST(NULL AS BIGINT)) AS __fr_added FROM __fr_rng "
        "GROUP BY `order_id`))) s"
    )
    assert f"FROM `shop`.`v` t LEFT ANTI JOIN {deleted}" in kept
    assert "ON t.`order_id` <=> s.`order_id` AND IF(s.__fr_op = 'D', TRUE, CAST(" in kept
    assert added == "SELECT `order_id`, `amount` FROM __fr_s WHERE __fr_op = 'I')"
    # Both read the same images with the same filter: the overwrite defines the MERGE
    # source's CTEs, and its changes as __fr_s.
    using = merge.split(" USING (", 1)[1].split(") s ON ", 1)[0]
    ctes, changes = using.split(") SELECT IF(", 1)
    assert ctes.startswith("WITH __fr_rng AS (")
    assert f"{head}{ctes}), __fr_s AS (SELECT IF({changes}) " in overwrite
    for statement in (merge, overwrite):
        sqlglot.parse_one(statement, read="spark")


def test_exists_and_in_filters_are_semi_joins_keyed_by_the_outer_table() -> None:
    p = plan(
        "select o.order_id, o.amount from shop.orders o where o.status <> 'void' and exists "
        "(select 1 from shop.customers c where c.customer_id = o.customer_id and c.region = 'eu')"
    )
    assert p.shape == "projection" and p.keyed and p.masters == (M, C)
    (semi,) = p.semis
    assert (semi.master, semi.alias, semi.anti) == (C, "c", False)
    assert [(a.sql(), b.sql()) for a, b in semi.pairs] == [("o.customer_id", "c.customer_id")]
    assert p.columns_read_of(M) == ("amount", "customer_id", "order_id", "status")
    assert p.columns_read_of(C) == ("customer_id", "region")
    assert "EXISTS in shop.customers c" in p.describe()
    p = plan(
        "select amount from shop.orders where customer_id in "
        "(select customer_id from shop.customers where region = 'eu')"
    )
    (semi,) = p.semis
    assert p.hidden == (("__fr_k_order_id", "`orders`.`order_id`"),)
    assert [(a.sql(), b.sql()) for a, b in semi.pairs] == [
        ("orders.customer_id", "customers.customer_id")
    ]
    p = plan(
        "select order_id from shop.orders o where not exists "
        "(select 1 from shop.customers c where o.customer_id = c.customer_id)"
    )
    assert p.semis[0].anti
    # A table filtered by a subquery over itself: one master in both roles.
    p = plan(
        "select order_id from shop.orders o where exists "
        "(select 1 from shop.orders p where p.order_id = o.customer_id)"
    )
    assert p.masters == (M,) and p.columns_read_of(M) == ("customer_id", "order_id")


@pytest.mark.parametrize(
    ("sql", "construct"),
    [
        (
            "select order_id from shop.orders where customer_id not in "
            "(select customer_id from shop.customers)",
            "NOT IN (SELECT ...)",
        ),
        (
            "select order_id from shop.orders o where exists "
            "(select 1 from shop.customers c where c.customer_id > o.customer_id)",
            "the query uses a subquery over c correlated by c.customer_id > o.customer_id; ",
        ),
        (
            "select order_id from shop.orders where exists (select 1 from shop.customers)",
            "not correlated with the outer table by an equality",
        ),
        (
            "select order_id from shop.orders o where o.amount > 0 or exists "
            "(select 1 from shop.customers c where c.customer_id = o.customer_id)",
            "the query uses a subquery filter (EXISTS/IN) under OR",
        ),
        (
            "select status, count(*) from shop.orders o where exists (select 1 from "
            "shop.customers c where c.customer_id = o.customer_id) group by status",
            "aggregate over a subquery filter",
        ),
        (
            "select o.order_id from shop.orders o where exists (select 1 from shop.customers "
            "c join shop.orders x on x.customer_id = c.customer_id "
            "where c.customer_id = o.customer_id)",
            "joins tables",
        ),
        (
            "select order_id from shop.orders o where customer_id in "
            "(select max(customer_id) from shop.customers)",
            "aggregates",
        ),
        (
            "select order_id from shop.orders where exists "
            "(select 1 from shop.orders where order_id = customer_id)",
            "the query uses a subquery whose table has the alias of the outer table",
        ),
        # The clash is named before the correlation is read (there `o` is the inner table).
        (
            "select order_id from shop.orders o where exists "
            "(select 1 from shop.customers o where o.customer_id = 1)",
            "the query uses a subquery whose table has the alias of the outer table",
        ),
    ],
)
def test_subquery_filters_that_do_not_refresh_fast_are_named(sql: str, construct: str) -> None:
    p = plan(sql)
    assert p.shape == "unsupported"
    assert construct in (p.reason or ""), p.reason


def test_a_semi_join_needs_a_keyed_outer_table() -> None:
    p = plan(
        "select status from shop.orders o where exists "
        "(select 1 from shop.customers c where c.customer_id = o.customer_id)",
        keys={C: ["customer_id"]},
    )
    assert p.shape == "unsupported" and p.reason_code == "no_keyed_log"


def test_having_is_a_hidden_boolean_output_the_view_filters_on() -> None:
    p = plan(
        "select status, count(*) n from shop.orders group by status "
        "having n > 1 and max(amount) < 100"
    )
    assert p.shape == "aggregate" and p.having and not p.algebraic
    assert [o.name for o in p.outputs] == ["status", "n", "__fr_having"]
    assert p.user_columns == ("status", "n")
    having = p.outputs[-1]
    assert having.sql == "COUNT(*) > 1 AND MAX(orders.amount) < 100"
    assert p.tree is not None and p.tree.args.get("having") is None
    assert "HAVING kept per group" in p.describe()


def test_window_functions_are_recomputed_by_their_common_partition() -> None:
    p = plan(
        "with ranked as (select *, row_number() over (partition by customer_id "
        "order by amount desc, order_id) as rn from shop.orders) "
        "select order_id, amount from ranked where rn = 1"
    )
    assert p.shape == "window" and p.partitions == ("orders.customer_id",)
    assert p.view_columns == ("order_id", "amount", "__fr_p_0")
    assert "partitioned by orders.customer_id" in p.describe()
    # The derived table hands the partition out to the view's hidden column.
    assert "orders.customer_id AS __fr_p_0" in p.qualified
    p = plan(
        "select order_id, sum(amount) over (partition by customer_id, status order by order_id)"
        " as running, count(*) over (partition by status, customer_id) as n from shop.orders"
    )
    assert p.shape == "window"
    assert p.partitions == ("orders.customer_id", "orders.status")


@pytest.mark.parametrize(
    ("sql", "construct"),
    [
        ("select order_id, row_number() over (order by order_id) n from shop.orders",
         "without PARTITION BY"),
        ("select order_id, sum(amount) over (partition by status) a, "
         "sum(amount) over (partition by customer_id) b from shop.orders", "share no PARTITION BY"),
        ("select o.order_id, row_number() over (partition by c.region order by o.order_id) n "
         "from shop.orders o join shop.customers c on o.customer_id = c.customer_id",
         "over a join"),
        ("select status, count(*) n from (select status, row_number() over (partition by status "
         "order by order_id) rn from shop.orders) r where rn = 1 group by status",
         "an aggregate or DISTINCT over a window function's result"),
        ("select order_id, sum(amount) over (partition by status) s, rand() r from shop.orders",
         "rand()"),
    ],
)  # fmt: skip
def test_window_functions_that_do_not_refresh_fast_are_named(sql: str, construct: str) -> None:
    p = plan(sql)
    assert p.shape == "unsupported" and construct in (p.reason or ""), p.reason


def test_a_filter_clause_is_part_of_the_argument_the_deltas_sum() -> None:
    p = plan(
        "select status, sum(amount) filter (where amount > 10) s, count(*) filter "
        "(where customer_id is null) n, max(amount) filter (where order_id > 3) m "
        "from shop.orders group by status"
    )
    assert [(a.kind, a.arg) for a in p.aggregates] == [
        ("sum", "CASE WHEN orders.amount > 10 THEN orders.amount END"),
        ("count", "CASE WHEN orders.customer_id IS NULL THEN 1 END"),
        ("other", None),
    ]
    assert "MAX(CASE WHEN orders.order_id > 3 THEN orders.amount END)" in p.qualified
    # An aggregate that does not skip NULLs keeps its FILTER (it is recomputed).
    kept = plan("select status, first(amount) filter (where amount > 1) f from shop.orders "
                "group by status")  # fmt: skip
    assert "FILTER(WHERE orders.amount > 1)" in kept.qualified and not kept.algebraic


def test_outer_joins_keep_the_preserved_sides_key_and_the_join_equalities() -> None:
    p = plan(
        "select o.order_id, o.amount, c.region from shop.orders o left join shop.customers c "
        "on o.customer_id = c.customer_id and c.region <> 'x'"
    )
    assert p.shape == "outer_join" and p.outer is not None and p.outer.preserved == (0,)
    assert [(a.sql(), b.sql()) for a, b in p.outer.pairs] == [("o.customer_id", "c.customer_id")]
    assert p.view_columns == ("order_id", "amount", "region", "__fr_j1_customer_id")
    p = plan(
        "select o.amount, c.region from shop.orders o full outer join shop.customers c "
        "on c.customer_id = o.customer_id"
    )
    assert p.outer is not None and p.outer.side == "FULL" and p.outer.preserved == (0, 1)
    assert [(a.sql(), b.sql()) for a, b in p.outer.pairs] == [("o.customer_id", "c.customer_id")]


@pytest.mark.parametrize(
    ("sql", "construct"),
    [
        ("select c.region, o.status, count(*) n from shop.orders o left join shop.customers c "
         "on o.customer_id = c.customer_id group by c.region, o.status",
         "grouped by columns of both sides"),
        ("select o.order_id, c.region from shop.orders o left join shop.customers c "
         "on o.customer_id > c.customer_id", "no equality"),
        ("select o.order_id, c.region from shop.orders o left join shop.customers c "
         "on o.customer_id = c.customer_id join shop.customers d on d.customer_id = "
         "o.customer_id", "LEFT OUTER join beside other joins (an outer join refreshes fast "
         "as the one join of two tables"),
    ],
)  # fmt: skip
def test_outer_joins_that_do_not_refresh_fast_are_named(sql: str, construct: str) -> None:
    p = plan(sql)
    assert p.shape == "unsupported" and construct in (p.reason or ""), p.reason


@pytest.mark.parametrize(
    "sql",
    [
        # The dbt model: customers left-joined to an import CTE of completed orders.
        "with completed as (select * from shop.orders where status = 'completed' or amount "
        "> 100) select c.customer_id, c.region, o.order_id, o.amount from shop.customers c "
        "left join completed o on o.customer_id = c.customer_id",
        "select c.customer_id, c.region, o.order_id, o.amount from shop.customers c left join "
        "(select order_id, customer_id, amount from shop.orders where status = 'completed' or "
        "amount > 100) o using (customer_id)",
        "select c.customer_id, c.region, o.order_id, o.amount from (select * from "
        "shop.orders where status = 'completed' or amount > 100) o right join "
        "shop.customers c on o.customer_id = c.customer_id",
    ],
)
def test_a_filtered_derived_table_an_outer_join_extends_with_nulls_filters_its_on(
    sql: str,
) -> None:
    """Its WHERE goes into the join's ON (merged into the WHERE it would drop the
    customers without such orders), parenthesized."""
    p = plan(sql)
    assert p.shape == "outer_join" and p.outer is not None, p.reason
    assert p.outer.preserved == ((0,) if " left join " in sql else (1,))
    assert [sorted((a.sql(), b.sql())) for a, b in p.outer.pairs] == [
        ["c.customer_id", "orders.customer_id"]
    ]
    on = p.tree.find(exp.Join).args["on"].sql()
    assert on.endswith("AND (orders.status = 'completed' OR orders.amount > 100)"), on
    assert p.tree.find(exp.Where) is None and p.tree.find(exp.Subquery) is None


def test_a_single_right_join_keeping_a_filtered_derived_table_is_its_left_join() -> None:
    """Read in FROM, the kept table's filter merges into the WHERE, as a LEFT JOIN's FROM
    table's does; the outputs keep their order."""
    p = plan(
        "with big as (select * from shop.orders where amount > 10) select c.region, "
        "big.order_id, big.amount from shop.customers c right join big on c.customer_id = "
        "big.customer_id"
    )
    assert p.shape == "outer_join" and p.outer is not None, p.reason
    assert p.outer.preserved == (0,) and p.tree.find(exp.Join).side == "LEFT"
    assert p.tree.find(exp.Where).sql() == "WHERE orders.amount > 10"
    assert p.user_columns == ("region", "order_id", "amount")


def test_join_equalities_are_found_inside_parenthesized_conjunctions() -> None:
    p = plan(
        "select c.customer_id, o.order_id from shop.customers c left join shop.orders o on "
        "(c.customer_id = o.customer_id and c.region = 'q') and o.status = 'z'"
    )
    assert p.outer is not None
    assert [(a.sql(), b.sql()) for a, b in p.outer.pairs] == [("c.customer_id", "o.customer_id")]


@pytest.mark.parametrize(
    ("sql", "because"),
    [
        ("select c.customer_id, o.order_id from shop.customers c full join (select order_id, "
         "customer_id from shop.orders where status = 'x') o on o.customer_id = c.customer_id",
         "it filters a table a FULL OUTER join (or a RIGHT JOIN beside other joins) keeps "
         "every row of"),
        ("select c.customer_id, o.order_id from shop.customers c left join (select "
         "o.order_id, o.customer_id from shop.orders o join shop.customers d on "
         "d.customer_id = o.customer_id) o on o.customer_id = c.customer_id",
         "it joins tables itself and is joined to another, which is merged only when every "
         "join of the query and of the derived table is an inner join"),
        ("select * from (select status from shop.orders union all select region from "
         "shop.customers) u join shop.customers c on c.region = u.status",
         "it is a set operation"),
        ("select * from (select distinct status from shop.orders) u join shop.customers c "
         "on c.region = u.status", "it is SELECT DISTINCT"),
        # Left-joined (dbt's jaffle_shop customers): the aggregation is named, not its
        # outputs' values on the rows the join fills with NULLs.
        ("with co as (select customer_id, count(*) n from shop.orders group by customer_id) "
         "select c.customer_id, coalesce(co.n, 0) n from shop.customers c left join co on "
         "co.customer_id = c.customer_id",
         "it aggregates (GROUP BY or an aggregate function); make it a fast_refresh "
         "model of its own and ref() it here"),
        ("with x as (select status, count(*) n from shop.orders group by status) "
         "select * from x where n > 1",
         "it aggregates (GROUP BY or an aggregate function); make it a fast_refresh "
         "model of its own and ref() it here"),
    ],
)  # fmt: skip
def test_a_derived_table_left_unmerged_is_named_with_its_reason(sql: str, because: str) -> None:
    p = plan(sql)
    assert p.shape == "unsupported" and "which cannot be merged into it: " + because in (
        p.reason or ""
    ), p.reason


def test_a_joined_derived_table_of_inner_joins_is_merged_from_the_front() -> None:
    """An inner join's tables can come in any order: the derived table goes first, where
    its joins merge, and the query's first table is joined on the derived table's ON."""
    p = plan(
        "with oc as (select o.order_id, o.amount, c.region, o.customer_id from shop.orders o "
        "join shop.customers c on c.customer_id = o.customer_id where o.status = 'done') "
        "select d.customer_id, oc.order_id, oc.region from shop.customers d join oc "
        "on oc.customer_id = d.customer_id"
    )
    assert p.shape == "join", p.reason
    assert p.tree.sql() == (
        "SELECT d.customer_id AS customer_id, o.order_id AS order_id, c.region AS region "
        "FROM shop.orders AS o JOIN shop.customers AS c ON c.customer_id = o.customer_id "
        "JOIN shop.customers AS d ON o.customer_id = d.customer_id WHERE o.status = 'done'"
    )
    assert p.view_columns[:3] == ("customer_id", "order_id", "region")


def test_group_by_all_groups_by_the_outputs_without_aggregates() -> None:
    p = plan("select c.region, upper(c.region) r2, count(*) n from shop.customers c group by all")
    assert p.shape == "aggregate" and [g.sql() for g in p.group_nodes] == [
        "c.region", "UPPER(c.region)"
    ]  # fmt: skip
    whole = plan("select count(*) n, sum(amount) s from shop.orders group by all")
    assert whole.shape == "aggregate" and not whole.groups
    # A constant output beside a group is a constant; alone it would be a constant group.
    labelled = plan("select 'x' label, status, count(*) n from shop.orders group by all")
    assert labelled.shape == "aggregate" and [g.sql() for g in labelled.group_nodes] == [
        "orders.status"
    ]  # fmt: skip
    constant = plan("select 'x' label, count(*) n from shop.orders group by all")
    assert constant.shape == "unsupported" and (
        "GROUP BY ALL with only the constant output(s) label" in (constant.reason or "")
    )


def test_a_constant_group_beside_others_is_dropped_and_alone_refused() -> None:
    p = plan("select 'b' l, status, count(*) n from shop.orders group by 'b', status")
    assert p.shape == "aggregate" and [g.sql() for g in p.group_nodes] == ["orders.status"]
    alone = plan("select 'b' l, count(*) n from shop.orders group by 'b'")
    assert alone.shape == "unsupported" and "GROUP BY of constants only ('b')" in (
        alone.reason or ""
    )


def test_an_aggregate_over_an_outer_join_groups_by_one_side_and_is_recomputed() -> None:
    """Grouped by the non-preserved side (a NULL-extended row has a group of its own), or
    globally; its changes are never summed as signed deltas (the join delta rule does not
    hold for NULL-extended rows)."""
    by_dimension = plan(
        "select c.region, count(*) n, sum(o.amount) s from shop.orders o left join "
        "shop.customers c on o.customer_id = c.customer_id group by c.region"
    )
    assert by_dimension.shape == "aggregate" and by_dimension.outer is not None
    assert not by_dimension.over_inner_join
    assert "recompute of the affected groups" in by_dimension.describe()
    assert "LEFT JOIN" in by_dimension.describe()
    total = plan(
        "select count(c.customer_id) matched from shop.orders o full join shop.customers c "
        "on o.customer_id = c.customer_id"
    )
    assert total.shape == "aggregate" and total.outer is not None and not total.groups


def test_a_join_of_a_key_less_table_is_a_bag_of_counted_rows() -> None:
    """An aggregate over it sums each table's signed changes joined with the others; a join
    projection keeps each distinct row with its count (``__fr_repeat``), which the view
    repeats: neither needs a key."""
    keyless = {M: ["order_id"]}
    joined = "from shop.orders o join shop.customers c on o.customer_id = c.customer_id"
    counted = plan(
        f"select c.region, count(*) n, sum(o.amount) s {joined} group by c.region", keyless
    )
    assert counted.shape == "aggregate" and counted.over_inner_join
    assert [i.key_columns for i in counted.inputs] == [("order_id",), ()]
    assert plan(f"select distinct c.region, o.status {joined}", keyless).shape == "aggregate"
    bag = plan(f"select o.order_id, c.region {joined}", keyless)
    assert (
        bag.shape == "aggregate"
        and bag.over_inner_join
        and bag.user_columns
        == (
            "order_id",
            "region",
        )
    )
    assert [o.name for o in bag.outputs][-1] == "__fr_repeat"
    assert bag.groups == ("o.order_id", "c.region")
    assert "the view repeats it" in bag.describe()


def test_spark_aggregates_sqlglot_reads_as_plain_calls_are_aggregates() -> None:
    """try_sum, every, any, ... are recomputed per group; mean and std are AVG and STDDEV
    (mean keeps AVG's signed delta)."""
    p = plan(
        "select status, try_sum(amount) ts, every(amount > 0) e, any(amount > 5) an, "
        "mean(amount) m, std(amount) sd from shop.orders group by all"
    )
    assert p.shape == "aggregate" and [g.sql() for g in p.group_nodes] == ["orders.status"]
    assert [a.kind for a in p.aggregates] == ["other", "other", "other", "avg", "other"]
    assert plan("select try_avg(amount) a from shop.orders").shape == "aggregate"
    # ANY of a subquery stays the quantifier it is (and is refused as a subquery).
    quantified = plan(
        "select order_id from shop.orders where customer_id = any (select customer_id "
        "from shop.customers)"
    )
    assert quantified.shape == "unsupported" and "subquery" in (quantified.reason or "")


@pytest.mark.parametrize(
    ("sql", "output"),
    [
        ("select c.customer_id, o.flag from shop.customers c left join (select customer_id, "
         "1 as flag from shop.orders) o on o.customer_id = c.customer_id", "flag as 1"),
        ("with oo as (select customer_id, coalesce(amount, 0) as amt0 from shop.orders where "
         "amount > 0) select c.customer_id, oo.amt0 from shop.customers c left join oo on "
         "oo.customer_id = c.customer_id", "amt0 as COALESCE(orders.amount, 0)"),
        ("select c.customer_id, o.src from shop.customers c full join (select customer_id, "
         "'o' as src from shop.orders) o on o.customer_id = c.customer_id", "src as 'o'"),
        ("select c.src, o.order_id from (select customer_id, 'c' as src from shop.customers "
         "where region = 'eu') c right join shop.orders o on o.customer_id = c.customer_id",
         "src as 'c'"),
        ("select c.region, count(o.paid) n from shop.customers c left join (select "
         "customer_id, amount is not null as paid from shop.orders) o on o.customer_id = "
         "c.customer_id group by c.region", "paid as NOT orders.amount IS NULL"),
        # Through a second CTE, derived table or ephemeral model that passes it on: both
        # levels were merged, and the view was wrong from the first build.
        ("with base as (select customer_id, coalesce(region, 'unknown') as region from "
         "shop.customers), b2 as (select * from base) select o.order_id, b2.region from "
         "shop.orders o left join b2 on o.customer_id = b2.customer_id",
         "region as COALESCE(customers.region, 'unknown')"),
        ("select o.order_id, b.tag from shop.orders o left join (select customer_id, "
         "upper(t) as tag from (select customer_id, case when region is null then 'none' "
         "else region end as t from shop.customers) x) b on b.customer_id = o.customer_id",
         "tag as UPPER(CASE WHEN customers.region IS NULL THEN 'none' ELSE customers.region END)"),
        ("with base as (select customer_id, 1 as one from shop.customers), b2 as (select "
         "customer_id, one from base), b3 as (select * from b2) select c.customer_id, "
         "b3.one from shop.orders c full join b3 on b3.customer_id = c.customer_id",
         "one as 1"),
    ],
)  # fmt: skip
def test_an_output_not_null_on_an_outer_joins_null_rows_is_not_merged(
    sql: str, output: str
) -> None:
    """Merged, the expression would be computed over the NULLs the join fills in (the view
    held 1 where the query gives NULL, from the first build on)."""
    p = plan(sql)
    assert p.shape == "unsupported" and f"outputs {output}, which is not NULL" in (
        p.reason or ""
    ), p.reason


def test_outputs_that_stay_null_on_an_outer_joins_null_rows_are_merged() -> None:
    """Plain columns and expressions that are NULL when their columns are; an unread
    constant does not matter; a moved filter of any form is read by the ON only."""
    p = plan(
        "with oo as (select customer_id, amount * 2 as a2, upper(status) as st, 'x' as unused "
        "from shop.orders where status is not null or amount is null) select c.customer_id, "
        "oo.a2, oo.st from shop.customers c left join oo on oo.customer_id = c.customer_id"
    )
    assert p.shape == "outer_join", p.reason


def test_outputs_that_stay_null_through_nested_derived_tables_are_merged() -> None:
    """A column followed into the CTEs below: NULL-in, NULL-out at every level, and a
    constant none of them passes on, is merged (two levels of a staging model)."""
    p = plan(
        "with base as (select customer_id, upper(region) as region, 1 as unused from "
        "shop.customers), b2 as (select customer_id, region from base) select o.order_id, "
        "b2.region from shop.orders o left join b2 on o.customer_id = b2.customer_id"
    )
    assert p.shape == "outer_join", p.reason


@pytest.mark.parametrize(
    "sql",
    [
        "select c.customer_id, o.order_id from shop.customers c left join shop.orders o "
        "on (o.customer_id = c.customer_id)",
        "select c.customer_id from shop.customers c where (c.region is not null and exists "
        "(select 1 from shop.orders o where o.customer_id = c.customer_id))",
        "select c.customer_id from shop.customers c where exists (select 1 from shop.orders o "
        "where (o.customer_id = c.customer_id))",
    ],
)
def test_a_parenthesized_condition_is_read_through_its_parentheses(sql: str) -> None:
    assert plan(sql).supported, plan(sql).reason


def test_a_repeated_group_expression_groups_once_and_its_outputs_copy_it() -> None:
    twice = plan("select status, status as s2, count(*) n from shop.orders group by status, status")
    assert twice.shape == "aggregate" and twice.groups == ("orders.status",)
    assert [o.group for o in twice.outputs[:2]] == [0, None]
    assert twice.outputs[1].template is not None and twice.outputs[1].template.sql() == ":g0"
    distinct = plan("select distinct status, status as s2 from shop.orders")
    assert distinct.shape == "aggregate" and distinct.groups == ("orders.status",)


def test_a_union_branchs_refusals_name_what_to_change() -> None:
    # A later branch's names only need to differ: the union's are the first branch's.
    same = plan(
        "select order_id, status, amount from shop.orders union all "
        "select order_id, amount as a, amount as a from shop.orders"
    )
    assert same.shape == "unsupported" and (
        "branch 2 of the UNION ALL outputs a more than once; alias its columns as the first "
        "branch names them (order_id, status, amount)"
    ) in (same.reason or "")
    # A join of a key-less table in a branch is no aggregate the user wrote.
    bag = plan(
        "select o.order_id, c.region from shop.orders o join shop.customers c "
        "on o.customer_id = c.customer_id union all select order_id, status from shop.orders",
        {M: ["order_id"]},
    )
    assert bag.shape == "unsupported" and (
        "branch 1 of the UNION ALL joins shop.customers, whose log is key-less"
    ) in (bag.reason or ""), bag.reason


@pytest.mark.parametrize(
    ("sql", "read"),
    [
        ("select customer_id, count(*) as n from shop.orders group by customer_id order by n "
         "desc", ("customer_id",)),
        ("select order_id, amount as a from shop.orders o where status = 'x' order by a",
         ("amount", "order_id", "status")),
    ],
)  # fmt: skip
def test_an_order_by_of_an_output_alias_reads_no_master_column(
    sql: str, read: tuple[str, ...]
) -> None:
    """``ORDER BY n`` names the output ``n``, no column of the master: read as one, the
    view rebuilt at every run, saying the log did not record column n's changes."""
    p = plan(sql)
    assert p.supported and p.columns_read == read, (p.reason, p.columns_read)


@pytest.mark.parametrize(
    "sql",
    [
        "with act as (select * from shop.customers where region is not null), act2 as "
        "(select customer_id, region from act) select o.order_id, act2.region from "
        "shop.orders o left join act2 on o.customer_id = act2.customer_id",
        "select o.order_id, a.region from shop.orders o left join (select customer_id, "
        "region from (select * from (select * from shop.customers where region is not "
        "null) x) y) a on o.customer_id = a.customer_id",
    ],
)
def test_a_filter_levels_down_a_left_joined_derived_table_moves_into_the_on(sql: str) -> None:
    """A staging CTE's filter read through an intermediate CTE: the levels merge into
    one, whose filter joins the ON (it stayed in the inner table, which could never
    refresh fast, the reason naming a FULL OUTER join the query does not have)."""
    p = plan(sql)
    assert p.shape == "outer_join", p.reason
    assert "LEFT JOIN shop.customers AS customers ON o.customer_id = customers.customer_id " in (
        p.qualified
    ), p.qualified
    assert "AND (NOT customers.region IS NULL)" in p.qualified, p.qualified
