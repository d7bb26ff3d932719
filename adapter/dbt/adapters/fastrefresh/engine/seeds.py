"""``dbt seed`` of a table that has a materialized view log.

dbt-spark's seed drops the table and creates it again on every ``dbt seed``
(``spark__reset_csv_table``). A log cannot read changes across a new table, so the models
over a seed would rebuild completely after each ``dbt seed``, and under
``refresh_method='fast'`` fail. When the seed's table has a log and the CSV gives it the
same columns (names and types, in order), the adapter keeps the table and replaces its
rows in one commit (``INSERT INTO ... REPLACE WHERE TRUE``, the package's
``fastrefresh__load_csv_rows``): capture reads that commit's removed and added rows, the
rows the CSV kept cancel out, and the log records only the rows that changed, so the
models over the seed refresh fast (dbt loads 10,000 rows a statement: a larger CSV's later
batches are plain appends, their rows logged as removed by the first commit and added
again). The table is kept only while it has the seed's table options: every ``CREATE`` of
an Iceberg seed's table on this adapter records a fingerprint of the clauses dbt-spark's
``create_csv_table`` writes (format, partitioning, bucketing, location, comment) as the
table property ``OPTIONS_PROPERTY`` (``fastrefresh__create_csv_table``). A seed whose
columns or options changed, ``--full-refresh``, or a seed without a log is dropped and
created as dbt-spark does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from dbt.adapters.fastrefresh.iceberg.tables import TableMeta
from dbt.adapters.fastrefresh.mlog.ddl import load_log
from dbt.adapters.fastrefresh.protocol.env import Env
from dbt.adapters.fastrefresh.sqltext import TableName

# The table property holding the fingerprint of the options a seed's or a ``table``
# model's Iceberg table was created with (``engine/dbt_tables.py``).
OPTIONS_PROPERTY = "fast_refresh.table-options"


def keeps_table(env: Env, table: TableName, columns: Sequence[Sequence[str]], options: str) -> bool:
    """Whether ``dbt seed`` keeps ``table`` and replaces its rows: it is an Iceberg table
    with a log, created with ``options`` (the seed's options fingerprint), whose columns
    are ``columns`` ((name, type) as the seed creates them)."""
    meta = env.tables.load(table, fresh=True)
    if meta is None or not meta.iceberg or not same_columns(meta, columns):
        return False
    if meta.properties.get(OPTIONS_PROPERTY) != options:
        return False
    return load_log(env, table, columns=False) is not None


def same_columns(meta: TableMeta, columns: Sequence[Sequence[str]]) -> bool:
    """Whether ``meta``'s columns are ``columns`` ((name, type), in order; names in any
    case, types as the Iceberg table ``meta`` stores them: ``iceberg_type``)."""
    wanted = [(str(n).lower(), iceberg_type(str(t))) for n, t in columns]
    return [(c.name.lower(), iceberg_type(c.type)) for c in meta.columns] == wanted


# Spark's names for a type that an Iceberg table reports by another: Spark's aliases
# (INTEGER, LONG, REAL, NUMERIC, DEC) and the types Iceberg does not have, which it stores
# as a wider one (SMALLINT/SHORT and TINYINT/BYTE as int, TIMESTAMP_LTZ is TIMESTAMP; CHAR
# and VARCHAR as string, below).
_ICEBERG_NAMES = {
    "integer": "int", "long": "bigint", "short": "int", "smallint": "int", "byte": "int",
    "tinyint": "int", "real": "float", "numeric": "decimal", "dec": "decimal",
    "timestamp_ltz": "timestamp",
}  # fmt: skip
_WORD = re.compile(r"[a-z_][a-z0-9_]*")
_CHARS = re.compile(r"\b(?:var)?char(?:acter)?\(\d+\)")
_DECIMAL = re.compile(r"\bdecimal\b(?:\((\d+)(?:,(\d+))?\))?")


def iceberg_type(text: str) -> str:
    """A column type as an Iceberg table created with it reports it (``DESCRIBE``):
    lowercase, without spaces, Spark's aliases and the types Iceberg lacks by the name of
    the type it stores (a seed's ``column_types`` of ``integer``, ``smallint`` or
    ``varchar(10)``, a query's ``CAST(... AS SMALLINT)``: ``int``, ``int``, ``string``), a
    decimal with its precision and scale (``decimal`` is ``decimal(10,0)``). Nested types
    too (a struct's field names pass through the same words on both sides compared).

    >>> iceberg_type("DECIMAL(10, 2)"), iceberg_type("Integer"), iceberg_type("numeric")
    ('decimal(10,2)', 'int', 'decimal(10,0)')
    >>> iceberg_type("struct<x: long, y: VARCHAR(3)>"), iceberg_type("array<smallint>")
    ('struct<x:bigint,y:string>', 'array<int>')
    """
    flat = _CHARS.sub("string", "".join(text.lower().split()))
    flat = _WORD.sub(lambda m: _ICEBERG_NAMES.get(m.group(0), m.group(0)), flat)
    return _DECIMAL.sub(lambda m: f"decimal({m.group(1) or 10},{m.group(2) or 0})", flat)
