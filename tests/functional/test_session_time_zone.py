"""A view whose query reads the session's time zone (``CAST(ts AS STRING)``, ``hour(ts)``,
a ``TIMESTAMP '...'`` literal, a DATE cast to a TIMESTAMP) has rows that change with
``spark.sql.session.timeZone``. Its fast refreshes applied changes computed in the
session's zone to rows computed in the zone of its last build: the view mixed the two,
and an aggregate subtracted old images from groups they had never been added to. Now the
view's state records the zone its rows were computed in, and a refresh in another zone
rebuilds it under ``force``, saying why, and fails naming the fix under ``fast``. A view
whose query does not read the zone refreshes fast in any zone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from dbt.adapters.fastrefresh.engine import inspection, refresh
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.mlog import ddl as mlog
from dbt.adapters.fastrefresh.protocol.decisions import ReasonCode, Staleness
from dbt.adapters.fastrefresh.protocol.env import Env
from dbt.adapters.fastrefresh.protocol.state import ViewState
from dbt.adapters.fastrefresh.runtime.executor import TIME_ZONE, set_value
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.functional.sites import env_for, matches, refresh_and_check

VIEWS = {
    "shown": "SELECT m.k, CAST(m.ts AS STRING) AS s, hour(m.ts) AS h FROM {m} m",
    "by_hour": "SELECT hour(m.ts) AS h, count(*) AS n, sum(m.x) AS sx FROM {m} m GROUP BY hour(m.ts)",
    "early": "SELECT m.k, m.x FROM {m} m WHERE m.ts < TIMESTAMP'2024-01-01 05:00:00'",
    "midnight": "SELECT m.k, CAST(m.d AS TIMESTAMP) AS t FROM {m} m",
    "plain": "SELECT m.x, count(*) AS n FROM {m} m GROUP BY m.x",
}
ZONED = ("shown", "by_hour", "early", "midnight")


def state_of(env: Env, view: TableName) -> ViewState:
    record = refresh.load_view(env, view)
    assert record is not None and record.state is not None, view
    return record.state


@pytest.fixture
def zone(spark: Any) -> Iterator[Any]:
    """Sets the session's time zone; the zone before the test is set back after it."""
    before = spark.conf.get(TIME_ZONE)
    try:
        yield lambda name: spark.conf.set(TIME_ZONE, name)
    finally:
        spark.conf.set(TIME_ZONE, before)


@pytest.mark.parametrize("path", ["java", "sql"])
def test_a_view_reading_the_session_zone_rebuilds_when_the_zone_changes(
    spark: Any, zone: Any, path: str
) -> None:
    schema = f"session_zone_{path}"
    master = f"{schema}.m"
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(
        f"CREATE TABLE {master} (k BIGINT NOT NULL, ts TIMESTAMP, d DATE, x INT) USING iceberg"
    )
    zone("UTC")
    spark.sql(
        f"INSERT INTO {master} SELECT id, TIMESTAMP'2024-01-01 00:30:00' + make_dt_interval(0, "
        "CAST(id AS INT)), DATE'2024-01-01' + CAST(id AS INT), CAST(id % 3 AS INT) FROM range(12)"
    )
    env = env_for(spark, f"{schema}_registry", path)
    mlog.create_mview_log(env, master, key=["k"])
    views = {TableName(schema, n): q.format(m=master) for n, q in VIEWS.items()}
    fast_only = TableName(schema, "fast_only")
    views[fast_only] = views[TableName(schema, "by_hour")]
    for view, sql in views.items():
        refresh_and_check(spark, env, view, sql, exists=False, expect="COMPLETE")
    recorded = {v.table: state_of(env, v).time_zone for v in views}
    assert recorded == {**{n: "UTC" for n in (*ZONED, "fast_only")}, "plain": None}

    # In another zone: the views reading it are rebuilt, the others refresh fast.
    zone("Asia/Tokyo")
    assert set_value(spark.sql(f"SET {TIME_ZONE}").collect(), TIME_ZONE) == "Asia/Tokyo"
    spark.sql(f"UPDATE {master} SET x = x + 1, ts = ts + INTERVAL 3 HOURS WHERE k % 4 = 0")
    spark.sql(f"DELETE FROM {master} WHERE k = 5")
    spark.sql(
        f"INSERT INTO {master} VALUES (20, TIMESTAMP'2024-01-01 01:00:00', DATE'2024-02-01', 7)"
    )
    before = state_of(env, fast_only)
    with pytest.raises(FastRefreshError) as failed:
        refresh.refresh_view(env, view=fast_only, sql=views[fast_only], method="fast", exists=True)
    message = str(failed.value)
    assert (
        "the session time zone is Asia/Tokyo, and the view's rows were computed in UTC" in message
    )
    assert "spark.sql.session.timeZone" in message, message
    assert state_of(env, fast_only) == before, "a failed refresh wrote its state"
    for view, sql in views.items():
        if view == fast_only:
            continue
        expect = "COMPLETE" if view.table in ZONED else "FAST"
        result = refresh_and_check(spark, env, view, sql, exists=True, expect=expect)
        if expect == "COMPLETE":
            assert result.reason is not None and result.reason.code is ReasonCode.TIME_ZONE_CHANGED

    # The zone is now the views' own: fast again, in this zone.
    spark.sql(f"UPDATE {master} SET x = x + 2, ts = ts - INTERVAL 7 HOURS WHERE k % 3 = 1")
    for view, sql in views.items():
        if view != fast_only:
            refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")
    # The staleness a registry shows: a view reading the zone needs a rebuild in another.
    zone("America/New_York")
    state, why = inspection.staleness(env, TableName(schema, "shown"))
    assert state is Staleness.NEEDS_COMPILE and "America/New_York" in why, why
    assert inspection.staleness(env, TableName(schema, "plain"))[0] is Staleness.FRESH
    # The fix the error named: refreshed in the zone its rows were computed in, the view
    # that failed refreshes fast.
    zone("UTC")
    result = refresh.refresh_view(
        env, view=fast_only, sql=views[fast_only], method="fast", exists=True
    )
    assert result.refresh_type == "FAST" and matches(spark, fast_only, views[fast_only])
