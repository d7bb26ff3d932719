"""Benchmark: capture cost against master size, write mode and change locality.

For each master size, Iceberg write mode (copy-on-write, merge-on-read) and locality
(changes on the most recent keys, or scattered uniformly), it applies a batch of changes
(half updates of a measure, a quarter deletes, a quarter inserts; three commits) and
times `capture` of that batch into the log. The master is written in key order, in many
files, as a fact table appended over time is.

Usage:  .venv/bin/python benchmarks/capture_cost.py [--sizes 100000 1000000] [--changes 1000]
        [--repeats 3] [--out benchmarks/results/capture]

Prints a Markdown table and writes it, with a CSV, under --out.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import platform
import random
import shutil
import statistics
import time
from pathlib import Path

from dbt.adapters.fastrefresh import capture, logs
from dbt.adapters.fastrefresh.clock import utcnow
from dbt.adapters.fastrefresh.embedded import start_session
from dbt.adapters.fastrefresh.executor import SparkExecutor
from dbt.adapters.fastrefresh.registry import Registry
from dbt.adapters.fastrefresh.sqltext import TableName

HERE = Path(__file__).resolve().parent
ROWS_PER_FILE = 50_000


def build_master(spark, table: str, rows: int, mode: str) -> None:  # type: ignore[no-untyped-def]
    props = ", ".join(f"'write.{op}.mode'='{mode}'" for op in ("update", "delete", "merge"))
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    spark.sql(
        f"CREATE TABLE {table} (order_id BIGINT NOT NULL, customer_id BIGINT, amount DECIMAL(12,2), "
        f"status STRING) USING iceberg TBLPROPERTIES ({props})"
    )
    spark.sql(f"ALTER TABLE {table} SET IDENTIFIER FIELDS order_id")
    for start in range(0, rows, ROWS_PER_FILE):
        end = min(rows, start + ROWS_PER_FILE)
        spark.sql(
            f"INSERT INTO {table} SELECT id, id % 997, CAST(id % 1000 AS DECIMAL(12,2)), "
            f"IF(id % 3 = 0, 'open', 'shipped') FROM range({start}, {end}, 1, 1)"
        )


def change_batch(
    spark,
    table: str,
    rows: int,
    changes: int,
    locality: str,
    rng: random.Random,
    next_id: list[int],
) -> None:  # type: ignore[no-untyped-def]
    window = range(max(0, rows - 20 * changes), rows) if locality == "recent" else range(0, rows)
    picked = rng.sample(window, changes * 3 // 4)
    updates, deletes = picked[: changes // 2], picked[changes // 2 :]
    ids = ", ".join(map(str, updates))
    spark.sql(f"UPDATE {table} SET amount = amount + 1 WHERE order_id IN ({ids})")
    spark.sql(f"DELETE FROM {table} WHERE order_id IN ({', '.join(map(str, deletes))})")
    inserts = changes - len(updates) - len(deletes)
    start = next_id[0]
    next_id[0] += inserts
    spark.sql(
        f"INSERT INTO {table} SELECT id, id % 997, 1.00, 'open' FROM range({start}, {start + inserts}, 1, 1)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--changes", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "capture")
    args = parser.parse_args()

    state = HERE / ".state-capture"
    shutil.rmtree(state, ignore_errors=True)
    spark = start_session(state)
    spark.sparkContext.setLogLevel("ERROR")
    x = SparkExecutor(spark)
    registry = Registry(x, "bench_registry")
    spark.sql("CREATE SCHEMA IF NOT EXISTS bench")
    rng = random.Random(42)
    results = []
    for rows in args.sizes:
        for mode in ("copy-on-write", "merge-on-read"):
            for locality in ("recent", "scattered"):
                table = "bench.orders"
                registry.ensure()
                if registry.log_for_master(TableName("bench", "orders")):
                    logs.drop_mview_log(x, registry, table)
                build_master(spark, table, rows, mode)
                logs.create_mview_log(x, registry, table, None, False, None, utcnow)
                next_id = [rows]
                timings = []
                for _ in range(args.repeats):
                    change_batch(spark, table, rows, args.changes, locality, rng, next_id)
                    started = time.perf_counter()
                    result = capture.capture(x, registry, TableName("bench", "orders"), utcnow)
                    timings.append(time.perf_counter() - started)
                    assert result.log_rows >= args.changes, result
                row = {
                    "master_rows": rows, "mode": mode, "locality": locality,
                    "changes": args.changes, "capture_s_median": round(statistics.median(timings), 3),
                    "capture_s_min": round(min(timings), 3), "log_rows_per_batch": result.log_rows,
                }  # fmt: skip
                print(row, flush=True)
                results.append(row)
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "capture_cost.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(results[0]))
        writer.writeheader()
        writer.writerows(results)
    header = "| master rows | write mode | locality | changes | capture (median s) | min s |"
    lines = [header, "|---:|---|---|---:|---:|---:|"]
    for r in results:
        lines.append(
            f"| {r['master_rows']:,} | {r['mode']} | {r['locality']} | {r['changes']:,} | "
            f"{r['capture_s_median']:.2f} | {r['capture_s_min']:.2f} |"
        )
    machine = (
        f"{platform.machine()}, {platform.processor() or 'cpu'}, Python {platform.python_version()}"
    )
    text = (
        f"Capture cost, {dt.date.today()}, embedded Spark (local[*]) on {machine}; "
        f"{args.repeats} batches per cell, each {args.changes} changes in 3 commits.\n\n"
        + "\n".join(lines)
        + "\n"
    )
    (args.out / "capture_cost.md").write_text(text)
    print("\n" + text)


if __name__ == "__main__":
    main()
