"""One process of the shared-catalog tests (tests/shared/): each role runs in a Python
process of its own, with its own Spark JVM, on the catalog of the project's profile.

    python -m tests.shared.worker <role> <project folder> [options]

Roles: ``setup`` (masters, first build), ``write`` (rounds of random DML on the masters),
``refresh`` (``dbt run`` over and over), ``hold`` (take a lease and keep it until killed),
``leases`` (the registry model of the leases), ``check`` (a last ``dbt run``, then every
invariant). Each prints a JSON report on a line of its own, after ``REPORT``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]  # PyYAML has no type hints

RAW = "shared_shop_raw"
TARGET = "shared_shop"
REGISTRY = "fast_refresh"
REGIONS = ("north", "south", "east", "west")
# Each model's query on the masters, recomputed to check the model.
QUERIES = {
    "customer_totals": f"SELECT customer_id, count(*) AS orders, sum(amount) AS revenue "
    f"FROM {RAW}.orders GROUP BY customer_id",
    "open_orders": f"SELECT order_id, customer_id, amount FROM {RAW}.orders WHERE status = 'open'",
    "order_regions": f"SELECT o.order_id, o.amount, c.region FROM {RAW}.orders o "
    f"JOIN {RAW}.customers c ON o.customer_id = c.customer_id",
    "region_revenue": f"SELECT c.region, count(*) AS orders, sum(o.amount) AS revenue "
    f"FROM {RAW}.orders o JOIN {RAW}.customers c ON o.customer_id = c.customer_id "
    "GROUP BY c.region",
}
LOGS = {"orders": f"{RAW}.mlog__orders", "customers": f"{RAW}.mlog__customers"}


def profile(project: Path) -> dict[str, Any]:
    data = yaml.safe_load((project / "profiles.yml").read_text())
    return dict(data["shared_shop"]["outputs"]["dev"])


def session(project: Path) -> Any:
    """This process's Spark, with exactly the profile's settings (dbt then reuses it)."""
    from dbt.adapters.fastrefresh.runtime.catalog import SharedCatalog
    from dbt.adapters.fastrefresh.runtime.embedded import start_session

    p = profile(project)
    return start_session(None, p.get("server_side_parameters"), SharedCatalog.parse(p["catalog"]))


def dbt(project: Path, *args: str) -> bool:
    from dbt.cli.main import dbtRunner

    # Each invocation its own target and log folders: the processes share the project.
    target = project / "target" / f"{args[0]}-{os.getpid()}-{time.time_ns()}"
    os.environ["DBT_TARGET_PATH"] = str(target)
    os.environ["DBT_LOG_PATH"] = str(target)
    result = dbtRunner().invoke(
        [*args, "--project-dir", str(project), "--profiles-dir", str(project)]
    )
    if result.exception is not None:
        print(f"dbt {' '.join(args)} failed: {result.exception}", flush=True)
    for r in getattr(result.result, "results", None) or ():
        UNCHANGED[0] += "FAST refresh" in str(r.message) and "no changes" in str(r.message)
    return bool(result.success)


# Refreshes that found nothing to apply: they take no lease (engine/refresh._unchanged).
UNCHANGED = [0]


def setup(project: Path, spark: Any) -> dict[str, Any]:
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {RAW}")
    spark.sql(
        f"CREATE TABLE {RAW}.orders (order_id BIGINT NOT NULL, customer_id BIGINT, "
        "status STRING, amount DECIMAL(12,2)) USING iceberg"
    )
    spark.sql(f"ALTER TABLE {RAW}.orders SET IDENTIFIER FIELDS order_id")
    spark.sql(
        f"CREATE TABLE {RAW}.customers (customer_id BIGINT NOT NULL, region STRING) USING iceberg"
    )
    spark.sql(f"ALTER TABLE {RAW}.customers SET IDENTIFIER FIELDS customer_id")
    spark.sql(
        f"INSERT INTO {RAW}.customers SELECT id, element_at(array{REGIONS}, "
        "CAST(id % 4 AS INT) + 1) FROM range(20)"
    )
    spark.sql(
        f"INSERT INTO {RAW}.orders SELECT id, id % 25, IF(id % 3 = 0, 'open', 'shipped'), "
        "CAST(id % 97 AS DECIMAL(12,2)) FROM range(200)"
    )
    return {"deps": dbt(project, "deps"), "run": dbt(project, "run")}


def write(spark: Any, rounds: int, seed: int, until: Path | None = None) -> dict[str, Any]:
    """Rounds of random DML on both masters, each statement its own commit: ``rounds`` of
    them, or, with ``until``, as many as run before that file appears (at most 500)."""
    rng = random.Random(seed)
    next_id = 1_000_000 + seed * 10_000
    statements = done = 0
    while (done < rounds) if until is None else (not until.exists() and done < 500):
        done += 1
        for _ in range(rng.randint(1, 3)):
            kind = rng.choice(["insert", "update", "delete", "move", "region", "customer"])
            k = rng.randrange(0, 220)
            if kind == "insert":
                values = ", ".join(
                    f"({next_id + i}, {rng.randrange(0, 25)}, "
                    f"'{rng.choice(['open', 'shipped'])}', {rng.randrange(1, 500)}.25)"
                    for i in range(rng.randint(1, 4))
                )
                next_id += 10
                sql = f"INSERT INTO {RAW}.orders VALUES {values}"
            elif kind == "update":
                sql = (
                    f"UPDATE {RAW}.orders SET amount = amount + {rng.randrange(1, 9)}, status = "
                    f"IF(status = 'open', 'shipped', 'open') WHERE order_id % 7 = {k % 7}"
                )
            elif kind == "delete":
                sql = f"DELETE FROM {RAW}.orders WHERE order_id % 50 = {k % 50}"
            elif kind == "move":
                sql = (
                    f"UPDATE {RAW}.orders SET customer_id = {rng.randrange(0, 25)} "
                    f"WHERE order_id % 11 = {k % 11}"
                )
            elif kind == "region":
                sql = (
                    f"UPDATE {RAW}.customers SET region = '{rng.choice(REGIONS)}' "
                    f"WHERE customer_id = {k % 25}"
                )
            else:
                sql = (
                    f"MERGE INTO {RAW}.customers t USING (SELECT {k % 25} AS customer_id, "
                    f"'{rng.choice(REGIONS)}' AS region) s ON t.customer_id = s.customer_id "
                    "WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT *"
                )
            spark.sql(sql)
            statements += 1
        time.sleep(rng.uniform(0.2, 1.0))
    return {"statements": statements, "rounds": done}


def refresh(project: Path, runs: int, select: str, threads: int) -> dict[str, Any]:
    from dbt.adapters.fastrefresh.runtime.process import RUNTIME

    failures, spans = [], []
    for i in range(runs):
        started = time.time()
        if not dbt(project, "run", "--select", select, "--threads", str(threads)):
            failures.append(i)
        spans.append((started, time.time()))
    lease = RUNTIME.leases
    return {
        "runs": runs, "failed_runs": failures, "spans": spans, "taken_over": lease.taken_over,
        "leases_taken": lease.taken, "leases_waited_for": lease.waited,
        "unchanged": UNCHANGED[0],
    }  # fmt: skip


def hold(spark: Any, name: str, host: str, ttl: float) -> None:
    """Take the lease ``name`` as a refresh would (``ttl``, as a process of ``host``: empty
    for this machine) and keep it, renewing it, until this process is killed."""
    from dbt.adapters.fastrefresh.protocol.env import Env
    from dbt.adapters.fastrefresh.runtime.leases import Leases, Me

    env = Env.for_spark(spark, REGISTRY, shared=True, lease_seconds=ttl)
    if host:
        env.runtime.leases = Leases(Me(host=host))
    with env.holding([name], purpose="a test holding it"):
        print("HELD", flush=True)
        time.sleep(3600)


def leases(spark: Any) -> dict[str, Any]:
    """The registry model of the leases, as a user would query it."""
    rows = spark.sql(f"SELECT * FROM {TARGET}.fast_refresh_leases").collect()
    return {"leases": [r.asDict() for r in rows]}


def check(project: Path, spark: Any) -> dict[str, Any]:
    """The last ``dbt run``, then the invariants (see tests/shared/test_processes.py)."""
    report: dict[str, Any] = {"final_run": dbt(project, "run", "--threads", "2")}
    report["differs"] = [
        name for name, sql in QUERIES.items()
        if not _equal(spark, f"SELECT {', '.join(spark.sql(sql).columns)} FROM {TARGET}.{name}", sql)
    ]  # fmt: skip
    runs = spark.sql(
        f"SELECT mview, refresh_type, reason, status, started FROM {REGISTRY}.refresh_runs "
        "ORDER BY started"
    ).collect()
    report["refreshes"] = len(runs)
    report["failed"] = [r.asDict() for r in runs if r.status != "SUCCESS"]
    first: set[str] = set()
    complete = []
    for r in runs:
        if r.mview in first and r.refresh_type != "FAST":
            complete.append(f"{r.mview}: {r.refresh_type} ({r.reason})")
        first.add(r.mview)
    report["complete_after_first"] = complete
    report["logs"] = {name: _log_report(spark, name, table) for name, table in LOGS.items()}
    report["leases_left"] = [
        r.asDict() for r in spark.sql(f"SELECT * FROM {REGISTRY}.leases").collect()
    ]
    return report


def _equal(spark: Any, stored: str, query: str) -> bool:
    a, b = spark.sql(stored), spark.sql(query)
    return bool(a.exceptAll(b).unionAll(b.exceptAll(a)).isEmpty())


def _log_report(spark: Any, master: str, table: str) -> dict[str, Any]:
    """What the log and its history say: captures contiguous, stamps increasing, the
    master captured to its last commit, every consumed row purged."""
    captures = spark.sql(
        f"SELECT first_sequence, last_sequence FROM {REGISTRY}.capture_runs "
        f"WHERE log_table = '{table}' ORDER BY first_sequence"
    ).collect()
    gaps, expected = [], 1
    for c in captures:
        if c.first_sequence != expected:
            gaps.append((expected, c.first_sequence))
        expected = c.last_sequence + 1
    states = [
        json.loads(r[0]) for r in spark.sql(
            f"SELECT summary['fast_refresh.log-state'] FROM {table}.snapshots "
            "WHERE summary['fast_refresh.log-state'] IS NOT NULL ORDER BY committed_at"
        ).collect()
    ]  # fmt: skip
    youngest = [s["youngest"] for s in states]
    # A capture inside a refresh appends its rows stamped with that refresh's time (the
    # state's youngest, marked_sequence -1 until loaded). A capture of many commits does
    # it in several appends (COMMITS_PER_APPEND each), all with its stamp and its
    # captured_at: those count as one capture, and the stamps of captures must increase.
    appends = [(s["captured_at"], s["youngest"]) for s in states
               if s.get("sequence_base") is not None and s.get("marked_sequence") == -1]  # fmt: skip
    stamped = [b for a, b in zip([None, *appends], appends, strict=False) if a != b]
    rows = spark.sql(f"SELECT count(*) FROM {table}").collect()[0][0]
    master_current = spark.sql(
        f"SELECT snapshot_id FROM {RAW}.{master}.snapshots ORDER BY committed_at DESC LIMIT 1"
    ).collect()[0][0]
    return {
        "captures": len(captures),
        "captured_rows": expected - 1,
        "gaps_or_overlaps": gaps,
        "youngest_never_decreases": youngest == sorted(youngest),
        "stamped_captures": len(stamped),
        "stamps_strictly_increase": all(a[1] < b[1] for a, b in itertools.pairwise(stamped)),
        "stamps": [stamp for _, stamp in stamped],
        "stamp_commits": len(states),
        "rows_left": int(rows),
        "captured_through_master": (states[-1]["captured_through"] if states else None)
        == master_current,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("role", choices=["setup", "write", "refresh", "hold", "leases", "check"])
    parser.add_argument("project", type=Path)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--until", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--select", default="*")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--name", default="")
    parser.add_argument("--host", default="")
    parser.add_argument("--ttl", type=float, default=60)
    args = parser.parse_args()
    spark = session(args.project)
    if args.role == "setup":
        out = setup(args.project, spark)
    elif args.role == "write":
        out = write(spark, args.rounds, args.seed, args.until)
    elif args.role == "refresh":
        out = refresh(args.project, args.runs, args.select, args.threads)
    elif args.role == "hold":
        hold(spark, args.name, args.host, args.ttl)
        return
    elif args.role == "leases":
        out = leases(spark)
    else:
        out = check(args.project, spark)
    print("REPORT " + json.dumps(out, default=str), flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
