"""Helpers for the state the shared embedded Spark session keeps between dbt invocations."""

from __future__ import annotations


def drop_temporary_views(spark) -> None:  # type: ignore[no-untyped-def]
    """Drop every temporary view of the session (what closing a server connection does)."""
    for row in spark.sql("show views").collect():
        if row.isTemporary:
            spark.catalog.dropTempView(row.viewName)
