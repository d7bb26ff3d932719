"""Where the protocol runs: one value passed to every step instead of five arguments.

``sql`` runs statements (through dbt's connection, or straight on a SparkSession);
``tables`` reads and commits table metadata (``iceberg/tables.py``: the SQL path or the Java path);
``registry`` names the registry schema; ``clock`` gives naive UTC times; ``runtime`` is the
process state; ``shared_catalog`` says whether other processes may write the same tables
(then every table is read fresh, not from this session's cache, and ``holding`` takes
leases as well as the process's locks: ``runtime/leases.py``). ``read_only``: a copy for
a step that only reads (``Env.reading_only``): a write raises ``WouldWrite``, and no
lease is taken, since nothing is written.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.fastrefresh.iceberg.sql import SqlTables
from dbt.adapters.fastrefresh.iceberg.tables import Tables
from dbt.adapters.fastrefresh.protocol import upkeep
from dbt.adapters.fastrefresh.protocol.state import STATE_KEYS
from dbt.adapters.fastrefresh.runtime.catalog import (
    DEFAULT_LEASE_SECONDS,
    DEFAULT_LEASE_WAIT_SECONDS,
)
from dbt.adapters.fastrefresh.runtime.clock import utcnow
from dbt.adapters.fastrefresh.runtime.executor import (
    Executor,
    ReadOnlyExecutor,
    SparkExecutor,
    WouldWrite,
)
from dbt.adapters.fastrefresh.runtime.leases import LeaseStore
from dbt.adapters.fastrefresh.runtime.process import RUNTIME, Runtime
from dbt.adapters.fastrefresh.sqltext import TableName

DEFAULT_REGISTRY_SCHEMA = "fast_refresh"
# Days of run history (refresh_runs, capture_runs) the registry keeps; as Oracle's refresh
# statistics (DBMS_MVIEW_STATS' RETENTION_PERIOD, 365 days by default).
DEFAULT_HISTORY_DAYS = 365


@dataclass
class Env:
    sql: Executor
    tables: Tables
    registry: str = DEFAULT_REGISTRY_SCHEMA
    clock: Callable[[], dt.datetime] = utcnow
    runtime: Runtime = field(default=RUNTIME)
    shared_catalog: bool = False
    lease_seconds: float = DEFAULT_LEASE_SECONDS
    lease_wait_seconds: float = DEFAULT_LEASE_WAIT_SECONDS
    read_only: bool = False
    history_days: int | None = DEFAULT_HISTORY_DAYS  # None: the registry keeps all history

    @functools.cached_property
    def leases(self) -> LeaseStore | None:
        """Where this environment's leases are kept (None: no other process writes here)."""
        if not self.shared_catalog:
            return None
        from dbt.adapters.fastrefresh.iceberg.leases import JavaLeaseStore, SqlLeaseStore

        spark = getattr(self.tables, "spark", None)
        if self.tables.kind == "java" and spark is not None:
            return JavaLeaseStore(spark, self.sql, self.registry)
        return SqlLeaseStore(self.sql, self.registry)

    @contextlib.contextmanager
    def holding(self, names: Iterable[str], *, purpose: str = "") -> Iterator[None]:
        """Hold this process's locks of ``names`` and, on a shared catalog, the leases of
        the logs and views among them, for the block."""
        wanted = list(names)
        with self.runtime.holding(wanted), self.leasing(wanted, purpose=purpose):
            yield

    @contextlib.contextmanager
    def leasing(self, names: Iterable[str], *, purpose: str = "") -> Iterator[None]:
        """On a shared catalog, the leases of the logs and views among ``names`` for the
        block: those this process does not hold yet are taken in one swap, and given back
        in one (no process lock: the caller takes those it needs)."""
        store = None if self.read_only else self.leases
        if store is None:
            yield
            return
        with self.runtime.leases.holding(
            store, list(names), ttl=self.lease_seconds, wait=self.lease_wait_seconds,
            purpose=purpose,
        ):  # fmt: skip
            yield

    def check_leases(self, names: Iterable[str] | None = None) -> None:
        """Before a write on a shared catalog: stop if a lease held for it was lost."""
        if self.shared_catalog and not self.read_only:
            self.runtime.leases.check(None if names is None else list(names))

    def reading_only(self) -> Env:
        """A copy of this environment whose statements and table commits may only read:
        any write raises ``WouldWrite`` (and sets ``refused``), and ``holding`` takes this
        process's locks but no lease."""
        return dataclasses.replace(
            self, sql=ReadOnlyExecutor(self.sql), tables=ReadOnlyTables(self.tables),
            read_only=True,
        )  # fmt: skip

    @property
    def refused(self) -> bool:
        """Whether a write was refused (``reading_only``; False for any other)."""
        return isinstance(self.sql, ReadOnlyExecutor) and (
            self.sql.refused or bool(getattr(self.tables, "refused", False))
        )

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
        shared: bool = False,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
    ) -> Env:
        """An environment straight on a SparkSession (tests, benchmarks, the demo):
        ``java`` picks the Java path for metadata, else the SQL path; ``shared``: the
        session's catalog is shared with other processes."""
        x = SparkExecutor(spark)
        return cls(
            x, tables_for(x, spark if java else None), registry.lower(), clock,
            shared_catalog=shared, lease_seconds=lease_seconds,
        )  # fmt: skip


class ReadOnlyTables:
    """``Tables`` whose commits raise ``WouldWrite`` (``Env.reading_only``); reads are the
    wrapped ones'."""

    def __init__(self, inner: Tables) -> None:
        self.inner = inner
        self.refused = False

    def _refuse(self, what: str) -> WouldWrite:
        self.refused = True
        return WouldWrite(what)

    def set_properties(
        self, name: TableName, values: Mapping[str, str], *, remove: Sequence[str] = ()
    ) -> None:
        raise self._refuse(f"set properties of {name}")

    def summary(self, values: Mapping[str, str]) -> contextlib.AbstractContextManager[bool]:
        raise self._refuse("a commit with a summary")

    def delete_through(
        self, name: TableName, column: str, value: int, summary: Mapping[str, str]
    ) -> bool:
        raise self._refuse(f"delete from {name}")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def tables_for(x: Executor, spark: Any | None) -> Tables:
    """The Java path when ``spark`` (a SparkSession in this process) is given, else SQL."""
    if spark is None:
        return SqlTables(x, STATE_KEYS)
    from dbt.adapters.fastrefresh.iceberg.jvm import JvmTables

    return JvmTables(spark, x, STATE_KEYS)
