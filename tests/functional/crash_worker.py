"""A separate process for the crash tests: phases run in a JVM of their own on one state dir.

Usage: python crash_worker.py STATE_DIR PATH PHASE[,PHASE...]   (PATH: java or sql; prints
one JSON line with what it saw). DBT_FASTREFRESH_FAULT kills the process at the named point,
armed for the last phase only: a preparation and the phase killed after it share a process
(a JVM start fewer), the recovery always starts a fresh one.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from dbt.adapters.fastrefresh.engine import refresh
from dbt.adapters.fastrefresh.mlog import capture
from dbt.adapters.fastrefresh.mlog import ddl as mlog
from dbt.adapters.fastrefresh.protocol.env import Env
from dbt.adapters.fastrefresh.runtime import faults
from dbt.adapters.fastrefresh.runtime.embedded import start_session
from dbt.adapters.fastrefresh.sqltext import TableName

MASTER = TableName("crash", "m")
VIEW = TableName("crash", "v")
VIEW_SQL = "SELECT v, count(*) AS n, sum(k) AS sk FROM crash.m GROUP BY v"
JOIN_VIEW = TableName("crash", "jv")
JOIN_SQL = "SELECT a.k, a.v, b.w, a.d FROM crash.a a JOIN crash.b b ON a.d = b.d"


def refresh_of(env: Env, view: TableName, sql: str, method: str = "force") -> Any:
    return refresh.refresh_view(env, view=view, sql=sql, method=method, exists=True)


def outcome(spark: Any, env: Env, result: Any, view: TableName, sql: str) -> dict[str, Any]:
    rows = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM ({sql})").collect())
    cols = ", ".join(spark.sql(sql).columns)
    stored = sorted(tuple(r) for r in spark.sql(f"SELECT {cols} FROM {view.sql}").collect())
    return {
        "refresh": result.refresh_type,
        "reason": str(result.reason or ""),
        "matches": rows == stored,
        "rows": len(stored),
    }


def log_rows(spark: Any) -> list[list[Any]]:
    return [
        list(r)
        for r in spark.sql(
            "SELECT k, v, dmltype__, old_new__, sequence__ FROM crash.mlog__m ORDER BY sequence__"
        ).collect()
    ]


def main(state_dir: str, path: str, phases: str) -> None:
    fault = os.environ.pop(faults.VARIABLE, None)
    spark = start_session(state_dir)
    env = Env.for_spark(spark, "crash_registry", java=path == "java")
    seen: dict[str, Any] = {}
    names = phases.split(",")
    for i, phase in enumerate(names):
        if fault and i == len(names) - 1:
            os.environ[faults.VARIABLE] = fault
        run_phase(spark, env, phase, seen)
    print(json.dumps(seen, default=str), flush=True)


def run_phase(spark: Any, env: Env, phase: str, seen: dict[str, Any]) -> None:
    sql = spark.sql
    if phase == "prepare":
        sql("CREATE SCHEMA crash")
        sql("CREATE TABLE crash.m (k BIGINT NOT NULL, v INT) USING iceberg")
        sql("ALTER TABLE crash.m SET IDENTIFIER FIELDS k")
        mlog.create_mview_log(env, MASTER, purge="synchronous")
        sql("INSERT INTO crash.m VALUES (1, 10), (2, 20)")
        refresh.refresh_view(env, view=VIEW, sql=VIEW_SQL, method="force", exists=False)
        sql("UPDATE crash.m SET v = 21 WHERE k = 2")
    elif phase == "capture":  # killed at the fault point the test names
        capture.capture(env, MASTER)
    elif phase == "mark":  # captured outside a refresh, then a refresh marks and dies
        capture.capture(env, MASTER)
        sql("INSERT INTO crash.m VALUES (3, 30)")
        refresh_of(env, VIEW, VIEW_SQL)
    elif phase == "refresh":  # killed in the refresh, at the fault point the test names
        refresh_of(env, VIEW, VIEW_SQL)
    elif phase == "recover":  # the next refresh after the crash, then one more change
        first = outcome(spark, env, refresh_of(env, VIEW, VIEW_SQL), VIEW, VIEW_SQL)
        seen["log_after_recovery"] = log_rows(spark)
        sql("INSERT INTO crash.m VALUES (4, 40)")
        sql("DELETE FROM crash.m WHERE k = 1")
        second = outcome(spark, env, refresh_of(env, VIEW, VIEW_SQL, "fast"), VIEW, VIEW_SQL)
        seen.update({"first": first, "second": second})
        stamps = sql(
            "SELECT max(snaptime__) FROM crash.mlog__m WHERE year(snaptime__) < 4000"
        ).collect()[0][0]
        seen["max_stamp"] = str(stamps)
    elif phase == "join_prepare":
        sql("CREATE SCHEMA crash")
        sql("CREATE TABLE crash.a (k BIGINT NOT NULL, v INT, d INT) USING iceberg")
        sql("CREATE TABLE crash.b (d INT NOT NULL, w STRING) USING iceberg")
        sql("INSERT INTO crash.a VALUES (1, 10, 1), (2, 20, 2), (3, 30, 1)")
        sql("INSERT INTO crash.b VALUES (1, 'x'), (2, 'y')")
        for master, key in (("a", ["k"]), ("b", ["d"])):
            mlog.create_mview_log(env, TableName("crash", master), key=key, purge="synchronous")
        sql("UPDATE crash.a SET v = 11 WHERE k = 1")
        sql("UPDATE crash.b SET w = 'z' WHERE d = 2")
    elif phase == "join_refresh":  # the first build, killed at the fault point
        refresh.refresh_view(env, view=JOIN_VIEW, sql=JOIN_SQL, method="force", exists=False)
    elif phase == "join_recover":
        first = outcome(spark, env, refresh_of(env, JOIN_VIEW, JOIN_SQL), JOIN_VIEW, JOIN_SQL)
        sql("DELETE FROM crash.a WHERE k = 3")
        sql("UPDATE crash.b SET w = 'q' WHERE d = 1")
        second = outcome(
            spark, env, refresh_of(env, JOIN_VIEW, JOIN_SQL, "fast"), JOIN_VIEW, JOIN_SQL
        )
        seen.update({"first": first, "second": second})
    else:
        raise ValueError(f"unknown phase {phase!r}")
    if not phase.startswith("join"):
        seen["log"] = log_rows(spark)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
