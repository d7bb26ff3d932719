"""Column types compared as an Iceberg table stores them (``engine/seeds.py``): a seed's
``column_types`` and a ``table`` model's query name types in Spark's words, which the
table's ``DESCRIBE`` answers in Iceberg's. The expected spellings are what Spark 3.5 with
Iceberg 1.10 answered for ``DESCRIBE TABLE`` of a table created with each type
(2026-12-04)."""

from __future__ import annotations

import pytest

from dbt.adapters.fastrefresh.engine.seeds import iceberg_type, same_columns
from dbt.adapters.fastrefresh.iceberg import columns as mt
from dbt.adapters.fastrefresh.iceberg.tables import TableMeta
from dbt.adapters.fastrefresh.sqltext import TableName

# (the type in CREATE TABLE, the type DESCRIBE TABLE reported for the Iceberg table)
DESCRIBED = [
    ("integer", "int"),
    ("long", "bigint"),
    ("short", "int"),
    ("smallint", "int"),
    ("byte", "int"),
    ("tinyint", "int"),
    ("real", "float"),
    ("numeric", "decimal(10,0)"),
    ("dec(5,2)", "decimal(5,2)"),
    ("decimal", "decimal(10,0)"),
    ("DECIMAL(10, 2)", "decimal(10,2)"),
    ("varchar(10)", "string"),
    ("char(3)", "string"),
    ("character(4)", "string"),
    ("timestamp_ltz", "timestamp"),
    ("timestamp_ntz", "timestamp_ntz"),
    ("boolean", "boolean"),
    ("array<integer>", "array<int>"),
    ("struct<x:long, y:varchar(3)>", "struct<x:bigint,y:string>"),
    ("map<string,integer>", "map<string,int>"),
    ("binary", "binary"),
]


@pytest.mark.parametrize(("created", "described"), DESCRIBED)
def test_a_type_reads_as_the_iceberg_table_describes_it(created: str, described: str) -> None:
    assert iceberg_type(created) == iceberg_type(described) == described


def test_types_that_differ_stay_apart() -> None:
    for a, b in [
        ("int", "bigint"),
        ("timestamp", "timestamp_ntz"),
        ("decimal(10,2)", "decimal(10,0)"),
        ("decimal(5)", "decimal(5,2)"),
        ("float", "double"),
        ("array<int>", "array<bigint>"),
        ("string", "binary"),
    ]:
        assert iceberg_type(a) != iceberg_type(b), (a, b)
    assert iceberg_type("decimal(5)") == "decimal(5,0)"


def meta(*columns: tuple[str, str]) -> TableMeta:
    cols = tuple(mt.Column(n, t) for n, t in columns)
    return TableMeta(TableName("s", "regions"), True, "iceberg", cols, 1, {})


def test_a_seed_whose_column_types_are_aliases_has_the_tables_columns() -> None:
    table = meta(("id", "int"), ("code", "string"), ("amount", "decimal(10,0)"))
    assert same_columns(table, [["ID", "integer"], ["code", "varchar(10)"], ["amount", "numeric"]])
    # Another type, another name or another order are other columns.
    assert not same_columns(table, [["id", "bigint"], ["code", "string"], ["amount", "decimal"]])
    assert not same_columns(table, [["id", "int"], ["name", "string"], ["amount", "decimal"]])
    assert not same_columns(table, [["code", "string"], ["id", "int"], ["amount", "decimal"]])
    assert not same_columns(table, [["id", "int"], ["code", "string"]])
