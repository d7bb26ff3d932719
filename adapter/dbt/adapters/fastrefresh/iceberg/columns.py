"""What dbt-fastrefresh reads about a table with SQL: its columns and whether it exists.

Snapshots, keys and properties come through ``iceberg/tables.py`` (the SQL path or the Java path)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from dbt.adapters.fastrefresh.runtime.executor import Executor
from dbt.adapters.fastrefresh.sqltext import TableName, ident, string

# Types whose Iceberg lower/upper bounds make a usable file-pruning predicate.
PRUNABLE_TYPES = ("tinyint", "smallint", "int", "bigint", "date", "timestamp", "timestamp_ntz",
                  "string")  # fmt: skip


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    # Iceberg's field id (the Java path reads it; None on the SQL path). Not part of the
    # column's identity: a column dropped and added again has the same name and type and
    # a new id, which only ``mlog.ddl.log_mismatch`` asks about.
    field_id: int | None = field(default=None, compare=False)

    @property
    def prunable(self) -> bool:
        return self.type in PRUNABLE_TYPES or self.type.startswith("decimal")

    @property
    def comparable(self) -> bool:
        """Spark can compare and set-operate on it (maps it cannot)."""
        return "map<" not in self.type


@dataclass(frozen=True)
class AtSnapshot:
    """How a read of a table at an older snapshot yields its current columns.

    Iceberg's time travel (``VERSION AS OF``) reads a snapshot with the schema it was
    committed under, while the table's current schema decides what its rows hold now: a
    schema change makes no snapshot, so the newest snapshot can be older than the schema.
    Each current column (lowercased) is there ``absent`` (added after it, or dropped and
    added again: NULL, as Iceberg reads it in the files written before), ``renamed`` (the
    name it had there) or ``retyped`` (a promoted type, cast); or, the usual case, read
    as it is."""

    absent: frozenset[str] = frozenset()
    renamed: Mapping[str, str] = field(default_factory=dict)
    retyped: frozenset[str] = frozenset()

    @property
    def differs(self) -> frozenset[str]:
        """The current columns a plain read at the snapshot does not give as they are."""
        return self.absent | frozenset(self.renamed) | self.retyped

    def read(self, column: Column) -> str:
        """The select-list item that reads ``column`` at the snapshot."""
        name = column.name.lower()
        if name in self.absent:
            return f"CAST(NULL AS {column.type}) AS {ident(column.name)}"
        source = ident(self.renamed.get(name, column.name))
        if name in self.retyped:
            return f"CAST({source} AS {column.type}) AS {ident(column.name)}"
        return source if name not in self.renamed else f"{source} AS {ident(column.name)}"


def at_snapshot(current: Sequence[Column], then: Sequence[Column]) -> AtSnapshot | None:
    """How a read at a snapshot whose schema had the columns ``then`` yields ``current``
    (None: as they are). By Iceberg field id where both sides know them (the Java path,
    or the SQL path's metadata read): that tells a renamed column, and one dropped and
    added again under its old name; else by name (``ambiguous`` says when that is not
    enough)."""
    by_id = all(c.field_id is not None for c in (*current, *then))
    old = {(c.field_id if by_id else c.name.lower()): c for c in then}
    absent, renamed, retyped = set(), {}, set()
    for c in current:
        name = c.name.lower()
        was = old.get(c.field_id if by_id else name)
        if was is None:
            absent.add(name)
            continue
        if was.name.lower() != name:
            renamed[name] = was.name
        if was.type != c.type and "<" not in was.type + c.type:
            # A promotion (int to bigint, float to double, a wider decimal): cast. A
            # nested type's change (a struct's field added) has no such cast in Spark.
            retyped.add(name)
    if not (absent or renamed or retyped):
        return None
    return AtSnapshot(frozenset(absent), renamed, frozenset(retyped))


def ambiguous(current: Sequence[Column], then: Sequence[Column]) -> bool:
    """Whether names alone cannot say how ``then`` (a snapshot's columns) became
    ``current``: a column is gone and another is new, which is a rename or a drop and an
    add. Only Iceberg's field ids tell them apart."""
    now = {c.name.lower() for c in current}
    before = {c.name.lower() for c in then}
    return bool(before - now) and bool(now - before)


def table_names(x: Executor, schema: str, like: str | None = None) -> set[str]:
    """The tables and views of ``schema`` (lowercased; ``like``: a SHOW TABLES pattern);
    not the views of Iceberg's own catalog (a shared catalog), whose SHOW TABLES leaves
    them out.

    Not the session's temporary views, which SHOW TABLES lists in every schema too (its
    rows are namespace, tableName, isTemporary).
    """
    return _listed(x, "TABLES", schema, like)


def view_names(x: Executor, schema: str) -> set[str]:
    """The views of ``schema`` (lowercased), not the session's temporary views."""
    return _listed(x, "VIEWS", schema)


def _listed(x: Executor, kind: str, schema: str, like: str | None = None) -> set[str]:
    """``SHOW TABLES`` or ``SHOW VIEWS`` (rows: namespace, name, isTemporary), the
    temporary views left out."""
    pattern = f" LIKE {string(like)}" if like is not None else ""
    rows = x.query(f"SHOW {kind} IN {ident(schema)}{pattern}")
    return {str(r[1]).lower() for r in rows if not (len(r) > 2 and str(r[2]).lower() == "true")}


def table_exists(x: Executor, table: TableName) -> bool:
    return table.table in table_names(x, table.schema, table.table)


# How Spark and the Iceberg catalogs under it say that a table (or its schema) is not there.
MISSING = ("TABLE_OR_VIEW_NOT_FOUND", "SCHEMA_NOT_FOUND", "NoSuchTableException",
           "NoSuchNamespaceException", "Table or view not found")  # fmt: skip


def is_missing(exc: BaseException) -> bool:
    """Whether ``exc`` (from a statement naming one table) says that table does not exist."""
    return any(m in str(exc) for m in MISSING)


def describe(x: Executor, table: TableName) -> tuple[list[Column], dict[str, str]] | None:
    """The table's columns (in order) and its detailed-information rows; None when it
    does not exist. One statement, where asking first (``SHOW TABLES``, 15-55 ms on the
    embedded stack) would be a second."""
    try:
        rows = x.query(f"DESCRIBE TABLE EXTENDED {table.sql}")
    except Exception as exc:
        if is_missing(exc):
            return None
        raise
    columns: list[Column] = []
    info: dict[str, str] = {}
    in_columns = True
    for name, value, *_ in rows:
        name = (name or "").strip()
        if in_columns and (not name or name.startswith("#")):
            in_columns = False
            continue
        if in_columns:
            columns.append(Column(name.lower(), str(value).lower().replace(" ", "")))
        elif name and not name.startswith("#"):
            info[name] = str(value) if value is not None else ""
    return columns, info
