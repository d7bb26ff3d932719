"""A separate process for the crash tests: each phase runs in its own JVM on one state dir.

Usage: python crash_worker.py STATE_DIR PHASE   (prints one JSON line with what it saw)
"""

from __future__ import annotations

import json
import sys

from dbt.adapters.fastrefresh import capture, logs, logsite, refresh
from dbt.adapters.fastrefresh.clock import utcnow
from dbt.adapters.fastrefresh.embedded import start_session
from dbt.adapters.fastrefresh.executor import SparkExecutor
from dbt.adapters.fastrefresh.registry import Registry
from dbt.adapters.fastrefresh.sqltext import TableName

MASTER = TableName("crash", "m")
VIEW = TableName("crash", "v")
JOIN_VIEW = TableName("crash", "jv")
JOIN_SQL = "SELECT a.k, a.v, b.w, a.d FROM crash.a a JOIN crash.b b ON a.d = b.d"


def join_phase(spark: object, x: SparkExecutor, registry: Registry, phase: str) -> None:
    """A view joining two logged masters: its refresh's wrap-up writes both logs."""
    sql = spark.sql  # type: ignore[attr-defined]
    if phase == "join_prepare":
        sql("CREATE SCHEMA crash")
        sql("CREATE TABLE crash.a (k BIGINT NOT NULL, v INT, d INT) USING iceberg")
        sql("CREATE TABLE crash.b (d INT NOT NULL, w STRING) USING iceberg")
        sql("INSERT INTO crash.a VALUES (1, 10, 1), (2, 20, 2), (3, 30, 1)")
        sql("INSERT INTO crash.b VALUES (1, 'x'), (2, 'y')")
        logs.create_mview_log(x, registry, TableName("crash", "a"), None, False, ["k"], utcnow)
        logs.create_mview_log(x, registry, TableName("crash", "b"), None, False, ["d"], utcnow)
        refresh.refresh_view(x, registry, JOIN_VIEW, JOIN_SQL, "fast", False, False, "", utcnow)
        return
    if phase == "join_refresh":  # killed at the fault point the test names
        sql("UPDATE crash.a SET v = 11 WHERE k = 1")
        sql("UPDATE crash.b SET w = 'z' WHERE d = 2")
    else:  # join_recover: the next refresh after the crash, then one more change
        sql("INSERT INTO crash.a VALUES (4, 40, 2)")
    result = refresh.refresh_view(
        x, registry, JOIN_VIEW, JOIN_SQL, "force", False, True, "", utcnow
    )
    first = {"refresh": result.refresh_type, "reason": result.reason or ""}
    sql("DELETE FROM crash.a WHERE k = 3")
    sql("UPDATE crash.b SET w = 'q' WHERE d = 1")
    second = refresh.refresh_view(
        x, registry, JOIN_VIEW, JOIN_SQL, "force", False, True, "", utcnow
    )
    view = sorted(tuple(r) for r in sql("SELECT k, v, w, d FROM crash.jv").collect())
    truth = sorted(tuple(r) for r in sql(f"SELECT k, v, w, d FROM ({JOIN_SQL})").collect())
    print(
        json.dumps(
            {**first, "second": second.refresh_type, "matches": view == truth, "rows": len(view)}
        ),
        flush=True,
    )


def main(state_dir: str, phase: str) -> None:
    spark = start_session(state_dir)
    x = SparkExecutor(spark)
    registry = Registry(x, "crash_registry")
    if phase.startswith("join_"):
        join_phase(spark, x, registry, phase)
        return
    if phase == "prepare":
        spark.sql("CREATE SCHEMA crash")
        spark.sql("CREATE TABLE crash.m (k BIGINT NOT NULL, v INT) USING iceberg")
        spark.sql("ALTER TABLE crash.m SET IDENTIFIER FIELDS k")
        logs.create_mview_log(x, registry, MASTER, None, False, None, utcnow)
        spark.sql("INSERT INTO crash.m VALUES (1, 10), (2, 20)")
        spark.sql("UPDATE crash.m SET v = 21 WHERE k = 2")
    elif phase == "setup":
        # A refresh's setup captures with its registry write deferred to the wrap-up;
        # this process ends before any wrap-up, as a crashed refresh would.
        logsite.setup(x, registry, MASTER, VIEW, utcnow)
    elif phase in ("capture", "mark"):
        # DBT_FASTREFRESH_FAULT kills this process at the named point.
        if phase == "capture":
            capture.capture(x, registry, MASTER, utcnow)
        else:
            # Rows captured outside a refresh are appended unmarked; the next setup
            # stamps them (and appends newer commits already stamped).
            capture.capture(x, registry, MASTER, utcnow)
            spark.sql("INSERT INTO crash.m VALUES (3, 30)")
            logsite.setup(x, registry, MASTER, VIEW, utcnow)
    # What the registry table holds (this process may know more, not yet written).
    last_sequence, youngest = spark.sql(
        "SELECT last_sequence, youngest FROM crash_registry.mview_logs"
    ).collect()[0]
    before = {
        "registry_last_sequence": last_sequence,
        "rows_beyond_registry": spark.sql(
            f"SELECT count(*) FROM crash.mlog__m WHERE sequence__ > {last_sequence}"
        ).collect()[0][0],
        "youngest": str(youngest),
        "max_stamp": str(
            spark.sql(
                "SELECT max(snaptime__) FROM crash.mlog__m WHERE year(snaptime__) < 4000"
            ).collect()[0][0]
        ),
    }
    if phase.startswith("recover"):
        if phase == "recover_mark":
            before["setup_now"] = str(logsite.setup(x, registry, MASTER, VIEW, utcnow).now)
        else:
            capture.capture(x, registry, MASTER, utcnow)
    rows = spark.sql(
        "SELECT k, v, dmltype__, old_new__, sequence__ FROM crash.mlog__m ORDER BY sequence__"
    ).collect()
    print(json.dumps({**before, "log": [list(r) for r in rows]}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
