"""A master changed by another Spark session than the refresh's.

Each Spark session has its own Iceberg catalog, which caches the tables it loaded: until
something refreshes it, a session answers `DESCRIBE` with the columns the table had when
it was cached, while `REFRESH TABLE` and a fresh load see the newest commit. Another dbt
process (or a loader) on the same catalog is such a session, and so is each of dbt's
connections to a Thrift server (one server session per connection). A refresh that read the
master's columns from the cache and its snapshot fresh took a schema change for none:
a view of `*` refreshed fast without the column added, unlike its query. A lease read
from the cache (SQL path, shared catalog) missed another session's swap, and the MERGE
built on it failed Iceberg's validation, a second lost before the lease was read again.
"""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

import pytest

from dbt.adapters.fastrefresh.engine import refresh
from dbt.adapters.fastrefresh.iceberg.leases import SqlLeaseStore
from dbt.adapters.fastrefresh.mlog.ddl import create_mview_log, drop_mview_log
from dbt.adapters.fastrefresh.protocol.decisions import ReasonCode
from dbt.adapters.fastrefresh.runtime.executor import SparkExecutor
from dbt.adapters.fastrefresh.runtime.leases import Lease
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.functional.sites import SHARED, env_for, keyed_master_with_log, refresh_and_check


@pytest.mark.parametrize("path", ["java", "sql"])
def test_a_column_added_by_another_session_is_seen_by_the_next_refresh(
    spark: Any, path: str
) -> None:
    s = f"other_session_{path}"
    env = keyed_master_with_log(spark, s, rows=2, groups=2, path=path)  # k 0 and 1
    star, total = TableName(s, "star"), TableName(s, "total")
    star_sql = f"SELECT * FROM {s}.m"
    total_sql = f"SELECT g, sum(x) AS sx, count(*) AS n FROM {s}.m GROUP BY g"
    refresh_and_check(spark, env, star, star_sql, exists=False, expect="COMPLETE")
    refresh_and_check(spark, env, total, total_sql, exists=False, expect="COMPLETE")
    spark.sql(f"INSERT INTO {s}.m VALUES (2, 0, 3)")
    refresh_and_check(spark, env, star, star_sql, exists=True, expect="FAST")

    # The other session: its own catalog, as another process on the same metastore.
    other = spark.newSession()
    other.sql(f"ALTER TABLE {s}.m ADD COLUMN y INT")
    other.sql(f"INSERT INTO {s}.m VALUES (3, 1, 4, 40)")
    # This session's catalog still has the table as it cached it (a shared catalog's, whose
    # cache is off, has the new column already).
    cached = [c.name for c in spark.table(f"{s}.m").schema]
    assert cached == (["k", "g", "x", "y"] if SHARED else ["k", "g", "x"])

    result = refresh_and_check(spark, env, star, star_sql, exists=True, expect="COMPLETE")
    assert result.reason is not None
    assert result.reason.code is ReasonCode.MASTER_COLUMNS_CHANGED, result.reason
    assert "new column(s) y" in result.reason.detail
    # A view that reads neither new column refreshes fast, the other session's row in it.
    refresh_and_check(spark, env, total, total_sql, exists=True, expect="FAST")
    assert sorted(spark.sql(f"SELECT k, y FROM {star.sql}").collect()) == [
        (0, None), (1, None), (2, None), (3, 40)
    ]  # fmt: skip


@pytest.mark.parametrize("path", ["java", "sql"])
def test_a_master_another_session_made_a_fast_refresh_view_is_read_as_that_view(
    spark: Any, path: str
) -> None:
    """This session's catalog has the master cached as an Iceberg table; another session
    (another dbt process) then switches that model to fast_refresh: its name is now a view
    over a storage table. Either path tells a table from a view by a fresh read that drops
    the cached table (the Java path's refresh of it fails; the SQL path's ``REFRESH TABLE``
    comes first): the next refresh reads the view's storage table and rebuilds the view
    with the other session's rows, once."""
    s = f"other_session_switch_{path}"
    env = keyed_master_with_log(spark, s, rows=4, groups=2, path=path)
    total = TableName(s, "total")
    total_sql = f"SELECT g, sum(x) AS sx, count(*) AS n FROM {s}.m GROUP BY g"
    refresh_and_check(spark, env, total, total_sql, exists=False, expect="COMPLETE")
    spark.sql(f"INSERT INTO {s}.m VALUES (4, 0, 5)")
    refresh_and_check(spark, env, total, total_sql, exists=True, expect="FAST")

    other = spark.newSession()
    other.sql(f"CREATE TABLE {s}.src USING iceberg AS SELECT k, g, x * 10 AS x FROM {s}.m")
    other_env = env_for(other, f"{s}_registry", path)
    drop_mview_log(other_env, f"{s}.m")
    other.sql(f"DROP TABLE {s}.m")
    refresh.refresh_view(
        other_env, view=TableName(s, "m"), sql=f"SELECT k, g, x FROM {s}.src",
        method="complete", exists=False,
    )  # fmt: skip
    create_mview_log(other_env, f"{s}.m", key=["k"])  # as dbt does for a model others read

    result = refresh_and_check(spark, env, total, total_sql, exists=True, expect="COMPLETE")
    assert result.reason is not None
    # m was read as the model's view: the query now reads its storage table.
    assert result.reason.code is ReasonCode.DEFINITION_CHANGED, result.reason
    assert sorted(spark.sql(f"SELECT g, sx FROM {total.sql}").collect()) == [(0, 70), (1, 20)]
    # Read the same way the next time: no second rebuild (the SQL path's SHOW TBLPROPERTIES
    # was once answered by the cached table, and the view rebuilt twice).
    refresh_and_check(spark, env, total, total_sql, exists=True, expect="FAST")


def _lease(name: str, holder: str) -> Lease:
    at = dt.datetime(2026, 1, 1)
    return Lease(name, holder, "h", 1, at, at + dt.timedelta(seconds=60), "test")


def test_a_lease_freed_by_another_session_is_taken_by_the_first_merge(spark: Any) -> None:
    name = "log:other_session_leases.mlog__m"
    mine, theirs = (
        SqlLeaseStore(SparkExecutor(session), "other_session_leases")
        for session in (spark, spark.newSession())
    )

    def lease(holder: str) -> Lease:
        return _lease(name, holder)

    assert mine.read([name])[1] == {}  # this session has the table cached now
    version, _ = theirs.read([name])
    assert theirs.swap(version, [name], {name: lease("theirs")})
    version, found = theirs.read([name])
    assert found == {name: lease("theirs")}
    assert theirs.swap(version, [name], {})  # given back
    version, found = mine.read([name])
    assert found == {}
    # Read as the table is, not as this session cached it: no lost race.
    assert mine.swap(version, [name], {name: lease("mine")})
    assert mine.read([name])[1] == {name: lease("mine")}


def test_this_processes_lease_swaps_take_turns(spark: Any) -> None:
    """Two threads (a refresh and the renewing heartbeat, or two of dbt's threads) swap
    leases of different names on the SQL path: none of their MERGEs fails another's."""
    lost: list[str] = []

    def swaps(name: str) -> None:
        store = SqlLeaseStore(SparkExecutor(spark), "other_session_turns")
        lease = _lease(name, "me")
        for _ in range(3):
            for new in ({name: lease}, {}):  # taken, given back
                version, _ = store.read([name])
                if not store.swap(version, [name], new):
                    lost.append(name)

    SqlLeaseStore(SparkExecutor(spark), "other_session_turns").read(["log:a"])  # the table
    threads = [threading.Thread(target=swaps, args=(f"log:{n}",)) for n in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert lost == []
