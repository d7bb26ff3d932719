"""A dbt ``table`` model with a log: its table kept against its table replaced.

A ``table`` model configured ``fast_refresh_keep_table: true`` replaces its rows in one
commit (``INSERT INTO ... REPLACE WHERE TRUE``); capture reads that commit whole and logs
the rows that changed, and a view over the table refreshes fast. Without the setting the
table is created again (``CREATE OR REPLACE TABLE ... AS``) and the view rebuilt. Each
round changes 0.1% of the source's rows, then times both ways to the same state: the
kept table's statement, capture and FAST refresh of an aggregate over it, against the
replaced table's statement and a ``CREATE OR REPLACE TABLE`` of the aggregate. The
statements run as the materializations and the refresh run them, without dbt's own
per-model cost. Results: ``benchmarks/results/keep_table/README.md``
(``docs/fast-refresh.md``, "Views over views").

Usage: .venv/bin/python benchmarks/keep_table.py [--rows 1000000] [--rounds 5] [--out DIR]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench import machine, spread  # noqa: E402

SCHEMA = "keep_table"
STEPS = (
    "kept: rows replaced (INSERT ... REPLACE WHERE TRUE)",
    "kept: capture",
    "kept: FAST refresh of the aggregate",
    "kept: total",
    "replaced: CREATE OR REPLACE TABLE ... AS",
    "replaced: the aggregate rebuilt (CREATE OR REPLACE TABLE ... AS)",
    "replaced: total",
)


def timed(fn: Callable[[], Any], result: list[Any] | None = None) -> float:
    """Seconds ``fn`` took (its result appended to ``result``)."""
    started = time.perf_counter()
    value = fn()
    seconds = time.perf_counter() - started
    if result is not None:
        result.append(value)
    return seconds


def rounds(spark: Any, rows: int, count: int) -> dict[str, list[float]]:
    """``count`` timed rounds after one untimed warm-up; seconds by step."""
    from dbt.adapters.fastrefresh.engine import refresh
    from dbt.adapters.fastrefresh.mlog import capture
    from dbt.adapters.fastrefresh.mlog import ddl as mlog
    from dbt.adapters.fastrefresh.protocol.env import Env
    from dbt.adapters.fastrefresh.sqltext import TableName

    sql, s = spark.sql, SCHEMA
    sql(f"CREATE SCHEMA {s}")
    sql(
        f"CREATE TABLE {s}.src USING iceberg AS "
        f"SELECT id AS k, id % 1000 AS g, 1 AS x FROM range({rows})"
    )
    model = f"SELECT k, g, x * 2 AS y FROM {s}.src"
    sql(f"CREATE TABLE {s}.kept USING iceberg AS {model}")
    env = Env.for_spark(spark, f"{s}_registry")
    mlog.create_mview_log(env, f"{s}.kept")
    view, query = (
        TableName(s, "agg"),
        f"SELECT g, count(*) AS n, sum(y) AS s FROM {s}.kept GROUP BY g",
    )
    refresh.refresh_view(env, view=view, sql=query, method="force", exists=False)
    changed = max(rows // 1000, 1)
    found: dict[str, list[float]] = {step: [] for step in STEPS}
    for n in range(count + 1):
        low = (n * 7919) % max(rows - changed, 1)
        sql(f"UPDATE {s}.src SET x = x + 1 WHERE k BETWEEN {low} AND {low + changed - 1}")
        results: list[Any] = []
        kept = (
            timed(lambda: sql(f"INSERT INTO {s}.kept REPLACE WHERE TRUE {model}")),
            timed(lambda: capture.capture(env, TableName(s, "kept"))),
            timed(lambda: refresh.refresh_view(env, view=view, sql=query, method="force", exists=True), results),
        )  # fmt: skip
        assert results[0].refresh_type == "FAST", results[0].reason
        replaced = (
            timed(lambda: sql(f"CREATE OR REPLACE TABLE {s}.replaced USING iceberg AS {model}")),
            timed(lambda: sql(
                f"CREATE OR REPLACE TABLE {s}.agg_replaced USING iceberg AS "
                + query.replace(f"{s}.kept ", f"{s}.replaced ")
            )),
        )  # fmt: skip
        if n == 0:
            continue  # the warm-up
        values = (*kept, sum(kept), *replaced, sum(replaced))
        for step, value in zip(STEPS, values, strict=True):
            found[step].append(value)
        print(f"round {n}: kept {sum(kept):.2f} s, replaced {sum(replaced):.2f} s", flush=True)
    return found


def report(out: Path, rows: int, found: dict[str, list[float]]) -> None:
    lines = [
        "# A `table` model with a log: kept against replaced",
        "",
        f"`benchmarks/keep_table.py --rows {rows}`: a {rows:,}-row table model of three "
        "columns over a source of as many rows, 0.1% of the source's rows updated a round, "
        "one aggregate (1,000 groups) over the table model. Seconds, median and range of "
        f"{len(found[STEPS[0]])} rounds after a warm-up.",
        "",
        machine(),
        "",
        "| step | median | min | max |",
        "|---|---:|---:|---:|",
    ]
    for step, values in found.items():
        lines.append(f"| {step} | {spread(values, 2)} |")
    out.mkdir(parents=True, exist_ok=True)
    (out / "README.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "keep_table")
    args = parser.parse_args()
    from dbt.adapters.fastrefresh.runtime.embedded import start_session

    state = Path(tempfile.mkdtemp(prefix="fastrefresh-keep-table-"))
    try:
        spark = start_session(state)
        spark.sparkContext.setLogLevel("ERROR")
        found = rounds(spark, args.rows, args.rounds)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    for step, values in found.items():
        print(f"{step:66} {statistics.median(values):6.2f} s")
    report(args.out, args.rows, found)
    print(f"results in {args.out}")


if __name__ == "__main__":
    main()
