"""A dbt DAG of fast-refresh models, refreshed FAST after random DML, round after round.

Run it with `make demo-dag` from the repository root (`--rounds N`, default 20). A small
shop in dbt's own style: four sources (raw.orders, raw.order_items, raw.customers,
raw.products), staging models with import CTEs, an intermediate join of four models and an
ephemeral filter, marts over them and a mart over a mart. Every model is `fast_refresh`;
nothing else is set up: the first `dbt run` creates the logs the DAG needs and builds the
views, and each later round applies random inserts, updates (keys, groups, measures) and
deletes to the sources, runs `dbt run` and checks every model against its query
recomputed on the sources (EXCEPT ALL both ways). It prints each round's refresh types and
times, and each level's times at the end. Exits non-zero if a view differs from its query
or, after the first build, a model does not refresh FAST.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

from dbt.artifacts.schemas.run import RunResult
from dbt.cli.main import dbtRunner, dbtRunnerResult
from dbt.contracts.graph.manifest import Manifest
from dbt.contracts.graph.nodes import ModelNode
from dbt.contracts.results import RunExecutionResult
from pyspark.sql import SparkSession

from dbt.adapters.fastrefresh.runtime.embedded import start_session

HERE = Path(__file__).resolve().parent
STATUSES = ("placed", "paid", "shipped", "returned")
COUNTRIES = ("fr", "de", "it", "es", "nl", "se")
CATEGORIES = ("books", "games", "garden", "tools", None)

SOURCES = (
    "create table raw.customers (id bigint not null, name string, country string) using iceberg",
    "create table raw.products (id bigint not null, name string, category string) using iceberg",
    "create table raw.orders (id bigint not null, customer_id bigint, status string,"
    " ordered_at timestamp) using iceberg",
    "create table raw.order_items (id bigint not null, order_id bigint, product_id bigint,"
    " quantity int, unit_price decimal(10, 2)) using iceberg",
    "insert into raw.customers select id, concat(' customer ', id, ' '),"
    " element_at(array('fr', 'de', 'it', 'es', 'nl'), cast(id % 5 as int) + 1)"
    " from range(1, 201) as r(id)",
    "insert into raw.products select id, concat('product ', id),"
    " element_at(array('books', 'games', 'garden', 'tools'), cast(id % 4 as int) + 1)"
    " from range(1, 41) as r(id)",
    "insert into raw.orders select id, 1 + (id * 7919) % 200,"
    " element_at(array('placed', 'paid', 'shipped', 'shipped', 'returned'),"
    " cast(id % 5 as int) + 1),"
    " timestamp'2026-01-01 00:00:00' + make_interval(0, 0, 0, cast(id % 60 as int), 0, 0, 0)"
    " from range(1, 5001) as r(id)",
    "insert into raw.order_items select id, 1 + (id * 31) % 5000, 1 + (id * 17) % 40,"
    " cast(1 + id % 4 as int), cast(2 + (id * 13) % 90 as decimal(10, 2))"
    " from range(1, 15001) as r(id)",
    "alter table raw.customers set identifier fields id",
    "alter table raw.products set identifier fields id",
    "alter table raw.orders set identifier fields id",
    "alter table raw.order_items set identifier fields id",
)


def ours(result: dbtRunnerResult) -> list[tuple[ModelNode, RunResult]]:
    """This project's fast_refresh models and their results (not hooks, registry models)."""
    assert isinstance(result.result, RunExecutionResult)
    return [
        (r.node, r) for r in result.result.results
        if isinstance(r.node, ModelNode) and r.node.package_name == "shop_dag"
        and r.node.config.materialized == "fast_refresh"
    ]  # fmt: skip


def dbt(*args: str) -> dbtRunnerResult:
    """Run a dbt command in this process (it reuses the warm JVM); exit if it fails."""
    command = [*args, "--quiet", "--project-dir", str(HERE), "--profiles-dir", str(HERE)]
    result = dbtRunner().invoke(command)
    if not result.success:
        print(f"dbt {args[0]} failed: {result.exception or 'see above'}", file=sys.stderr)
        sys.exit(1)
    return result


def random_dml(spark: SparkSession, rng: random.Random, ids: dict[str, int]) -> list[str]:
    """One round of changes to the sources: inserts, updates of measures, groups and keys,
    and deletes, a statement each (as an application would commit them)."""
    statements = []
    for _ in range(rng.randint(1, 3)):
        ids["orders"] += 1
        order = ids["orders"]
        statements.append(
            f"insert into raw.orders values ({order}, {rng.randint(1, 200)},"
            f" '{rng.choice(STATUSES)}', timestamp'2026-03-{rng.randint(1, 28):02d} 10:00:00')"
        )
        lines = []
        for _ in range(rng.randint(1, 3)):
            ids["items"] += 1
            price = "null" if rng.random() < 0.1 else f"{rng.randint(1, 99)}.50"
            lines.append(
                f"({ids['items']}, {order}, {rng.randint(1, 40)}, {rng.randint(0, 5)}, {price})"
            )
        statements.append(f"insert into raw.order_items values {', '.join(lines)}")
    some = rng.randint(1, ids["orders"])
    statements += [
        f"update raw.orders set status = '{rng.choice(STATUSES)}' where id % 97 = {some % 97}",
        f"update raw.order_items set quantity = quantity + 1 where id % 89 = {some % 89}",
        f"update raw.customers set country = '{rng.choice(COUNTRIES)}'"
        f" where id = {rng.randint(1, 200)}",
        f"update raw.order_items set order_id = {rng.randint(1, ids['orders'])}"
        f" where id = {rng.randint(1, ids['items'])}",
        f"delete from raw.order_items where id = {rng.randint(1, ids['items'])}",
        f"delete from raw.orders where id = {rng.randint(1, ids['orders'])}",
    ]
    category = rng.choice(CATEGORIES)
    value = "null" if category is None else f"'{category}'"
    statements.append(f"update raw.products set category = {value} where id = {rng.randint(1, 40)}")
    if rng.random() < 0.3:
        # A key changes: an order is renumbered (its lines now point nowhere).
        ids["orders"] += 1
        statements.append(
            f"update raw.orders set id = {ids['orders']} where id = {rng.randint(1, ids['orders'])}"
        )
    for statement in statements:
        spark.sql(statement)
    return statements


def user_columns(spark: SparkSession, view: str) -> str:
    return ", ".join(c for c in spark.table(view).columns if not c.startswith("__fr_"))


def differs(spark: SparkSession, view: str, query: str) -> int:
    """How many rows ``view`` and its query recomputed now differ by (both ways); the
    differing rows are printed."""
    stored = spark.sql(f"select {user_columns(spark, view)} from {view}")
    fresh = spark.sql(query)
    extra, missing = stored.exceptAll(fresh).collect(), fresh.exceptAll(stored).collect()
    for side, rows in (("only in the view", extra), ("only in the query", missing)):
        for row in rows[:10]:
            print(f"  {view} {side}: {tuple(row)}")
    return len(extra) + len(missing)


def levels(names: list[str]) -> dict[str, int]:
    """Each model's level in the DAG: 1 over sources, else 1 + its parents' highest
    (ephemeral models are looked through)."""
    manifest = dbt("parse").result
    assert isinstance(manifest, Manifest)
    nodes = manifest.nodes

    def level(uid: str) -> int:
        node = nodes[uid]
        parents = [p for p in getattr(node.depends_on, "nodes", []) if p.startswith("model.")]
        own = 0 if node.config.materialized == "ephemeral" else 1
        return own + max((level(p) for p in parents), default=0)

    return {nodes[uid].name: level(uid) for uid in nodes if nodes[uid].name in names}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="rounds of random DML")
    parser.add_argument("--seed", type=int, default=23, help="random seed of the DML")
    args = parser.parse_args()
    started = time.monotonic()
    shutil.rmtree(HERE / ".fastrefresh", ignore_errors=True)
    spark = start_session(HERE / ".fastrefresh")
    dbt("deps")
    spark.sql("create schema if not exists raw")
    for statement in SOURCES:
        spark.sql(statement)
    print("raw.customers 200, raw.products 40, raw.orders 5,000, raw.order_items 15,000 rows")

    first = ours(dbt("run"))
    queries = {node.name: str(node.compiled_code) for node, _ in first}
    level_of = levels(list(queries))
    names = sorted(queries, key=lambda n: (level_of[n], n))
    print(
        "first build (COMPLETE, the logs created on the way): "
        + ", ".join(f"{node.name} {r.execution_time:.1f}s" for node, r in first)
    )
    rng = random.Random(args.seed)
    ids = {"orders": 5000, "items": 15000}
    times: dict[str, list[float]] = {n: [] for n in names}
    failures = []
    for round_ in range(1, args.rounds + 1):
        statements = random_dml(spark, rng, ids)
        results = ours(dbt("run"))
        kinds = {}
        for node, r in results:
            kinds[node.name] = (r.message or "").split(" ")[0]
            times[node.name].append(r.execution_time)
        wrong = {n: differs(spark, f"analytics.{n}", queries[n]) for n in names}
        slow = [n for n in names if kinds.get(n) != "FAST"]
        bad = [f"{n} ({rows} rows off)" for n, rows in wrong.items() if rows]
        failures += [f"round {round_}: {b}" for b in bad]
        failures += [f"round {round_}: {n} refreshed {kinds.get(n)}" for n in slow]
        print(
            f"round {round_:2d}: {len(statements)} statements; "
            f"{sum(k == 'FAST' for k in kinds.values())}/{len(names)} FAST in "
            f"{sum(r.execution_time for _, r in results):.1f}s; "
            + ("every view equals its query" if not bad else "DIFFERS: " + ", ".join(bad))
        )
    print("\nFast refresh time per model (seconds, dbt's per-model time over the rounds):")
    print(f"  {'level':<6}{'model':<28}{'median':>8}{'max':>8}")
    for name in names:
        if times[name]:
            print(
                f"  {level_of[name]:<6}{name:<28}{statistics.median(times[name]):>8.2f}"
                f"{max(times[name]):>8.2f}"
            )
    per_level: dict[int, list[float]] = {}
    for name in names:
        for i, t in enumerate(times[name]):
            per_level.setdefault(level_of[name], [0.0] * len(times[name]))[i] += t
    for level, sums in sorted(per_level.items()):
        print(f"  level {level}: median {statistics.median(sums):.2f}s per round, all its models")
    print(f"\nDone in {time.monotonic() - started:.0f}s.")
    if failures:
        print("\n".join(failures), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
