"""Semi-joins: ``[NOT] EXISTS`` and ``IN (SELECT ...)`` filters on a keyed projection.

A view ``SELECT ... FROM a WHERE ... AND EXISTS (SELECT 1 FROM b WHERE b.y = a.x AND p(b))``
holds the rows of ``a`` that have (``NOT EXISTS``: have no) match in ``b``. A view row is a
function of one row of ``a`` (given ``b``), so ``a``'s key identifies it, and a changed row
of ``b`` can only change the rows of ``a`` it correlates with: those whose ``a.x`` equals
its ``b.y`` before or after the change. The delta recomputes exactly those rows
(``sqlgen.semi``). ``a.x IN (SELECT b.y FROM b WHERE p(b))`` is the same with the pair
``(a.x, b.y)``.

What is refused, and why (the reason names it): ``NOT IN (SELECT ...)`` (one NULL in the
subquery makes it false for every row, so every row depends on every row of ``b``: write
``NOT EXISTS``); a subquery that is not correlated by equality (its every row matters to
every row); a correlation other than an equality of the outer table's column to an
expression of the inner one; a subquery that joins, aggregates, or nests another; a
subquery anywhere but as a conjunct of the outer ``WHERE``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot import exp

from dbt.adapters.fastrefresh.ivm.dialect import DIALECT
from dbt.adapters.fastrefresh.sqltext import TableName


class SemiJoinError(Exception):
    """The query's subquery filter does not refresh fast; the message says why."""


@dataclass(frozen=True)
class SemiJoin:
    """One ``[NOT] EXISTS`` / ``IN (SELECT ...)`` conjunct of the outer query's WHERE.

    ``pairs``: the correlation, as (expression over the outer table, expression over the
    inner table) trees, equal for a match; ``columns_read``: the inner table's columns the
    subquery reads.
    """

    alias: str
    master: TableName
    anti: bool
    columns_read: tuple[str, ...]
    pairs: tuple[tuple[exp.Expression, exp.Expression], ...] = field(compare=False, repr=False)

    def describe(self) -> str:
        on = ", ".join(
            f"{outer.sql(dialect=DIALECT)} = {inner.sql(dialect=DIALECT)}"
            for outer, inner in self.pairs
        )
        return f"{'NOT EXISTS' if self.anti else 'EXISTS'} in {self.master} {self.alias} ({on})"


def conjuncts(where: exp.Expression | None) -> list[exp.Expression]:
    """The top-level AND terms of a WHERE condition, through parentheses: the terms of
    ``(a AND b) AND c`` are ``a``, ``b`` and ``c``, and of ``(a = b)`` it is ``a = b``."""
    if where is None:
        return []
    body = where.this if isinstance(where, exp.Where) else where
    while isinstance(body, exp.Paren):
        body = body.this
    if isinstance(body, exp.And):
        return [
            t
            for part in body.flatten()
            if isinstance(part, exp.Expression)
            for t in conjuncts(part)
        ]
    return [body]


def is_semi(term: exp.Expression) -> bool:
    """Whether a WHERE conjunct is a subquery filter (``[NOT] EXISTS``, ``[NOT] IN``)."""
    inner = term.this if isinstance(term, exp.Not) else term
    if isinstance(inner, exp.Paren):
        inner = inner.this
    return isinstance(inner, exp.Exists) or (
        isinstance(inner, exp.In) and inner.args.get("query") is not None
    )


def without_semis(select: exp.Select) -> exp.Select:
    """A copy of ``select`` without its subquery-filter conjuncts (to check the rest)."""
    copy = select.copy()
    kept = [t for t in conjuncts(copy.args.get("where")) if not is_semi(t)]
    copy.set("where", exp.Where(this=exp.and_(*kept)) if kept else None)
    return copy


def semi_joins(
    qualified: exp.Select, outer: str, master_of: Callable[[exp.Table], TableName]
) -> tuple[SemiJoin, ...]:
    """Each subquery filter of ``qualified`` (columns qualified by their tables' aliases;
    ``outer``: the outer table's alias), or ``SemiJoinError`` naming what is refused."""
    found = []
    for term in conjuncts(qualified.args.get("where")):
        if not is_semi(term):
            continue
        anti = isinstance(term, exp.Not)
        inner = term.this if anti else term
        if isinstance(inner, exp.Paren):
            inner = inner.this
        if isinstance(inner, exp.In):
            if anti:
                raise SemiJoinError(
                    "NOT IN (SELECT ...): a NULL in the subquery makes it false for every "
                    "row, so every row depends on the whole subquery; write NOT EXISTS"
                )
            found.append(_in(inner, outer, master_of))
        else:
            assert isinstance(inner, exp.Exists)
            found.append(_exists(inner, outer, master_of, anti=anti))
    aliases = [s.alias.lower() for s in found]
    if len(set(aliases)) != len(aliases):
        raise SemiJoinError(ALIAS_CLASH)
    return tuple(found)


ALIAS_CLASH = (
    "a subquery whose table has the alias of the outer table or of another subquery's "
    "table; alias them apart"
)


def _apart(alias: str, outer: str) -> str:
    """A subquery table's ``alias``, refused when it is the outer table's (before its
    correlation is read: the outer alias inside it names its own table)."""
    if alias.lower() == outer.lower():
        raise SemiJoinError(ALIAS_CLASH)
    return alias


def _body(node: exp.Expression) -> exp.Select:
    """The SELECT of a subquery filter, checked to read one table and nothing more."""
    body = node.this if isinstance(node, exp.Exists) else node.args["query"]
    if isinstance(body, exp.Subquery):
        body = body.this
    if not isinstance(body, exp.Select):
        raise SemiJoinError("a subquery that is not a plain SELECT (a set operation)")
    for arg, what in (
        ("joins", "joins tables"),
        ("group", "has GROUP BY"),
        ("having", "has HAVING"),
        ("with_", "has a WITH clause"),
    ):
        if body.args.get(arg):
            raise SemiJoinError(f"a subquery filter that {what}")
    if any(s.find(exp.AggFunc) for s in body.expressions):
        raise SemiJoinError("a subquery filter that aggregates")
    if body.find(exp.Window) is not None:
        raise SemiJoinError("a subquery filter with a window function")
    nested = [s for s in body.find_all(exp.Subquery, exp.Exists) if s is not body]
    if nested:
        raise SemiJoinError("a subquery filter with a subquery of its own")
    from_ = body.args.get("from_") or body.args.get("from")
    if from_ is None or not isinstance(from_.this, exp.Table):
        raise SemiJoinError("a subquery filter that does not read one table")
    return body


def _exists(
    node: exp.Exists, outer: str, master_of: Callable[[exp.Table], TableName], *, anti: bool
) -> SemiJoin:
    body = _body(node)
    table = body.args.get("from_") or body.args.get("from")
    assert table is not None
    alias = _apart(table.this.alias_or_name, outer)
    pairs = _correlation(body, outer, alias)
    if not pairs:
        raise SemiJoinError(
            f"{'NOT ' if anti else ''}EXISTS over {alias} that is not correlated with the "
            "outer table by an equality (every row would depend on all of it)"
        )
    return SemiJoin(alias, master_of(table.this), anti, _read(body, alias), tuple(pairs))


def _in(node: exp.In, outer: str, master_of: Callable[[exp.Table], TableName]) -> SemiJoin:
    body = _body(node)
    table = body.args.get("from_") or body.args.get("from")
    assert table is not None
    alias = _apart(table.this.alias_or_name, outer)
    if len(body.expressions) != 1 or isinstance(node.this, exp.Tuple):
        raise SemiJoinError("IN (SELECT ...) of more than one column; write EXISTS")
    left, right = node.this, body.expressions[0].unalias()
    if _tables(left) != {outer.lower()} or _tables(right) != {alias.lower()}:
        raise SemiJoinError(
            "IN (SELECT ...) whose value is not an expression of the outer table and whose "
            "subquery's column is not one of its own table"
        )
    pairs = [(left.copy(), right.copy()), *_correlation(body, outer, alias)]
    return SemiJoin(alias, master_of(table.this), False, _read(body, alias), tuple(pairs))


def _correlation(
    body: exp.Select, outer: str, inner: str
) -> list[tuple[exp.Expression, exp.Expression]]:
    """The (outer, inner) equality pairs of the subquery's WHERE; any other term that
    reads the outer table is refused."""
    pairs = []
    for term in conjuncts(body.args.get("where")):
        tables = _tables(term)
        if outer.lower() not in tables:
            continue
        if isinstance(term, exp.EQ):
            left, right = term.this, term.expression
            if _tables(left) == {inner.lower()} and _tables(right) == {outer.lower()}:
                left, right = right, left
            if _tables(left) == {outer.lower()} and _tables(right) == {inner.lower()}:
                pairs.append((left.copy(), right.copy()))
                continue
        raise SemiJoinError(
            f"a subquery over {inner} correlated by {term.sql(dialect=DIALECT)}; only "
            "equalities of an outer expression to an inner one refresh fast"
        )
    return pairs


def _tables(node: exp.Expression) -> set[str]:
    return {c.table.lower() for c in node.find_all(exp.Column)}


def _read(body: exp.Select, alias: str) -> tuple[str, ...]:
    return tuple(
        sorted(
            {c.name.lower() for c in body.find_all(exp.Column) if c.table.lower() == alias.lower()}
        )
    )
