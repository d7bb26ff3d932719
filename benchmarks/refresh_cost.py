"""Benchmark: fast vs complete refresh of an aggregate view, and the no-change refresh.

A 1M-row orders master (keyed, copy-on-write, written in key order), its log, and the
aggregate view `SELECT customer_id, count(*), sum(amount), avg(amount) ... GROUP BY
customer_id` (10,000 customers). Measured in one warm process:

- a no-change refresh: through the Python layer, and as `dbt run -s <model>` in-process;
- a fast refresh after 1% of the rows changed (half amount updates, a quarter deletes, a
  quarter inserts), with its phases (capture/setup, apply, wrap-up);
- a complete refresh of the same view.

Usage: .venv/bin/python benchmarks/refresh_cost.py [--rows 1000000] [--fraction 0.01]
       [--repeats 3] [--out benchmarks/results/refresh]
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from dbt.adapters.fastrefresh import logs, refresh
from dbt.adapters.fastrefresh.clock import utcnow
from dbt.adapters.fastrefresh.embedded import start_session
from dbt.adapters.fastrefresh.executor import SparkExecutor
from dbt.adapters.fastrefresh.registry import Registry
from dbt.adapters.fastrefresh.sqltext import TableName

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
VIEW_SQL = (
    "SELECT customer_id, count(*) AS orders, sum(amount) AS revenue, avg(amount) AS avg_amount "
    "FROM bench.orders GROUP BY customer_id"
)


def build(spark, rows: int) -> None:  # type: ignore[no-untyped-def]
    spark.sql("CREATE SCHEMA IF NOT EXISTS bench")
    spark.sql("DROP TABLE IF EXISTS bench.orders")
    spark.sql(
        "CREATE TABLE bench.orders (order_id BIGINT NOT NULL, customer_id BIGINT, "
        "amount DECIMAL(12,2), status STRING) USING iceberg"
    )
    spark.sql("ALTER TABLE bench.orders SET IDENTIFIER FIELDS order_id")
    step = 250_000
    for start in range(0, rows, step):
        spark.sql(
            f"INSERT INTO bench.orders SELECT id, id % 10000, CAST(id % 1000 AS DECIMAL(12,2)), "
            f"'open' FROM range({start}, {min(rows, start + step)}, 1, 4)"
        )


def change(spark, rows: int, count: int, rng: random.Random, next_id: list[int]) -> None:  # type: ignore[no-untyped-def]
    picked = rng.sample(range(rows), count * 3 // 4)
    updates, deletes = picked[: count // 2], picked[count // 2 :]
    spark.createDataFrame([(i,) for i in updates], "order_id BIGINT").createOrReplaceTempView("u")
    spark.createDataFrame([(i,) for i in deletes], "order_id BIGINT").createOrReplaceTempView("d")
    spark.sql(
        "MERGE INTO bench.orders t USING u ON t.order_id = u.order_id "
        "WHEN MATCHED THEN UPDATE SET amount = t.amount + 1"
    )
    spark.sql("DELETE FROM bench.orders WHERE order_id IN (SELECT order_id FROM d)")
    inserts = count - len(updates) - len(deletes)
    start = next_id[0]
    next_id[0] += inserts
    spark.sql(
        f"INSERT INTO bench.orders SELECT id, id % 10000, 7.00, 'open' FROM range({start}, {start + inserts})"
    )


def dbt_project(root: Path, state: Path) -> Path:
    project = root / "bench_project"
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text(
        "name: bench\nversion: '1.0'\nconfig-version: 2\nprofile: bench\n"
    )
    (project / "profiles.yml").write_text(
        f"bench:\n  target: dev\n  outputs:\n    dev:\n      type: fastrefresh\n"
        f"      schema: bench\n      state_dir: {state}\n      registry_schema: bench_registry\n"
    )
    (project / "packages.yml").write_text(f"packages:\n  - local: {REPO}\n")
    (project / "models" / "revenue_dbt.sql").write_text(
        "{{ config(materialized='fast_refresh') }}\n" + VIEW_SQL
    )
    return project


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--fraction", type=float, default=0.01)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "refresh")
    args = parser.parse_args()

    state = HERE / ".state-refresh"
    shutil.rmtree(state, ignore_errors=True)
    spark = start_session(state)
    spark.sparkContext.setLogLevel("ERROR")
    x = SparkExecutor(spark)
    registry = Registry(x, "bench_registry")
    rng = random.Random(7)
    build(spark, args.rows)
    logs.create_mview_log(x, registry, "bench.orders", None, False, None, utcnow)
    view = TableName("bench", "revenue")

    def run(method: str, exists: bool = True) -> refresh.RefreshResult:
        return refresh.refresh_view(x, registry, view, VIEW_SQL, method, False, exists, "", utcnow)

    run("force", exists=False)  # first build
    noop = [run("force").seconds for _ in range(args.repeats)]

    # The same no-change refresh as a user sees it: dbt run, warm, in this process.
    from dbt.cli.main import dbtRunner

    with tempfile.TemporaryDirectory() as tmp:
        project = dbt_project(Path(tmp), state)
        flags = ["--project-dir", str(project), "--profiles-dir", str(project), "--quiet"]
        dbtRunner().invoke(["deps", *flags])
        dbtRunner().invoke(["run", *flags])  # first build of revenue_dbt
        dbt_noop = []
        for _ in range(args.repeats):
            started = time.perf_counter()
            result = dbtRunner().invoke(["run", "-s", "revenue_dbt", *flags])
            assert result.success
            dbt_noop.append(time.perf_counter() - started)

    changes = int(args.rows * args.fraction)
    next_id = [args.rows]
    fast, complete = [], []
    for _ in range(args.repeats):
        change(spark, args.rows, changes, rng, next_id)
        fast.append(run("force"))
        assert fast[-1].refresh_type == "FAST", fast[-1].reason
        complete.append(run("complete").seconds)
    phases = {k: statistics.median(r.phases.get(k, 0.0) for r in fast) for k in fast[0].phases}
    median_fast = statistics.median(r.seconds for r in fast)
    lines = [
        f"Refresh cost, {dt.date.today()}, {args.rows:,}-row master, aggregate view of 10,000 groups, "
        f"embedded Spark on {platform.machine()} (2 cores), median of {args.repeats}.",
        "",
        "| refresh | seconds |",
        "|---|---:|",
        f"| no-change refresh (Python layer) | {statistics.median(noop):.2f} |",
        f"| no-change refresh (`dbt run -s model`, warm, in-process) | {statistics.median(dbt_noop):.2f} |",
        f"| fast refresh, {args.fraction:.0%} changed ({changes:,} changes) | {median_fast:.2f} |",
        f"| complete refresh | {statistics.median(complete):.2f} |",
        "",
        "Fast refresh phases (median seconds): "
        + ", ".join(f"{k} {v:.2f}" for k, v in phases.items()),
    ]
    text = "\n".join(lines) + "\n"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "refresh_cost.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
