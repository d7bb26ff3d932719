"""The SQL path's reading of a snapshot's schema (``SqlTables.snapshot_schema``), with a
scripted executor: which statements it runs, and how it fails. Its reads on Spark are in
``tests/functional/test_added_columns.py``."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.iceberg.columns import AtSnapshot, Column
from dbt.adapters.fastrefresh.iceberg.sql import SqlTables
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.unit.iceberg.stand_in import NoSession


class Scripted(NoSession):
    """Answers each query with the first answer whose prefix it starts with."""

    def __init__(self, answers: dict[str, Callable[[], list[tuple[Any, ...]]]]) -> None:
        self.answers, self.statements = answers, []  # type: ignore[var-annotated]

    def execute(self, sql: str) -> None:
        self.query(sql)

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        self.statements.append(sql)
        return next(a for p, a in self.answers.items() if sql.startswith(p))()


def metadata(schemas: dict[int, list[tuple[int, str]]], current: int, at: dict[int, int]) -> str:
    return json.dumps(
        {
            "current-schema-id": current,
            "schemas": [
                {"schema-id": i, "fields": [{"id": f, "name": n, "type": "int"} for f, n in cols]}
                for i, cols in schemas.items()
            ],
            "snapshots": [{"snapshot-id": s, "schema-id": i} for s, i in at.items()],
        }
    )


NOW = [Column("k", "bigint"), Column("x2", "int"), Column("y", "int")]
THEN_ROWS = [("k", "bigint", None), ("x", "int", None), ("y", "int", None)]


def test_names_suffice_without_a_rename_and_ids_settle_one() -> None:
    name = TableName("s", "m1")
    added = Scripted({"DESCRIBE QUERY": lambda: THEN_ROWS[:2]})
    at = SqlTables(added).snapshot_schema(name, 5, [Column("k", "bigint"), Column("x", "int")])
    assert at is None and len(added.statements) == 1
    at = SqlTables(added).snapshot_schema(name, 5, [*NOW[:1], Column("x", "int"), NOW[2]])
    assert at == AtSnapshot(absent=frozenset({"y"})) and len(added.statements) == 1  # cached

    # x gone, x2 new: the ids (schema 0 at snapshot 7, schema 1 now) say renamed; and y
    # (id 3 then, 4 now) was dropped and added again.
    text = metadata(
        {0: [(1, "k"), (2, "x"), (3, "y")], 1: [(1, "k"), (2, "x2"), (4, "y")]}, 1, {7: 0}
    )
    x = Scripted(
        {
            "DESCRIBE QUERY": lambda: THEN_ROWS,
            "SELECT file FROM": lambda: [("file:/w/m/metadata/00002-a.metadata.json",)],
            "SELECT value FROM text.`file:/w/m/metadata/00002-a.metadata.json`": lambda: [(text,)],
        }
    )
    at = SqlTables(x).snapshot_schema(TableName("s", "m2"), 7, NOW)
    assert at == AtSnapshot(absent=frozenset({"y"}), renamed={"x2": "x"})
    assert len(x.statements) == 3


def test_ids_it_cannot_read_fail_naming_the_columns_and_the_fix() -> None:
    def unreadable() -> list[tuple[Any, ...]]:
        raise RuntimeError("No FileSystem for scheme: s3")

    x = Scripted(
        {
            "DESCRIBE QUERY": lambda: THEN_ROWS,
            "SELECT file FROM": lambda: [("s3://b/m/metadata/00002-a.metadata.json",)],
            "SELECT value FROM": unreadable,
        }
    )
    with pytest.raises(FastRefreshError) as raised:
        SqlTables(x).snapshot_schema(TableName("s", "m3"), 7, NOW)
    text = str(raised.value)
    assert "s.m3: column(s) x of its snapshot 7 are gone and column(s) x2 are new" in text
    assert "No FileSystem for scheme: s3" in text
    assert "Fix: make a commit to s.m3" in text and "method: session" in text
