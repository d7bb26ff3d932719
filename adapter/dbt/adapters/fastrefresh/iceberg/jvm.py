"""``Tables`` through Iceberg's Java API, when Spark runs in this process (py4j).

What it buys, measured on the embedded stack (``make bench-micro``): a table's current
snapshot, properties and schema in a few milliseconds instead of a Spark statement each;
the protocol's state carried by the snapshot summary of the data commit it describes
(Iceberg's ``CommitMetadata``, a thread-local the Spark writers read), so recording it
costs no commit of its own and cannot be torn from its data; capture reading exactly the
data files a commit touched, staged as Spark scans (``ScanTaskSetManager``, as Iceberg's
rewrite procedures do), where SQL can only filter on the files' column bounds.

Every call sets this thread's active Spark session first: in a thread without one (dbt
runs models in threads), Spark's catalog manager falls back to a default configuration
and does not see the Iceberg session catalog. py4j pins each Python thread to one JVM
thread, so the commit summary set here reaches the statements this thread runs next.
"""

from __future__ import annotations

import contextlib
import json
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.iceberg import columns as mt
from dbt.adapters.fastrefresh.iceberg.changes import equality_delete_error, select_list
from dbt.adapters.fastrefresh.iceberg.sql import SqlTables
from dbt.adapters.fastrefresh.iceberg.tables import (
    SUMMARY_STATS,
    CaptureReads,
    History,
    RowSource,
    SnapshotInfo,
    TableMeta,
    epoch_millis,
)
from dbt.adapters.fastrefresh.runtime.executor import Executor
from dbt.adapters.fastrefresh.sqltext import TableName, ident, literal

# Parquet splits: a large data file is read by several tasks (both cores), not one.
SPLIT_SIZE = 32 * 1024 * 1024
# The columns of a position delete file that say which row it deletes.
_POSITIONS = "file_path STRING, pos BIGINT"
# Positions (the delete files' records, carried-over ones included) up to which a capture
# of several deleting commits gives each position its first commit in one task: read
# into one partition, they are grouped there, without a shuffle, and the broadcast is
# one Spark job where the shuffle made two. 10M-row merge-on-read master, 10,000 changes
# a round in three commits, rounds alternating in one process (medians of 7,
# 2026-12-01): captures of 2.00 s against 2.12 s. Above it (an uncompacted master's
# file-scoped delete files repeat their earlier positions: a million at 100M rows) the
# grouping keeps its shuffle, whose tasks run in parallel.
ONE_TASK_POSITIONS = 100_000
_LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"
XXHASH64_SEED = 42  # the seed of Spark's xxhash64()
_SPARK_TYPES = {"long": "bigint", "integer": "int", "short": "smallint", "byte": "tinyint"}
# A table's columns by (table uuid, schema id): a schema id never changes its columns, so
# this memo is never stale and needs no reset.
_SCHEMAS: dict[tuple[str, int], tuple[mt.Column, ...]] = {}


def catalog_type(spark_type: Any) -> str:
    """A Spark type from ``StructType.json()`` as ``DESCRIBE`` spells it (lower case).

    >>> catalog_type({"type": "array", "elementType": "long", "containsNull": True})
    'array<bigint>'
    >>> catalog_type("decimal(12,2)")
    'decimal(12,2)'
    """
    if isinstance(spark_type, str):
        return _SPARK_TYPES.get(spark_type, spark_type)
    kind = spark_type["type"]
    if kind == "array":
        return f"array<{catalog_type(spark_type['elementType'])}>"
    if kind == "map":
        key, value = catalog_type(spark_type["keyType"]), catalog_type(spark_type["valueType"])
        return f"map<{key},{value}>"
    if kind == "struct":
        fields = ",".join(
            f"{f['name'].lower()}:{catalog_type(f['type'])}" for f in spark_type["fields"]
        )
        return f"struct<{fields}>"
    return str(kind)


class _Handles:
    """The JVM classes and objects this module calls, looked up once per SparkSession (a
    lookup through py4j's ``jvm.org.apache...`` costs a round trip per package level)."""

    def __init__(self, spark: Any) -> None:
        jvm = spark._jvm
        self.gateway = spark.sparkContext._gateway
        self.session_class = jvm.org.apache.spark.sql.SparkSession
        self.identifier = jvm.org.apache.spark.sql.connector.catalog.Identifier
        self.string = jvm.java.lang.String
        self.long = jvm.java.lang.Long
        self.hash_map = jvm.java.util.HashMap
        self.array_list = jvm.java.util.ArrayList
        self.lists = jvm.org.apache.iceberg.relocated.com.google.common.collect.Lists
        self.content_files = jvm.org.apache.iceberg.util.ContentFileUtil
        self.utf8_string = jvm.org.apache.spark.unsafe.types.UTF8String
        self.xxhash64 = jvm.org.apache.spark.sql.catalyst.expressions.XXH64
        self.snapshot_parser = jvm.org.apache.iceberg.SnapshotParser
        self.schema_parser = jvm.org.apache.iceberg.SchemaParser
        self.json = jvm.org.apache.iceberg.util.JsonUtil.mapper()
        self.schema_util = jvm.org.apache.iceberg.spark.SparkSchemaUtil
        self.expressions = jvm.org.apache.iceberg.expressions.Expressions
        self.conversions = jvm.org.apache.iceberg.types.Conversions
        self.task_sets = jvm.org.apache.iceberg.spark.ScanTaskSetManager.get()
        self.file_scan_task = jvm.org.apache.iceberg.BaseFileScanTask
        self.no_deletes = self.gateway.new_array(jvm.org.apache.iceberg.DeleteFile, 0)
        self.spec_parser = jvm.org.apache.iceberg.PartitionSpecParser
        self.residuals = jvm.org.apache.iceberg.expressions.ResidualEvaluator
        # SparkTableCache.get() is overloaded with an instance get(name) that py4j picks.
        cache_class = jvm.org.apache.iceberg.spark.SparkTableCache._java_lang_class
        self.table_cache = cache_class.getMethod("get", None).invoke(None, None)
        field = jvm.org.apache.iceberg.spark.CommitMetadata._java_lang_class.getDeclaredField(
            "COMMIT_PROPERTIES"
        )
        field.setAccessible(True)
        self.commit_properties = field.get(None)
        self.catalog: Any = None
        self.views_in_iceberg: bool | None = None
        # Names last found not to be Iceberg tables (``JvmTables.iceberg_table``).
        self.not_iceberg: set[TableName] = set()
        self.identifiers: dict[TableName, Any] = {}
        self.active = threading.local()

    @staticmethod
    def format_version(table: Any) -> int:
        """The Iceberg format version of a loaded table (1, 2 or 3)."""
        return int(table.operations().current().formatVersion())


_HANDLES: dict[int, _Handles] = {}
_HANDLES_LOCK = threading.Lock()


def _handles(spark: Any) -> _Handles:
    key = id(spark._jsparkSession)
    with _HANDLES_LOCK:
        handles = _HANDLES.get(key)
        if handles is None:
            handles = _HANDLES[key] = _Handles(spark)
        return handles


class _JvmHistory:
    def __init__(self, tables: JvmTables, table: Any, keys: Sequence[str]) -> None:
        self.tables, self.table, self.keys = tables, table, keys
        self._seen: dict[int, SnapshotInfo | None] = {}

    def get(self, snapshot_id: int) -> SnapshotInfo | None:
        if snapshot_id not in self._seen:
            s = self.table.snapshot(snapshot_id)
            self._seen[snapshot_id] = None if s is None else self.tables.snapshot_info(s, self.keys)
        return self._seen[snapshot_id]


def _listed(h: _Handles, iterable: Any) -> list[Any]:
    """The elements of a Java ``Iterable``, copied to a list in the JVM first: a round trip
    each, where iterating costs two (``hasNext`` and ``next``)."""
    copied = h.lists.newArrayList(iterable)
    return [copied.get(i) for i in range(copied.size())]


def _load_failure(exc: Exception) -> str | None:
    """Why the catalog could not give an Iceberg table (``JvmTables.table``): ``missing``,
    ``not iceberg`` (a view or another kind of table), or None (another error). py4j wraps
    Spark's exceptions; their text tells the cases apart."""
    text = str(exc)
    if "NoSuchTableException" in text or "TABLE_OR_VIEW_NOT_FOUND" in text:
        return "missing"
    if "Method table([]) does not exist" in text or "not an Iceberg table" in text:
        return "not iceberg"
    return None


class JvmTables:
    """``Tables`` through Iceberg's Java API (see the module docstring)."""

    kind = "java"

    def __init__(self, spark: Any, x: Executor, state_keys: Sequence[str] = ()) -> None:
        self.spark = spark
        self.x = x
        self.state_keys = tuple(state_keys)
        self.jvm = spark._jvm
        self.js = spark._jsparkSession
        self.h = _handles(spark)

    # -- loading -------------------------------------------------------------------------

    def _activate(self) -> None:
        """Make this thread's Spark session the active one (once per thread)."""
        if not getattr(self.h.active, "done", False):
            self.h.session_class.setActiveSession(self.js)
            self.h.active.done = True
        if self.h.catalog is None:
            self.h.catalog = self.js.sessionState().catalogManager().catalog("spark_catalog")

    def _identifier(self, name: TableName) -> Any:
        ident = self.h.identifiers.get(name)
        if ident is None:
            namespace = self.h.gateway.new_array(self.h.string, 1)
            namespace[0] = name.schema
            ident = self.h.identifiers[name] = self.h.identifier.of(namespace, name.table)
        return ident

    def table(self, name: TableName) -> Any:
        """The Iceberg table object (the session catalog's cached one); errors as Spark's."""
        self._activate()
        loaded = self.h.catalog.loadTable(self._identifier(name))
        return loaded.table()

    def load(self, name: TableName, *, fresh: bool = False) -> TableMeta | None:
        try:
            table = self.table(name)
        except Exception as exc:
            failure = _load_failure(exc)
            if failure == "missing":
                return None
            if failure == "not iceberg":
                return SqlTables(self.x).load(name, fresh=fresh)  # rare
            raise
        if fresh:
            table.refresh()
        self.h.not_iceberg.discard(name)
        return self._meta(name, table)

    def iceberg_table(self, name: TableName) -> TableMeta | None:
        """The catalog's cached table, refreshed: one metastore call, where a view's
        property costs one too (``view_property``), so an Iceberg master costs its refresh
        alone. A name last found to be something else (a view, mostly) is not tried again:
        for a view the catalog asks the metastore twice (Iceberg's catalog, then Spark's),
        and ``view_property`` a third time. A cached table that another process has since
        dropped or replaced with a view fails its refresh: it leaves the cache, and the
        caller asks ``view_property``."""
        if name in self.h.not_iceberg:
            return None
        try:
            table = self.table(name)
        except Exception as exc:
            failure = _load_failure(exc)
            if failure is None:
                raise
            if failure == "not iceberg":
                self.h.not_iceberg.add(name)
            return None
        try:
            table.refresh()
        except Exception as exc:
            text = str(exc)
            if "NoSuch" not in text and "Not an iceberg table" not in text:
                raise
            self.h.catalog.invalidateTable(self._identifier(name))
            return None
        return self._meta(name, table)

    def _meta(self, name: TableName, table: Any) -> TableMeta:
        current = table.currentSnapshot()
        properties = json.loads(self.h.json.writeValueAsString(table.properties()))
        schema = table.schema()
        identifiers = json.loads(self.h.json.writeValueAsString(schema.identifierFieldNames()))
        return TableMeta(
            name=name,
            iceberg=True,
            provider="iceberg",
            columns=self._columns(table, schema),
            current_snapshot=None if current is None else int(current.snapshotId()),
            properties={k: v for k, v in properties.items() if k.startswith("fast_refresh.")},
            identifier_fields=tuple(sorted(str(f).lower() for f in identifiers)),
            rows=_total_records(current),
        )

    def _columns(self, table: Any, schema: Any) -> tuple[mt.Column, ...]:
        key = (str(table.uuid()), int(schema.schemaId()))
        cached = _SCHEMAS.get(key)
        if cached is None:
            struct = self.h.schema_util.convert(schema)
            fields = json.loads(struct.json())["fields"]
            ids = {
                f["name"].lower(): int(f["id"])
                for f in json.loads(self.h.schema_parser.toJson(schema))["fields"]
            }
            cached = tuple(
                mt.Column(f["name"].lower(), catalog_type(f["type"]), ids.get(f["name"].lower()))
                for f in fields
            )
            _SCHEMAS[key] = cached
        return cached

    def snapshot_info(self, snapshot: Any, keys: Sequence[str]) -> SnapshotInfo:
        """A snapshot in one round trip (Iceberg's own JSON of it)."""
        d = json.loads(self.h.snapshot_parser.toJson(snapshot))
        summary = d.get("summary", {})
        wanted = {k: str(summary[k]) for k in (*SUMMARY_STATS, *keys) if k in summary}
        parent = d.get("parent-snapshot-id")
        return SnapshotInfo(
            int(d["snapshot-id"]),
            None if parent is None else int(parent),
            str(summary.get("operation", "")),
            epoch_millis(int(d["timestamp-ms"])),
            wanted,
        )

    def history(self, name: TableName) -> _JvmHistory:
        return _JvmHistory(self, self.table(name), self.state_keys)

    def load_state(self, name: TableName, *, fresh: bool = False) -> TableMeta | None:
        return self.load(name, fresh=fresh)  # the columns cost nothing more here

    def columns(self, name: TableName, *, own_write: bool = False) -> tuple[mt.Column, ...] | None:
        # Milliseconds, as any load here. After a CREATE OR REPLACE, Iceberg's caching
        # catalog has dropped the replaced table (its commit does); refreshed all the
        # same, a few milliseconds, for a catalog that caches it otherwise.
        meta = self.load(name, fresh=own_write)
        return None if meta is None else meta.columns

    @contextlib.contextmanager
    def reading(self, keep: Callable[[Mapping[str, str]], bool] | None = None) -> Iterator[None]:
        """A load here costs milliseconds: nothing to reuse (see ``SqlTables.reading``)."""
        yield

    # -- commits -------------------------------------------------------------------------

    def view_property(self, name: TableName, key: str) -> str | None:
        return self.view_entry(name, key)[1]

    def view_entry(self, name: TableName, key: str) -> tuple[bool, str | None]:
        taken, found = self.view_entries(name, (key,))
        return taken, found.get(key)

    def view_entries(self, name: TableName, keys: Sequence[str]) -> tuple[bool, dict[str, str]]:
        """From the session catalog's metadata (a metastore call, no Spark job)."""
        self._activate()
        if self._views_in_iceberg():
            return self._iceberg_view_entries(name, keys)
        try:
            loaded = (
                self.js.sessionState()
                .catalog()
                .getTableMetadata(
                    self.jvm.org.apache.spark.sql.catalyst.TableIdentifier(
                        name.table, self.jvm.scala.Some(name.schema)
                    )
                )
            )
        except Exception as exc:  # py4j wraps Spark's NoSuchTableException
            if "NoSuchTable" in str(exc) or "TABLE_OR_VIEW_NOT_FOUND" in str(exc):
                return False, {}
            raise
        properties = loaded.properties()
        found = {k: properties.get(k) for k in keys}
        return True, {k: str(v.get()) for k, v in found.items() if v.isDefined()}

    def snapshot_schema(
        self, name: TableName, snapshot: int, current: Sequence[mt.Column]
    ) -> mt.AtSnapshot | None:
        """From the table's metadata: the schema the snapshot was committed under, matched
        to ``current`` by field id."""
        table = self.table(name)
        found = table.snapshot(snapshot)
        schema_id = None if found is None else found.schemaId()
        if schema_id is None or int(schema_id) == int(table.schema().schemaId()):
            return None
        schema = table.schemas().get(schema_id)
        if schema is None:
            return None
        return mt.at_snapshot(current, self._columns(table, schema))

    def _views_in_iceberg(self) -> bool:
        """Whether the session catalog is Iceberg's own ``SparkCatalog`` (a shared catalog,
        ``runtime/catalog.py``), which keeps the views too; Spark's catalog then knows none."""
        if self.h.views_in_iceberg is None:
            name = str(self.h.catalog.getClass().getName())
            self.h.views_in_iceberg = name == "org.apache.iceberg.spark.SparkCatalog"
        return bool(self.h.views_in_iceberg)

    def _iceberg_view_entries(
        self, name: TableName, keys: Sequence[str]
    ) -> tuple[bool, dict[str, str]]:
        identifier = self._identifier(name)
        try:
            view = self.h.catalog.loadView(identifier)
        except Exception as exc:  # py4j wraps Spark's NoSuchViewException
            if "NoSuchView" in str(exc) or "VIEW_NOT_FOUND" in str(exc):
                return self._table_named(identifier), {}
            raise
        properties = view.properties()
        found = {k: properties.get(k) for k in keys}
        return True, {k: str(v) for k, v in found.items() if v is not None}

    def _table_named(self, identifier: Any) -> bool:
        """Whether the catalog has a table of that name (a second call to it, where the
        plain CREATE VIEW it spares a first build costs a Spark statement). A table it
        still caches after another process dropped it counts: the view then takes the
        way of a taken name, which a free one takes as well."""
        try:
            self.h.catalog.loadTable(identifier)
        except Exception as exc:
            failure = _load_failure(exc)
            if failure is None:
                raise
            return failure == "not iceberg"
        return True

    def set_properties(
        self, name: TableName, values: Mapping[str, str], *, remove: Sequence[str] = ()
    ) -> None:
        update = self.table(name).updateProperties()
        for key, value in values.items():
            update = update.set(key, value)
        for key in remove:
            update = update.remove(key)
        update.commit()

    @contextlib.contextmanager
    def summary(self, values: Mapping[str, str]) -> Iterator[bool]:
        holder = self.h.commit_properties
        properties = self.h.hash_map()
        for key, value in values.items():
            properties.put(key, value)
        holder.set(properties)
        try:
            yield True
        finally:
            holder.remove()

    def delete_through(
        self, name: TableName, column: str, value: int, summary: Mapping[str, str]
    ) -> bool:
        expressions = self.jvm.org.apache.iceberg.expressions.Expressions
        delete = (
            self.table(name)
            .newDelete()
            .deleteFromRowFilter(
                expressions.lessThanOrEqual(column, self.jvm.java.lang.Long(int(value)))
            )
        )
        for key, v in summary.items():
            delete = delete.set(key, v)
        try:
            delete.commit()
        except Exception as exc:
            if "some, but not all, rows match" in str(exc) or "Cannot delete file" in str(exc):
                return False
            raise
        return True

    # -- capture's reads -------------------------------------------------------------------

    @contextlib.contextmanager
    def capture_reads(
        self,
        master: TableName,
        columns: Sequence[mt.Column],
        key_columns: Sequence[str],
        snapshots: Sequence[SnapshotInfo],
        *,
        absent: Mapping[int, mt.AtSnapshot] | None = None,
        history: History | None = None,
    ) -> Iterator[CaptureReads]:
        staged = _Staging(self, master, columns, key_columns, absent or {})
        try:
            yield staged.reads(snapshots)
        finally:
            staged.close()


def path_hash(h: _Handles, path: str) -> int:
    """Spark's ``xxhash64(path)`` of a string, computed in the JVM as Spark computes it
    (XXH64 of its UTF-8 bytes, seed 42), without a statement."""
    return int(h.xxhash64.hashUTF8String(h.utf8_string.fromString(path), XXHASH64_SEED))


def listing_chunks(paths: Sequence[str], threshold: int) -> list[list[str]]:
    """``paths`` in the reads a read of files should make: local files in groups of at
    most ``threshold`` (Spark lists more paths than that with a Spark job, where a local
    listing takes microseconds a file: 0.26-0.29 s a job for 50 delete files, on a
    master whose commits delete from that many data files), any other storage in one
    read (there Spark's parallel listing is what saves time).

    >>> listing_chunks(["file:/w/a", "/w/b", "file:/w/c"], 2)
    [['file:/w/a', '/w/b'], ['file:/w/c']]
    >>> listing_chunks(["s3://b/a", "file:/w/b", "file:/w/c"], 2)
    [['s3://b/a', 'file:/w/b', 'file:/w/c']]
    """
    if not all(p.startswith(("file:", "/")) for p in paths):
        return [list(paths)]
    return [list(paths[i : i + threshold]) for i in range(0, len(paths), threshold)]


def _first_reads(
    deleting: Sequence[tuple[int, SnapshotInfo, list[Any]]], targets: Mapping[int, set[str]]
) -> dict[int | None, set[str]]:
    """The data files several deleting commits point into, by the snapshot each is read at:
    the parent of the first commit that deletes from it. A row live there and named by a
    later commit only was deleted by that commit: an earlier one deleting it would name it
    too."""
    first: dict[str, int | None] = {}
    for ordinal, info, _ in deleting:
        for path in sorted(targets[ordinal]):
            first.setdefault(path, info.parent_id)
    by_snapshot: dict[int | None, set[str]] = {}
    for path, snapshot_id in first.items():
        by_snapshot.setdefault(snapshot_id, set()).add(path)
    return by_snapshot


def _total_records(snapshot: Any) -> int | None:
    """The rows of a table at ``snapshot`` from its summary (0 without one; None: the
    writer kept no count)."""
    if snapshot is None:
        return 0
    value = snapshot.summary().get("total-records")
    return int(value) if value is not None and str(value).isdigit() else None


class _Staging:
    """The temporary views capture reads one master's commits from (see ``capture_reads``)."""

    def __init__(
        self,
        tables: JvmTables,
        master: TableName,
        columns: Sequence[mt.Column],
        key_columns: Sequence[str],
        absent: Mapping[int, mt.AtSnapshot],
    ) -> None:
        self.t = tables
        self.master = master
        self.columns = list(columns)
        # Staged scans read the files with the table's schema; a read by time travel
        # (v3 deletes) has the snapshot's, without the columns added after it.
        self.absent = absent
        self.table = tables.table(master)
        self.io = self.table.io()
        self.names = [c.name for c in columns]
        self.key_columns = list(key_columns)
        self.views: list[str] = []
        self.sets: list[str] = []
        self.tag = uuid.uuid4().hex[:12]

    def reads(self, snapshots: Sequence[SnapshotInfo]) -> CaptureReads:
        """The row sources of ``snapshots``' changes. Data files are grouped by the
        snapshot they are read at and what their rows are to each commit, and each group is
        one staged scan: a file one commit added and the next rewrote is read once."""
        commits: list[tuple[int, SnapshotInfo]] = []
        by_read: dict[int, dict[str, tuple[Any, dict[int, int]]]] = {}
        deleting: list[tuple[int, SnapshotInfo, list[Any]]] = []
        targets: dict[int, set[str]] = {}  # the data files each commit's deletes point into
        # The files each commit added that none of its delete files points into: read at
        # that commit, nothing deletes from them (``_stage``'s ``direct``). An earlier
        # delete file cannot: a position delete names its file, an equality delete
        # applies only to older files.
        clean_adds: dict[int, set[str]] = {}
        for info in snapshots:
            if info.operation == "replace":
                continue
            snapshot = self.table.snapshot(info.snapshot_id)
            removed = _listed(self.t.h, snapshot.removedDataFiles(self.io))
            added = _listed(self.t.h, snapshot.addedDataFiles(self.io))
            deletes = _listed(self.t.h, snapshot.addedDeleteFiles(self.io))
            if not (removed or added or deletes):
                continue  # an empty commit (DML that matched nothing)
            ordinal = len(commits)
            commits.append((ordinal, info))
            if removed:
                if info.parent_id is None:
                    raise self._no_parent()
                read = by_read.setdefault(info.parent_id, {})
                for f in removed:
                    read.setdefault(str(f.location()), (f, {}))[1][ordinal] = -1
            read = by_read.setdefault(info.snapshot_id, {})
            added_paths = [str(f.location()) for f in added]
            for path, f in zip(added_paths, added, strict=True):
                read.setdefault(path, (f, {}))[1][ordinal] = 1
            if deletes:
                deleting.append((ordinal, info, deletes))
                targets[ordinal] = self._targets(info, deletes)
            clean_adds[info.snapshot_id] = set(added_paths) - targets.get(ordinal, set())
        sources, unshuffled = self._deleted_rows(deleting, targets) if deleting else ([], True)
        # The rows read (the whole files'; a delete's rows are not counted here).
        rows: int | None = None if deleting else 0
        for snapshot_id, files in sorted(by_read.items()):
            groups: dict[tuple[tuple[int, int], ...], dict[str, Any]] = {}
            for path, (f, signs) in files.items():
                groups.setdefault(tuple(sorted(signs.items())), {})[path] = f
                if rows is not None:
                    rows += int(f.recordCount())
            undeleted = self._without_deletes(snapshot_id)
            clean = clean_adds.get(snapshot_id, set())
            for signs_key, group in sorted(groups.items()):
                direct = undeleted or group.keys() <= clean
                view = self._stage(snapshot_id, group, direct=direct)
                sources.append(RowSource(self._select(view), dict(signs_key), whole_files=True))
        return CaptureReads(tuple(commits), tuple(sources), rows, unshuffled)

    def _without_deletes(self, snapshot_id: int | None) -> bool:
        """Whether the table has no delete file at all at ``snapshot_id`` (its summary's
        ``total-delete-files`` is 0): its data files are read as they are."""
        snapshot = self.table.snapshot(snapshot_id) if snapshot_id is not None else None
        if snapshot is None:
            return False
        return str(snapshot.summary().get("total-delete-files")) == "0"

    def _no_parent(self) -> FastRefreshError:
        return FastRefreshError(
            f"Capture of {self.master}: a commit removed files but has no parent snapshot. "
            "Fix: run drop_mview_log and create_mview_log again (views then refresh "
            "completely once)."
        )

    def _select(self, view: str, alias: str = "") -> str:
        prefix = f"{alias}." if alias else ""
        return f"SELECT {', '.join(prefix + ident(n) for n in self.names)} FROM {view} {alias}"

    def _targets(self, info: SnapshotInfo, deletes: Sequence[Any]) -> set[str]:
        """The data files a commit's delete files point into."""
        targets: set[str] = set()
        for d in deletes:
            if str(d.content().toString()) == "EQUALITY_DELETES":
                raise equality_delete_error(self.master, info.snapshot_id)
            targets |= self._referenced(d, info.snapshot_id)
        return targets

    def _deleted_rows(
        self,
        deleting: Sequence[tuple[int, SnapshotInfo, list[Any]]],
        targets: Mapping[int, set[str]],
    ) -> tuple[list[RowSource], bool]:
        """Rows the commits' delete files removed: rows of the data files they point into
        (``targets``, by commit), live before the commit, at the positions they name
        (position deletes and deletion vectors alike). With whether they shuffle nothing
        (``CaptureReads.unshuffled``): v2 positions are broadcast, grouped by commit in
        one task up to ``ONE_TASK_POSITIONS``; v3 deletes join two scans with a shuffle."""
        if self.t.h.format_version(self.table) >= 3:
            return [
                RowSource(self._v3_deleted_rows(info, targets[ordinal]), {ordinal: -1})
                for ordinal, info, _ in deleting
            ], False
        # v2: the rows live before the commit whose positions its delete files name. A
        # delete file may repeat positions deleted earlier (file-scoped deletes carry them
        # over), but those rows are not live before it. The positions are usually far
        # fewer than the rows read, so the join is a broadcast: one pass over the live
        # rows, no shuffle, where an anti join with the files' live positions after the
        # commit shuffled both sides. The positions are matched by their file's path hash
        # (``_file_keys``).
        cols = ", ".join("b__." + ident(n) for n in self.names)
        position_key, row_key = self._file_keys(set().union(*targets.values()))
        on = f"{row_key} = c__.file__ AND b__._pos = c__.pos"
        if len(deleting) == 1:
            ordinal, info, deletes = deleting[0]
            before = self._stage(info.parent_id, {}, paths=targets[ordinal], positions=True)
            positions = self._delete_positions([(ordinal, info.snapshot_id, deletes)], position_key)
            return [
                RowSource(
                    f"SELECT /*+ BROADCAST(c__) */ {cols} FROM {before} b__ LEFT SEMI JOIN "
                    f"{positions} c__ ON {on}",
                    {ordinal: -1},
                )
            ], True
        # Several commits deleting from one data file (an UPDATE, then a DELETE): the file
        # is read once, before the first of them (``_first_reads``), and each position
        # goes to the first commit that names it.
        by_snapshot = _first_reads(deleting, targets)
        count = sum(int(d.recordCount()) for _, _, deletes in deleting for d in deletes)
        one_task = count <= ONE_TASK_POSITIONS
        positions = self._delete_positions(
            [(o, info.snapshot_id, d) for o, info, d in deleting], position_key, one_task=one_task
        )
        signs = {ordinal: -1 for ordinal, _, _ in deleting}
        sources = [
            RowSource(
                f"SELECT /*+ BROADCAST(c__) */ {cols}, c__.ord__ FROM "
                f"{self._stage(snapshot_id, {}, paths=paths, positions=True)} b__ JOIN "
                f"{positions} c__ ON {on}",
                signs,
                by_row=True,
            )
            for snapshot_id, paths in sorted(by_snapshot.items(), key=lambda kv: kv[0] or 0)
        ]
        return sources, one_task

    def _v3_deleted_rows(self, info: SnapshotInfo, targets: set[str]) -> str:
        """Staged scans of a v3 table do not expose _file/_pos (its row-lineage columns
        take their place): the files are read by time travel, filtered by name, before
        and after the commit."""
        if info.parent_id is None:
            raise self._no_parent()
        m = self.master.sql
        names = select_list(self.columns, self.absent.get(info.parent_id))
        where = "_file IN (" + ", ".join(literal(p) for p in sorted(targets)) + ")"
        before = (
            f"(SELECT {names}, _file, _pos FROM {m} VERSION AS OF {info.parent_id} WHERE {where})"
        )
        after = f"(SELECT _file, _pos FROM {m} VERSION AS OF {info.snapshot_id} WHERE {where})"
        return (
            f"{self._select(before, 'b__')} LEFT ANTI JOIN {after} c__ "
            "ON b__._file = c__._file AND b__._pos = c__._pos"
        )

    def _delete_positions(
        self,
        deleting: Sequence[tuple[int, int, Sequence[Any]]],
        key: str,
        *,
        one_task: bool = False,
    ) -> str:
        """A temporary view of the (file__, pos) pairs of position delete files (of each
        commit: its ordinal, its snapshot id and its files), read as the plain files they
        are (Iceberg writes them in the table's delete format; Avro ones through Iceberg:
        ``_avro_positions``): ``file__`` is ``key`` of the position's ``file_path``
        (``_file_keys``). For several commits, with ``ord__``: the first of them (by
        ordinal) that names each position, found in one task when ``one_task``
        (``ONE_TASK_POSITIONS``)."""
        by_commit = len(deleting) > 1
        threshold = self._listing_threshold()
        frame = None
        for ordinal, snapshot_id, deletes in deleting:
            ords = [f"{ordinal} AS ord__"] if by_commit else []
            by_format: dict[str, list[str]] = {}
            for d in deletes:
                by_format.setdefault(str(d.format().toString()).lower(), []).append(
                    str(d.location())
                )
            for file_format, paths in sorted(by_format.items()):
                for chunk in listing_chunks(paths, threshold):
                    if file_format == "avro":
                        part = self._avro_positions(snapshot_id, chunk)
                    else:  # the schema given: no footer is read to infer it (one per file)
                        reader = self.t.spark.read.format(file_format).schema(_POSITIONS)
                        part = reader.load(chunk)
                    part = part.selectExpr(f"{key} AS file__", "pos", *ords)
                    frame = part if frame is None else frame.unionByName(part)
        assert frame is not None
        if by_commit:
            if one_task:
                frame = frame.coalesce(1)  # SinglePartition: the grouping needs no shuffle
            frame = frame.groupBy("file__", "pos").agg({"ord__": "min"})
            frame = frame.withColumnRenamed("min(ord__)", "ord__")
        view = f"__fr_cap_{self.tag}_{len(self.views)}"
        frame.createOrReplaceTempView(view)
        self.views.append(view)
        return view

    def _listing_threshold(self) -> int:
        """Spark's ``parallelPartitionDiscovery.threshold`` in this session: above that
        many paths, a read lists them with a Spark job of its own."""
        value = str(self.t.spark.conf.get(_LISTING_THRESHOLD, "32"))
        return int(value) if value.isdigit() and int(value) > 0 else 32

    def _file_keys(self, paths: set[str]) -> tuple[str, str]:
        """What names a data file where a delete position (its ``file_path``) meets the
        rows of the data files at ``paths`` (``b__``, their ``_file``): the two
        expressions, of the position and of the row.

        A position names its data file by path, a hundred bytes or so, and a file-scoped
        delete file repeats its file's earlier positions (on a master not compacted for a
        while, millions of them): they are grouped and broadcast by the path's 64-bit hash
        instead, when the hashes of ``paths`` are distinct (else by path). A 100M-row
        merge-on-read master with a long history, 100,000 changes: captures took 4.6-5.0 s,
        against 6.0-7.0 s by path (rounds alternating in one process, 2026-11-29)."""
        if len({path_hash(self.t.h, p) for p in paths}) == len(paths):
            return "xxhash64(file_path)", "xxhash64(b__._file)"
        return "file_path", "b__._file"

    def _referenced(self, delete: Any, snapshot_id: int) -> set[str]:
        """The data files a delete file points into: the one it names (a deletion vector's
        ``referenced_data_file``), or the one its ``file_path`` bounds both give, as
        Iceberg's own planning finds it (``ContentFileUtil``: one round trip, where
        reading and decoding the bounds from here took ten)."""
        referenced = self.t.h.content_files.referencedDataFileLocation(delete)
        if referenced is not None:
            return {str(referenced)}
        # A delete file over several data files without bounds: read its paths.
        file_format, location = str(delete.format().toString()).lower(), str(delete.location())
        if file_format == "avro":
            rows = self._avro_positions(snapshot_id, [location])
        else:
            rows = self.t.spark.read.format(file_format).load(location)
        return {str(r[0]) for r in rows.select("file_path").distinct().collect()}

    def _avro_positions(self, snapshot_id: int, paths: Sequence[str]) -> Any:
        """The (file_path, pos) pairs of Avro position delete files (the table property
        ``write.delete.format.default = avro``), as of the commit ``snapshot_id`` that
        wrote them: Spark's Avro source is a module the embedded Spark does not ship, so
        they are read through Iceberg's own reader, the ``position_deletes`` metadata
        table (as the SQL path reads every delete file)."""
        named = ", ".join(literal(p) for p in paths)
        return self.t.spark.sql(
            f"SELECT file_path, pos FROM {self.master.metadata('position_deletes')} VERSION AS "
            f"OF {snapshot_id} WHERE delete_file_path IN ({named})"
        )

    def _stage(
        self,
        snapshot_id: int | None,
        files: Mapping[str, Any],
        *,
        paths: set[str] | None = None,
        positions: bool = False,
        direct: bool = False,
    ) -> str:
        """A temporary view of ``files`` (data files by path; or of the data files at
        ``paths``, whose bounds are not known: no pruning) as they are at ``snapshot_id``
        (deletes applied).

        ``direct``: no delete file applies to ``files`` at that snapshot (the caller
        knows), so their scan tasks are made from them as they are, the way Iceberg's
        planning makes them, without planning the snapshot: that reads every manifest
        of the table, 30-60 ms a scan on a master with a few dozen commits."""
        if snapshot_id is None:
            raise self._no_parent()
        wanted = set(paths) if paths is not None else set(files)
        if direct and paths is None:
            tasks = self.t.h.array_list()
            for f in files.values():
                tasks.add(self._task(f))
        else:
            tasks = self._planned(snapshot_id, list(files.values()), wanted)
        set_id = f"fr-{self.tag}-{len(self.sets)}"
        view = f"__fr_cap_{self.tag}_{len(self.views)}"
        if tasks.size() != len(wanted):
            raise FastRefreshError(
                f"Capture of {self.master}: {len(wanted) - tasks.size()} data file(s) of "
                f"snapshot {snapshot_id} could not be found in its metadata (expired or "
                "removed under the capture). Fix: run capture again; if it persists, drop "
                "and recreate the log (views then refresh completely once)."
            )
        if not wanted:
            self.t.spark.sql(
                f"CREATE OR REPLACE TEMPORARY VIEW {view} AS SELECT * FROM "
                f"{self.master.sql} WHERE FALSE"
            )
            self.views.append(view)
            return view
        self.t.h.task_sets.stageTasks(self.table, set_id, tasks)
        # The staged scan reads the table object itself (Iceberg's table cache, as its
        # rewrite procedures do), not a catalog's lookup of its name.
        self.t.h.table_cache.add(set_id, self.table)
        self.sets.append(set_id)
        frame = (
            self.t.spark.read.format("iceberg").option("scan-task-set-id", set_id)
            .option("split-size", str(SPLIT_SIZE)).load(set_id)
        )  # fmt: skip
        # Metadata columns are not seen through a view: selected here when wanted. The
        # other columns are selected by the SQL that reads the view (``_select``).
        if positions:
            # Quoted: a name holding a dot (`x.y`) is a column, not a struct's field.
            frame = frame.select(*(ident(n) for n in self.names), "_file", "_pos")
        frame.createOrReplaceTempView(view)
        self.views.append(view)
        return view

    def _planned(self, snapshot_id: int, files: Sequence[Any], wanted: set[str]) -> Any:
        """The scan tasks of the data files at ``wanted`` (``files``, when known: their
        bounds prune the planning) at ``snapshot_id``, planned: with the deletes that
        apply to them there."""
        bounds = self._bounds_filter(files) if files else self.t.h.expressions.alwaysTrue()
        scan = self.table.newScan().useSnapshot(snapshot_id).ignoreResiduals().filter(bounds)
        tasks = self.t.h.array_list()
        for task in _listed(self.t.h, scan.planFiles()):
            if str(task.file().location()) in wanted:
                tasks.add(task)
        return tasks

    def _task(self, data_file: Any) -> Any:
        """The scan task of a whole data file no delete applies to: what Iceberg's
        planning makes of it (``ManifestGroup``: the spec bound to the table's schema, no
        residual to evaluate)."""
        h = self.t.h
        spec = self.table.specs().get(data_file.specId())
        return h.file_scan_task(
            data_file,
            h.no_deletes,
            h.schema_parser.toJson(spec.schema()),
            h.spec_parser.toJson(spec),
            h.residuals.of(spec, h.expressions.alwaysTrue(), True),
        )

    def _bounds_filter(self, files: Sequence[Any]) -> Any:
        """An Iceberg filter that keeps ``files`` (and prunes most others) when planning,
        from their bounds on one column: the key if it has bounds, else the first that
        does. Evaluated on manifests in the JVM: it costs the scan nothing."""
        expressions = self.t.h.expressions
        conversions = self.t.h.conversions
        schema = self.table.schema()
        candidates = [*self.key_columns, *self.names]
        for name in dict.fromkeys(candidates):
            field = schema.caseInsensitiveFindField(name)
            if field is None or not field.type().isPrimitiveType():
                continue
            fid = field.fieldId()
            ranges = []
            for f in files:
                lower, upper = f.lowerBounds(), f.upperBounds()
                low = lower.get(fid) if lower is not None else None
                high = upper.get(fid) if upper is not None else None
                if low is None or high is None:
                    break
                ranges.append(
                    getattr(expressions, "and")(
                        expressions.greaterThanOrEqual(
                            field.name(), conversions.fromByteBuffer(field.type(), low)
                        ),
                        expressions.lessThanOrEqual(
                            field.name(), conversions.fromByteBuffer(field.type(), high)
                        ),
                    )
                )
            else:
                combined = ranges[0] if ranges else expressions.alwaysFalse()
                for r in ranges[1:]:
                    combined = getattr(expressions, "or")(combined, r)
                return combined
        return expressions.alwaysTrue()

    def close(self) -> None:
        for set_id in self.sets:
            self.t.h.task_sets.removeTasks(self.table, set_id)
            self.t.h.table_cache.remove(set_id)
        for view in self.views:
            self.t.spark.catalog.dropTempView(view)
