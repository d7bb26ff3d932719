"""Running SQL: one small interface over the dbt connection (or a bare SparkSession).

The protocol code only ever calls ``execute`` and ``query``, so the same code runs through
dbt's connection (session, thrift, http, odbc) and, in tests and benchmarks, directly
on a SparkSession.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Sequence
from typing import Any, Protocol

from dbt.adapters.contracts.connection import ConnectionState, LazyHandle
from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.runtime.interpreted import GATE, small_statements

logger = AdapterLogger("fastrefresh")


# Spark 3.5's optimizer rule RemoveNoopUnion drops a child of a UNION under a DISTINCT when
# it "has the same result" as another; Iceberg's Spark table compares by name, not snapshot,
# so reads of one table at two snapshots (a delta's old and new images of a master) look
# alike, and one was silently dropped: rows went missing from MERGE sources (found by the
# consistency oracle on a FULL join). Every session dbt-fastrefresh runs statements on
# excludes it; the rule only saves work on unions of truly identical children.
UNSAFE_RULES = ("org.apache.spark.sql.catalyst.optimizer.RemoveNoopUnion",)
EXCLUDED_RULES = "spark.sql.optimizer.excludedRules"
# The states of a dbt connection that runs no statement until it is opened again.
CLOSED = (ConnectionState.CLOSED, ConnectionState.FAIL)
# The session's time zone, in which Spark shows, casts and takes apart its TIMESTAMPs.
TIME_ZONE = "spark.sql.session.timeZone"


# Statements Spark's optimizer plans no query for (a description, a setting, a refresh of
# the session's cached table, DDL without a query): the unsafe rules need not be excluded
# before them, which on a server is a statement of its own per connection. Any other
# statement (a query, a write, a CREATE ... AS, a procedure) excludes them first.
_UNPLANNED = re.compile(
    r"\s*(SHOW|DESCRIBE|DESC|REFRESH|SET|RESET|ALTER|DROP|USE)\b", re.IGNORECASE
)


def plans_a_query(sql: str) -> bool:
    """Whether Spark may optimize a query for ``sql`` (so ``UNSAFE_RULES`` must be out).

    >>> plans_a_query("SHOW TBLPROPERTIES s.t"), plans_a_query("refresh table s.t")
    (False, False)
    >>> plans_a_query("WITH a AS (SELECT 1) SELECT * FROM a"), plans_a_query("MERGE INTO t")
    (True, True)
    """
    return _UNPLANNED.match(sql) is None


def with_safe_rules(excluded: str | None) -> str:
    """``excluded`` (the session's excluded optimizer rules) with ``UNSAFE_RULES`` added."""
    rules = [r.strip() for r in (excluded or "").split(",") if r.strip()]
    rules = [r for r in rules if r != "<undefined>"]
    return ",".join(rules + [r for r in UNSAFE_RULES if r not in rules])


def exclude_unsafe_rules(spark: Any) -> None:
    """Exclude ``UNSAFE_RULES`` from ``spark``'s optimizer (a session setting, ~1 ms)."""
    current = spark.conf.get(EXCLUDED_RULES, None)
    wanted = with_safe_rules(current)
    if wanted != current:
        spark.conf.set(EXCLUDED_RULES, wanted)


class Executor(Protocol):
    def execute(self, sql: str) -> None: ...

    def query(self, sql: str) -> list[tuple[Any, ...]]: ...

    def small(
        self, rows: int | None, *, one_partition: bool = False
    ) -> contextlib.AbstractContextManager[bool]:
        """The block's statements read about ``rows`` rows (None: not known): without
        Spark's generated code when that is small, and without adaptive execution when
        every shuffle of theirs ends in one partition (``runtime/interpreted.py``)."""
        ...

    def shuffle_partitions(self) -> int | None:
        """The session's ``spark.sql.shuffle.partitions`` when it is this process's (a
        JVM call); None on a server, where reading it would cost a statement."""
        ...

    def time_zone(self) -> str:
        """The session's ``spark.sql.session.timeZone``: a JVM call when the session is
        this process's, else one ``SET`` statement."""
        ...


class AdapterExecutor:
    """Statements through the dbt adapter's connection of the calling thread."""

    def __init__(self, adapter: Any) -> None:
        self.adapter = adapter

    def _safe_session(self) -> None:
        """Exclude ``UNSAFE_RULES`` once per connection: through the SparkSession of this
        process (method: session), else with two SET statements."""
        connection = self.adapter.connections.get_thread_connection()
        handle = connection.handle
        if getattr(handle, "_fastrefresh_safe_rules", False):
            return
        spark = _session_of(connection)
        if spark is not None:
            exclude_unsafe_rules(spark)
        else:
            _, cursor = self.adapter.connections.add_query(
                f"SET {EXCLUDED_RULES}", auto_begin=False
            )
            rows = cursor.fetchall() or []
            current = str(rows[0][1]) if rows and len(rows[0]) > 1 else None
            wanted = with_safe_rules(current)
            if wanted != current:
                self.adapter.connections.add_query(
                    f"SET {EXCLUDED_RULES}={wanted}", auto_begin=False
                )
        with contextlib.suppress(AttributeError):  # a handle without attributes: each time
            handle._fastrefresh_safe_rules = True

    def _run(self, sql: str, fetch: bool) -> list[tuple[Any, ...]]:
        self._connection()
        return self._statement(sql, fetch)

    def _connection(self) -> None:
        """The calling thread's dbt connection, ready to run a statement, and left open for
        the thread's next one (dbt closes it when it releases the node's connection, and
        every connection at the end of the invocation). A thread dbt did not start (the
        leases' heartbeat) gets one of its own. A closed one, of a node released before
        or closed by the thread's last block, opens again at its next statement: on a
        server a closed handle fails ("Transport not open"), and opening one costs a
        session's round trips, so it is not opened and closed around each statement."""
        connections = self.adapter.connections
        connection = connections.get_if_exists()
        if connection is None:
            connections.set_connection_name(f"fastrefresh-{threading.get_ident()}")
        elif connection.state in CLOSED:  # (reading .handle would open it)
            connection.handle = LazyHandle(connections.open)

    def _statement(self, sql: str, fetch: bool) -> list[tuple[Any, ...]]:
        """``sql`` on the calling thread's connection, which is there (the unsafe rules
        excluded first, once per connection, where it may plan a query)."""
        if plans_a_query(sql):
            self._safe_session()
        started = time.monotonic()
        with GATE.statement():  # the fetch too: a SELECT runs in it (session method)
            _, cursor = self.adapter.connections.add_query(sql, auto_begin=False)
            rows: Sequence[Any] = cursor.fetchall() if fetch else []
        logger.debug(f"fast_refresh: {time.monotonic() - started:.3f}s")
        return [tuple(row) for row in rows or []]

    def execute(self, sql: str) -> None:
        self._run(sql, fetch=False)

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        return self._run(sql, fetch=True)

    def small(
        self, rows: int | None, *, one_partition: bool = False
    ) -> contextlib.AbstractContextManager[bool]:
        """Through this process's SparkSession (method: session); a statement on a server
        keeps the server's settings (two SET statements would cost more than they save)."""
        return small_statements(self._own_session(), rows, one_partition=one_partition)

    def _own_session(self) -> Any:
        """The SparkSession of this process the calling thread's connection runs on
        (method: session), or None (a server, or no connection)."""
        connection = self.adapter.connections.get_if_exists()
        return None if connection is None else _session_of(connection)

    def shuffle_partitions(self) -> int | None:
        return session_shuffle_partitions(self._own_session())

    def time_zone(self) -> str:
        spark = self._own_session()
        if spark is not None:
            return str(spark.conf.get(TIME_ZONE))
        return set_value(self.query(f"SET {TIME_ZONE}"), TIME_ZONE)


class WouldWrite(Exception):
    """A write asked for in a step that was to only read (``ReadOnlyExecutor``)."""


# Statements that change nothing but this session: queries, descriptions, settings, and a
# refresh of the session's cached copy of a table. A statement after common table
# expressions (``WITH ... INSERT INTO``) may write: one naming a write anywhere is refused
# (a read that only mentions the word is refused too, and runs again under the lease).
_READS = re.compile(
    r"\s*(SELECT|WITH|VALUES|SHOW|DESCRIBE|DESC|EXPLAIN|SET|REFRESH\s+TABLE)\b", re.IGNORECASE
)
_WRITES_AFTER_WITH = re.compile(r"\b(INSERT|MERGE|UPDATE|DELETE|OVERWRITE)\b", re.IGNORECASE)


class ReadOnlyExecutor:
    """An executor that runs only statements that read; any other raises ``WouldWrite``.

    ``refused`` stays set once one was refused, for a caller whose code swallowed the
    exception (housekeeping that may fail): the step then did not run as it would have
    (``tests/unit/runtime/test_read_only.py``)."""

    def __init__(self, inner: Executor) -> None:
        self.inner = inner
        self.refused = False

    def _check(self, sql: str) -> None:
        read = _READS.match(sql)
        if read is None or (read[1].upper() == "WITH" and _WRITES_AFTER_WITH.search(sql)):
            self.refused = True
            raise WouldWrite(sql[:200])

    def execute(self, sql: str) -> None:
        self._check(sql)
        self.inner.execute(sql)

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        self._check(sql)
        return self.inner.query(sql)

    def small(
        self, rows: int | None, *, one_partition: bool = False
    ) -> contextlib.AbstractContextManager[bool]:
        return self.inner.small(rows, one_partition=one_partition)

    def shuffle_partitions(self) -> int | None:
        return self.inner.shuffle_partitions()

    def time_zone(self) -> str:
        return self.inner.time_zone()

    def __getattr__(self, name: str) -> Any:  # what a test reads of the executor
        return getattr(self.inner, name)


class SparkExecutor:
    """Statements straight on a SparkSession (tests, benchmarks, the demo)."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.statements: list[str] = []
        exclude_unsafe_rules(spark)

    def execute(self, sql: str) -> None:
        self.statements.append(sql)
        with GATE.statement():
            self.spark.sql(sql).collect()

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        self.statements.append(sql)
        with GATE.statement():
            return [tuple(row) for row in self.spark.sql(sql).collect()]

    def small(
        self, rows: int | None, *, one_partition: bool = False
    ) -> contextlib.AbstractContextManager[bool]:
        return small_statements(self.spark, rows, one_partition=one_partition)

    def shuffle_partitions(self) -> int | None:
        return session_shuffle_partitions(self.spark)

    def time_zone(self) -> str:
        return str(self.spark.conf.get(TIME_ZONE))


def set_value(rows: Sequence[Sequence[Any]], key: str) -> str:
    """The value a ``SET <key>`` statement answered (rows of key and value)."""
    for row in rows:
        if len(row) > 1 and str(row[0]) == key:
            return str(row[1])
    raise FastRefreshError(
        f"SET {key} answered {list(rows)!r}, not the setting's value. Fix: check that the "
        "connection runs Spark SQL (dbt-fastrefresh reads the session's time zone so)."
    )


def session_shuffle_partitions(spark: Any) -> int | None:
    """``spark``'s ``spark.sql.shuffle.partitions`` (None: no session, or not a number)."""
    if spark is None:
        return None
    value = str(spark.conf.get("spark.sql.shuffle.partitions", "200"))
    return int(value) if value.isdigit() else None


def _session_of(connection: Any) -> Any:
    """The SparkSession of this process a dbt connection runs on (method: session), or
    None (thrift, http, odbc: the session is on a server)."""
    if str(getattr(connection.credentials, "method", "")) != "session":
        return None
    from pyspark.sql import SparkSession

    # The session dbt-spark's cursor runs on (no JVM round trip), else the thread's.
    return SparkSession._instantiatedSession or SparkSession.getActiveSession()
