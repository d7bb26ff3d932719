"""The leases table: one row per lease held (``runtime/leases.py``), swapped atomically.

``<registry>.leases`` is an Iceberg table partitioned by the lease's name, so a lease's
row is a file of its own and replacing it is a metadata-only commit. Two ways to the
same rows, like the rest of the protocol:

- **Java** (Spark in this process): the new rows are written as Parquet files by
  Iceberg's own writer and committed as one ``OverwriteFiles`` of those partitions,
  validated against every commit since the version read (``validateFromSnapshot``
  with conflict detection on those names): Iceberg's optimistic concurrency makes the
  swap all or nothing, whichever process commits first. About 0.1-0.3 s.
- **SQL**: the rows read after a ``REFRESH TABLE`` (the session's catalog may have cached
  the table before another session's swap), a ``MERGE`` whose clauses only fire where the
  rows are still as read, under Iceberg's serializable isolation (a concurrent change to
  the table fails the later MERGE), then the rows read back to see whether the swap
  took. Row by row: a MERGE naming several leases may take some and not others (the
  caller gives those back). About 0.25-1 s, paid only on a shared catalog reached over
  thrift, http or odbc. Leases given back are a ``DELETE`` of the rows still as read
  instead (``_give_back``), which Iceberg answers from metadata alone: each lease is a
  file of its own partition, written with exact bounds on name and holder
  (``EXACT_BOUNDS``), so the filter matches whole files. About a fifth of the MERGE's
  time. Since any commit to the table fails a MERGE planned before it, this process's
  reads and swaps of the table take turns (its threads would otherwise fail each other's).

Every ``EXPIRE_EVERY`` swaps of this process, the table's old snapshots are expired, as
for the logs: each swap is a commit.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from dbt.adapters.fastrefresh.runtime.clock import utcnow
from dbt.adapters.fastrefresh.runtime.executor import Executor
from dbt.adapters.fastrefresh.runtime.leases import Lease
from dbt.adapters.fastrefresh.sqltext import (
    TableName,
    expire_sql,
    ident,
    literal,
    properties,
    timestamp,
)

TABLE = "leases"
COLUMNS = (
    "name STRING, holder STRING, host STRING, pid INT, acquired TIMESTAMP_NTZ, "
    "expires TIMESTAMP_NTZ, purpose STRING"
)
# A lease's name and holder as its file's exact column bounds (the default keeps 16
# characters of a string): a release's DELETE then matches whole files from metadata.
EXACT_BOUNDS = {f"write.metadata.metrics.column.{c}": "full" for c in ("name", "holder")}
PROPERTIES = (
    "'format-version'='2', 'write.metadata.delete-after-commit.enabled'='true', "
    "'write.metadata.previous-versions-max'='10', 'write.distribution-mode'='none', "
    "'write.merge.isolation-level'='serializable', 'write.delete.isolation-level'='serializable', "
    + properties(EXACT_BOUNDS)
)
EXPIRE_EVERY = 50
EXPIRE_OLDER_THAN = dt.timedelta(minutes=10)
KEEP_LAST = 5
_FIELDS = ("name", "holder", "host", "pid", "acquired", "expires", "purpose")
# What Iceberg raises when another commit to the table came first. The last one is the
# copy-on-write MERGE of a thread whose scan's snapshot is no longer the table's current
# one (another thread of this process swapped in between, on a catalog without caching).
CONFLICTS = ("ValidationException", "CommitFailedException", "has been concurrently modified")
_created: set[str] = set()
_created_lock = threading.Lock()
# Per leases table, this process's turn to read or swap (``SqlLeaseStore._turn``).
_turns: dict[str, threading.Lock] = {}


def leases_table(registry: str) -> TableName:
    return TableName(registry, TABLE)


def ensure_table(x: Executor, table: TableName, *, missing: bool = False) -> None:
    """The leases table, if missing (checked once per process, unless the caller saw it
    ``missing``: a registry dropped and made again)."""
    key = str(table)
    with _created_lock:
        if key in _created and not missing:
            return
        x.execute(f"CREATE SCHEMA IF NOT EXISTS {ident(table.schema)}")
        x.execute(
            f"CREATE TABLE IF NOT EXISTS {table.sql} ({COLUMNS}) USING iceberg "
            f"PARTITIONED BY (name) TBLPROPERTIES ({PROPERTIES})"
        )
        # A table made by an earlier version lacks the exact bounds: set once.
        found = {str(k): str(v) for k, v in x.query(f"SHOW TBLPROPERTIES {table.sql}")}
        if any(found.get(k) != v for k, v in EXACT_BOUNDS.items()):
            x.execute(f"ALTER TABLE {table.sql} SET TBLPROPERTIES ({properties(EXACT_BOUNDS)})")
        _created.add(key)


def lost_to_a_racer(exc: BaseException) -> bool:
    """Whether ``exc`` is Iceberg refusing a commit because another one came first."""
    text = str(exc)
    return any(conflict in text for conflict in CONFLICTS)


def _names_in(names: Sequence[str]) -> str:
    return ", ".join(literal(n) for n in names)


def _lease(values: Mapping[str, Any]) -> Lease:
    return Lease(
        name=str(values["name"]), holder=str(values["holder"]), host=str(values["host"]),
        pid=int(values["pid"]), acquired=_naive(values["acquired"]),
        expires=_naive(values["expires"]), purpose=str(values["purpose"] or ""),
    )  # fmt: skip


def _naive(value: Any) -> dt.datetime:
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=None)
    return dt.datetime.fromisoformat(str(value))


class SqlLeaseStore:
    """Leases through Spark SQL (any connection method)."""

    def __init__(self, x: Executor, registry: str) -> None:
        self.x = x
        self.table = leases_table(registry)
        self.swaps = 0

    def read(self, names: Sequence[str]) -> tuple[Any, dict[str, Lease]]:
        ensure_table(self.x, self.table)
        # The session's catalog may hold the table as it was when this session last used
        # it: another session's swap since (another process, or another of dbt's
        # connections to a Thrift server) would go unseen, and the MERGE built on that
        # read would fail Iceberg's validation, a second or so lost, before a read again.
        with self._turn():
            self.x.execute(f"REFRESH TABLE {self.table.sql}")
            found = self._rows(names)
        return found, found

    def _turn(self) -> threading.Lock:
        """This process's turn on the leases table: a refresh of the table by one thread
        while another's MERGE runs leaves the session's catalog a table object that the
        commit does not update, and the next MERGE planned on it fails validation."""
        with _created_lock:
            return _turns.setdefault(str(self.table), threading.Lock())

    def _rows(self, names: Sequence[str]) -> dict[str, Lease]:
        rows = self.x.query(
            f"SELECT {', '.join(_FIELDS)} FROM {self.table.sql} WHERE name IN ({_names_in(names)})"
        )
        return {str(r[0]): _lease(dict(zip(_FIELDS, r, strict=True))) for r in rows}

    def swap(self, version: Any, names: Sequence[str], new: Mapping[str, Lease]) -> bool:
        expected: Mapping[str, Lease] = version
        if not any(n in new for n in names):
            statement = _give_back(self.table, {n: expected.get(n) for n in names})
            if statement is None:  # none of them exists: nothing to give back
                return True
        else:
            statement = _merge(self.table, names, expected, new)
        now = self._commit(statement, names)
        return now is not None and all(_same(now.get(n), new.get(n)) for n in names)

    def give_back(self, leases: Mapping[str, Lease]) -> bool:
        """The ``DELETE`` of ``_give_back`` without the read before it (a ``REFRESH
        TABLE`` and a ``SELECT``, 30-80 ms through a server): the rows as this process
        last wrote them. Iceberg applies a metadata-only delete's filter to the table as
        it finds it at the commit, so a read of another session's commits first adds
        nothing; a renewal of this process committed in between leaves the row, and the
        read after the commit tells (False: the caller reads and swaps)."""
        statement = _give_back(self.table, leases)
        if statement is None:
            return True
        now = self._commit(statement, list(leases))
        return now is not None and all(
            now[n].holder != lease.holder for n, lease in leases.items() if n in now
        )

    def _commit(self, statement: str, names: Sequence[str]) -> dict[str, Lease] | None:
        """Run a swap's ``statement`` and read the leases of ``names`` after it (None:
        another change came first, and Iceberg's validation failed it). Under
        serializable isolation any commit to the table fails a MERGE planned before it,
        whatever lease it names: this process's threads (a renewal, another thread's
        refresh) would fail each other's. Their reads and commits take turns; another
        process's can still come first."""
        with self._turn():
            try:
                self.x.execute(statement)
            except Exception as exc:  # another change came first: read again
                if lost_to_a_racer(exc):
                    return None
                raise
            self.swaps += 1
            if self.swaps % EXPIRE_EVERY == 0:
                self._expire()
            # This session's own commit: no refresh needed to see it.
            return self._rows(names)

    def _expire(self) -> None:
        older = utcnow() - EXPIRE_OLDER_THAN
        with contextlib.suppress(Exception):  # housekeeping: the next one may pass
            self.x.execute(expire_sql(self.table, older, KEEP_LAST))


def _give_back(table: TableName, expected: Mapping[str, Lease | None]) -> str | None:
    """Leases given back: a ``DELETE`` of each row still as read (holder and expiry; a
    lease taken over since has a later expiry, and stays). Each row is a file of its own
    partition whose name and holder have exact column bounds (``EXACT_BOUNDS``), so Iceberg
    deletes the files from metadata alone, a commit of about a tenth of a second where
    the ``MERGE`` rewrote them (0.25-0.8 s through a server); a file written without those
    bounds (by an earlier version) makes it a row-level delete, as slow as the ``MERGE``
    and as exact. None: no row to delete."""
    rows = [
        f"(name = {literal(n)} AND holder = {literal(was.holder)} "
        f"AND expires = {timestamp(was.expires)})"
        for n, was in expected.items()
        if was is not None
    ]
    return f"DELETE FROM {table.sql} WHERE {' OR '.join(rows)}" if rows else None


def _merge(
    table: TableName, names: Sequence[str], expected: Mapping[str, Lease], new: Mapping[str, Lease]
) -> str:
    """Leases taken or renewed: a ``MERGE`` whose clauses fire only where a row is still
    as read."""
    source = " UNION ALL ".join(_source_row(n, expected.get(n), new.get(n)) for n in names)
    return (
        f"MERGE INTO {table.sql} t USING ({source}) s ON t.name = s.name "
        "WHEN MATCHED AND t.holder = s.was_holder AND t.expires = s.was_expires "
        "AND s.holder IS NULL THEN DELETE "
        "WHEN MATCHED AND t.holder = s.was_holder AND t.expires = s.was_expires "
        "THEN UPDATE SET holder = s.holder, host = s.host, pid = s.pid, "
        "acquired = s.acquired, expires = s.expires, purpose = s.purpose "
        "WHEN NOT MATCHED AND s.was_holder IS NULL AND s.holder IS NOT NULL THEN INSERT "
        "(name, holder, host, pid, acquired, expires, purpose) VALUES (s.name, s.holder, "
        "s.host, s.pid, s.acquired, s.expires, s.purpose)"
    )


def _source_row(name: str, was: Lease | None, new: Lease | None) -> str:
    """One row of the MERGE's source: the lease as read (``was_``) and as it should be."""

    def ts(value: dt.datetime | None) -> str:
        return "CAST(NULL AS TIMESTAMP_NTZ)" if value is None else timestamp(value)

    def text(value: str | None) -> str:
        return "CAST(NULL AS STRING)" if value is None else literal(value)

    return (
        f"SELECT {literal(name)} AS name, {text(was.holder if was else None)} AS was_holder, "
        f"{ts(was.expires if was else None)} AS was_expires, "
        f"{text(new.holder if new else None)} AS holder, "
        f"{text(new.host if new else None)} AS host, "
        f"CAST({new.pid if new else 'NULL'} AS INT) AS pid, "
        f"{ts(new.acquired if new else None)} AS acquired, "
        f"{ts(new.expires if new else None)} AS expires, "
        f"{text(new.purpose if new else None)} AS purpose"
    )


def _same(found: Lease | None, wanted: Lease | None) -> bool:
    if found is None or wanted is None:
        return found is None and wanted is None
    return found.holder == wanted.holder and found.expires == wanted.expires


class JavaLeaseStore:
    """Leases through Iceberg's Java API (Spark in this process)."""

    def __init__(self, spark: Any, x: Executor, registry: str) -> None:
        self.spark, self.x = spark, x
        self.table_name = leases_table(registry)
        jvm = spark._jvm
        self.jvm = jvm
        self.expressions = jvm.org.apache.iceberg.expressions.Expressions
        self._table: Any = None
        self.swaps = 0

    def _load(self) -> Any:
        if self._table is None:
            ensure_table(self.x, self.table_name)
            from dbt.adapters.fastrefresh.iceberg.jvm import JvmTables

            self._table = JvmTables(self.spark, self.x).table(self.table_name)
        self._table.refresh()
        return self._table

    def _filter(self, names: Sequence[str]) -> Any:
        values = self.jvm.java.util.ArrayList()
        for n in names:
            values.add(n)
        return getattr(self.expressions, "in")("name", values)  # `in` is Python's keyword

    def read(self, names: Sequence[str]) -> tuple[Any, dict[str, Lease]]:
        table = self._load()
        current = table.currentSnapshot()
        version = None if current is None else int(current.snapshotId())
        found: dict[str, Lease] = {}
        if version is None:
            return version, found
        scan = (
            self.jvm.org.apache.iceberg.data.IcebergGenerics.read(table)
            .useSnapshot(version)
            .where(self._filter(names))
            .build()
        )
        try:
            it = scan.iterator()
            while it.hasNext():
                record = it.next()
                values = {f: record.getField(f) for f in _FIELDS}
                values["acquired"] = str(values["acquired"])
                values["expires"] = str(values["expires"])
                lease = _lease(values)
                found[lease.name] = lease
        finally:
            scan.close()
        return version, found

    def swap(self, version: Any, names: Sequence[str], new: Mapping[str, Lease]) -> bool:
        table = self._table if self._table is not None else self._load()
        condition = self._filter(names)
        op = table.newOverwrite().overwriteByRowFilter(condition)
        for lease in new.values():
            op = op.addFile(self._write(table, lease))
        if version is not None:
            op = op.validateFromSnapshot(self.jvm.java.lang.Long.valueOf(str(version)))
        op = op.conflictDetectionFilter(condition).validateNoConflictingData()
        op = op.validateNoConflictingDeletes()
        try:
            op.commit()
        except Exception as exc:  # py4j wraps Iceberg's ValidationException
            if lost_to_a_racer(exc):
                return False
            raise
        self.swaps += 1
        if self.swaps % EXPIRE_EVERY == 0:
            self._expire(table)
        return True

    def give_back(self, leases: Mapping[str, Lease]) -> bool:
        """Not without a read: here a read is a table load and a scan in this process,
        milliseconds, and the swap validates against it."""
        return False

    def _write(self, table: Any, lease: Lease) -> Any:
        """One Parquet data file holding ``lease``'s row (Iceberg's generic writer)."""
        jvm = self.jvm
        schema, spec = table.schema(), table.spec()
        record = jvm.org.apache.iceberg.data.GenericRecord.create(schema)
        parse = jvm.java.time.LocalDateTime.parse
        values = {
            "name": lease.name, "holder": lease.holder, "host": lease.host, "pid": lease.pid,
            "acquired": parse(lease.acquired.isoformat()),
            "expires": parse(lease.expires.isoformat()), "purpose": lease.purpose,
        }  # fmt: skip
        for key, value in values.items():
            record.setField(key, value)
        partition = jvm.org.apache.iceberg.PartitionKey(spec, schema)
        partition.partition(record)
        location = table.locationProvider().newDataLocation(
            spec, partition, f"lease-{uuid.uuid4().hex}.parquet"
        )
        output = jvm.org.apache.iceberg.encryption.EncryptedFiles.plainAsEncryptedOutput(
            table.io().newOutputFile(location)
        )
        # With the table's properties: its exact bounds (``EXACT_BOUNDS``) among them.
        factory = jvm.org.apache.iceberg.data.GenericAppenderFactory(schema, spec).setAll(
            table.properties()
        )
        writer = factory.newDataWriter(output, jvm.org.apache.iceberg.FileFormat.PARQUET, partition)
        try:
            writer.write(record)
        finally:
            writer.close()
        return writer.toDataFile()

    def _expire(self, table: Any) -> None:
        older = int((dt.datetime.now(dt.timezone.utc) - EXPIRE_OLDER_THAN).timestamp() * 1000)
        with contextlib.suppress(Exception):  # housekeeping: the next one may pass
            table.expireSnapshots().expireOlderThan(older).retainLast(KEEP_LAST).commit()
