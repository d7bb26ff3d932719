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
    case, types as Spark writes them)."""
    wanted = [(str(n).lower(), _type(str(t))) for n, t in columns]
    return [(c.name.lower(), _type(c.type)) for c in meta.columns] == wanted


def _type(text: str) -> str:
    """A column type as Spark writes it (``DECIMAL(10, 2)`` -> ``decimal(10,2)``)."""
    return "".join(text.lower().split())
