"""Many threads refreshing views on one log in one process lose no commit.

The embedded catalog does no commit locking (two threads committing to one Iceberg table
can silently lose a commit), so every write to a log or registry table runs under that
table's lock. Here six threads refresh six views on one log at once, round after round,
while capture runs inside each refresh.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any

from dbt.adapters.fastrefresh import logs, logsite
from dbt.adapters.fastrefresh.clock import utcnow
from dbt.adapters.fastrefresh.executor import SparkExecutor
from dbt.adapters.fastrefresh.registry import Registry
from dbt.adapters.fastrefresh.sqltext import TableName

VIEWS = [f"v{i}" for i in range(6)]
ROUNDS = 2


def test_parallel_refreshes_on_one_log_lose_nothing(spark: Any) -> None:
    x = SparkExecutor(spark)
    registry = Registry(x, "conc_registry")
    spark.sql("CREATE SCHEMA conc")
    spark.sql("CREATE TABLE conc.m (k BIGINT NOT NULL, v INT) USING iceberg")
    spark.sql("ALTER TABLE conc.m SET IDENTIFIER FIELDS k")
    logs.create_mview_log(x, registry, "conc.m", None, False, None, utcnow)
    master = TableName("conc", "m")
    times: dict[str, list[Any]] = {v: [] for v in VIEWS}

    def refresh(view: str) -> Any:
        done = logsite.setup(x, registry, master, TableName("conc", view), utcnow)
        logsite.wrap_up(x, registry, done)
        return done

    with concurrent.futures.ThreadPoolExecutor(max_workers=len(VIEWS)) as pool:
        for round_ in range(ROUNDS):
            spark.sql(f"INSERT INTO conc.m VALUES ({round_ * 10 + 1}, 1), ({round_ * 10 + 2}, 2)")
            spark.sql(f"UPDATE conc.m SET v = v + 1 WHERE k = {round_ * 10 + 1}")
            for view, done in zip(VIEWS, pool.map(refresh, VIEWS), strict=True):
                times[view].append(done)

    all_times = [d.now for ds in times.values() for d in ds]
    assert len(set(all_times)) == len(all_times), "every refresh got its own time"
    users = {u.mview.table: u for u in registry.log_users(TableName("conc", "mlog__m"))}
    assert set(users) == set(VIEWS), "no registration was lost"
    for view, done in times.items():
        assert users[view].last_refresh == done[-1].now, f"{view}'s last refresh was lost"
    log = registry.log_for_master(master)
    assert log is not None
    # Each round: 2 inserts + one update as old and new image = 4 log rows, each once.
    assert log.last_sequence == 4 * ROUNDS
    captured = spark.sql("SELECT sum(log_rows) FROM conc_registry.capture_runs").collect()[0][0]
    assert captured == 4 * ROUNDS, "no capture ran twice over the same commits"
    assert log.youngest == max(all_times), "youngest is the latest refresh time"
    # Every view refreshed after the last round: everything was consumed and purged.
    assert spark.sql("SELECT count(*) FROM conc.mlog__m").collect()[0][0] == 0
    assert len(spark.sql("SELECT * FROM conc_registry.mview_logs").collect()) == 1
