"""The view a fast_refresh model's users read: a Spark view of the user's columns over
the Iceberg table that holds the rows and the hidden ``__fr_`` columns (``storage_of``).

``select *`` over the model gives its query's columns, whatever the refresh keeps beside
them, to dbt models of any materialization and to every other reader. The view carries
the model's comments (dbt's ``persist_docs``) and, as a property, a fingerprint of what it
was created from (the storage table, its user columns and types, the comments): each
refresh compares it with what the view should be, a metastore read, and replaces the view
only when they differ (a rebuild that changed the columns, new comments, a view dropped by
hand, or a crash between a rebuild and the view's replacement).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Sequence

from dbt.adapters.fastrefresh.engine.config import ViewDocs
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.iceberg.columns import Column
from dbt.adapters.fastrefresh.ivm.inline import HAVING_COLUMN, HIDDEN_PREFIX, REPEAT_COLUMN
from dbt.adapters.fastrefresh.protocol.env import Env
from dbt.adapters.fastrefresh.protocol.state import VIEW_FINGERPRINT, VIEW_ORDER
from dbt.adapters.fastrefresh.sqltext import TableName, ident, properties, property_json, string


def user_columns(columns: Sequence[Column]) -> list[Column]:
    """The storage table's columns the view shows (its hidden ones left out)."""
    return [c for c in columns if not c.name.lower().startswith(HIDDEN_PREFIX)]


def ordered(columns: Sequence[Column], order: Sequence[str]) -> list[Column]:
    """``columns`` in ``order`` (lower-case names: an enforced contract's), those it does
    not name after them as they were.

    >>> [c.name for c in ordered([Column("id", "int"), Column("Name", "string")], ["name", "id"])]
    ['Name', 'id']
    """
    rank = {name: i for i, name in enumerate(order)}
    return sorted(columns, key=lambda c: rank.get(c.name.lower(), len(rank)))


def view_order(value: str | None) -> tuple[str, ...]:
    """The column order a view's ``VIEW_ORDER`` property names (none: the storage's).

    >>> view_order('["name", "id"]'), view_order(None), view_order("not json")
    (('name', 'id'), (), ())
    """
    try:
        names = json.loads(value) if value else []
    except ValueError:
        return ()
    return tuple(str(n).lower() for n in names) if isinstance(names, list) else ()


def storage_read(storage: TableName, columns: Sequence[Column], order: Sequence[str] = ()) -> str:
    """How the model's view reads its storage table (of ``columns``): the user columns;
    each row repeated by ``__fr_repeat`` (a join of key-less tables, ``ivm.joins._as_bag``);
    the rows whose ``__fr_having`` holds (an aggregate's HAVING). A query over the model
    reads it the same way (``engine.refresh.resolve_views``). ``order``: the view's
    column order (``ordered``)."""
    names = {c.name.lower() for c in columns}
    select = ", ".join(ident(c.name) for c in ordered(user_columns(columns), order))
    text = f"SELECT {select} FROM {storage.sql}"
    if REPEAT_COLUMN in names:
        text += (
            f" LATERAL VIEW explode(array_repeat(0, CAST({ident(REPEAT_COLUMN)} AS INT))) "
            "__fr_x AS __fr_n"
        )
    if HAVING_COLUMN in names:
        text += f" WHERE {ident(HAVING_COLUMN)}"
    return text


def view_statement(
    view: TableName,
    storage: TableName,
    columns: Sequence[Column],
    docs: ViewDocs,
    *,
    replace: bool = True,
) -> tuple[str, str]:
    """The ``CREATE OR REPLACE VIEW`` of ``view`` over ``storage`` and its fingerprint
    (``replace=False``: a plain ``CREATE VIEW``, which fails when the name is taken)."""
    shown = ordered(user_columns(columns), docs.order)
    names = {c.name.lower() for c in columns}
    where = HAVING_COLUMN if HAVING_COLUMN in names else None
    repeat = [REPEAT_COLUMN] if REPEAT_COLUMN in names else []
    # Columns in an order of their own (an enforced contract's): named on the view, for a
    # query over it, which reads the storage table (``engine.refresh.resolve_views``).
    order = [c.name for c in shown]
    reordered = order != [c.name for c in user_columns(columns)]
    fingerprint = hashlib.sha256(
        json.dumps(
            [str(storage), [(c.name, c.type) for c in shown], docs.relation,
             dict(docs.columns), where, *repeat, *([order] if reordered else [])],
            sort_keys=True,
        ).encode()
    ).hexdigest()[:16]  # fmt: skip
    marks = {
        VIEW_FINGERPRINT: fingerprint,
        **({VIEW_ORDER: property_json(order)} if reordered else {}),
    }
    listed = ", ".join(
        ident(c.name)
        + (
            f" COMMENT {string(docs.columns[c.name.lower()])}"
            if c.name.lower() in docs.columns
            else ""
        )
        for c in shown
    )
    comment = f" COMMENT {string(docs.relation)}" if docs.relation else ""
    verb = "CREATE OR REPLACE VIEW" if replace else "CREATE VIEW"
    statement = (
        f"{verb} {view.sql} ({listed}){comment} "
        f"TBLPROPERTIES ({properties(marks)}) "
        f"AS {storage_read(storage, columns, docs.order)}"
    )
    return statement, fingerprint


def ensure_view(
    env: Env,
    view: TableName,
    storage: TableName,
    columns: Sequence[Column],
    docs: ViewDocs,
    *,
    replace_table: bool = False,
    keep_existing: bool = False,
) -> bool:
    """Create or replace ``view`` unless it already is what it should be; whether it did.
    ``replace_table``: the name is another materialization's table, which dbt found there
    and which goes now, once the storage table is built (a model whose refresh failed keeps
    it). ``keep_existing``: any view of the model's (fingerprinted) is kept as it is."""
    statement, fingerprint = view_statement(view, storage, columns, docs)
    taken, current = env.tables.view_entry(view, VIEW_FINGERPRINT)
    if current == fingerprint or (keep_existing and current is not None):
        return False
    if not taken:
        # Nothing has the name (a first build): a plain CREATE VIEW, one statement. It
        # fails only when another writer took the name since it was read; the name is
        # then handled as taken by something unknown, below.
        with contextlib.suppress(Exception):
            env.sql.execute(view_statement(view, storage, columns, docs, replace=False)[0])
            return True
    # Iceberg's views (1.10, through the session catalog) take CREATE OR REPLACE VIEW's new
    # properties but keep their old query (apache/iceberg#15490): drop the view, then
    # create it. So for a view of this name without the fingerprint (a dbt `view` model
    # switched to fast_refresh): replaced, it kept answering its old query, and the
    # fingerprint then stamped on it kept it so.
    if current is not None:
        env.sql.execute(f"DROP VIEW IF EXISTS {view.sql}")
    elif replace_table:
        env.sql.execute(f"DROP TABLE IF EXISTS {view.sql}")
    else:
        # A view without the fingerprint, or a table (the CREATE below says what to do:
        # DROP VIEW refuses a table, EXPECT_VIEW_NOT_TABLE).
        with contextlib.suppress(Exception):
            env.sql.execute(f"DROP VIEW IF EXISTS {view.sql}")
    try:
        env.sql.execute(statement)
    except Exception as exc:
        if "already exists" not in str(exc) and "EXPECT_VIEW_NOT_TABLE" not in str(exc):
            raise
        raise FastRefreshError(
            f"{view} is a table, where dbt-fastrefresh keeps the view of the model's columns "
            f"over {storage} (a table of this name is left from dbt-fastrefresh 0.1 or from "
            f"another materialization). Fix: dbt run the model (the materialization drops "
            f"that table), or drop {view} and refresh again."
        ) from exc
    return True
