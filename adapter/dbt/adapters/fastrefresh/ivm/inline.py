"""Inlining: CTEs and derived tables merged into the query before it is planned.

dbt projects write models as chains of CTEs (import CTEs that ``select *`` from a
``ref()``, renaming and casting CTEs, a final ``select * from final``), and dbt compiles
ephemeral models into CTEs. Their shape is the query underneath, so each reference to a
CTE becomes a copy of the CTE's query (a derived table), and sqlglot's
``merge_subqueries`` merges every derived table that is a projection and filter of its
inputs into the query that reads it. What cannot be merged (a derived table that
aggregates, is DISTINCT, or uses a window) stays, and the planner names it (a LIMIT
anywhere is refused before: ``checks.anywhere_offender``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.merge_subqueries import merge_subqueries
from sqlglot.optimizer.qualify import qualify

from dbt.adapters.fastrefresh.iceberg.columns import Column
from dbt.adapters.fastrefresh.sqltext import TableName

DIALECT = "spark"


HIDDEN_PREFIX = "__fr_"
# An aggregate view's HAVING condition per group (``analysis._having_as_output``).
HAVING_COLUMN = f"{HIDDEN_PREFIX}having"
# How many identical rows a stored row of a join of key-less tables stands for
# (``joins._as_bag``): the view repeats it that many times.
REPEAT_COLUMN = f"{HIDDEN_PREFIX}repeat"


def visible(columns: Sequence[Column]) -> dict[str, str]:
    """A table's columns as a query sees them: a fast_refresh view's hidden ``__fr_``
    columns are left out, so ``select *`` over a view gives its user's columns only and a
    query cannot name them; but for ``__fr_having`` and ``__fr_repeat``, which the view over
    a storage table filters on and repeats rows by (``engine.refresh.resolve_views``)."""
    return {
        c.name: c.type
        for c in columns
        if not c.name.lower().startswith(HIDDEN_PREFIX)
        or c.name.lower() in (HAVING_COLUMN, REPEAT_COLUMN)
    }


class InlineError(Exception):
    """The query's CTEs or derived tables could not be resolved; the message says why."""


def needs_inlining(tree: exp.Expr) -> bool:
    """Whether ``tree`` has a WITH clause or reads a derived table."""
    if tree.find(exp.With) is not None:
        return True
    return any(isinstance(s.parent, exp.From | exp.Join) for s in tree.find_all(exp.Subquery))


def inline(tree: exp.Expr, columns: Mapping[TableName, list[Column]]) -> exp.Expr:
    """``tree`` with every CTE inlined and every mergeable derived table merged.

    Args:
        tree: the parsed query (not changed).
        columns: the columns of the tables it reads (stars are expanded against them).
    """
    schema: dict[str, object] = {}
    for name, cols in columns.items():
        tables: dict[str, object] = schema.setdefault(name.schema, {})  # type: ignore[assignment]
        tables[name.table] = visible(cols)
    try:
        qualified = qualify(
            tree.copy(), schema=schema, dialect=DIALECT, quote_identifiers=False,
            validate_qualify_columns=True, expand_stars=True, identify=False,
        )  # fmt: skip
    except SqlglotError as exc:
        raise InlineError(f"its CTEs or derived tables could not be resolved ({exc})") from exc
    return merge_subqueries(_ctes_as_derived_tables(qualified), leave_tables_isolated=False)


def _ctes_as_derived_tables(tree: exp.Expr) -> exp.Expr:
    """Each reference to a CTE replaced by a copy of its query, aliased as the reference
    was; a CTE referring to an earlier one gets that one's copy too. A WITH inside a CTE
    is inlined on the next pass."""
    while True:
        select = next((w.parent for w in tree.find_all(exp.With)), None)
        if select is None:
            return tree
        bodies: dict[str, exp.Expr] = {}
        for cte in select.args["with_"].expressions:
            body = cte.this.copy()
            _replace_references(body, bodies)
            bodies[cte.alias_or_name.lower()] = body
        select.set("with_", None)
        _replace_references(select, bodies)


def _replace_references(tree: exp.Expr, bodies: Mapping[str, exp.Expr]) -> None:
    for table in list(tree.find_all(exp.Table)):
        body = bodies.get(table.name.lower()) if not table.db else None
        if body is not None:
            alias = exp.TableAlias(this=exp.to_identifier(table.alias_or_name))
            table.replace(exp.Subquery(this=body.copy(), alias=alias))


def derived_table(tree: exp.Expr) -> str | None:
    """The alias of a derived table ``tree`` still reads, if any (one that could not be
    merged)."""
    for sub in tree.find_all(exp.Subquery):
        if isinstance(sub.parent, exp.From | exp.Join):
            return sub.alias_or_name or "(unnamed)"
    return None
