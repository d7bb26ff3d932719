"""dbt-fastrefresh expires the old snapshots of its own tables (the registry and the logs)
every few commits, never those younger than ``upkeep.MIN_AGE`` nor the last
``upkeep.KEEP_LAST`` (so never the newest, whose summary holds a log's state), and the
refreshes that run across expiries stay fast and right."""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import random
from typing import Any

import pytest

from dbt.adapters.fastrefresh.engine import refresh
from dbt.adapters.fastrefresh.protocol import upkeep
from dbt.adapters.fastrefresh.registry import store as registry
from dbt.adapters.fastrefresh.runtime.clock import utcnow
from dbt.adapters.fastrefresh.runtime.process import Runtime
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.functional.sites import env_for, keyed_master_with_log, refresh_and_check

SCHEMA = "upkeep"
VIEWS = {"by_g": f"SELECT g, count(*) AS n, sum(x) AS sx FROM {SCHEMA}.m GROUP BY g"}


def _snapshots(spark: Any, table: str) -> int:
    return int(spark.sql(f"SELECT count(*) FROM {table}.snapshots").collect()[0][0])


def test_own_tables_keep_few_snapshots_and_refreshes_stay_right(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(upkeep, "EVERY", 3)
    monkeypatch.setattr(upkeep, "KEEP_LAST", 1)
    env = keyed_master_with_log(spark, SCHEMA, rows=50, groups=5, purge="synchronous")
    env = dataclasses.replace(env, runtime=Runtime())  # this test's commit counts alone
    own = [f"{SCHEMA}_registry.registry", f"{SCHEMA}.mlog__m"]

    def round_of_changes(i: int) -> None:
        spark.sql(f"INSERT INTO {SCHEMA}.m VALUES ({100 + i}, {i % 3}, {i})")
        spark.sql(f"UPDATE {SCHEMA}.m SET x = x + {i} WHERE k % 7 = {i % 7}")
        spark.sql(f"DELETE FROM {SCHEMA}.m WHERE k = {i * 3}")

    def refresh_all(first: bool) -> None:
        for name, sql in VIEWS.items():
            expect = "COMPLETE" if first else "FAST"
            refresh_and_check(
                spark, env, TableName(SCHEMA, name), sql, exists=not first, expect=expect
            )
        registry.publish(env)  # one registry commit per round

    # Young snapshots are never expired: with the default MIN_AGE (an hour) every
    # snapshot this test makes is kept, although expiries run.
    refresh_all(first=True)
    for i in range(1, 3):
        round_of_changes(i)
        refresh_all(first=False)
    runs = _snapshots(spark, f"{SCHEMA}_registry.registry")
    assert runs == 3, "one registry commit per publish, none expired while young"

    # With MIN_AGE zero, expiries keep the last KEEP_LAST, so no table of dbt-fastrefresh
    # holds more than KEEP_LAST + EVERY snapshots, however many commits it took.
    monkeypatch.setattr(upkeep, "MIN_AGE", dt.timedelta(0))
    for i in range(3, 9):
        round_of_changes(i)
        refresh_all(first=False)
    bound = upkeep.KEEP_LAST + upkeep.EVERY
    counts = {t: _snapshots(spark, t) for t in own}
    assert all(c <= bound for c in counts.values()), counts
    commits = spark.sql(f"SELECT count(*) FROM {SCHEMA}_registry.refresh_runs").collect()[0][0]
    assert commits == 9 > bound, "the history of every refresh is still there"


def test_processes_that_each_commit_less_than_a_cycle_still_expire_and_compact(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scheduled `dbt run` is a process of its own, with a few commits to each log and
    one publish. Each process counted from zero, so none ever reached a cycle's end:
    nothing of ours was ever expired or compacted, and every commit read and rewrote a
    metadata file one snapshot larger. Each process now starts each count at a random
    point of the cycle, and the tables are expired and compacted about once a cycle."""
    from tests.conftest import RANDOM_START

    monkeypatch.setattr(upkeep, "start", RANDOM_START)
    monkeypatch.setattr(upkeep, "_random", random.Random(20261207))
    monkeypatch.setattr(upkeep, "EVERY", 3)
    monkeypatch.setattr(upkeep, "KEEP_LAST", 1)
    monkeypatch.setattr(upkeep, "MIN_AGE", dt.timedelta(0))
    monkeypatch.setattr(registry, "COMPACT_EVERY", 3)
    schema = "upkeep_processes"
    env = keyed_master_with_log(spark, schema, rows=20, groups=4, purge="synchronous")
    view, sql = TableName(schema, "v"), f"SELECT g, count(*) AS n FROM {schema}.m GROUP BY g"
    refresh_and_check(spark, env, view, sql, exists=False, expect="COMPLETE")
    rounds = 12
    for i in range(rounds):
        env = dataclasses.replace(env, runtime=Runtime())  # a new process
        spark.sql(f"INSERT INTO {schema}.m VALUES ({100 + i}, {i % 4}, 1)")
        refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")
        registry.publish(env)
    # Each round committed to the log (its capture) and to the registry at least once.
    assert _snapshots(spark, f"{schema}.mlog__m") < rounds
    assert _snapshots(spark, f"{schema}_registry.registry") < rounds
    published = spark.sql(
        f"SELECT count(*) FROM {schema}_registry.registry WHERE kind = 'mview' AND name = '{view}'"
    ).collect()[0][0]
    assert published < rounds, "rows of the view that newer ones replaced were deleted"
    assert registry.select(env, "mviews", f"mview = '{view}'")[0]["last_refresh_type"] == "FAST"


def test_the_registry_keeps_history_days_of_runs_and_every_objects_state(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The registry's run history (``refresh_runs``, ``capture_runs``) grew for good: every
    read of those views scanned every run ever published. Its compaction deletes the runs
    published more than ``registry_history_days`` ago (365 by default; the profile's
    null keeps them all), in the same MERGE as the replaced state rows; a state row is
    never deleted for its age (the newest row of each object stays, however old)."""
    schema = "upkeep_history"
    env = keyed_master_with_log(spark, schema, rows=20, groups=4)
    reg = f"{schema}_registry"
    now = utcnow()
    v, w = TableName(schema, "v"), TableName(schema, "w")
    views = {
        v: f"SELECT g, count(*) AS n FROM {schema}.m GROUP BY g",
        w: f"SELECT k, x FROM {schema}.m WHERE g = 1",
    }
    built: set[TableName] = set()
    keys = itertools.count(1000)  # a new key each time: the log's key is unique

    def runs(days_ago: int, *chosen: TableName) -> None:
        """Changes, refreshes of ``chosen`` (its capture too), published ``days_ago``."""
        spark.sql(f"INSERT INTO {schema}.m VALUES ({next(keys)}, 1, 1)")
        for view in chosen:
            expect = "FAST" if view in built else "COMPLETE"
            refresh_and_check(spark, env, view, views[view], exists=view in built, expect=expect)
            built.add(view)
        published_at = now - dt.timedelta(days=days_ago)
        registry.publish(dataclasses.replace(env, clock=lambda: published_at))

    def history() -> list[tuple[str, int]]:
        """(kind, days ago) of every history row of the registry table."""
        rows = spark.sql(
            f"SELECT kind, recorded FROM {reg}.registry WHERE kind IN ('refresh_run', "
            "'capture_run')"
        ).collect()
        return sorted((r[0], (now - r[1] + dt.timedelta(hours=1)).days) for r in rows)

    monkeypatch.setattr(registry, "COMPACT_EVERY", 1000)  # no compaction yet
    runs(400, v, w)
    runs(366, v)
    runs(364, v, w)
    before = history()
    assert {days for _, days in before} == {400, 366, 364}
    assert ("capture_run", 366) in before, "a capture at 366 days, to go too"
    monkeypatch.setattr(registry, "COMPACT_EVERY", 1)  # every publish compacts
    runs(0, v)
    after = history()
    new = [r for r in after if r[1] == 0]
    assert new and after == sorted([r for r in before if r[1] <= 365] + new)
    # The state of both views stays, w's last published 364 days ago.
    assert {r["mview"] for r in registry.select(env, "mviews")} == {str(v), str(w)}
    assert len(registry.select(env, "mview_log_users")) == 2
    assert {r["mview"] for r in registry.select(env, "refresh_runs")} == {str(v), str(w)}
    # null keeps every run, however old.
    env = dataclasses.replace(env, history_days=None)
    runs(900, w)
    kept = history()
    assert ("refresh_run", 900) in kept
    runs(0, w)
    assert [r for r in history() if r[1] != 0] == [r for r in kept if r[1] != 0]


def test_a_compaction_leaves_the_registry_in_one_file_and_its_views_as_they_were(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each publish appends a file to the registry table, and the compaction's MERGE wrote
    the rows it kept into one file per task of its scan, beside the files it did not
    touch: a benchmark run left 184 files of 1,219 rows, and a read of a registry view
    took 0.66 s, 0.25 s from one file. The compaction now packs the table's files after
    its MERGE; every registry view reads the same rows from them."""
    monkeypatch.setattr(registry, "COMPACT_EVERY", 1000)  # no compaction while publishing
    schema = "upkeep_files"
    env = keyed_master_with_log(spark, schema, rows=20, groups=4)
    env = dataclasses.replace(env, runtime=Runtime())  # this test's counts alone
    reg = TableName(f"{schema}_registry", "registry")
    view, sql = TableName(schema, "v"), f"SELECT g, count(*) AS n FROM {schema}.m GROUP BY g"
    refresh_and_check(spark, env, view, sql, exists=False, expect="COMPLETE")
    registry.publish(env)
    for i in range(6):
        spark.sql(f"INSERT INTO {schema}.m VALUES ({100 + i}, {i % 4}, 1)")
        refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")
        registry.publish(env)

    def files() -> int:
        return int(spark.sql(f"SELECT count(*) FROM {reg.metadata('files')}").collect()[0][0])

    def published() -> dict[str, list[str]]:
        return {
            name: sorted(repr(sorted(row.items())) for row in registry.select(env, name))
            for name in ("mviews", "mview_logs", "mview_log_users", "refresh_runs",
                         "capture_runs")
        }  # fmt: skip

    before, rows_before = published(), spark.table(reg.sql).count()
    assert files() >= 7, "a file a publish"
    assert len(before["refresh_runs"]) == 7
    monkeypatch.setattr(registry, "COMPACT_EVERY", 1)
    registry._compact_when_due(env)
    assert files() == 1
    assert spark.table(reg.sql).count() < rows_before, "the replaced state rows went"
    assert published() == before


def test_an_expiry_keeps_the_young_and_the_last_snapshots(spark: Any) -> None:
    env = env_for(spark, f"{SCHEMA}_expiry_registry")
    table = TableName(f"{SCHEMA}_expiry", "t")
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {table.schema}")
    spark.sql(f"CREATE OR REPLACE TABLE {table.sql} (k INT) USING iceberg")
    for i in range(5):
        spark.sql(f"INSERT INTO {table.sql} VALUES ({i})")
    assert _snapshots(spark, table.sql) == 5
    # Every snapshot is younger than an hour ago: none may go.
    assert upkeep.expire(env.sql, table, utcnow() - dt.timedelta(hours=1), 2) is False
    assert _snapshots(spark, table.sql) == 5
    # All are old enough: all but the last two go, and the rows stay.
    assert upkeep.expire(env.sql, table, utcnow() + dt.timedelta(seconds=1), 2) is True
    assert _snapshots(spark, table.sql) == 2
    assert spark.sql(f"SELECT count(*) FROM {table.sql}").collect()[0][0] == 5
    # Nothing left to expire beyond the last two.
    assert upkeep.expire(env.sql, table, utcnow() + dt.timedelta(seconds=1), 2) is False


def test_a_failed_expiry_warns_and_does_not_raise(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    warnings: list[str] = []
    monkeypatch.setattr(upkeep.logger, "warning", warnings.append)
    env = env_for(spark, "upkeep_nowhere_registry")
    missing = TableName("upkeep_nowhere", "t")
    assert upkeep.expire(env.sql, missing, utcnow(), 1) is False
    assert len(warnings) == 1
    assert "could not expire old snapshots of upkeep_nowhere.t" in warnings[0]
    assert "Fix:" in warnings[0]


def test_a_failed_packing_of_the_registry_warns_and_does_not_raise(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    warnings: list[str] = []
    monkeypatch.setattr(registry.logger, "warning", warnings.append)
    env = env_for(spark, "upkeep_nowhere_registry")  # no such registry table
    registry._pack(env)
    assert len(warnings) == 1
    said = warnings[0]
    assert "could not pack the files of the registry table upkeep_nowhere_registry" in said
    assert "rewrite_data_files" in said and "Fix:" in said


@pytest.mark.parametrize("path", ["java", "sql"])
def test_a_log_compacted_and_expired_by_hand_never_applies_changes_twice(
    spark: Any, path: str
) -> None:
    """A platform's maintenance of every table of a schema: the log compacted, then its
    snapshots expired keeping the last alone, while it holds rows. On the Java path the
    log's state is in the summaries of its own commits, which went with the expiry; the
    state the log was created with was taken for it, and capture took every master commit
    since then again: the view applied them twice. Now the refresh stops and names the
    fix; the SQL path's state, a property naming its snapshot, survives it."""
    from dbt.adapters.fastrefresh.errors import FastRefreshError
    from dbt.adapters.fastrefresh.mlog import ddl as mlog

    schema = f"upkeep_lost_{path}"
    env = keyed_master_with_log(spark, schema, rows=40, groups=4, path=path)
    view, sql = (
        TableName(schema, "v"),
        f"SELECT g, count(*) AS n, sum(x) AS sx FROM {schema}.m GROUP BY g",
    )
    refresh_and_check(spark, env, view, sql, exists=False, expect="COMPLETE")
    spark.sql(f"UPDATE {schema}.m SET x = x + 1 WHERE k < 5")
    refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")  # rows in the log
    log = f"{schema}.mlog__m"
    spark.sql(
        f"CALL spark_catalog.system.rewrite_data_files(table => '{log}', "
        "options => map('rewrite-all', 'true'))"
    )
    spark.sql(
        f"CALL spark_catalog.system.expire_snapshots(table => '{log}', "
        "older_than => TIMESTAMP '2100-01-01 00:00:00', retain_last => 1)"
    )
    assert _snapshots(spark, log) == 1
    spark.sql(f"INSERT INTO {schema}.m VALUES (100, 1, 5)")
    if path == "sql":
        refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")
        return
    with pytest.raises(FastRefreshError, match=r"is gone.*drop_mview_log"):
        refresh.refresh_view(env, view=view, sql=sql, method="force", exists=True)
    # The fix it names: the log made again, the view rebuilt once, then fast again.
    mlog.drop_mview_log(env, f"{schema}.m")
    mlog.create_mview_log(env, f"{schema}.m")
    refresh_and_check(spark, env, view, sql, exists=True, expect="COMPLETE")
    spark.sql(f"DELETE FROM {schema}.m WHERE k = 7")
    refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")


@pytest.mark.parametrize("path", ["java", "sql"])
def test_a_log_reorganized_as_seed_001_shows_keeps_every_change(spark: Any, path: str) -> None:
    """Seed 001's reorganization of a log (its high-water mark lowered): its rows copied
    to a table of their own, the log truncated, the rows inserted again. No change is lost
    and none applied twice: a view behind (rows in the log for it alone) and one level
    with the log both refresh fast from it, and on after it."""
    from dbt.adapters.fastrefresh.mlog import capture

    schema = f"upkeep_reorg_{path}"
    env = keyed_master_with_log(spark, schema, rows=40, groups=4, path=path)
    views = {
        TableName(schema, "v"): f"SELECT g, count(*) AS n, sum(x) AS sx FROM {schema}.m GROUP BY g",
        TableName(schema, "w"): f"SELECT k, x FROM {schema}.m WHERE g = 1",
    }
    w, of_1 = TableName(schema, "w"), views[TableName(schema, "w")]
    for view, sql in views.items():
        refresh_and_check(spark, env, view, sql, exists=False, expect="COMPLETE")
    spark.sql(f"UPDATE {schema}.m SET x = x + 1 WHERE k < 6")
    spark.sql(f"DELETE FROM {schema}.m WHERE k = 9")
    refresh_and_check(spark, env, w, of_1, exists=True, expect="FAST")  # v is behind
    spark.sql(f"INSERT INTO {schema}.m VALUES (100, 1, 5), (101, 2, 6)")
    capture.capture(env, TableName(schema, "m"))
    log = f"{schema}.mlog__m"
    held = spark.sql(f"SELECT count(*) FROM {log}").collect()[0][0]
    assert held >= 8, held  # the update's images, the delete, the inserts
    spark.sql(f"CREATE TABLE {schema}.templog USING iceberg AS SELECT * FROM {log}")
    spark.sql(f"TRUNCATE TABLE {log}")
    spark.sql(f"INSERT INTO {log} SELECT * FROM {schema}.templog")
    spark.sql(f"DROP TABLE {schema}.templog")
    spark.sql(f"UPDATE {schema}.m SET x = 0 WHERE k IN (1, 13, 100)")
    for view, sql in views.items():
        result = refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")
        assert result.log_rows > 0, view
    spark.sql(f"DELETE FROM {schema}.m WHERE k IN (5, 101)")
    for view, sql in views.items():
        refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")
