"""Outer joins: ``a LEFT | RIGHT | FULL [OUTER] JOIN b ON a.x = b.y [AND ...]``.

A row of a LEFT join's view belongs to one row of ``a`` (the preserved side): that row with
each ``b`` row it matches, or with NULLs when it matches none. So the view's rows can be
recomputed by ``a``'s key: a change of ``a`` reaches the rows of its own keys; a change of
``b`` reaches the ``a`` rows whose join values equal the changed ``b`` row's, before or after
the change (a dimension row appearing turns NULL-extended rows into matches, and its
disappearing turns them back). A RIGHT join is the same with the sides swapped; a FULL
join preserves both, and its rows are recomputed by either key (Oracle's outer-join
materialized views likewise need the key of every side in the view).

The join values come from the ``ON`` condition's equalities of an ``a`` expression to a
``b`` expression; other terms may sit beside them (``AND b.active``), but an ``ON`` without
such an equality would make every row depend on every row of the other side, and is
refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from dbt.adapters.fastrefresh.ivm.semi import conjuncts

SIDES = ("LEFT", "RIGHT", "FULL")


class OuterJoinError(Exception):
    """The outer join does not refresh fast; the message says why."""


@dataclass(frozen=True)
class OuterJoin:
    """The outer join of a view's two inputs: ``side`` and the join's equalities, as
    (expression over input 0, expression over input 1) trees."""

    side: str
    pairs: tuple[tuple[exp.Expression, exp.Expression], ...] = field(compare=False, repr=False)

    @property
    def preserved(self) -> tuple[int, ...]:
        """The inputs whose every row is in the view (the owners of its rows)."""
        return {"LEFT": (0,), "RIGHT": (1,), "FULL": (0, 1)}[self.side]


def is_outer(join: exp.Join) -> bool:
    return (join.args.get("side") or "").upper() in SIDES


def outer_join(join: exp.Join, aliases: tuple[str, str]) -> OuterJoin:
    """The outer join ``join`` of the inputs ``aliases`` (qualified columns), or an error."""
    side = str(join.args.get("side")).upper()
    kind = (join.args.get("kind") or "").upper()
    if kind not in ("", "OUTER"):
        raise OuterJoinError(f"a {side} {kind} join")
    on = join.args.get("on")
    if on is None:
        raise OuterJoinError(f"a {side} OUTER join without ON (name the join columns with ON)")
    first, second = (a.lower() for a in aliases)
    pairs = []
    for term in conjuncts(on):
        if not isinstance(term, exp.EQ):
            continue
        left, right = term.this, term.expression
        if _tables(left) == {second} and _tables(right) == {first}:
            left, right = right, left
        if _tables(left) == {first} and _tables(right) == {second}:
            pairs.append((left.copy(), right.copy()))
    if not pairs:
        raise OuterJoinError(
            f"a {side} OUTER join whose ON has no equality of a column of one side to one of "
            "the other (every row would depend on every row of the other side)"
        )
    return OuterJoin(side, tuple(pairs))


def _tables(node: exp.Expression) -> set[str]:
    return {c.table.lower() for c in node.find_all(exp.Column)}
