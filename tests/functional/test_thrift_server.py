"""dbt-fastrefresh through a Spark Thrift server (``method: thrift``), as on a cluster a
team shares: no Spark in dbt's process, every statement through PyHive's cursor, every
value back as PyHive gives it (a map as JSON text, a timestamp as a naive datetime), and
the metadata read and the state written with SQL (the SQL path). The server is started
from the pyspark install (``tests/thrift_server.py``) with the embedded default's
settings. Every other test runs Spark in the test's process, whose rows come back as
PySpark's."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt
from dbt_common.events.base_types import EventMsg

from dbt.adapters.fastrefresh.runtime.executor import AdapterExecutor, plans_a_query
from tests.functional.dbt_project import FastRefreshProject, fr
from tests.thrift_server import ThriftServer

# A server of its own (a JVM of about 2 GB, 6 s to start): with the cluster's tests, where
# CI's `make test-cluster` runs it, not in the default suite.
pytestmark = pytest.mark.cluster

SOURCES = """
version: 2
sources:
  - name: shop
    schema: "{{ target.schema }}"
    tables:
      - name: orders
      - name: customers
"""
ORDERS = "{{ source('shop', 'orders') }}"
CUSTOMERS = "{{ source('shop', 'customers') }}"
MODELS = {
    "sources.yml": SOURCES,
    # A keyed projection, and an aggregate, reading the session's time zone. The
    # projection reads a column Spark's default redaction pattern matches (`page_url`):
    # every statement here shows properties as Spark redacts them (test_redaction.py).
    "open_orders.sql": fr(
        "select order_id, status, amount, cast(created_at as string) as created, page_url "
        f"from {ORDERS} where status <> 'cancelled'"
    ),
    "orders_by_hour.sql": fr(
        f"select hour(created_at) as h, count(*) as n, sum(amount) as total from {ORDERS} "
        "group by hour(created_at)"
    ),
    # An aggregate and a join aggregate that do not.
    "status_summary.sql": fr(
        "select status, count(*) as n, sum(amount) as total, avg(amount) as mean "
        f"from {ORDERS} group by status"
    ),
    "customer_revenue.sql": fr(
        "select c.name, count(*) as orders, sum(o.amount) as revenue "
        f"from {ORDERS} o join {CUSTOMERS} c on o.customer_id = c.customer_id group by c.name"
    ),
    # An outer join, and a view over another fast_refresh view.
    "orders_and_customers.sql": fr(
        "select o.order_id, o.status, c.customer_id, c.name "
        f"from {ORDERS} o full outer join {CUSTOMERS} c on o.customer_id = c.customer_id"
    ),
    "big_customers.sql": fr(
        "select name, revenue from {{ ref('customer_revenue') }} where orders > 30"
    ),
    "schema.yml": """
version: 2
models:
  - name: orders_and_customers
    data_tests: [fast_refresh.equals_query]
  - name: big_customers
    data_tests: [fast_refresh.equals_query]
  - name: open_orders
    data_tests: [fast_refresh.equals_query]
  - name: orders_by_hour
    data_tests: [fast_refresh.equals_query]
  - name: status_summary
    data_tests: [fast_refresh.equals_query]
  - name: customer_revenue
    data_tests: [fast_refresh.equals_query]
""",
}
VIEWS = sorted(m.removesuffix(".sql") for m in MODELS if m.endswith(".sql"))
ZONED = {"open_orders", "orders_by_hour"}


def run_counting(args: list[str]) -> tuple[Counter[str], dict[str, list[str]]]:
    """Run dbt: the connections opened and the statements run (their first lines), by
    model."""
    opened: Counter[str] = Counter()
    statements: dict[str, list[str]] = {}

    def listen(event: EventMsg) -> None:
        if event.info.name == "NewConnectionOpening":
            opened[event.data.node_info.node_name] += 1
        elif event.info.name == "SQLQuery":
            first = event.data.sql.strip().split("\n")[0]
            statements.setdefault(event.data.node_info.node_name, []).append(first)

    run_dbt(args, callbacks=[listen])  # type: ignore[arg-type]
    return opened, statements


SAFE_RULES = "SET spark.sql.optimizer.excludedRules"


def rules_set_before_any_query(statements: list[str]) -> bool:
    """Whether the optimizer's unsafe rules were excluded (``runtime/executor.py``)
    before the first statement that plans a query, where there is one."""
    planning = [i for i, s in enumerate(statements) if plans_a_query(s)]
    return not planning or SAFE_RULES in statements[: planning[0]]


@pytest.fixture(scope="module")
def thrift_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThriftServer]:
    server = ThriftServer(Path(tmp_path_factory.mktemp("thrift"))).start()
    try:
        yield server
    finally:
        server.stop()


class TestThroughAThriftServer(FastRefreshProject):
    @pytest.fixture(scope="class")
    def dbt_profile_target(self, thrift_server: ThriftServer) -> dict[str, object]:
        return thrift_server.profile("placeholder")

    @pytest.fixture(scope="class")
    def profiles_config_update(
        self, dbt_profile_target: dict[str, Any], unique_schema: str
    ) -> dict[str, Any]:
        target = self.project_target(dbt_profile_target, unique_schema)
        # The same server, its sessions in another time zone (a Thrift server takes a
        # session's settings with this prefix, and ignores the others).
        tokyo = {
            **target,
            "server_side_parameters": {"set:hiveconf:spark.sql.session.timeZone": "Asia/Tokyo"},
        }
        outputs = {"default": target, "tokyo": tokyo}
        return {"test": {"outputs": outputs, "target": "default"}}

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return MODELS

    def last_runs(self, project: Any) -> dict[str, tuple[str, str]]:
        """Each model's last refresh: (its type, its reason)."""
        rows = self.rows(
            project,
            f"select mview, refresh_type, reason from {project.test_schema}_reg.refresh_runs "
            "order by started",
        )
        return {m.split(".")[1]: (t, r or "") for m, t, r in rows}

    @staticmethod
    def equal_their_queries(target: str = "default") -> None:
        """Each view equals its query run now (the package's ``equals_query`` test)."""
        results = run_dbt(["test", "--select", "test_name:equals_query", "--target", target])
        tests = [r for r in results if r.node.resource_type == "test"]
        assert sorted(r.node.attached_node.split(".")[-1] for r in tests) == VIEWS
        assert {str(r.status) for r in tests} == {"pass"}

    def test_a_thread_dbt_did_not_start_runs_statement_after_statement(self, ready: Any) -> None:
        """The leases' heartbeat runs its statements on a thread of its own, which gets a
        connection for each and closes it after. Its second statement ran on the closed
        connection ("Transport not open" on a server), so every renewal after the first
        failed, and a refresh holding a lease for more than twice the heartbeat's interval
        lost it."""
        x = AdapterExecutor(ready.adapter)
        answers: list[object] = []

        def beat() -> None:
            try:
                answers.extend(x.query(f"SELECT {i}") for i in range(3))
            except Exception as exc:
                answers.append(exc)

        thread = threading.Thread(target=beat)
        thread.start()
        thread.join()
        assert answers == [[(0,)], [(1,)], [(2,)]]

    def test_models_build_refresh_fast_and_rebuild_in_another_zone(self, ready: Any) -> None:
        project, s = ready, ready.test_schema
        project.run_sql(
            f"create table {s}.orders (order_id bigint not null, customer_id bigint, "
            "status string, amount decimal(10,2), created_at timestamp, page_url string) using iceberg"
        )
        project.run_sql(f"alter table {s}.orders set identifier fields order_id")
        project.run_sql(
            f"create table {s}.customers (customer_id bigint not null, name string) using iceberg"
        )
        project.run_sql(f"alter table {s}.customers set identifier fields customer_id")
        project.run_sql(
            f"insert into {s}.orders select id, id % 5, case when id % 3 = 0 then 'open' "
            "else 'shipped' end, cast(id * 1.25 as decimal(10,2)), "
            "timestamp'2024-01-01 00:10:00' + make_dt_interval(0, cast(id % 24 as int)), "
            "concat('/orders/', id) from range(200)"
        )
        project.run_sql(f"insert into {s}.customers select id, concat('c', id) from range(6)")
        run_dbt(["run"])
        assert {m: t for m, (t, _) in self.last_runs(project).items()} == dict.fromkeys(
            VIEWS, "COMPLETE"
        )

        project.run_sql(f"update {s}.orders set status = 'cancelled' where order_id % 7 = 0")
        project.run_sql(f"delete from {s}.orders where order_id % 11 = 0")
        project.run_sql(
            f"insert into {s}.orders values (500, 2, 'open', 9.99, timestamp'2024-01-02 05:00:00', "
            "'/orders/500')"
        )
        project.run_sql(f"update {s}.customers set name = 'renamed' where customer_id = 3")
        opened, statements = run_counting(["run"])
        # A refresh runs its statements on its node's connection, opened once: opened
        # and closed around each statement, every one paid a Thrift session's opening
        # and its settings (about 40 ms a statement here).
        for view in VIEWS:
            assert opened[view] <= 1 and len(statements[view]) >= 5, (view, opened, statements)
            assert rules_set_before_any_query(statements[view]), statements[view]
        runs = self.last_runs(project)
        assert {m: t for m, (t, _) in runs.items()} == dict.fromkeys(VIEWS, "FAST"), runs
        self.equal_their_queries()

        # Nothing changed: each refresh reads metadata alone, and sets nothing for the
        # optimizer (a statement of its own per connection); the registry's views neither.
        _, statements = run_counting(["run"])
        runs = self.last_runs(project)
        assert {m: t for m, (t, _) in runs.items()} == dict.fromkeys(VIEWS, "FAST"), runs
        registry = [m for m in statements if m.startswith("fast_refresh_")]
        assert len(registry) == 5, statements
        for model in [*VIEWS, *registry]:
            assert not any(plans_a_query(s) for s in statements[model]), statements[model]
            assert SAFE_RULES not in statements[model], statements[model]

        # The same server, its session in Asia/Tokyo: the views reading the zone rebuild.
        project.run_sql(
            f"update {s}.orders set amount = amount + 1, created_at = created_at + "
            "interval 5 hours where order_id % 4 = 1"
        )
        _, statements = run_counting(["run", "--target", "tokyo"])
        # Each zoned view's refresh reads the zone once (its probe's read serves the pass
        # under its lease too), and the publish (the on-run-end hook) once for all the
        # views it describes: a SET statement each, on a server.
        zone_reads = {
            m: sum(s.startswith("SET spark.sql.session.timeZone") for s in ss)
            for m, ss in statements.items()
        }
        assert sum(n for m, n in zone_reads.items() if m not in VIEWS) == 1, zone_reads
        assert all(zone_reads[v] == 1 for v in ZONED), zone_reads
        runs = self.last_runs(project)
        for name, (kind, reason) in runs.items():
            if name in ZONED:
                assert kind == "COMPLETE" and "the session time zone is Asia/Tokyo" in reason, (
                    name,
                    reason,
                )
            else:
                assert kind == "FAST", (name, kind, reason)
        self.equal_their_queries("tokyo")
        project.run_sql(f"delete from {s}.orders where order_id % 6 = 2")
        run_dbt(["run", "--target", "tokyo"])
        assert {t for t, _ in self.last_runs(project).values()} == {"FAST"}
        self.equal_their_queries("tokyo")
