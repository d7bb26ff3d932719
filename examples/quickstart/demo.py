"""The quickstart demo: the life of three fast-refresh materialized views, in one process.

Run it with `make demo` from the repository root. It starts one embedded Spark session
(Iceberg, local warehouse under examples/quickstart/.fastrefresh) and drives dbt
in-process, so each dbt command reuses the warm JVM. The story: a master table and its
materialized view log; three views built by a complete refresh; DML on the master; the
changes captured into the log; fast refreshes that consume the log rows, which are purged
once every view has them; each view checked against its query recomputed on the master.
Exits non-zero if any view differs.
"""

from __future__ import annotations

import shlex
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from dbt.artifacts.schemas.run import RunResult
from dbt.cli.main import dbtRunner, dbtRunnerResult
from dbt.contracts.graph.nodes import ModelNode
from dbt.contracts.results import RunExecutionResult
from dbt_common.events.base_types import EventMsg
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.functions import lit

from dbt.adapters.fastrefresh.runtime.embedded import start_session

HERE = Path(__file__).resolve().parent
VIEWS = ("customer_revenue", "open_orders", "status_summary")
LOG = "shop.mlog__orders"

# Customer 1's orders (100, 200, ...) are open, customer 2's (79, 179, ...) delivered.
DML = (
    "insert into shop.orders values"
    " (10001, 1, 'open', 120.00, timestamp'2026-03-01 09:00:00'),"
    " (10002, 2, 'delivered', 35.50, timestamp'2026-03-01 09:05:00')",
    "update shop.orders set amount = amount + 10 where order_id in (100, 79)",
    "update shop.orders set status = 'shipped' where order_id in (200, 300)",
    "delete from shop.orders where order_id in (400, 179)",
)
# The part of each view the DML changes, shown before and after.
WATCH = {
    "customer_revenue": "where customer_id in (1, 2) order by customer_id",
    "open_orders": "where order_id in (100, 200, 300, 400, 10001) order by order_id",
    "status_summary": "order by status",
}


def banner(text: str) -> None:
    print(f"\n=== {text} " + "=" * max(0, 84 - len(text)), flush=True)


def echo_macro_log(event: EventMsg) -> None:
    """Print what a run-operation's macro logs (dbt itself runs with --quiet)."""
    if event.info.name == "JinjaLogInfo":
        print(f"  {event.data.msg}", flush=True)


def dbt(*args: str) -> dbtRunnerResult:
    """Run a dbt command in this process: print its outcome, exit if it fails."""
    print(f"\n$ dbt {shlex.join(args)}", flush=True)
    callbacks: list[Callable[[EventMsg], None]] = []
    if args[0] == "run-operation":
        callbacks.append(echo_macro_log)
    command = [*args, "--quiet", "--project-dir", str(HERE), "--profiles-dir", str(HERE)]
    started = time.monotonic()
    result = dbtRunner(callbacks=callbacks).invoke(command)
    if not result.success:
        print(f"dbt {args[0]} failed: {result.exception or 'see above'}", file=sys.stderr)
        sys.exit(1)
    print(f"  done in {time.monotonic() - started:.1f}s", flush=True)
    if isinstance(result.result, RunExecutionResult):
        rows = [
            [node.name, r.message or "", f"{r.execution_time:.1f}s"]
            for node, r in refreshed(result)
        ]
        print_table(["view", "refresh", "took"], rows)
    return result


def refreshed(result: dbtRunnerResult) -> list[tuple[ModelNode, RunResult]]:
    """The fast_refresh models a `dbt run` ran, with their results."""
    assert isinstance(result.result, RunExecutionResult)
    return [
        (r.node, r)
        for r in result.result.results
        if isinstance(r.node, ModelNode) and r.node.config.materialized == "fast_refresh"
    ]


def print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Print rows as an aligned text table."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]
    for row in [header, ["-" * w for w in widths], *rows]:
        print("  " + "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())


def show(frame: DataFrame, title: str, limit: int | None = None) -> None:
    """Print a query result as an aligned text table (at most `limit` rows)."""
    rows = [["NULL" if v is None else str(v) for v in row] for row in frame.collect()]
    shown = rows[:limit]
    more = f" ({len(rows)} rows, first {len(shown)} shown)" if len(shown) < len(rows) else ""
    print(f"\n{title}{more}")
    print_table(frame.columns, shown)


def user_columns(spark: SparkSession, view: str) -> str:
    """The view's own columns, without the hidden `__fr_` columns the refresh keeps."""
    columns = spark.table(f"analytics.{view}").columns
    return ", ".join(c for c in columns if not c.startswith("__fr_"))


def show_views(spark: SparkSession, moment: str) -> None:
    """Print the part of each view that the DML changes."""
    for view in VIEWS:
        frame = spark.sql(f"select {user_columns(spark, view)} from analytics.{view} {WATCH[view]}")
        show(frame, f"analytics.{view} {moment}: {WATCH[view]}")


def is_identical(spark: SparkSession, view: str, query: str) -> bool:
    """Compare the view with its query recomputed on the master; print the verdict."""
    stored = spark.sql(f"select {user_columns(spark, view)} from analytics.{view}")
    fresh = spark.sql(query)
    diff = stored.exceptAll(fresh).select(lit("view").alias("only_in"), "*")
    diff = diff.unionAll(fresh.exceptAll(stored).select(lit("query").alias("only_in"), "*"))
    if diff.isEmpty():
        print(f"  {view:<18} identical")
        return True
    show(diff, f"  {view:<18} DIFFERS from its query:", limit=20)
    return False


def main() -> None:
    started = time.monotonic()
    # A fresh state each time, so the demo always tells the same story.
    shutil.rmtree(HERE / ".fastrefresh", ignore_errors=True)

    banner("1. Embedded Spark + Iceberg, the fast_refresh package")
    spark = start_session(HERE / ".fastrefresh")
    print(f"Spark {spark.version} is up; dbt runs in this process and reuses it.")
    dbt("deps")
    dbt("run-operation", "fast_refresh.doctor")

    banner("2. The master shop.orders and its materialized view log")
    dbt("run-operation", "create_demo_masters")
    dbt("run-operation", "fast_refresh.create_mview_log", "--args", "{master: shop.orders}")

    banner("3. First dbt run: three views on shop.orders, built by a COMPLETE refresh")
    print("All three read shop.orders, so they share its log (and register on it).")
    queries = {node.name: str(node.compiled_code) for node, _ in refreshed(dbt("run"))}
    show_views(spark, "after the first build")

    banner("4. DML on the master, in plain Spark SQL")
    for statement in DML:
        print(f"spark.sql> {statement}")
        spark.sql(statement)

    banner("5. Capture: the master's Iceberg commits become log rows")
    dbt("run-operation", "fast_refresh.capture_changes")
    show(
        spark.sql(
            "select sequence__, order_id, customer_id, status, amount, snaptime__, dmltype__,"
            f" old_new__, hex(change_vector__) as change_vector__ from {LOG} order by sequence__"
        ),
        f"{LOG}: no view has refreshed from these rows yet, so snaptime__ = 4000-01-01",
        limit=12,
    )

    banner("6. Refresh one view: a FAST refresh, from the log")
    dbt("run", "--select", "customer_revenue")
    show(
        spark.sql(f"select snaptime__, count(*) as log_rows from {LOG} group by snaptime__"),
        f"{LOG}: stamped with the refresh time, kept for the two other views",
    )
    show(
        spark.sql(
            "select mview, last_refresh, pending_log_rows, oldest_unconsumed_change"
            " from analytics.fast_refresh_log_backlog order by mview"
        ),
        "analytics.fast_refresh_log_backlog: log rows each view has still to consume",
    )

    banner("7. Refresh all: the two others go FAST, then the log is purged")
    dbt("run")
    show(
        spark.sql(f"select count(*) as log_rows from {LOG}"),
        f"{LOG}: empty, every registered view has consumed its rows",
    )
    show(
        spark.sql(
            "select mview, shape, last_refresh_type, staleness, pending_log_rows"
            " from analytics.fast_refresh_mviews order by mview"
        ),
        "analytics.fast_refresh_mviews",
    )
    show(
        spark.sql(
            "select mview, refresh_type, coalesce(reason, '') as reason, log_rows_read,"
            " round(seconds, 1) as seconds from analytics.fast_refresh_refresh_runs"
            " order by started"
        ),
        "analytics.fast_refresh_refresh_runs",
    )
    show_views(spark, "after the fast refreshes")

    banner("8. Each view against its query recomputed on the master (EXCEPT ALL both ways)")
    results = [is_identical(spark, view, queries[view]) for view in VIEWS]

    banner("9. Done")
    print(f"Demo finished in {time.monotonic() - started:.1f}s.")
    if not all(results):
        print("Some views differ from their query: see section 8.", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
