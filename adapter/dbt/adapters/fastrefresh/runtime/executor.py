"""Running SQL: one small interface over the dbt connection (or a bare SparkSession).

The protocol code only ever calls ``execute`` and ``query``, so the same code runs through
dbt's connection (session, thrift, http, odbc) and, in tests and benchmarks, directly
on a SparkSession.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Protocol

from dbt.adapters.events.logging import AdapterLogger

logger = AdapterLogger("fastrefresh")


class Executor(Protocol):
    def execute(self, sql: str) -> None: ...

    def query(self, sql: str) -> list[tuple[Any, ...]]: ...


class AdapterExecutor:
    """Statements through the dbt adapter's connection of the calling thread."""

    def __init__(self, adapter: Any) -> None:
        self.adapter = adapter

    def _run(self, sql: str, fetch: bool) -> list[tuple[Any, ...]]:
        started = time.monotonic()
        _, cursor = self.adapter.connections.add_query(sql, auto_begin=False)
        rows: Sequence[Any] = cursor.fetchall() if fetch else []
        logger.debug(f"fast_refresh: {time.monotonic() - started:.3f}s")
        return [tuple(row) for row in rows or []]

    def execute(self, sql: str) -> None:
        self._run(sql, fetch=False)

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        return self._run(sql, fetch=True)


class SparkExecutor:
    """Statements straight on a SparkSession (tests, benchmarks, the demo)."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.statements: list[str] = []

    def execute(self, sql: str) -> None:
        self.statements.append(sql)
        self.spark.sql(sql).collect()

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        self.statements.append(sql)
        return [tuple(row) for row in self.spark.sql(sql).collect()]
