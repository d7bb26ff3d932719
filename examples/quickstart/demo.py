"""The quickstart demo: masters, dbt models, and the result, in one process.

Run it with `make demo` from the repository root. It starts one embedded Spark session
(Iceberg, local warehouse under examples/quickstart/.fastrefresh) and drives dbt
in-process, so each dbt command reuses the warm JVM.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def banner(text: str) -> None:
    print(f"\n=== {text} " + "=" * max(0, 74 - len(text)), flush=True)


def dbt(*args: str) -> None:
    from dbt.cli.main import dbtRunner

    command = [*args, "--project-dir", str(HERE), "--profiles-dir", str(HERE)]
    print(f"$ dbt {' '.join(args)}", flush=True)
    result = dbtRunner().invoke(command)
    if not result.success:
        print(f"dbt {args[0]} failed: {result.exception or 'see the log above'}", file=sys.stderr)
        sys.exit(1)


def show(spark, sql: str, title: str) -> None:  # type: ignore[no-untyped-def]
    """Print a query result as an aligned text table."""
    frame = spark.sql(sql)
    header = frame.columns
    rows = [["NULL" if v is None else str(v) for v in row] for row in frame.collect()]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]
    print(f"\n{title}")
    print("  " + "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("  " + "  ".join("-" * w for w in widths))
    for row in rows:
        print("  " + "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))


def main() -> None:
    from dbt.adapters.fastrefresh.embedded import start_session

    started = time.monotonic()
    # A fresh state each time, so the demo always tells the same story.
    shutil.rmtree(HERE / ".fastrefresh", ignore_errors=True)
    banner("Starting the embedded Spark (Iceberg catalog, local warehouse)")
    spark = start_session(HERE / ".fastrefresh")
    print(f"Spark {spark.version} is up; dbt runs in this process and reuses it.")

    banner("Installing the fast_refresh package")
    dbt("deps")
    dbt("run-operation", "fast_refresh.doctor")

    banner("Creating the master tables shop.customers and shop.orders")
    dbt("run-operation", "create_demo_masters")

    banner("Building the models")
    dbt("run")

    banner("The result")
    show(spark, "select * from analytics.status_summary order by status", "status_summary")
    show(
        spark,
        "select * from analytics.customer_revenue order by revenue desc limit 5",
        "customer_revenue (top 5 by revenue)",
    )
    show(spark, "select count(*) as open_orders from analytics.open_orders", "open_orders")
    print(f"\nDemo finished in {time.monotonic() - started:.1f}s.")


if __name__ == "__main__":
    main()
