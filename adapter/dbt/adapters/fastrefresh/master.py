"""What dbt-fastrefresh reads about a master table: columns, key, snapshots, files."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.executor import Executor
from dbt.adapters.fastrefresh.sqltext import TableName, ident, string

# Types whose Iceberg lower/upper bounds make a usable file-pruning predicate.
PRUNABLE_TYPES = ("tinyint", "smallint", "int", "bigint", "date", "timestamp", "timestamp_ntz",
                  "string")  # fmt: skip


@dataclass(frozen=True)
class Column:
    name: str
    type: str

    @property
    def prunable(self) -> bool:
        return self.type in PRUNABLE_TYPES or self.type.startswith("decimal")

    @property
    def comparable(self) -> bool:
        """Spark can compare and set-operate on it (maps it cannot)."""
        return "map<" not in self.type


@dataclass(frozen=True)
class Snapshot:
    snapshot_id: int
    parent_id: int | None
    operation: str
    committed_at: dt.datetime
    data_files: int | None = None  # live data files (the summary's total-data-files)


def table_names(x: Executor, schema: str, like: str | None = None) -> set[str]:
    """The tables and views of ``schema`` (lowercased; ``like``: a SHOW TABLES pattern).

    Not the session's temporary views, which SHOW TABLES lists in every schema too (its
    rows are namespace, tableName, isTemporary).
    """
    pattern = f" LIKE {string(like)}" if like is not None else ""
    rows = x.query(f"SHOW TABLES IN {ident(schema)}{pattern}")
    return {str(r[1]).lower() for r in rows if not (len(r) > 2 and str(r[2]).lower() == "true")}


def table_exists(x: Executor, table: TableName) -> bool:
    return table.table in table_names(x, table.schema, table.table)


def describe(x: Executor, table: TableName) -> tuple[list[Column], dict[str, str]]:
    """The table's columns (in order) and its detailed-information rows."""
    rows = x.query(f"DESCRIBE TABLE EXTENDED {table.sql}")
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


def require_iceberg(x: Executor, table: TableName, role: str = "master") -> list[Column]:
    """The columns of ``table``; fail clearly when it is missing or not an Iceberg table."""
    if not table_exists(x, table):
        raise FastRefreshError(
            f"The {role} table {table} does not exist. Fix: create it (as an Iceberg table) "
            "or correct the name."
        )
    columns, info = describe(x, table)
    provider = info.get("Provider", "").lower()
    if provider != "iceberg":
        raise FastRefreshError(
            f"The {role} table {table} is a '{provider or 'non-Iceberg'}' table; dbt-fastrefresh "
            "reads changes from Iceberg snapshots. Fix: convert it to Iceberg (e.g. CREATE "
            f"TABLE ... USING iceberg AS SELECT * FROM {table}) and use that as the master."
        )
    return columns


def table_property(x: Executor, table: TableName, key: str) -> str | None:
    rows = x.query(f"SHOW TBLPROPERTIES {table.sql} ({string(key)})")
    if not rows:
        return None
    value = str(rows[0][1])
    # Spark answers a missing key with a sentence instead of no row.
    return None if "does not have property" in value else value


def identifier_fields(x: Executor, table: TableName) -> list[str]:
    """The Iceberg identifier fields (the table's key), e.g. ``[id]`` → ``['id']``."""
    value = table_property(x, table, "identifier-fields")
    if not value:
        return []
    return [p.strip().lower() for p in value.strip("[]").split(",") if p.strip()]


def format_version(x: Executor, table: TableName) -> int:
    value = table_property(x, table, "format-version")
    return int(value) if value and value.isdigit() else 2


def current_snapshot(x: Executor, table: TableName, refresh: bool = True) -> int | None:
    """The master's current snapshot id (None for a table that never had a commit)."""
    if refresh:
        # Another writer may have committed since this session cached the table.
        x.execute(f"REFRESH TABLE {table.sql}")
    value = table_property(x, table, "current-snapshot-id")
    return int(value) if value and value.lstrip("-").isdigit() else None


def record_count(x: Executor, table: TableName, snapshot: int) -> int | None:
    """The rows in the table's data files at ``snapshot``, from its summary (no scan).

    Rows deleted by merge-on-read delete files are still counted: an upper bound.
    """
    rows = x.query(
        f"SELECT summary['total-records'] FROM {table.metadata('snapshots')} "
        f"WHERE snapshot_id = {int(snapshot)}"
    )
    value = str(rows[0][0]) if rows and rows[0][0] is not None else ""
    return int(value) if value.isdigit() else None


def snapshots(x: Executor, table: TableName) -> dict[int, Snapshot]:
    rows = x.query(
        "SELECT snapshot_id, parent_id, operation, committed_at, summary['total-data-files'] "
        f"FROM {table.metadata('snapshots')}"
    )
    return {
        int(r[0]): Snapshot(
            int(r[0]), r[1], str(r[2]), r[3], int(r[4]) if str(r[4]).isdigit() else None
        )
        for r in rows
    }


@dataclass(frozen=True)
class Chain:
    """The snapshots to capture (oldest first), or why the history is gone."""

    snapshots: tuple[Snapshot, ...]
    gap: str | None = None


def chain_after(
    known: dict[int, Snapshot], current: int | None, captured_through: int | None
) -> Chain:
    """The ancestors of ``current`` committed after ``captured_through``, oldest first.

    ``captured_through`` None means the log was created on a table without any commit, so
    every ancestor counts. A ``captured_through`` that is not an ancestor of ``current``
    (rolled back, table dropped and recreated, snapshots expired) is a gap.

    >>> s = {1: Snapshot(1, None, "append", None), 2: Snapshot(2, 1, "overwrite", None)}
    >>> [x.snapshot_id for x in chain_after(s, 2, 1).snapshots]
    [2]
    >>> chain_after(s, 2, 7).gap is not None
    True
    """
    if current is None:
        if captured_through is None:
            return Chain(())
        return Chain((), f"the table has no current snapshot, but snapshot {captured_through} "
                         "was captured before (the table was dropped and recreated)")  # fmt: skip
    found: list[Snapshot] = []
    cursor: int | None = current
    while cursor is not None and cursor != captured_through:
        snapshot = known.get(cursor)
        if snapshot is None:
            return Chain((), f"snapshot {cursor} is no longer in the table's metadata "
                             "(its snapshots were expired)")  # fmt: skip
        found.append(snapshot)
        cursor = snapshot.parent_id
    if cursor != captured_through:
        return Chain(
            (),
            f"snapshot {captured_through}, up to which changes were captured, is not an "
            "ancestor of the current snapshot (the table was dropped and recreated, rolled "
            "back, or its snapshots were expired)",
        )
    return Chain(tuple(reversed(found)))
