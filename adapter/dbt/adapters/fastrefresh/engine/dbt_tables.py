"""dbt ``table`` models with a materialized view log on their table.

dbt-spark builds an Iceberg ``table`` model with ``CREATE OR REPLACE TABLE ... AS`` on
every run. A replaced table starts a new history, which a log cannot read changes across:
every model over the table rebuilt completely after each run of it, and under
``refresh_method='fast'`` failed. On this adapter, the ``table`` materialization (the
adapter's ``materializations/table.sql``) keeps the table and replaces its rows in one
commit (``INSERT INTO ... REPLACE WHERE TRUE``) when

- the model is configured ``fast_refresh_keep_table: true``,
- the table is an Iceberg table with a materialized view log,
- the model's query gives it the same columns (names and types, in order), and
- it was created with the table options the model has now: every ``CREATE`` of an
  Iceberg ``table`` model on this adapter records a fingerprint of its options clauses
  (format, ``options``, ``tblproperties``, partitioning, bucketing, location, comment) as
  the table property ``OPTIONS_PROPERTY`` (``fastrefresh__tblproperties_clause``).

Capture then reads that commit's removed and added rows, the rows the run left as they
were cancel out, and the log records only the rows that changed: the models over the table
refresh fast. Otherwise (no log, changed columns or options, ``--full-refresh``, a Python
model) the model is built as dbt-spark builds it, and the models over it rebuild once,
saying why.

It is not the default: the capture of such a commit reads every row of the table twice
(as it was and as it is) to find the few that changed. On a 1M-row table model, 0.1% of
its rows changed a run, with one aggregate over it (``benchmarks/keep_table.py``): kept,
the run's rows replaced, captured and the aggregate refreshed fast took 5.42 s; replaced,
the table created again and the aggregate rebuilt took 1.18 s. Keeping pays when the
models over the table cost more to rebuild than two reads of it, or must refresh fast.
"""

from __future__ import annotations

from dbt.adapters.fastrefresh.engine.seeds import OPTIONS_PROPERTY, same_columns
from dbt.adapters.fastrefresh.mlog.ddl import load_log
from dbt.adapters.fastrefresh.protocol.env import Env
from dbt.adapters.fastrefresh.sqltext import TableName


def keeps_table(env: Env, table: TableName, options: str, query: str) -> bool:
    """Whether the ``table`` model building ``table`` with ``query`` keeps it and replaces
    its rows: it is an Iceberg table with a log, created with ``options`` (the model's
    options fingerprint), whose columns are the query's (one ``DESCRIBE QUERY``, planned
    and not run, asked last)."""
    meta = env.tables.load(table, fresh=True)
    if meta is None or not meta.iceberg or meta.properties.get(OPTIONS_PROPERTY) != options:
        return False
    if load_log(env, table, columns=False) is None:
        return False
    described = env.sql.query(f"DESCRIBE QUERY\n{query}")
    return same_columns(meta, [(str(row[0]), str(row[1])) for row in described])
