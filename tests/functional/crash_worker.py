"""A separate process for the crash tests: each phase runs in its own JVM on one state dir.

Usage: python crash_worker.py STATE_DIR PHASE   (prints one JSON line with what it saw)
"""

from __future__ import annotations

import json
import sys

from dbt.adapters.fastrefresh import capture, logs, logsite
from dbt.adapters.fastrefresh.clock import utcnow
from dbt.adapters.fastrefresh.embedded import start_session
from dbt.adapters.fastrefresh.executor import SparkExecutor
from dbt.adapters.fastrefresh.registry import Registry
from dbt.adapters.fastrefresh.sqltext import TableName

MASTER = TableName("crash", "m")
VIEW = TableName("crash", "v")


def main(state_dir: str, phase: str) -> None:
    spark = start_session(state_dir)
    x = SparkExecutor(spark)
    registry = Registry(x, "crash_registry")
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
