"""Which queries read the session's time zone (``ivm/zones.py``), on SQL alone."""

from __future__ import annotations

import pytest

from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.iceberg.columns import Column
from dbt.adapters.fastrefresh.ivm.analysis import analyze
from dbt.adapters.fastrefresh.ivm.zones import zoned_read, zoned_type
from dbt.adapters.fastrefresh.runtime.executor import TIME_ZONE, set_value
from dbt.adapters.fastrefresh.sqltext import TableName

M = TableName("s", "m")
D = TableName("s", "d")
COLUMNS = {
    M: [
        Column("k", "bigint"),
        Column("ts", "timestamp"),
        Column("ntz", "timestamp_ntz"),
        Column("day", "date"),
        Column("events", "array<struct<at:timestamp,n:int>>"),
        Column("x", "int"),
        Column("s", "string"),
    ],
    D: [Column("k", "bigint"), Column("created", "timestamp"), Column("name", "string")],
}
KEYS = {M: ["k"], D: ["k"]}


def zoned(sql: str) -> str | None:
    plan = analyze(sql, COLUMNS, KEYS)
    assert plan.supported, plan.reason
    return zoned_read(plan, COLUMNS)


def test_types_that_hold_an_instant_shown_in_the_session_zone() -> None:
    assert zoned_type("timestamp") and zoned_type("TIMESTAMP_LTZ")
    assert zoned_type("array<struct<at:timestamp,n:int>>")
    assert not zoned_type("timestamp_ntz") and not zoned_type("date")
    assert not zoned_type("struct<timestamps:int>")


@pytest.mark.parametrize(
    ("sql", "why"),
    [
        ("select k, ts from s.m", "reads s.m.ts, a timestamp"),
        ("select k, x from s.m where ts < ntz", "reads s.m.ts, a timestamp"),
        ("select k, size(events) as n from s.m", "reads s.m.events, a array<"),
        ("select * from s.m", "reads s.m.events, a array<struct<at:timestamp"),
        ("select m.k, d.name from s.m m join s.d d on m.k = d.k where d.created is null",
         "reads s.d.created, a timestamp"),
        ("select k, cast(day as timestamp) as t from s.m", "casts to TIMESTAMP"),
        ("select k from s.m where ntz < timestamp'2024-01-01 00:00:00'", "casts to TIMESTAMP"),
        ("select k, to_date(s, 'yyyy-MM-dd HH:mm XXX') as d from s.m", "calls to_date()"),
        ("select k, hour(s) as h from s.m", "calls hour()"),
        ("select k, from_unixtime(x) as t from s.m", "calls from_unixtime()"),
        ("select k, date_format(day, 'yyyy') as y from s.m", "calls date_format()"),
        ("select k, day + interval 3 hours as t from s.m", "adds INTERVAL '3' HOURS"),
        # Spark types a scaled day interval DAY TO SECOND: the DATE becomes a TIMESTAMP at
        # the zone's midnight (a hunt through dbt found the view mixing two zones' rows).
        ("select k, day + interval '1' day * x as t from s.m", "scales INTERVAL '1' DAY"),
        ("select k, day - x * (interval 2 days) as t from s.m", "scales INTERVAL '2' DAYS"),
        ("select k, from_json(s, 'a int') as j from s.m", "calls from_json()"),
        ("select x, count(*) as n from s.m where to_timestamp(s) > ntz group by x",
         "calls to_timestamp()"),
    ],
)  # fmt: skip
def test_a_query_reads_the_zone(sql: str, why: str) -> None:
    found = zoned(sql)
    assert found is not None and found.startswith(why), found


@pytest.mark.parametrize(
    "sql",
    [
        "select k, x from s.m",
        "select k, ntz, day, cast(ntz as string) as t from s.m",
        "select x, count(*) as n, max(day) as last_day from s.m group by x",
        "select k, day + interval 3 days as later, cast(s as timestamp_ntz) as n from s.m",
        "select k, day + interval '1' month * x as later from s.m",  # months: a DATE
        "select m.k, d.name from s.m m join s.d d on m.k = d.k",
        "select k, upper(s) as u, year(day) as y, to_date(s) as d from s.m",
    ],
)
def test_a_query_does_not_read_the_zone(sql: str) -> None:
    assert zoned(sql) is None


def test_the_value_a_set_statement_answers() -> None:
    assert set_value([(TIME_ZONE, "Asia/Tokyo")], TIME_ZONE) == "Asia/Tokyo"
    with pytest.raises(FastRefreshError, match="not the setting's value"):
        set_value([("other", "x")], TIME_ZONE)
