"""Whether a view's rows depend on the session's time zone (``spark.sql.session.timeZone``).

Spark keeps a ``TIMESTAMP`` as an instant and shows it, casts it and takes it apart in the
session's time zone: ``CAST(ts AS STRING)``, ``hour(ts)``, ``to_date(ts)``, a ``TIMESTAMP
'...'`` literal, ``from_unixtime(n)`` and a string compared with a timestamp all give other
values in another zone. A view whose rows were computed in one zone and whose changes
are applied in another would mix the two, and an aggregate would subtract old images
from groups they were never added to. So a refresh of such a view compares the zone its
rows were computed in (``ViewState.time_zone``) with the session's, and rebuilds the view
when they differ (``decisions.ReasonCode.TIME_ZONE_CHANGED``).

The test is conservative: a query reads the zone when it reads a master column whose type
holds a ``TIMESTAMP`` (a ``TIMESTAMP_NTZ`` has no zone), casts to one, or calls a function
that converts between instants and local times or may cast a string to a timestamp
(``ZONED_FUNCTIONS``), or writes an interval of hours, minutes or seconds, or scales a
day-time interval (``INTERVAL '1' DAY * k``, typed DAY TO SECOND): either makes a DATE a
TIMESTAMP. Anything else it may call (a UDF reading the zone) is not seen.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from dbt.adapters.fastrefresh.iceberg.columns import Column
from dbt.adapters.fastrefresh.ivm.dialect import DIALECT
from dbt.adapters.fastrefresh.ivm.plan import ViewPlan
from dbt.adapters.fastrefresh.sqltext import TableName

# A type that holds an instant shown in the session's zone: TIMESTAMP (Spark's
# TIMESTAMP_LTZ), alone or inside an ARRAY, MAP or STRUCT; not TIMESTAMP_NTZ.
_ZONED_TYPE = re.compile(r"\btimestamp(_ltz)?\b", re.IGNORECASE)

# Spark functions (lower case, as Spark SQL names them) whose result depends on the
# session's zone for some input: those converting instants to local times and back,
# parsing or formatting them, and those taking a timestamp argument, which cast a STRING
# argument to one in the session's zone. (Functions taking a DATE cast a string without
# a zone, and so does ``to_date`` without a format.) A TIMESTAMP column passed to any
# function is caught by its type.
ZONED_FUNCTIONS = frozenset(
    {
        "current_timezone", "convert_timezone", "from_utc_timestamp", "to_utc_timestamp",
        "from_unixtime", "unix_timestamp", "to_unix_timestamp", "unix_seconds",
        "unix_millis", "unix_micros", "timestamp_seconds", "timestamp_millis",
        "timestamp_micros", "to_timestamp", "to_timestamp_ltz", "to_timestamp_ntz",
        "try_to_timestamp", "timestamp", "make_timestamp", "make_timestamp_ltz",
        "try_make_timestamp", "to_date", "date_format", "date_trunc", "trunc", "hour",
        "minute", "second", "extract", "date_part", "datepart", "months_between",
        "timestampadd", "timestampdiff", "dateadd", "datediff", "date_diff", "window",
        "session_window", "window_time", "from_json", "from_csv", "to_json", "to_csv",
        "schema_of_json", "schema_of_csv", "date_from_unix_date", "make_interval",
        "make_dt_interval",
    }
)  # fmt: skip

_CALLED = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(")
# An interval of these units added to a DATE makes a TIMESTAMP in the session's zone.
_TIME_UNITS = re.compile(r"HOUR|MINUTE|SECOND", re.IGNORECASE)
# A year-month interval, which a DATE adds as months (a DATE, without a zone).
_MONTH_UNITS = re.compile(r"YEAR|MONTH", re.IGNORECASE)


def zoned_type(spark_type: str) -> bool:
    """Whether a Spark type (as ``DESCRIBE`` shows it) holds a TIMESTAMP with a zone."""
    return _ZONED_TYPE.search(spark_type) is not None


def zoned_read(plan: ViewPlan, columns: Mapping[TableName, Sequence[Column]]) -> str | None:
    """What in ``plan``'s query reads the session's time zone, for a message (the first
    found), or None: nothing does, and its rows are the same in every zone. ``columns``:
    each master's columns, with their types."""
    for master in plan.masters:
        types = {c.name.lower(): c.type for c in columns.get(master, ())}
        for name in plan.columns_read_of(master):
            kind = types.get(name.lower(), "")
            if zoned_type(kind):
                return f"reads {master}.{name}, a {kind}"
    try:
        tree = sqlglot.parse_one(plan.sql, read=DIALECT)
    except SqlglotError:  # not planned either: the view never refreshes fast
        return None
    return _zoned_expression(tree)


def _zoned_expression(tree: exp.Expr) -> str | None:
    """A cast, an interval or a call in ``tree`` that reads the session's time zone."""
    for cast in tree.find_all(exp.Cast):  # TryCast too; a TIMESTAMP '...' literal is one
        target = cast.to.sql(dialect=DIALECT)
        if zoned_type(target):
            return f"casts to {target}"
    for interval in tree.find_all(exp.Interval):
        written = interval.sql(dialect=DIALECT)
        if _TIME_UNITS.search(written):
            return f"adds {written}"
        scaled = interval.parent
        while isinstance(scaled, exp.Paren):
            scaled = scaled.parent
        if isinstance(scaled, (exp.Mul, exp.Div)) and not _MONTH_UNITS.search(written):
            # Spark types INTERVAL '1' DAY * k as INTERVAL DAY TO SECOND: a DATE plus it is
            # a TIMESTAMP at the session zone's midnight.
            return f"scales {written} (a day-time interval)"
    for call in tree.find_all(exp.Func):
        called = _CALLED.match(call.sql(dialect=DIALECT))
        name = called.group(1).lower() if called else ""
        if name == "to_date" and call.args.get("format") is None and len(call.expressions) < 2:
            continue  # a string or a DATE to a DATE, without a zone (sqlglot adds it)
        if name in ZONED_FUNCTIONS:
            return f"calls {name}()"
    return None
