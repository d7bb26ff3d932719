"""Inlining: CTEs and derived tables merged into the query before it is planned.

dbt projects write models as chains of CTEs (import CTEs that ``select *`` from a
``ref()``, renaming and casting CTEs, a final ``select * from final``), and dbt compiles
ephemeral models into CTEs. Their shape is the query underneath, so each reference to a
CTE becomes a copy of the CTE's query (a derived table), and sqlglot's
``merge_subqueries`` merges every derived table that is a projection and filter of its
inputs into the query that reads it. What cannot be merged (a derived table that
aggregates, is DISTINCT, or uses a window) stays, and the planner names it and why (a LIMIT
anywhere is refused before: ``checks.anywhere_offender``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.merge_subqueries import merge_subqueries
from sqlglot.optimizer.qualify import qualify

from dbt.adapters.fastrefresh.iceberg.columns import Column
from dbt.adapters.fastrefresh.ivm.dialect import DIALECT
from dbt.adapters.fastrefresh.sqltext import TableName

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


def sqlglot_schema(columns: Mapping[TableName, Sequence[Column] | None]) -> dict[str, object]:
    """The tables' columns as sqlglot's schema (``schema -> table -> column -> type``), as
    a query sees them (``visible``); a table without columns (None: not a known master)
    is left out."""
    schema: dict[str, object] = {}
    for name, cols in columns.items():
        if cols is not None:
            tables: dict[str, object] = schema.setdefault(name.schema, {})  # type: ignore[assignment]
            tables[name.table] = visible(cols)
    return schema


def inline(tree: exp.Expr, columns: Mapping[TableName, list[Column]]) -> exp.Expr:
    """``tree`` with every CTE inlined and every mergeable derived table merged.

    Args:
        tree: the parsed query (not changed).
        columns: the columns of the tables it reads (stars are expanded against them).
    """
    try:
        qualified = qualify(
            tree.copy(), schema=sqlglot_schema(columns), dialect=DIALECT, quote_identifiers=True,
            validate_qualify_columns=True, expand_stars=True, identify=False,
        )  # fmt: skip
    except SqlglotError as exc:
        raise InlineError(f"its CTEs or derived tables could not be resolved ({exc})") from exc
    derived = _nested_sides_merged(_ctes_as_derived_tables(qualified))
    merged = _joined_joins_first(_filters_into_on(derived))
    _check_null_extended(merged)
    return merge_subqueries(merged, leave_tables_isolated=False)


# What a derived table on the NULL-extended side of an outer join may output for its merge
# to keep its meaning: expressions that are NULL when their columns are (``NULL + 1``,
# ``upper(NULL)``, ``NULL = 1``), over at least one column.
_NULL_IN_NULL_OUT = (
    exp.Column, exp.Identifier, exp.Literal, exp.DataType, exp.Cast, exp.TryCast, exp.Paren,
    exp.Neg, exp.Not, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.EQ, exp.NEQ, exp.GT,
    exp.GTE, exp.LT, exp.LTE, exp.Upper, exp.Lower, exp.Substring, exp.Trim, exp.Abs,
    exp.Round,
)  # fmt: skip


def _check_null_extended(tree: exp.Expr) -> None:
    """Refuse a derived table that an outer join extends with NULLs (the right side of a
    LEFT JOIN, the left of a RIGHT JOIN, either of a FULL JOIN) when an output the query
    reads is not NULL on those rows: a constant (``1 AS has_order``), ``coalesce``,
    ``IS NULL``, ``CASE``. Merged, the expression would be computed over the NULLs the
    join fills in (``coalesce(NULL, 0)`` is 0), where the query gives NULL: wrong from the
    first build. (``merge_subqueries`` does not look at this.) A derived table that only
    passes on another's outputs was merged with it before (``_nested_sides_merged``), so
    the expressions checked are those of every level below."""
    for select in tree.find_all(exp.Select):
        for source in _null_extended(select):
            inner = source.this if isinstance(source, exp.Subquery) else None
            if not isinstance(inner, exp.Select) or _computes(inner):
                continue  # not merged anyway; the planner names why (``_unmerged_because``)
            alias = source.alias_or_name.lower()
            read = {
                c.name.lower()
                for c in select.find_all(exp.Column)
                if c.table.lower() == alias and c.find_ancestor(exp.Subquery) is not source
            }
            read.discard(_MOVED_FILTER)  # read by the ON, before the join adds its NULLs
            for output in inner.expressions:
                body = output.unalias()
                if output.alias_or_name.lower() not in read or _null_in_null_out(body):
                    continue
                raise InlineError(
                    f"{source.alias_or_name}, on the side of an outer join that gets NULLs, "
                    f"outputs {output.alias_or_name} as {body.sql(dialect=DIALECT)}, which is "
                    "not NULL on the rows the join fills with NULLs; compute it in the "
                    f"query that joins (e.g. from a column of {source.alias_or_name}, which "
                    "is NULL there)"
                )


def _plain(source: exp.Expr) -> exp.Select | None:
    """The query of ``source`` when it is a derived table that computes nothing (is not
    grouped, DISTINCT or windowed), which a merge merges; None: it is not one."""
    inner = source.this if isinstance(source, exp.Subquery) else None
    return inner if isinstance(inner, exp.Select) and not _computes(inner) else None


def _computes(select: exp.Select) -> bool:
    """Whether ``select`` groups, is DISTINCT or uses a window (never merged)."""
    return bool(
        any(select.args.get(k) for k in ("group", "having", "distinct", "qualify", "limit"))
        or any(s.find(exp.AggFunc, exp.Window) for s in select.expressions)
    )


def _null_extended(select: exp.Select) -> list[exp.Expr]:
    """The sources of ``select`` an outer join of it extends with NULLs."""
    first = select.args.get("from_")
    before: list[exp.Expr] = [first.this] if first is not None else []
    found: list[exp.Expr] = []
    for join in select.args.get("joins") or []:
        if join.side in ("LEFT", "FULL"):
            found.append(join.this)
        if join.side in ("RIGHT", "FULL"):
            found.extend(before)
        before.append(join.this)
    return found


def _null_in_null_out(body: exp.Expr) -> bool:
    return body.find(exp.Column) is not None and all(
        isinstance(node, _NULL_IN_NULL_OUT) for node in body.walk()
    )


# The name a moved filter goes by until ``merge_subqueries`` puts it in its place.
_MOVED_FILTER = f"{HIDDEN_PREFIX}on"


def _filters_into_on(tree: exp.Expr) -> exp.Expr:
    """A filtered derived table on the NULL-supplying side of an outer join, with its WHERE
    moved into the join's ON condition, where ``merge_subqueries`` can merge it (it leaves a
    WHERE there alone: merged into the outer WHERE it would drop the NULL-extended rows).

    ``a LEFT JOIN (SELECT ... FROM t WHERE p) b ON c`` keeps every row of ``a`` and matches
    it with the rows of ``t`` where ``p`` is true, as ``a LEFT JOIN t b ON c AND p`` does:
    the dbt model that left-joins an import CTE filtered to, say, completed orders. So does
    the FROM side of a single RIGHT JOIN. A FULL JOIN's sides are both preserved, and a
    derived table that groups, is DISTINCT or uses a window filters before it computes, so
    those stay as written (and are named by the planner). The filter becomes the derived
    table's output ``__fr_on``, which the ON condition reads; merging puts the filter's
    expression, over the merged table, in its place."""
    for select in list(tree.find_all(exp.Select)):
        joins = select.args.get("joins") or []
        if len(joins) == 1 and joins[0].side == "RIGHT" and _filtered(joins[0].this):
            _as_left_join(select, joins[0])
        for join in joins:
            if join.side == "LEFT":
                _move_filter(join.this, join)
        if len(joins) == 1 and joins[0].side == "RIGHT":
            _move_filter(select.args["from_"].this, joins[0])
    return tree


def _nested_sides_merged(tree: exp.Expr) -> exp.Expr:
    """Each derived table an outer join extends with NULLs that only reads another derived
    table (no join, nothing computed at either level), with that one merged into it first:
    a filter two levels down (``act AS (SELECT * FROM c WHERE active), act2 AS (SELECT
    cust, region FROM act)``, a staging model read through an intermediate one) is then
    the side's own, which ``_filters_into_on`` moves into the ON. Left nested, the merge of
    the whole query kept the filter in the inner table, and the view could never refresh
    fast. The outputs stay those of the outer level, their expressions over the table."""
    for select in list(tree.find_all(exp.Select)):
        for side in _null_extended(select):
            inner = _plain(side)
            if inner is None or inner.args.get("joins"):
                continue
            first = inner.args.get("from_")
            if first is None or _plain(first.this) is None:
                continue
            side.set("this", merge_subqueries(inner.copy(), leave_tables_isolated=False))
    return tree


def _filtered(side: exp.Expr) -> bool:
    """``side`` is a derived table that filters its one table and computes nothing."""
    inner = side.this if isinstance(side, exp.Subquery) else None
    return (
        isinstance(inner, exp.Select)
        and inner.args.get("where") is not None
        and not inner.args.get("joins")
        and not _computes(inner)
    )


def _as_left_join(select: exp.Select, join: exp.Join) -> None:
    """``a RIGHT JOIN b ON c`` of ``select`` as ``b LEFT JOIN a ON c``, the same rows: a
    filtered derived table ``b`` that the RIGHT JOIN keeps every row of is then read in
    ``FROM``, where ``merge_subqueries`` merges its filter into the WHERE (it leaves a
    filtered table a RIGHT JOIN keeps alone). The outputs are listed by name already
    (stars expanded), so their order stays."""
    first, kept = select.args["from_"].this, join.this
    first_copy, kept_copy = first.copy(), kept.copy()
    first.replace(kept_copy)
    kept.replace(first_copy)
    join.set("side", "LEFT")


def _joined_joins_first(tree: exp.Expr) -> exp.Expr:
    """A query of inner joins only that joins a derived table of inner joins, with that
    table moved to the front (``FROM``) and its ``FROM`` table joined on the derived
    table's ``ON``: ``merge_subqueries`` merges the joins of a derived table read in
    ``FROM`` but not of one that is joined (the derived table's columns in the ``ON``
    could come from any of its tables). An inner join's tables can come in any order, and
    every ``ON`` still comes after the tables it reads: the joined intermediate model of a
    dbt project (``with order_items as (select ... from orders join items ...) select ...
    from customers join order_items ...``)."""
    for select in list(tree.find_all(exp.Select)):
        joins = select.args.get("joins") or []
        first = select.args.get("from_")
        if first is None or _has_joins(first.this) or not all(_is_inner(j) for j in joins):
            continue
        nested = [j for j in joins if _has_joins(j.this)]
        if len(nested) != 1:
            continue
        join = nested[0]
        inner = join.this.this
        if not all(_is_inner(j) for j in inner.args.get("joins")) or _computes(inner):
            continue
        table, derived = first.this, join.this
        table.replace(derived.copy())
        derived.replace(table)
    return tree


def _has_joins(source: exp.Expr) -> bool:
    return (
        isinstance(source, exp.Subquery)
        and isinstance(source.this, exp.Select)
        and bool(source.this.args.get("joins"))
    )


def _is_inner(join: exp.Join) -> bool:
    return not join.side and (join.kind or "").upper() in ("", "INNER", "CROSS")


def _move_filter(side: exp.Expr, join: exp.Join) -> None:
    on = join.args.get("on")
    if on is None or not _filtered(side):
        return
    inner = side.this
    # Parenthesized: merging puts it in place of a column, as an operand of the AND.
    condition = exp.Paren(this=inner.args["where"].this.pop())
    inner.set("where", None)
    inner.append("expressions", exp.alias_(condition, _MOVED_FILTER))
    moved = exp.column(_MOVED_FILTER, table=side.alias_or_name)
    join.set("on", exp.and_(on.copy(), moved))  # wraps an OR of either side in parentheses


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


def derived_table(tree: exp.Expr) -> tuple[str, str] | None:
    """The alias of a derived table ``tree`` still reads, if any (one that could not be
    merged), and why it could not be, in words that end the planner's refusal."""
    for sub in tree.find_all(exp.Subquery):
        if isinstance(sub.parent, exp.From | exp.Join):
            return sub.alias_or_name or "(unnamed)", _unmerged_because(sub)
    return None


def _unmerged_because(sub: exp.Subquery) -> str:
    inner = sub.this
    if isinstance(inner, exp.SetOperation):
        return "it is a set operation (UNION, INTERSECT or EXCEPT)"
    if not isinstance(inner, exp.Select):
        return f"it is a {type(inner).__name__.upper()}"
    if inner.args.get("group") or any(s.find(exp.AggFunc) for s in inner.expressions):
        return (
            "it aggregates (GROUP BY or an aggregate function); make it a fast_refresh "
            "model of its own and ref() it here (a view over views refreshes fast)"
        )
    if inner.args.get("distinct"):
        return "it is SELECT DISTINCT"
    if any(s.find(exp.Window) for s in inner.expressions):
        return "it uses a window function"
    if isinstance(sub.parent, exp.Join) and inner.args.get("joins"):
        return (
            "it joins tables itself and is joined to another, which is merged only when "
            "every join of the query and of the derived table is an inner join and no "
            "other derived table of the query joins tables"
        )
    if inner.args.get("where"):
        return (
            "it filters a table a FULL OUTER join (or a RIGHT JOIN beside other joins) keeps "
            "every row of, and merged "
            "its filter would change which rows the join keeps"
        )
    return "it is not only a projection and filter of its tables"
