"""A dbt DAG of fast_refresh models refreshes fast end to end (issue 23).

Sources -> staging models in dbt's style (import CTEs, renaming and casting) -> an
ephemeral model and a join -> marts. The logs on the sources and on the upstream models are
created by the materialization; every level refreshes FAST after random DML on the sources
and equals its query.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from dbt.tests.util import rm_file, run_dbt, run_dbt_and_capture, write_file

from tests.functional.dbt_project import FastRefreshProject, run_and_capture

SOURCES = """
version: 2
sources:
  - name: shop
    schema: "{{ target.schema }}"
    tables:
      - name: raw_orders
      - name: raw_customers
"""

MODELS = {
    "sources.yml": SOURCES,
    "stg_orders.sql": """
{{ config(materialized='fast_refresh') }}
with source as (
    select * from {{ source('shop', 'raw_orders') }}
),
renamed as (
    select
        id as order_id,
        customer_id,
        cast(amount as double) as amount_usd,
        lower(status) as status
    from source
)
select * from renamed
""",
    "stg_customers.sql": """
{{ config(materialized='fast_refresh') }}
with source as (select * from {{ source('shop', 'raw_customers') }})
select id as customer_id, upper(region) as region from source
""",
    "int_open_orders.sql": """
{{ config(materialized='ephemeral') }}
select * from {{ ref('stg_orders') }} where status = 'open'
""",
    "int_orders_regions.sql": """
{{ config(materialized='fast_refresh') }}
with orders as (select * from {{ ref('stg_orders') }}),
customers as (select * from {{ ref('stg_customers') }})
select orders.order_id, orders.amount_usd, orders.status, customers.region
from orders join customers on orders.customer_id = customers.customer_id
""",
    "mart_region_revenue.sql": """
{{ config(materialized='fast_refresh') }}
select region, count(*) as orders, sum(amount_usd) as revenue
from {{ ref('int_orders_regions') }}
where status <> 'cancelled'
group by region
""",
    "mart_open_by_customer.sql": """
{{ config(materialized='fast_refresh') }}
select customer_id, count(*) as open_orders, sum(amount_usd) as open_amount
from {{ ref('int_open_orders') }}
group by customer_id
""",
    "mart_north_orders.sql": """
{{ config(materialized='fast_refresh') }}
with orders as (select * from {{ ref('stg_orders') }})
select order_id, amount_usd from orders
where exists (
    select 1 from {{ ref('stg_customers') }} c
    where c.customer_id = orders.customer_id and c.region = 'NORTH'
)
""",
    "mart_busy_regions.sql": """
{{ config(materialized='fast_refresh') }}
select region, count(*) as orders from {{ ref('int_orders_regions') }}
group by region having count(*) > 2
""",
    "mart_busy_region_names.sql": """
{{ config(materialized='fast_refresh') }}
select region from {{ ref('mart_busy_regions') }} where orders < 1000
""",
    "mart_latest_orders.sql": """
{{ config(materialized='fast_refresh') }}
-- QUALIFY, which Spark 3.5 lacks: the view's definition keeps it as a filtered subquery
select customer_id, order_id, amount_usd
from {{ ref('stg_orders') }}
qualify row_number() over (partition by customer_id order by order_id desc) = 1
""",
    "mart_customer_orders.sql": """
{{ config(materialized='fast_refresh') }}
-- an aggregate over a LEFT JOIN: customers without orders count 0
select c.customer_id, c.region, count(o.order_id) as orders,
       coalesce(sum(o.amount_usd), 0) as amount_usd
from {{ ref('stg_customers') }} c
left join {{ ref('stg_orders') }} o on o.customer_id = c.customer_id
group by c.customer_id, c.region
""",
    "mart_order_events.sql": """
{{ config(materialized='fast_refresh') }}
select order_id as id, 'order' as kind, amount_usd as amount
from {{ ref('stg_orders') }} where status <> 'cancelled'
union all
select customer_id, 'customer', null from {{ ref('stg_customers') }}
union all
select null, region, sum(amount_usd) from {{ ref('int_orders_regions') }} group by region
""",
    "report_regions.sql": """
{{ config(materialized='table', file_format='iceberg') }}
select * from {{ ref('mart_region_revenue') }}
""",
    "mart_region_copy.sql": """
{{ config(materialized='fast_refresh') }}
select * from {{ ref('mart_region_revenue') }} where orders > 0
""",
    "schema.yml": """
version: 2
models:
  - name: stg_orders
    data_tests: [fast_refresh.equals_query]
  - name: stg_customers
    data_tests: [fast_refresh.equals_query]
  - name: int_orders_regions
    data_tests: [fast_refresh.equals_query]
  - name: mart_region_revenue
    data_tests: [fast_refresh.equals_query]
  - name: mart_open_by_customer
    data_tests: [fast_refresh.equals_query]
  - name: mart_region_copy
    data_tests: [fast_refresh.equals_query]
  - name: mart_north_orders
    data_tests: [fast_refresh.equals_query]
  - name: mart_busy_regions
    data_tests: [fast_refresh.equals_query]
  - name: mart_busy_region_names
    data_tests: [fast_refresh.equals_query]
  - name: mart_latest_orders
    data_tests: [fast_refresh.equals_query]
  - name: mart_customer_orders
    data_tests: [fast_refresh.equals_query]
  - name: mart_order_events
    data_tests: [fast_refresh.equals_query]
""",
}
FAST_MODELS = [
    "stg_orders", "stg_customers", "int_orders_regions", "mart_region_revenue",
    "mart_open_by_customer", "mart_region_copy", "mart_north_orders", "mart_busy_regions",
    "mart_busy_region_names", "mart_latest_orders", "mart_customer_orders", "mart_order_events",
]  # fmt: skip
STATUSES = ["open", "shipped", "cancelled", "OPEN"]
REGIONS = ["north", "south", "east", None]


def _dml(project: Any, rng: random.Random, next_id: list[int]) -> None:
    """A round of random changes to both sources: inserts, updates (measures, statuses,
    customers of orders, regions of customers) and deletes."""
    s = project.test_schema
    rows = []
    for _ in range(rng.randint(1, 4)):
        next_id[0] += 1
        amount = "null" if rng.random() < 0.2 else str(rng.randint(1, 500))
        status = rng.choice(STATUSES)
        rows.append(f"({next_id[0]}, {rng.randint(1, 6)}, {amount}, '{status}')")
    project.run_sql(f"insert into {s}.raw_orders values {', '.join(rows)}")
    pick = rng.randint(1, next_id[0])
    project.run_sql(
        f"update {s}.raw_orders set amount = amount + 7, status = '{rng.choice(STATUSES)}' "
        f"where id % 5 = {pick % 5}"
    )
    project.run_sql(
        f"update {s}.raw_orders set customer_id = {rng.randint(1, 6)} where id = {pick}"
    )
    project.run_sql(f"delete from {s}.raw_orders where id = {rng.randint(1, next_id[0])}")
    region = rng.choice(REGIONS)
    value = "null" if region is None else f"'{region}'"
    project.run_sql(f"update {s}.raw_customers set region = {value} where id = {rng.randint(1, 6)}")
    if rng.random() < 0.3:
        # A customer leaves and comes back in another region (two commits).
        gone = rng.randint(1, 6)
        project.run_sql(f"delete from {s}.raw_customers where id = {gone}")
        project.run_sql(f"insert into {s}.raw_customers values ({gone}, 'west')")


def _run(args: list[str]) -> str:
    """dbt's output of a command that must succeed; its errors in the assertion if not."""
    ok, out = run_and_capture(args)
    errors = [line for line in out.splitlines() if "rror" in line or "Fix:" in line]
    assert ok, "\n".join(errors[:40])
    return out


class TestDagRefreshesFast(FastRefreshProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return MODELS

    def test_every_level_refreshes_fast_after_random_dml(self, ready: Any) -> None:
        project, s = ready, ready.test_schema
        project.run_sql(
            f"create table {s}.raw_orders (id int not null, customer_id int, "
            "amount decimal(10,2), status string) using iceberg"
        )
        project.run_sql(f"alter table {s}.raw_orders set identifier fields id")
        project.run_sql(
            f"create table {s}.raw_customers (id int not null, region string) using iceberg"
        )
        project.run_sql(f"alter table {s}.raw_customers set identifier fields id")
        project.run_sql(
            f"insert into {s}.raw_orders values (1, 1, 10.5, 'open'), (2, 2, 20, 'shipped'), "
            "(3, 1, null, 'open'), (4, 3, 7, 'cancelled')"
        )
        project.run_sql(
            f"insert into {s}.raw_customers values (1, 'north'), (2, 'south'), (3, null), "
            "(4, 'east'), (5, 'north'), (6, 'south')"
        )
        # First build: complete, and the logs the DAG needs are created on the way.
        _, out = run_dbt_and_capture(["run"])
        # Sources, both staging models, the join, the aggregate under the copy and the
        # HAVING mart under its view.
        assert out.count("created materialized view log") == 7, out
        # The project's own data tests; the package's tests on its registry models are off
        # by default (the package's dbt_project.yml).
        tests = [r for r in run_dbt(["test"]) if r.node.resource_type == "test"]
        assert len(tests) == 12 and {r.node.package_name for r in tests} == {"test"}

        # A model's view shows its query's columns; the hidden ones are in its storage table
        # and stay out of a downstream view's `select *`.
        def columns(table: str) -> list[str]:
            described = [r[0] for r in self.rows(project, f"describe table {s}.{table}")]
            end = next((i for i, c in enumerate(described) if not c or c.startswith("#")), None)
            return described[:end]

        assert columns("mart_region_revenue") == ["region", "orders", "revenue"]
        assert "__fr_count" in columns("mart_region_revenue__fr_data")
        assert columns("mart_region_copy") == ["region", "orders", "revenue"]
        # ... and out of any reader's: a plain dbt table model selecting * over it.
        assert columns("report_regions") == ["region", "orders", "revenue"]
        assert columns("mart_region_copy__fr_data")[-1] == "__fr_multiplicity"
        rng = random.Random(23)
        next_id = [4]
        # Two rounds (make demo-dag and its slow test run twenty of the same shape).
        for round_ in range(2):
            _dml(project, rng, next_id)
            added = {"raw_orders": "note string", "raw_customers": "tier int"}
            if round_ == 1:
                # Columns no model reads (the staging models' import CTEs select *, their
                # selects name the columns): every model stays fast, no log is recreated.
                for table, column in added.items():
                    project.run_sql(f"alter table {s}.{table} add column {column}")
            out = _run(["run"])
            for name in FAST_MODELS:
                assert f"FAST refresh of {s}.{name}" in out, (round_, name, out)
            assert "COMPLETE refresh" not in out, out
            assert "created materialized view log" not in out, out
            run_dbt(["test"])
        for table, column in added.items():  # (the changes below insert without them)
            project.run_sql(f"alter table {s}.{table} drop column {column.split()[0]}")

        # An upstream model rebuilt completely: rewritten in place (its history kept), so
        # the log on it captures the rebuild as the rows it changed, and the models over
        # it refresh FAST, equal to their query.
        _dml(project, rng, next_id)
        out = _run(["run", "--full-refresh", "-s", "stg_customers"])
        assert f"COMPLETE refresh of {s}.stg_customers: --full-refresh" in out, out
        out = _run(["run"])
        assert f"FAST refresh of {s}.int_orders_regions" in out, out
        assert "COMPLETE refresh" not in out, out
        run_dbt(["test"])
        # A new query replaces the upstream table, which starts a new history: the view
        # over it is told its log is younger than its last refresh and rebuilds once.
        write_file(
            MODELS["stg_customers.sql"].replace("upper(region)", "lower(region)"),
            project.project_root / "models", "stg_customers.sql",
        )  # fmt: skip
        over_customers = (
            "int_orders_regions", "mart_north_orders", "mart_customer_orders", "mart_order_events"
        )  # fmt: skip
        out = _run(["run", "-s", "stg_customers", *over_customers])
        assert f"COMPLETE refresh of {s}.stg_customers" in out, out
        for over in over_customers:
            younger = f"COMPLETE refresh of {s}.{over}: the materialized view log"
            assert younger in out, out
        run_dbt(["test"])
        _dml(project, rng, next_id)
        out = _run(["run"])
        assert "COMPLETE refresh" not in out, out
        run_dbt(["test"])

        # A model renamed leaves its old table behind, and one removed with its table
        # dropped by hand: neither holds its log back once the next run has passed.
        models = project.project_root / "models"
        write_file(MODELS["mart_region_copy.sql"], models, "mart_region_renamed.sql")
        rm_file(models, "mart_region_copy.sql")
        rm_file(models, "mart_open_by_customer.sql")
        write_file(MODELS["schema.yml"].split("  - name: mart_open")[0], models, "schema.yml")
        project.run_sql(f"drop view {s}.mart_open_by_customer")
        project.run_sql(f"drop table {s}.mart_open_by_customer__fr_data")
        _dml(project, rng, next_id)
        out = _run(["run"])
        renamed = (
            f"released {s}.mart_region_copy from the log of {s}.mart_region_revenue: it is no "
            "longer a model of this dbt project"
        )
        dropped = (
            f"released {s}.mart_open_by_customer from the log of {s}.stg_orders: its table "
            f"{s}.mart_open_by_customer__fr_data is gone"
        )
        assert renamed in out and dropped in out, out
        users = self.rows(project, f"select mview from {s}_reg.mview_log_users order by mview")
        assert (f"{s}.mart_region_copy",) not in users and (
            f"{s}.mart_open_by_customer",
        ) not in users
        _dml(project, rng, next_id)
        _run(["run"])
        for log in ("mlog__mart_region_revenue__fr_data", "mlog__stg_orders__fr_data"):
            assert self.rows(project, f"select count(*) from {s}.{log}") == [(0,)], log
