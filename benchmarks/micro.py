"""The bookkeeping micro-benchmark: what one operation costs on the embedded stack.

Re-measures the budget a refresh spends (issue 21's table): single Spark statements,
small Iceberg commits, metadata reads, and the same reads and commits through Iceberg's
Java API as dbt-fastrefresh's Java path makes them (``jvm.JvmTables``); then a lease taken
and given back on each path, as on a shared catalog. Each operation
runs ``--repeats`` times after two untimed warm-ups; the table shows the median and the
range in milliseconds. Results: ``benchmarks/results/micro/README.md``.

Usage: .venv/bin/python benchmarks/micro.py [--repeats 7] [--out DIR]
"""

from __future__ import annotations

import argparse
import datetime as dt
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

ROWS = 1_000_000


def measure(repeats: int, fn: Callable[[int], Any]) -> list[float]:
    for i in range(2):
        fn(-1 - i)
    out = []
    for i in range(repeats):
        started = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - started) * 1000)
    return out


def operations(spark: Any) -> list[tuple[str, str, Callable[[int], Any]]]:
    """(group, label, operation) in table order; each takes the repeat number."""
    from dbt.adapters.fastrefresh.iceberg.tables import latest_state
    from dbt.adapters.fastrefresh.protocol.env import Env
    from dbt.adapters.fastrefresh.protocol.state import LOG_STATE
    from dbt.adapters.fastrefresh.sqltext import TableName

    sql = spark.sql
    sql("CREATE SCHEMA micro")
    for mode in ("copy-on-write", "merge-on-read"):
        name = "cow" if mode == "copy-on-write" else "mor"
        props = ", ".join(f"'write.{o}.mode'='{mode}'" for o in ("update", "delete", "merge"))
        sql(
            f"CREATE TABLE micro.small_{name} (k BIGINT, v INT) USING iceberg TBLPROPERTIES ({props})"
        )
        sql(f"INSERT INTO micro.small_{name} SELECT id, 0 FROM range(20)")
    sql(
        "CREATE TABLE micro.big USING iceberg AS SELECT id AS k, id % 1000 AS g, "
        f"CAST(rand(7) * 100 AS INT) AS x FROM range({ROWS})"
    )
    env = Env.for_spark(spark, "micro_registry", java=True)
    tables = env.tables
    small = TableName("micro", "small_cow")

    def collect(statement: str) -> Callable[[int], Any]:
        return lambda i: sql(statement).collect()

    def java_state(i: int) -> Any:
        meta = tables.load(small)
        assert meta is not None
        return latest_state(meta, LOG_STATE, tables.history(small))

    def java_commit(i: int) -> None:
        tables.set_properties(small, {"micro.i": str(i)})

    def summary_insert(i: int) -> None:
        with tables.summary({"micro.state": str(i)}):
            sql(f"INSERT INTO micro.small_cow VALUES ({1000 + i}, {i})").collect()

    return [
        ("Spark SQL", "`select 1` collected", collect("SELECT 1")),
        ("Spark SQL", "`count(*)` of a 20-row Iceberg table", collect("SELECT count(*) FROM micro.small_cow")),
        ("Spark SQL", "read of a `.snapshots` metadata table", collect("SELECT * FROM micro.small_cow.snapshots")),
        ("Spark SQL", "`DESCRIBE TABLE EXTENDED`", collect("DESCRIBE TABLE EXTENDED micro.small_cow")),
        ("Spark SQL", "`SHOW TABLES`", collect("SHOW TABLES IN micro")),
        ("Spark SQL", "`SHOW TBLPROPERTIES`", collect("SHOW TBLPROPERTIES micro.small_cow")),
        ("commits", "`INSERT` of one row (an append commit)",
         lambda i: sql(f"INSERT INTO micro.small_mor VALUES ({100 + i}, {i})").collect()),
        ("commits", "`UPDATE` of one row, 20-row table, copy-on-write",
         lambda i: sql(f"UPDATE micro.small_cow SET v = {i} WHERE k = 3").collect()),
        ("commits", "`UPDATE` of one row, 20-row table, merge-on-read",
         lambda i: sql(f"UPDATE micro.small_mor SET v = {i} WHERE k = 3").collect()),
        ("commits", "`MERGE` of one row, 20-row table, copy-on-write",
         lambda i: sql(f"MERGE INTO micro.small_cow t USING (SELECT 4L AS k, {i} AS v) s "
                       "ON t.k = s.k WHEN MATCHED THEN UPDATE SET v = s.v").collect()),
        ("commits", "`ALTER TABLE ... SET TBLPROPERTIES` (metadata-only commit)",
         lambda i: sql(f"ALTER TABLE micro.small_cow SET TBLPROPERTIES ('micro.i'='{i}')").collect()),
        ("data", "aggregate scan of a 1M-row table",
         collect("SELECT g, count(*), sum(x) FROM micro.big GROUP BY g")),
        ("data", "`CREATE OR REPLACE TABLE ... AS` that aggregate",
         collect("CREATE OR REPLACE TABLE micro.agg USING iceberg AS SELECT g, count(*) AS c, "
                 "sum(x) AS s FROM micro.big GROUP BY g")),
        ("Java API", "table load + current snapshot (cached table)",
         lambda i: tables.load(small)),
        ("Java API", "table load, refreshed from the catalog",
         lambda i: tables.load(small, fresh=True)),
        ("Java API", "a log's state (load + newest state on its history)", java_state),
        ("Java API", "property commit (`updateProperties`)", java_commit),
        ("Java API", "`INSERT` of one row with state in its snapshot summary", summary_insert),
    ]  # fmt: skip


def lease_operations(spark: Any) -> list[tuple[str, str, Callable[[int], Any]]]:
    """A lease taken and given back as a refresh on a shared catalog does it, on each path
    (``iceberg/leases.py``): repeat i takes a lease of its own, then gives it back."""
    from dbt.adapters.fastrefresh.iceberg.leases import JavaLeaseStore, SqlLeaseStore
    from dbt.adapters.fastrefresh.runtime.clock import utcnow
    from dbt.adapters.fastrefresh.runtime.executor import SparkExecutor
    from dbt.adapters.fastrefresh.runtime.leases import Lease, LeaseStore, Me

    me, x = Me(), SparkExecutor(spark)
    stores: dict[str, LeaseStore] = {
        "sql": SqlLeaseStore(x, "micro_leases"),
        "java": JavaLeaseStore(spark, x, "micro_leases"),
    }

    def name(path: str, i: int) -> str:
        return f"view:micro.a_view_named_like_a_dbt_model_{path}_{i + 2}"

    def take(path: str) -> Callable[[int], Any]:
        def run(i: int) -> None:
            store, lease = stores[path], name(path, i)
            now = utcnow()
            mine = Lease(lease, me.holder, me.host, me.pid, now, now + dt.timedelta(minutes=1), "")
            version, _ = store.read([lease])
            assert store.swap(version, [lease], {lease: mine})
            taken[lease] = mine

        return run

    def give_back(path: str) -> Callable[[int], Any]:
        # As ``runtime/leases.Leases`` gives one back: as last written where the store
        # can, else read and swapped.
        def run(i: int) -> None:
            store, lease = stores[path], name(path, i)
            if not store.give_back({lease: taken.pop(lease)}):
                version, _ = store.read([lease])
                assert store.swap(version, [lease], {})

        return run

    taken: dict[str, Lease] = {}
    return [
        ("leases", "taken, SQL path (`REFRESH`, read, `MERGE`, read back)", take("sql")),
        ("leases", "given back, SQL path (metadata-only `DELETE`, read back)", give_back("sql")),
        ("leases", "taken, Java path (read, a Parquet file, validated commit)", take("java")),
        ("leases", "given back, Java path (read, validated commit)", give_back("java")),
    ]  # fmt: skip


def file_operations(spark: Any, folder: Path) -> list[tuple[str, str, Callable[[int], Any]]]:
    """One small file and its checksum file written through Hadoop's local file system,
    and through the session's (``NioLocalFileSystem`` on the embedded default): what each
    file of a commit costs beside its bytes."""
    jvm = spark._jvm
    fs = jvm.org.apache.hadoop.fs
    hadoops = fs.LocalFileSystem()
    hadoops.initialize(jvm.java.net.URI("file:///"), spark._jsc.hadoopConfiguration())
    session = fs.FileSystem.getLocal(spark._jsc.hadoopConfiguration())

    def write(system: Any, name: str) -> Callable[[int], Any]:
        def run(i: int) -> None:
            out = system.create(fs.Path(f"file://{folder}/{name}-{i}"), False)
            out.write(b"x")
            out.close()

        return run

    kind = session.getClass().getSimpleName()
    return [
        ("files", "a file written, Hadoop's `LocalFileSystem` (a `chmod` process each)",
         write(hadoops, "hadoop")),
        ("files", f"a file written, the session's `{kind}`", write(session, "session")),
    ]  # fmt: skip


def report(out: Path, results: list[tuple[str, str, list[float]]], minutes: float) -> None:
    lines = [
        "# Bookkeeping micro-benchmark",
        "",
        f"Measured {dt.date.today():%Y-%m-%d} with `make bench-micro` ({minutes:.1f} min) on "
        f"{machine()}. Warm session; each operation ran {len(results[0][2])} times after two "
        "untimed warm-ups. Milliseconds.",
        "",
        "| group | operation | median | min | max |",
        "|---|---|---:|---:|---:|",
    ]
    for group, label, values in results:
        lines.append(f"| {group} | {label} | {spread(values, 0)} |")
    out.mkdir(parents=True, exist_ok=True)
    (out / "README.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "micro")
    parser.add_argument(
        "--hadoop-local-fs",
        action="store_true",
        help="run the session on Hadoop's local file system, which starts a `chmod` process "
        "per file (the embedded default's before NioLocalFileSystem), to measure the change",
    )
    args = parser.parse_args()
    from dbt.adapters.fastrefresh.runtime.embedded import LOCAL_FS_KEY, start_session

    state = Path(tempfile.mkdtemp(prefix="fastrefresh-micro-"))
    started = time.perf_counter()
    try:
        user = (
            {LOCAL_FS_KEY: "org.apache.hadoop.fs.LocalFileSystem"} if args.hadoop_local_fs else {}
        )
        spark = start_session(state, user)
        spark.sparkContext.setLogLevel("ERROR")
        results = []
        files = file_operations(spark, state / "files")
        for group, label, fn in operations(spark) + lease_operations(spark) + files:
            values = measure(args.repeats, fn)
            results.append((group, label, values))
            print(f"{group:10} {label:62} {statistics.median(values):8.1f} ms", flush=True)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    report(args.out, results, (time.perf_counter() - started) / 60)
    print(f"results in {args.out}")


if __name__ == "__main__":
    main()
