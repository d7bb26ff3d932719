"""What dbt-fastrefresh reads about a table with SQL: its columns and whether it exists.

Snapshots, keys and properties come through ``iceberg/tables.py`` (the SQL path or the Java path)."""

from __future__ import annotations

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


def table_names(x: Executor, schema: str, like: str | None = None) -> set[str]:
    """The tables and views of ``schema`` (lowercased; ``like``: a SHOW TABLES pattern);
    not the views of Iceberg's own catalog (a shared catalog), whose SHOW TABLES leaves
    them out.

    Not the session's temporary views, which SHOW TABLES lists in every schema too (its
    rows are namespace, tableName, isTemporary).
    """
    pattern = f" LIKE {string(like)}" if like is not None else ""
    rows = x.query(f"SHOW TABLES IN {ident(schema)}{pattern}")
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
