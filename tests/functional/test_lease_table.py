"""The leases table on Iceberg (``iceberg/leases.py``): a lease given back on the SQL path
is a ``DELETE`` that Iceberg answers from metadata alone (each lease is a file of its own
partition with exact bounds on its name and holder), and that spares a lease another
process took over meanwhile; a table made without those bounds gets them."""

from __future__ import annotations

import datetime as dt
from typing import Any

from dbt.adapters.fastrefresh.iceberg import leases as table
from dbt.adapters.fastrefresh.iceberg.leases import (
    JavaLeaseStore,
    SqlLeaseStore,
    ensure_table,
    leases_table,
)
from dbt.adapters.fastrefresh.runtime.executor import SparkExecutor
from dbt.adapters.fastrefresh.runtime.leases import Lease
from dbt.adapters.fastrefresh.sqltext import properties


def _lease(name: str, holder: str, minutes: int = 1) -> Lease:
    at = dt.datetime(2026, 1, 1)
    return Lease(name, holder, "h", 1, at, at + dt.timedelta(minutes=minutes), "test")


def _plan(spark: Any, statement: str) -> str:
    return str(spark.sql(f"EXPLAIN {statement}").collect()[0][0])


def test_a_lease_given_back_is_deleted_from_metadata_and_spares_one_taken_over(
    spark: Any,
) -> None:
    view, log = "view:lease_table.v", "log:lease_table.mlog__a_master_with_a_long_name"
    holder = "a-host-with-a-long-name:12345:0123456789abcdef.0123456789ab"
    mine = SqlLeaseStore(SparkExecutor(spark), "lease_table")
    theirs = SqlLeaseStore(SparkExecutor(spark.newSession()), "lease_table")
    version, _ = mine.read([view, log])
    assert mine.swap(version, [view, log], {view: _lease(view, holder), log: _lease(log, holder)})
    version, held = mine.read([view, log])
    statement = table._give_back(mine.table, held)
    assert statement is not None
    assert _plan(spark, statement).startswith("== Physical Plan ==\nDeleteFromTable"), statement
    # Another process takes the log's lease over (it expired) before this one gives both
    # back: the view's goes, the log's stays theirs.
    their_version, _ = theirs.read([log])
    taken_over = _lease(log, "another:1:x.y", minutes=10)
    assert theirs.swap(their_version, [log], {log: taken_over})
    assert not mine.swap(version, [view, log], {})
    assert mine.read([view, log])[1] == {log: taken_over}
    snapshot = spark.sql(
        "SELECT operation, summary FROM lease_table.leases.snapshots ORDER BY committed_at DESC"
    ).first()
    assert snapshot is not None and snapshot.operation == "delete"
    assert snapshot.summary["deleted-records"] == "1"


def test_a_leases_table_made_without_exact_bounds_gets_them(spark: Any) -> None:
    name = leases_table("lease_bounds")
    spark.sql("CREATE SCHEMA lease_bounds")
    bounds = properties(table.EXACT_BOUNDS)
    old = table.PROPERTIES.replace(f", {bounds}", "")
    assert bounds not in old and "metrics" not in old
    spark.sql(
        f"CREATE TABLE {name.sql} ({table.COLUMNS}) USING iceberg PARTITIONED BY (name) "
        f"TBLPROPERTIES ({old})"
    )
    view = "view:lease_bounds.a_view_with_a_long_name"
    holder = "a-host-with-a-long-name:12345:0123456789abcdef.0123456789ab"
    held = _lease(view, holder)
    # A lease an earlier version took: its file keeps 16 characters of name and holder.
    spark.sql(
        f"INSERT INTO {name.sql} VALUES ('{view}', '{holder}', 'h', 1, "
        f"TIMESTAMP_NTZ'{held.acquired}', TIMESTAMP_NTZ'{held.expires}', 'test')"
    )
    statement = table._give_back(name, {view: held})
    assert statement is not None
    assert "ReplaceData" in _plan(spark, statement), "a row-level delete without the bounds"

    ensure_table(SparkExecutor(spark), name, missing=True)
    shown = dict(spark.sql(f"SHOW TBLPROPERTIES {name.sql}").collect())
    assert shown["write.metadata.metrics.column.holder"] == "full"
    assert shown["write.metadata.metrics.column.name"] == "full"
    store = SqlLeaseStore(SparkExecutor(spark), "lease_bounds")
    version, found = store.read([view])
    assert found == {view: held}
    assert store.swap(version, [view], {}), "given back by a row-level delete"
    version, _ = store.read([view])
    assert store.swap(version, [view], {view: _lease(view, holder)})
    version, now = store.read([view])
    statement = table._give_back(store.table, now)
    assert statement is not None
    assert _plan(spark, statement).startswith("== Physical Plan ==\nDeleteFromTable")
    assert store.swap(version, [view], {})
    assert store.read([view])[1] == {}


def test_a_lease_the_java_path_took_is_given_back_from_metadata_on_the_sql_path(
    spark: Any,
) -> None:
    """Processes of both paths may share a leases table (one through a server, one with
    Spark in process): the Java path writes its lease files with the table's bounds."""
    view = "view:lease_java.a_view_with_a_long_name"
    holder = "a-host-with-a-long-name:12345:0123456789abcdef.0123456789ab"
    java = JavaLeaseStore(spark, SparkExecutor(spark), "lease_java")
    version, _ = java.read([view])
    assert java.swap(version, [view], {view: _lease(view, holder)})
    sql = SqlLeaseStore(SparkExecutor(spark), "lease_java")
    version, held = sql.read([view])
    assert held == {view: _lease(view, holder)}
    statement = table._give_back(sql.table, held)
    assert statement is not None
    assert _plan(spark, statement).startswith("== Physical Plan ==\nDeleteFromTable")
    assert sql.swap(version, [view], {})
    assert java.read([view])[1] == {}


def test_a_lease_given_back_without_a_read_first_is_deleted_as_last_written(
    spark: Any,
) -> None:
    """``SqlLeaseStore.give_back``: the ``DELETE`` of the leases as this process last wrote
    them, and a read after it, no read before (two statements fewer through a server).
    Another session's commits since this session last read the table do not hide a lease
    from it, nor make it delete one it does not hold: a lease renewed meanwhile on another
    of this process's connections (a newer expiry) stays, and the answer says so."""
    view, log = "view:lease_blind.v", "log:lease_blind.mlog__m"
    holder = "a-host:1:space.token"
    mine = SqlLeaseStore(SparkExecutor(spark), "lease_blind")
    other = SqlLeaseStore(SparkExecutor(spark.newSession()), "lease_blind")
    version, _ = mine.read([view, log])
    taken = {view: _lease(view, holder), log: _lease(log, holder)}
    assert mine.swap(version, [view, log], taken)
    # The heartbeat's connection renews the log's lease: this session has not read that.
    their_version, found = other.read([log])
    renewed = _lease(log, holder, minutes=5)
    assert found == {log: taken[log]} and other.swap(their_version, [log], {log: renewed})
    x = mine.x
    assert isinstance(x, SparkExecutor)
    before = len(x.statements)
    assert not mine.give_back(taken), "the renewed lease is still this holder's"
    ran = x.statements[before:]
    assert [s.split()[0] for s in ran] == ["DELETE", "SELECT"], ran
    assert mine.read([view, log])[1] == {log: renewed}
    assert mine.give_back({log: renewed})
    assert other.read([view, log])[1] == {}
    # A lease taken over by another holder is not given back, and is not this holder's.
    version, _ = other.read([view])
    theirs = _lease(view, "another:2:space.x")
    assert other.swap(version, [view], {view: theirs})
    assert mine.give_back({view: taken[view]})
    assert mine.read([view])[1] == {view: theirs}
