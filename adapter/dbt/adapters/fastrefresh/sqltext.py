"""SQL text helpers: identifiers, literals and table names, for Spark SQL."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import re
from dataclasses import dataclass
from typing import Any

from dbt.adapters.fastrefresh.errors import FastRefreshError

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def ident(name: str) -> str:
    """Quote an identifier for Spark: ``a`` → `` `a` ``."""
    return "`" + name.replace("`", "``") + "`"


def string(value: str) -> str:
    """A Spark string literal (backslashes and quotes escaped)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def timestamp(value: dt.datetime) -> str:
    """A TIMESTAMP_NTZ literal with microseconds: all stamps here are naive UTC."""
    return f"TIMESTAMP_NTZ'{value.strftime('%Y-%m-%d %H:%M:%S.%f')}'"


def instant(value: dt.datetime) -> str:
    """A TIMESTAMP literal of naive UTC ``value``, whatever the session's time zone."""
    return f"TIMESTAMP'{value:%Y-%m-%d %H:%M:%S.%f}+00:00'"


def expire_sql(table: TableName, older_than: dt.datetime, keep_last: int) -> str:
    """The ``expire_snapshots`` call (pure). ``older_than`` is naive UTC."""
    return (
        f"CALL system.expire_snapshots(table => {string(str(table))}, "
        f"older_than => {instant(older_than)}, retain_last => {int(keep_last)})"
    )


def pack_sql(table: TableName) -> str:
    """The ``rewrite_data_files`` call that packs ``table``'s small data files into files
    of Iceberg's target size (pure): its default bin-pack, which leaves the table alone
    while fewer than five files are small enough to pack."""
    return f"CALL system.rewrite_data_files(table => {string(str(table))})"


def replace_all(table: TableName) -> str:
    """The head of a statement replacing every row of ``table`` with its query's rows.

    ``INSERT INTO ... REPLACE WHERE TRUE`` is a static overwrite whatever the session's
    ``spark.sql.sources.partitionOverwriteMode``: under the dynamic mode, which dbt-spark's
    ``insert_overwrite`` strategy sets for the whole session, an ``INSERT OVERWRITE`` only
    replaces the partitions its rows reach, so one of no rows would replace nothing.
    """
    return f"INSERT INTO {table.sql} REPLACE WHERE TRUE"


def properties(values: dict[str, str]) -> str:
    """A TBLPROPERTIES list: ``{'a': '1'}`` → ``'a'='1'``."""
    return ", ".join(f"{literal(k)}={literal(v)}" for k, v in values.items())


# The Spark types that can hold -0.0 (``negative_zero``).
FLOATING_TYPES = ("float", "double")


def negative_zero(expr: str) -> str:
    """SQL: whether ``expr``, a FLOAT or DOUBLE, is -0.0 (FALSE for NULL).

    Spark takes -0.0 for 0.0 in comparisons (``=``, ``<=>``, of structs too), in GROUP BY
    and DISTINCT (which return 0.0 for both) and in join and partition keys, but a cast
    to a string (and a view's query may make one) tells them apart, so comparing or
    grouping rows that must stay exact compares this too. The test reads the zero's
    string, made only for a zero (``atan2`` adds 0.0 to its arguments first, and a
    division by zero is NULL, or an error under ANSI; ``pow(x, -1) < 0`` would do, and
    measured the same in a capture)."""
    return f"coalesce({expr} = 0 AND CAST({expr} AS STRING) = '-0.0', FALSE)"


def holds_float(spark_type: str) -> bool:
    """Whether a value of ``spark_type`` can hold a -0.0: a FLOAT or DOUBLE, or a type
    with one inside (a struct's field named so counts too: its key costs a cast only)."""
    return any(t in spark_type for t in FLOATING_TYPES)


def sign_key(expr: str, spark_type: str) -> str:
    """SQL that tells apart values of ``expr`` (of ``spark_type``, one that
    ``holds_float``) equal to Spark's comparisons and GROUP BY: a FLOAT or DOUBLE -0.0
    from 0.0 (``negative_zero``), and a value holding one in an array, a struct or a map
    from its twin with 0.0 (its string, which shows each zero's sign). Rows compared or
    grouped exactly compare or group by this too; a NaN has one form in Spark SQL (it
    normalizes them), so nothing is lost there."""
    if spark_type in FLOATING_TYPES:
        return negative_zero(expr)
    return f"CAST({expr} AS STRING)"


def literal(value: object) -> str:
    """Render a Python value (as Spark returns it) as a Spark SQL literal."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return f"{value}L" if abs(value) > 2**31 - 1 else str(value)
    if isinstance(value, float):
        return repr(value) + "D"
    if isinstance(value, decimal.Decimal):
        return f"{value}BD"
    if isinstance(value, dt.datetime):
        return timestamp(value) if value.tzinfo is None else f"TIMESTAMP'{value.isoformat()}'"
    if isinstance(value, dt.date):
        return f"DATE'{value.isoformat()}'"
    if isinstance(value, str):
        return string(value)
    if isinstance(value, (bytes, bytearray)):
        return f"X'{bytes(value).hex().upper()}'"
    raise TypeError(f"no SQL literal for {type(value).__name__}")


@dataclass(frozen=True, order=True)
class TableName:
    """A two-part Spark table name, lower-cased as the Hive metastore stores it."""

    schema: str
    table: str

    @classmethod
    def parse(cls, text: object, default_schema: str | None = None) -> TableName:
        """Accept ``schema.table``, a bare ``table`` (with a default schema) or a dbt relation."""
        schema = getattr(text, "schema", None)
        identifier = getattr(text, "identifier", None)
        if schema and identifier:
            return cls(str(schema).lower(), str(identifier).lower())
        raw = str(text).strip().replace("`", "")
        parts = [p for p in raw.split(".") if p]
        if len(parts) == 3 and parts[0].lower() == "spark_catalog":
            parts = parts[1:]
        if len(parts) == 1 and default_schema:
            parts = [default_schema, parts[0]]
        if len(parts) != 2 or not all(_PLAIN.match(p) for p in parts):
            raise FastRefreshError(
                f"'{text}' is not a table name dbt-fastrefresh can use. Fix: pass "
                "'schema.table' (letters, digits and underscores), a ref() or a source()."
            )
        return cls(parts[0].lower(), parts[1].lower())

    @property
    def sql(self) -> str:
        return f"{ident(self.schema)}.{ident(self.table)}"

    def metadata(self, name: str) -> str:
        """An Iceberg metadata table of this table, e.g. ``snapshots``."""
        return f"{self.sql}.{ident(name)}"

    def __str__(self) -> str:
        return f"{self.schema}.{self.table}"


def log_table_for(master: TableName) -> TableName:
    """The log of ``db.t`` is ``db.mlog__t`` (Oracle's ``MLOG$_T``)."""
    return TableName(master.schema, f"mlog__{master.table}")


def master_of_log(log_table: TableName) -> TableName:
    """The master ``db.t`` of the log ``db.mlog__t`` (``log_table_for`` undone).

    >>> str(master_of_log(log_table_for(TableName("db", "t"))))
    'db.t'
    """
    return TableName(log_table.schema, log_table.table.removeprefix("mlog__"))


# A fast_refresh view is a Spark view of its user's columns over an Iceberg table that also
# holds its hidden ``__fr_`` columns: ``db.v`` reads ``db.v__fr_data``.
STORAGE_SUFFIX = "__fr_data"


def storage_of(view: TableName) -> TableName:
    """The Iceberg table that holds the rows of the fast_refresh view ``view``."""
    return TableName(view.schema, view.table + STORAGE_SUFFIX)


def view_of(storage: TableName) -> TableName | None:
    """The fast_refresh view whose rows ``storage`` holds (None: not a storage table)."""
    if not storage.table.endswith(STORAGE_SUFFIX) or storage.table == STORAGE_SUFFIX:
        return None
    return TableName(storage.schema, storage.table[: -len(STORAGE_SUFFIX)])


# What Spark prints in place of a table property whose key or value matches one of its
# redaction patterns (``SHOW TBLPROPERTIES``, ``DESCRIBE TABLE EXTENDED`` and ``SHOW CREATE
# TABLE`` alike): the SQL path, every connection method but ``session``, reads state so.
REDACTED = "*********(redacted)"
# The default patterns: ``spark.sql.redaction.options.regex`` ("(?i)url"; a session may set
# another) and ``spark.redaction.regex`` ("(?i)secret|password|token|access[.]key"; a
# session cannot). A log's or a view's JSON names tables, columns and queries, and a
# column ``page_url`` or ``api_token`` would hide the whole value.
DEFAULT_REDACTION = re.compile(r"url|secret|password|token|access[.]key", re.IGNORECASE)
# A unit of JSON text: an escape (``\u00e9``, ``\n``) or one character as it is.
_JSON_UNIT = re.compile(r"\\u[0-9a-fA-F]{4}|\\.|.", re.DOTALL)


def property_json(value: Any) -> str:
    """``value`` as compact JSON that Spark's default redaction patterns never match: in
    each match one character written as its ``\\uXXXX`` escape (``page_\\u0075rl``), which
    any JSON reader decodes to the same value. Escapes count as they are written, so a
    match that begins inside one (``\\uacce`` before ``ss.key``) escapes a character after
    it; an escape of a letter (``\\u0075``) makes no new match.

    >>> property_json({"columns": ["page_url", "API_TOKEN"]})
    '{"columns":["page_\\\\u0075rl","API_\\\\u0054OKEN"]}'
    >>> json.loads(property_json(["page_url"]))
    ['page_url']
    """
    text = json.dumps(value, separators=(",", ":"), sort_keys=False)  # ASCII: the rest escaped
    while (match := DEFAULT_REDACTION.search(text)) is not None:
        plain = next(
            unit.start()
            for unit in _JSON_UNIT.finditer(text)
            if len(unit.group()) == 1 and match.start() <= unit.start() < match.end()
        )
        text = f"{text[:plain]}\\u{ord(text[plain]):04x}{text[plain + 1 :]}"
    return text
