"""A statement reading one table at two snapshots keeps both reads under a DISTINCT.

Spark 3.5's optimizer rule RemoveNoopUnion dropped one of two UNION children that read
the same Iceberg table at different snapshots (Iceberg's table equality ignores the
snapshot), when a DISTINCT sat over the union and the result was written: a delta's old
and new images of a master are such a union, and a FULL join view lost rows. Every
session dbt-fastrefresh runs on excludes the rule (``runtime/executor.py``).
"""

from __future__ import annotations

from typing import Any

from dbt.adapters.fastrefresh.runtime.executor import (
    EXCLUDED_RULES,
    UNSAFE_RULES,
    SparkExecutor,
)
from tests.functional.sites import latest_snapshot


def test_reads_of_two_snapshots_survive_a_distinct_in_a_write(spark: Any) -> None:
    spark.sql("CREATE SCHEMA IF NOT EXISTS time_travel_union")
    t = "time_travel_union.m"
    spark.sql(f"CREATE OR REPLACE TABLE {t} (k BIGINT, g STRING) USING iceberg")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    old = latest_snapshot(spark, t)
    spark.sql(f"INSERT INTO {t} VALUES (5, 'c')")
    new = latest_snapshot(spark, t)
    spark.conf.unset(EXCLUDED_RULES)  # as a session not started by dbt-fastrefresh
    x = SparkExecutor(spark)
    assert UNSAFE_RULES[0] in spark.conf.get(EXCLUDED_RULES)
    images = (
        f"SELECT k FROM {t} VERSION AS OF {old} WHERE k = 5 "
        f"UNION ALL SELECT k FROM {t} VERSION AS OF {new} WHERE k = 5"
    )
    x.execute(
        f"CREATE OR REPLACE TABLE time_travel_union.keys USING iceberg AS "
        f"SELECT DISTINCT k FROM ({images})"
    )
    assert x.query("SELECT k FROM time_travel_union.keys") == [(5,)]
