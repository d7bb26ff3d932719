"""Statements and commits per refresh: what the bookkeeping of one refresh costs, counted.

Builds a keyed master (``--rows`` rows) with its log, a dimension with its log, and three
views over them (aggregate, projection, join); then, on each metadata path (Java API and
SQL only), counts for one refresh of each view the Spark statements it ran and the Iceberg
commits it made to each table (metadata versions, so property-only commits count too):
with no change pending, and after one UPDATE of 1% of the master; and the first build of
each view (a complete refresh that creates its storage table and its view). Then the end of
the invocation (``registry.publish``: the deferred purge and the registry append).

Usage: .venv/bin/python benchmarks/counts.py [--rows 100000] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def views(schema: str) -> dict[str, str]:
    return {
        "agg_v": f"SELECT g, count(*) AS n, sum(x) AS sx FROM {schema}.m GROUP BY g",
        "proj_v": f"SELECT k, g, x FROM {schema}.m WHERE g < 500",
        "join_v": f"SELECT m.k, m.x, d.name FROM {schema}.m JOIN {schema}.d ON m.g = d.g",
    }


class Counter:
    """Spark statements (the executor's record) and Iceberg metadata versions per table."""

    def __init__(self, spark: Any, env: Any, tables: list[str]) -> None:
        self.spark, self.env, self.tables = spark, env, tables

    def versions(self) -> dict[str, int]:
        """Each table's metadata versions; 0 for a table not created yet (a first build's
        storage table: all its versions are then the build's)."""
        existing = {
            f"{ns}.{name}"
            for ns in {t.split(".")[0] for t in self.tables}
            for _, name, *_ in self.spark.sql(f"SHOW TABLES IN {ns}").collect()
        }
        out = {}
        for t in self.tables:
            out[t] = (
                int(self.spark.sql(f"SELECT count(*) FROM {t}.metadata_log_entries").first()[0])
                if t in existing
                else 0
            )
        return out

    def measure(self, fn: Any) -> tuple[int, dict[str, int], float, Any]:
        before_v = self.versions()
        before_s = len(self.env.sql.statements)
        started = time.perf_counter()
        result = fn()
        took = time.perf_counter() - started
        statements = len(self.env.sql.statements) - before_s
        after_v = self.versions()
        commits = {t: after_v[t] - before_v[t] for t in self.tables if after_v[t] != before_v[t]}
        return statements, commits, took, result


def run(spark: Any, rows: int, path: str, schema: str) -> list[dict[str, Any]]:
    from dbt.adapters.fastrefresh.engine import refresh
    from dbt.adapters.fastrefresh.mlog import ddl as mlog
    from dbt.adapters.fastrefresh.protocol.env import Env
    from dbt.adapters.fastrefresh.registry import store as registry
    from dbt.adapters.fastrefresh.sqltext import TableName

    # A fresh schema per run, so that no state of an earlier run is read.
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(f"CREATE TABLE {schema}.m (k BIGINT NOT NULL, g INT, x INT) USING iceberg")
    spark.sql(f"ALTER TABLE {schema}.m SET IDENTIFIER FIELDS k")
    spark.sql(f"INSERT INTO {schema}.m SELECT id, CAST(id % 1000 AS INT), 1 FROM range({rows})")
    spark.sql(f"CREATE TABLE {schema}.d (g INT NOT NULL, name STRING) USING iceberg")
    spark.sql(f"ALTER TABLE {schema}.d SET IDENTIFIER FIELDS g")
    spark.sql(f"INSERT INTO {schema}.d SELECT CAST(id AS INT), concat('g', id) FROM range(1000)")
    env = Env.for_spark(spark, f"{schema}_registry", java=path == "java")
    mlog.create_mview_log(env, f"{schema}.m")
    mlog.create_mview_log(env, f"{schema}.d")
    registry.publish(env)  # the registry's table, so that the builds are counted alone
    tables = [f"{schema}.m", f"{schema}.mlog__m", f"{schema}.d", f"{schema}.mlog__d"]
    # A view's rows and state are in its storage table (its name is a Spark view).
    tables += [f"{schema}.{v}__fr_data" for v in views(schema)]
    tables += [f"{schema}_registry.registry"]
    counter = Counter(spark, env, tables)
    out: list[dict[str, Any]] = []

    def refresh_all(case: str, *, exists: bool = True) -> None:
        for name, sql in views(schema).items():

            def once(name: str = name, sql: str = sql) -> Any:
                return refresh.refresh_view(
                    env, view=TableName(schema, name), sql=sql, method="force", exists=exists
                )

            statements, commits, took, result = counter.measure(once)
            out.append(
                {"path": path, "case": case, "step": f"refresh {name}",
                 "type": result.refresh_type, "statements": statements, "commits": commits,
                 "seconds": took}
            )  # fmt: skip

    refresh_all("first build", exists=False)
    statements, commits, took, _ = counter.measure(lambda: registry.publish(env))
    out.append({"path": path, "case": "first build", "step": "publish", "type": "",
                "statements": statements, "commits": commits, "seconds": took})  # fmt: skip
    refresh_all("no change")
    statements, commits, took, _ = counter.measure(lambda: registry.publish(env))
    out.append({"path": path, "case": "no change", "step": "publish", "type": "",
                "statements": statements, "commits": commits, "seconds": took})  # fmt: skip
    spark.sql(f"UPDATE {schema}.m SET x = x + 1 WHERE k % 100 = 7")
    refresh_all("1% of the master updated")
    statements, commits, took, _ = counter.measure(lambda: registry.publish(env))
    out.append({"path": path, "case": "1% of the master updated", "step": "publish", "type": "",
                "statements": statements, "commits": commits, "seconds": took})  # fmt: skip
    return out


def report(rows: list[dict[str, Any]], n: int) -> str:
    lines = [
        "# Statements and commits per refresh",
        "",
        f"`benchmarks/counts.py --rows {n}`: one refresh of each view, counted (a commit is a",
        "new metadata version of a table: data commits and property-only commits alike).",
        "Seconds are from this run, warm but single (the benchmark harness times properly).",
        "",
        "| path | case | step | type | statements | commits | s |",
        "|---|---|---|---|---:|---|---:|",
    ]
    for r in rows:
        commits = ", ".join(f"{t.split('.')[-1]} {c}" for t, c in r["commits"].items()) or "0"
        lines.append(
            f"| {r['path']} | {r['case']} | {r['step']} | {r['type']} | {r['statements']} "
            f"| {commits} | {r['seconds']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "micro")
    args = parser.parse_args()
    from dbt.adapters.fastrefresh.runtime.embedded import start_session

    with tempfile.TemporaryDirectory() as tmp:
        spark = start_session(Path(tmp) / "state")
        spark.sparkContext.setLogLevel("ERROR")
        rows: list[dict[str, Any]] = []
        for path in ("java", "sql"):
            run(spark, args.rows, path, f"warm_{path}")  # compiles the code paths once
            rows += run(spark, args.rows, path, f"counts_{path}")
        spark.stop()
    text = report(rows, args.rows)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "counts.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
