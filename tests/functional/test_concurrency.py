"""Many threads refreshing views on one log in one process lose no commit.

The embedded catalog does no commit locking (two threads committing to one Iceberg table
can silently lose a commit), so every write to a log runs under that log's lock in the
process (``runtime.Runtime.holding``). Here six threads refresh six views on one log at
once, round after round, while capture runs inside each refresh, on both paths.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any

import pytest

from dbt.adapters.fastrefresh.engine import refresh
from dbt.adapters.fastrefresh.mlog import capture
from dbt.adapters.fastrefresh.mlog import ddl as mlog
from dbt.adapters.fastrefresh.mlog.consumers import read_view_state
from dbt.adapters.fastrefresh.protocol.env import Env
from dbt.adapters.fastrefresh.registry import store as registry
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.functional.sites import (
    SHARED,
    env_for,
    keyed_master_with_log,
    matches,
    refresh_and_check,
)

VIEWS = [f"v{i}" for i in range(6)]
ROUNDS = 2


@pytest.mark.parametrize("path", ["java", "sql"])
def test_parallel_refreshes_on_one_log_lose_nothing(spark: Any, path: str) -> None:
    schema = f"conc_{path}"
    env = env_for(spark, f"{schema}_registry", path)
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(f"CREATE TABLE {schema}.m (k BIGINT NOT NULL, v INT) USING iceberg")
    spark.sql(f"ALTER TABLE {schema}.m SET IDENTIFIER FIELDS k")
    mlog.create_mview_log(env, f"{schema}.m", purge="synchronous")
    master = TableName(schema, "m")
    log_table = TableName(schema, "mlog__m")
    sqls = {v: f"SELECT k, v FROM {schema}.m WHERE v > {i - 3}" for i, v in enumerate(VIEWS)}
    # A laggard holds the log's rows until the end, so their stamps can be checked.
    sqls["laggard"] = f"SELECT k FROM {schema}.m"
    for view in [*VIEWS, "laggard"]:
        refresh.refresh_view(
            env, view=TableName(schema, view), sql=sqls[view], method="force", exists=False
        )
    times: dict[str, list[Any]] = {v: [] for v in VIEWS}

    def run(view: str) -> Any:
        name = TableName(schema, view)
        result = refresh.refresh_view(env, view=name, sql=sqls[view], method="fast", exists=True)
        state = read_view_state(env, name)
        assert state is not None
        return result, state.positions[str(log_table)]

    with concurrent.futures.ThreadPoolExecutor(max_workers=len(VIEWS)) as pool:
        for round_ in range(ROUNDS):
            spark.sql(
                f"INSERT INTO {schema}.m VALUES ({round_ * 10 + 1}, 1), ({round_ * 10 + 2}, 2)"
            )
            spark.sql(f"UPDATE {schema}.m SET v = v + 1 WHERE k = {round_ * 10 + 1}")
            for view, (result, position) in zip(VIEWS, pool.map(run, VIEWS), strict=True):
                assert result.refresh_type == "FAST", (view, str(result.reason))
                times[view].append(position)

    all_times = [p.last_refresh for ps in times.values() for p in ps]
    assert len(set(all_times)) == len(all_times), "every refresh got its own time"
    log = mlog.load_log(env, master)
    assert log is not None
    assert set(log.state.users) == {f"{schema}.{v}" for v in [*VIEWS, "laggard"]}, (
        "no registration lost"
    )
    # Each round: 2 inserts + one update as old and new image = 4 log rows, each once.
    assert log.state.last_sequence == 4 * ROUNDS
    for view in VIEWS:
        assert matches(spark, TableName(schema, view), sqls[view]), view
        assert times[view][-1].last_sequence == 4 * ROUNDS, f"{view} missed rows"
    stamps = [
        r[0] for r in spark.sql(
            f"SELECT snaptime__ FROM {schema}.mlog__m ORDER BY sequence__"
        ).collect()
    ]  # fmt: skip
    assert len(stamps) == 4 * ROUNDS
    assert stamps == sorted(stamps) and stamps[0] < stamps[-1], "stamps grow with the log"
    assert max(stamps) <= max(all_times)
    refresh.refresh_view(
        env, view=TableName(schema, "laggard"), sql=sqls["laggard"], method="fast", exists=True
    )
    registry.publish(env)
    captured = spark.sql(f"SELECT sum(log_rows) FROM {schema}_registry.capture_runs").collect()[0][
        0
    ]
    assert captured == 4 * ROUNDS, "no capture ran twice over the same commits"
    # Every view refreshed after the last round: everything was consumed and purged.
    assert spark.sql(f"SELECT count(*) FROM {schema}.mlog__m").collect()[0][0] == 0


@pytest.mark.parametrize(
    ("path", "shared"), sorted({("java", SHARED), ("sql", SHARED), ("sql", True)})
)
def test_a_capture_between_a_refreshs_read_of_its_master_and_its_setup_loses_no_history(
    spark: Any, path: str, shared: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another thread's refresh captures a newer commit of the master after this refresh
    read the master and before it took the log's lock (dbt --threads, a source written
    meanwhile; on a shared catalog, another process before this one took the log's
    lease). The log is then past the master as read: the setup reads the master again
    instead of taking the log's position for a rolled-back table (which started a new
    epoch, and every view on the log rebuilt). On a shared catalog the refresh holds the
    log's lease in its setup (its first read found a commit to capture) and reads the
    master again only where capture finds the log past it, as here."""
    s = f"conc_race_{path}" + ("_shared" if shared and not SHARED else "")
    env = keyed_master_with_log(spark, s, rows=10, groups=3, path=path)
    if shared:
        env = Env.for_spark(spark, f"{s}_registry", java=path == "java", shared=True)
    master = TableName(s, "m")
    sql = f"SELECT g, count(*) AS n, sum(x) AS sx FROM {s}.m GROUP BY g"
    v1, v2 = TableName(s, "v1"), TableName(s, "v2")
    refresh_and_check(spark, env, v1, sql, exists=False, expect="COMPLETE")
    refresh_and_check(spark, env, v2, sql, exists=False, expect="COMPLETE")
    spark.sql(f"INSERT INTO {s}.m VALUES (100, 1, 1)")  # not captured yet
    original, interleaved = refresh.load_masters, list[tuple[int, int]]()
    statements = env.sql.statements  # type: ignore[attr-defined]

    def read_then_another_thread(*args: Any, **kwargs: Any) -> Any:
        loaded = original(*args, **kwargs)  # this refresh has read the master
        if not interleaved:
            start = len(statements)
            spark.sql(f"INSERT INTO {s}.m VALUES (101, 2, 1)")
            capture.capture(env, master)  # as another thread's setup would
            interleaved.append((start, len(statements)))
        return loaded

    monkeypatch.setattr(refresh, "load_masters", read_then_another_thread)
    before = len(statements)
    result = refresh.refresh_view(env, view=v2, sql=sql, method="fast", exists=True)
    monkeypatch.setattr(refresh, "load_masters", original)
    assert interleaved and result.refresh_type == "FAST", result.reason
    if path == "sql" and shared:  # the probe's read, then the setup's, after the gap
        ((start, end),) = interleaved
        own = statements[before:start] + statements[end:]
        assert own.count(f"DESCRIBE TABLE EXTENDED `{s}`.`m`") == 2, own
    assert matches(spark, v2, sql)
    log = mlog.load_log(env, master, columns=False)
    assert log is not None
    assert log.state.epoch == 1, log.state  # as created: no history lost
    assert log.state.younger_reason == "log created", log.state.younger_reason
    refresh_and_check(spark, env, v1, sql, exists=True, expect="FAST")
