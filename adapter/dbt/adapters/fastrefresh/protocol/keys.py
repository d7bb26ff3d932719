"""A keyed log's key must be unique (Iceberg enforces no identifier field): the messages of
the guards that find two rows of the master with one key, in capture (the rows of one
commit: ``mlog/capture_sql``) and in a view's delta (a commit adding a row with a key
another row held: ``ivm/sqlgen/images``), and how to find them in Spark's error."""

from __future__ import annotations

import re
from collections.abc import Sequence

from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.sqltext import TableName, string


def duplicate_key_message(master: TableName) -> str:
    return f"dbt-fastrefresh: master {master} has more than one row with key ("


def duplicate_key_fix(master: TableName) -> str:
    """The end of the duplicate key's message: the commit stays in the log's range, so
    only a log created again (from the table as it is then) gets past it."""
    return (
        "; a keyed log needs a unique key. Fix: make the key unique, then drop the log "
        f'(dbt run-operation fast_refresh.drop_mview_log --args "{{master: {master}}}") and '
        "let the next dbt run create it again from the table as it is then, or create it "
        "again yourself with another key, or key-less (key=[]); the views on it rebuild "
        "once. Until the log is dropped the commit stays in its range: neither the key made "
        "unique nor --full-refresh gets past it."
    )


def added_key_fix(master: TableName) -> str:
    """The end of the message of a delta that found a row added with a key another row
    held (``ivm/sqlgen/images``), which capture could not see: the log holds the commit
    already; it is dropped, and the views on it rebuild once."""
    return (
        ": that commit added a row with a key another row of the master still held. A "
        "keyed log needs a unique key: with two rows of one key, a view keeps one of them. "
        "Fix: make the key unique, then drop the log (dbt run-operation fast_refresh."
        f'drop_mview_log --args "{{master: {master}}}") and let the next dbt run create it '
        "again from the table as it is then, or create it again yourself with another key, "
        "or key-less (key=[]); the views on it rebuild once."
    )


def duplicate_key_failure(exc: BaseException, master: TableName) -> FastRefreshError | None:
    """The error of a capture of ``master`` whose statement stopped at a key two rows share
    (``_duplicate_key_error``), or of a delta that found a row added with a key another
    row held (``added_key_fix``): its message alone, where Spark's error wraps it in its
    own and a Java stack trace (through py4j, once per task that raised it). None: another
    error."""
    fixes = "|".join(re.escape(f(master)) for f in (duplicate_key_fix, added_key_fix))
    pattern = re.escape(duplicate_key_message(master)) + f".*?(?:{fixes})"
    found = re.search(pattern, str(exc), re.DOTALL)
    return None if found is None else FastRefreshError(found[0])


def key_error_sql(master: TableName, keys: Sequence[str], snapshot: str, fix: str) -> str:
    """``raise_error`` of two rows of ``master`` with one key, naming the key's values
    (``keys``: the key columns' SQL; NULL too) and the commit's ``snapshot`` (SQL), its
    message ending in ``fix`` (``duplicate_key_fix`` or ``added_key_fix``)."""
    key_text = " || ', ' || ".join(f"coalesce(cast({k} AS STRING), 'NULL')" for k in keys)
    return (
        f"raise_error(concat({string(duplicate_key_message(master))}, {key_text}, "
        f"{string(') in snapshot ')}, cast({snapshot} AS STRING), {string(fix)}))"
    )
