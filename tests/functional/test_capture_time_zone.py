"""The SQL path's capture reads the files a commit touched with a predicate on their
column bounds. A timestamp bound read as text is local to the session's time zone, and in
the hour a daylight-saving change repeats it reads back as the earlier instant: the
touched file's upper bound came back an hour short, and a change to a row in that hour
was not read (on a Thrift server whose session is not in UTC). And a commit's time is
the same instant on both metadata paths."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest

from dbt.adapters.fastrefresh.mlog import ddl as mlog
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.functional.sites import env_for, latest_snapshot, refresh_and_check


@pytest.fixture
def new_york(spark: Any) -> Iterator[None]:
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        yield
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)


def test_a_change_in_the_repeated_hour_is_captured(spark: Any, new_york: None) -> None:
    schema = "capture_time_zone"
    master = f"{schema}.m"
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(
        f"CREATE TABLE {master} (id INT NOT NULL, g STRING, ts TIMESTAMP, v INT) USING iceberg"
    )
    # One file per INSERT, so that the update touches one file of five and its bounds are
    # used. 06:30 UTC on 2024-11-03 is 01:30 in New York, the second time that day.
    base = 1_730_613_600  # 2024-11-03 06:00:00 UTC, in seconds
    for i, minutes in enumerate([-50, -40, -20, -10, 30], start=1):
        micros = (base + 60 * minutes) * 1_000_000
        spark.sql(f"INSERT INTO {master} SELECT {i}, 'a', timestamp_micros({micros}), {i}")
    repeated = spark.sql(f"SELECT CAST(ts AS STRING) FROM {master} WHERE id = 5").collect()
    assert repeated[0][0] == "2024-11-03 01:30:00"
    assert spark.sql(f"SELECT count(*) FROM {master}.files").collect()[0][0] == 5
    env = env_for(spark, f"{schema}_registry", "sql")
    mlog.create_mview_log(env, master, key=["id"])
    view = TableName(schema, "v")
    sql = f"SELECT m.g, count(*) AS n, sum(m.v) AS s FROM {master} m GROUP BY m.g"
    refresh_and_check(spark, env, view, sql, exists=False, expect="COMPLETE")
    spark.sql(f"UPDATE {master} SET v = 50 WHERE id = 5")
    refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")


def test_a_commit_time_is_the_same_instant_on_both_paths(spark: Any, new_york: None) -> None:
    """The SQL path read ``committed_at`` as the connection shows a TIMESTAMP (through
    PySpark, a naive datetime in the Python process's local time), the Java path as
    Iceberg's ``timestamp-ms``: the capture runs' commit times, kept in UTC, differed
    wherever the process was not in UTC."""
    schema = "commit_time_paths"
    table = TableName(schema, "t")
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(f"CREATE TABLE {table} (id INT) USING iceberg")
    spark.sql(f"INSERT INTO {table} VALUES (1)")
    snapshot = latest_snapshot(spark, str(table))
    times = {
        path: env_for(spark, f"{schema}_registry", path).tables.history(table).get(snapshot)
        for path in ("java", "sql")
    }
    java, sql = (times[p] for p in ("java", "sql"))
    assert java is not None and sql is not None
    assert java.committed_at is not None and java.committed_at.utcoffset() == dt.timedelta(0)
    assert sql.committed_at == java.committed_at
