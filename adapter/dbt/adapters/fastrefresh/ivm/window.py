"""Window functions: views whose rows depend on a partition of their master.

``select * from (select *, row_number() over (partition by k order by ts desc) as rn from t)
where rn = 1`` (the latest row per key), ``rank``/``dense_rank`` filters, running sums and
any other window function: a row of the view depends only on the rows of ``t`` in its
partition. When every window of the query partitions by some common expressions ``P``,
the rows sharing a ``P`` value are independent of the others, so a change of ``t`` can only
change the view's rows of the partitions its old and new images are in. The delta
recomputes exactly those partitions from the pinned master (``sqlgen.window``).

The query is a SELECT with window functions over one table (``a``), or a projection and
filter of such a SELECT in ``FROM`` (``b``, the usual way to filter on a window's value;
also what dbt's CTEs compile to). What is refused, by name: a window without ``PARTITION
BY`` (every row would depend on all of them), windows whose partitions share no
expression, a window over a join or an aggregate, and an aggregate over a window.
"""

from __future__ import annotations

from sqlglot import exp


class WindowError(Exception):
    """The query's window functions do not refresh fast; the message says why."""


def has_window(tree: exp.Expression) -> bool:
    return tree.find(exp.Window) is not None


def window_select(tree: exp.Select) -> tuple[exp.Select, str | None]:
    """The SELECT holding the query's window functions, and the alias it is read by when
    it is a derived table of ``tree`` (``b``; None: ``tree`` itself, ``a``)."""
    from_ = tree.args.get("from_") or tree.args.get("from")
    source = from_.this if from_ is not None else None
    if isinstance(source, exp.Subquery) and has_window(source.this):
        inner = source.this
        if not isinstance(inner, exp.Select):
            raise WindowError("a window function under a set operation")
        outer = tree.copy()
        outer_from = outer.args.get("from_") or outer.args.get("from")
        assert outer_from is not None
        outer_from.set("this", exp.to_table("x"))  # what the outer query adds
        if has_window(outer):
            raise WindowError("window functions at two levels of the query")
        if tree.args.get("joins"):
            raise WindowError("a window function's result joined with another table")
        _check_plain(tree, "over a window function's result")
        return inner, source.alias_or_name
    if any(isinstance(s.parent, exp.From | exp.Join) for s in tree.find_all(exp.Subquery)):
        raise WindowError("a window function over a derived table that cannot be merged")
    return tree, None


def _check_plain(select: exp.Select, where: str) -> None:
    """A SELECT that is a projection and filter: no aggregate, DISTINCT, GROUP BY, HAVING."""
    if (
        select.args.get("group")
        or select.args.get("having")
        or select.args.get("distinct") is not None
        or any(s.find(exp.AggFunc) and not s.find(exp.Window) for s in select.expressions)
    ):
        raise WindowError(f"an aggregate or DISTINCT {where}")


def partitions(inner: exp.Select) -> list[exp.Expression]:
    """The expressions every window of ``inner`` partitions by (in the first window's
    order), or ``WindowError``: rows of different values of them never share a window."""
    if inner.args.get("joins"):
        raise WindowError("a window function over a join")
    _check_plain(inner, "beside a window function")
    windows = list(inner.find_all(exp.Window))
    common: list[exp.Expression] | None = None
    for window in windows:
        parts = list(window.args.get("partition_by") or [])
        if not parts:
            raise WindowError(
                "a window function without PARTITION BY (every row of the view would depend "
                "on every row of the table)"
            )
        common = parts if common is None else [p for p in common if p in parts]
    if not common:
        raise WindowError("window functions that share no PARTITION BY expression")
    return [p.copy() for p in common]
