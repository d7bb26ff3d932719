"""Where the protocol runs: one value passed to every step instead of five arguments.

``sql`` runs statements (through dbt's connection, or straight on a SparkSession);
``tables`` reads and commits table metadata (``iceberg/tables.py``: the SQL path or the Java path);
``registry`` names the registry schema; ``clock`` gives naive UTC times; ``runtime`` is the
process state; ``shared_catalog`` says whether other processes may write the same tables
(then every table is read fresh, not from this session's cache).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.fastrefresh.iceberg.sql import SqlTables
from dbt.adapters.fastrefresh.iceberg.tables import Tables
from dbt.adapters.fastrefresh.protocol import upkeep
from dbt.adapters.fastrefresh.protocol.state import STATE_KEYS
from dbt.adapters.fastrefresh.runtime.clock import utcnow
from dbt.adapters.fastrefresh.runtime.executor import Executor, SparkExecutor
from dbt.adapters.fastrefresh.runtime.process import RUNTIME, Runtime
from dbt.adapters.fastrefresh.sqltext import TableName

DEFAULT_REGISTRY_SCHEMA = "fast_refresh"


@dataclass
class Env:
    sql: Executor
    tables: Tables
    registry: str = DEFAULT_REGISTRY_SCHEMA
    clock: Callable[[], dt.datetime] = utcnow
    runtime: Runtime = field(default=RUNTIME)
    shared_catalog: bool = False

    def upkeep_commit(self, table: TableName) -> None:
        """Note a commit to one of dbt-fastrefresh's own tables (``protocol/upkeep.py``)."""
        upkeep.committed(self.sql, self.runtime, self.clock(), table)

    @classmethod
    def for_spark(
        cls,
        spark: Any,
        registry: str = DEFAULT_REGISTRY_SCHEMA,
        *,
        java: bool = True,
        clock: Callable[[], dt.datetime] = utcnow,
    ) -> Env:
        """An environment straight on a SparkSession (tests, benchmarks, the demo):
        ``java`` picks the Java path for metadata, else the SQL path."""
        x = SparkExecutor(spark)
        return cls(x, tables_for(x, spark if java else None), registry.lower(), clock)


def tables_for(x: Executor, spark: Any | None) -> Tables:
    """The Java path when ``spark`` (a SparkSession in this process) is given, else SQL."""
    if spark is None:
        return SqlTables(x, STATE_KEYS)
    from dbt.adapters.fastrefresh.iceberg.jvm import JvmTables

    return JvmTables(spark, x, STATE_KEYS)
