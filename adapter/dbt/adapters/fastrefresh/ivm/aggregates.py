"""Aggregates: the plan of a GROUP BY, a DISTINCT or a global aggregate, over one master
or a join: hidden counts and sums (``__fr_count``, ``__fr_cnt_<n>``, ``__fr_sum_<n>``),
hidden group expressions (``__fr_g_<n>``), each output as a template of its aggregate
calls, a HAVING as the hidden boolean output ``__fr_having``, FILTER clauses folded into
the arguments of the aggregates that skip NULLs."""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from dbt.adapters.fastrefresh.ivm.checks import Refused, render
from dbt.adapters.fastrefresh.ivm.plan import (
    HAVING_COLUMN,
    HIDDEN_PREFIX,
    Aggregate,
    Output,
    Shape,
    ViewPlan,
)


def _aggregate_kind(node: exp.AggFunc) -> tuple[str, exp.Expression | None]:
    if isinstance(node, exp.Count):
        arg = node.this
        if isinstance(arg, exp.Star) or arg is None:
            return "count_star", None
        if isinstance(arg, exp.Distinct) or node.expressions:
            # count(DISTINCT ...), or count(x, y) (rows where neither is NULL): recomputed
            return "other", arg
        return "count", arg
    if isinstance(node, exp.Sum) and not isinstance(node.this, exp.Distinct):
        return "sum", node.this
    if isinstance(node, exp.Avg) and not isinstance(node.this, exp.Distinct):
        return "avg", node.this
    return "other", node.this


def _having_as_output(qualified: exp.Select, base: dict[str, object]) -> bool:
    """A HAVING condition becomes a hidden boolean output, ``__fr_having``: the view keeps
    every group, maintained as without the HAVING, and shows those whose condition holds
    (the view over the storage table filters on it). The condition is an expression of
    aggregates and group expressions like any output, so it is maintained like one."""
    having = qualified.args.get("having")
    if having is None:
        return False
    qualified.set("having", None)
    qualified.select(exp.alias_(having.this, HAVING_COLUMN), append=True, copy=False)
    base["qualified"] = render(qualified)
    return True


# Aggregates that skip NULL inputs: ``agg(x) FILTER (WHERE c)`` is ``agg(CASE WHEN c THEN
# x END)`` for them, which their maintenance reads as any other argument.
_NULL_SKIPPING = (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max)


def _filters_as_arguments(qualified: exp.Select, base: dict[str, object]) -> None:
    """``agg(x) FILTER (WHERE c)`` as ``agg(CASE WHEN c THEN x END)`` (``count(*)``: of
    ``CASE WHEN c THEN 1 END``; ``count(DISTINCT x)``: of the CASE inside the DISTINCT),
    so the filter is part of the argument the deltas sum. Any other aggregate keeps its
    FILTER: it is recomputed from the query itself."""
    changed = False
    for node in list(qualified.find_all(exp.Filter)):
        call, where = node.this, node.expression
        if not isinstance(call, _NULL_SKIPPING) or where is None:
            continue
        cond = where.this if isinstance(where, exp.Where) else where
        call = call.copy()
        arg = call.this
        if isinstance(arg, exp.Star) or arg is None:
            call.set("this", exp.Case(ifs=[exp.If(this=cond.copy(), true=exp.Literal.number(1))]))
        elif isinstance(arg, exp.Distinct):
            inner = [
                exp.Case(ifs=[exp.If(this=cond.copy(), true=e.copy())]) for e in arg.expressions
            ]
            call.set("this", exp.Distinct(expressions=inner))
        else:
            call.set("this", exp.Case(ifs=[exp.If(this=cond.copy(), true=arg.copy())]))
        node.replace(call)
        changed = True
    if changed:
        base["qualified"] = render(qualified)


def plan_aggregate(qualified: exp.Select, base: dict[str, object]) -> ViewPlan:
    """Plan an aggregate (GROUP BY, DISTINCT, or a global aggregate) of ``qualified``."""
    _filters_as_arguments(qualified, base)
    having = _having_as_output(qualified, base)
    selects = list(qualified.expressions)
    group_nodes = _groups(qualified)
    groups = [render(g) for g in group_nodes]
    components: list[str] = []
    component_nodes: list[exp.Expression] = []
    sums: set[int] = set()
    aggregates: list[Aggregate] = []
    for node in (a for s in selects for a in s.find_all(exp.AggFunc)):
        kind, arg = _aggregate_kind(node)
        arg_sql = render(arg) if arg is not None and kind != "other" else None
        component = None
        if kind in ("count", "sum", "avg") and arg is not None and arg_sql is not None:
            if arg_sql not in components:
                components.append(arg_sql)
                component_nodes.append(arg)
            component = components.index(arg_sql)
            if kind in ("sum", "avg"):
                sums.add(component)
        aggregates.append(Aggregate(kind, arg_sql, render(node), component))
    outputs = _aggregate_outputs(selects, group_nodes)
    hidden: list[tuple[str, str]] = []
    nodes: list[exp.Expression | None] = []
    group_columns = []
    for index, g in enumerate(groups):
        holder = next((o.name for o in outputs if o.group == index), None)
        if holder is None:
            holder = f"{HIDDEN_PREFIX}g_{index}"
            hidden.append((holder, g))
            nodes.append(group_nodes[index])
        group_columns.append(holder)
    hidden.append((f"{HIDDEN_PREFIX}count", "count(*)"))
    nodes.append(exp.Count(this=exp.Star()))
    for index, arg_sql in enumerate(components):
        hidden.append((f"{HIDDEN_PREFIX}cnt_{index}", f"count({arg_sql})"))
        nodes.append(exp.Count(this=component_nodes[index].copy()))
        if index in sums:
            # try_sum: NULL where a BIGINT sum passes 2^63 (sum wraps, ANSI off), which the
            # delta tells from a sum it can keep (sqlgen.aggregate.WIDE_SUM_PASSED)
            hidden.append((f"{HIDDEN_PREFIX}sum_{index}", f"try_sum({arg_sql})"))
            nodes.append(exp.Anonymous(this="try_sum", expressions=[component_nodes[index].copy()]))
    return ViewPlan(
        shape=Shape.AGGREGATE, outputs=tuple(outputs), groups=tuple(groups), having=having,
        group_columns=tuple(group_columns), aggregates=tuple(aggregates),
        components=tuple(components), sum_components=frozenset(sums), hidden=tuple(hidden),
        group_nodes=tuple(g.copy() for g in group_nodes), hidden_nodes=tuple(nodes),
        component_nodes=tuple(c.copy() for c in component_nodes),
        **base,  # type: ignore[arg-type]
    )  # fmt: skip


def explicit_group_by_all(tree: exp.Select) -> exp.Select:
    """``tree`` with a ``GROUP BY ALL`` written out: Spark groups by every output that
    contains no aggregate function, or aggregates globally when none is left. A constant
    output groups nothing beside other groups, so it stays out of them; with no other
    group it would be a constant group (no row at all over an empty input), which the
    planner does not keep as one: it is refused, asking for the expressions."""
    group = tree.args.get("group")
    if group is None or not group.args.get("all") or group.expressions:
        return tree
    plain = [s for s in tree.expressions if s.find(exp.AggFunc) is None]
    groups = [s.unalias() for s in plain if s.find(exp.Column) is not None]
    if plain and not groups:
        raise Refused(
            f"GROUP BY ALL with only the constant output(s) "
            f"{', '.join(s.alias_or_name for s in plain)} to group by; write the GROUP BY "
            "expressions out"
        )
    tree = tree.copy()
    tree.set("group", exp.Group(expressions=[g.copy() for g in groups]) if groups else None)
    return tree


def _groups(qualified: exp.Select) -> list[exp.Expression]:
    """The aggregate's group expressions: GROUP BY's, or under DISTINCT the outputs."""
    group_node = qualified.args.get("group")
    selects = list(qualified.expressions)
    if group_node is not None:
        groups = list(group_node.expressions)
        if any(isinstance(g, exp.Literal) and g.is_int for g in groups):
            raise Refused("GROUP BY by position (GROUP BY 1); name the expressions")
        # Another literal ('b', TRUE, NULL) is one group for every row: beside other
        # groups it changes nothing, and an output of it is a constant.
        constants = [g for g in groups if isinstance(g, exp.Literal | exp.Null | exp.Boolean)]
        if constants and len(constants) == len(groups):
            raise Refused(
                f"GROUP BY of constants only ({', '.join(render(g) for g in constants)}): "
                "one group, but none over no rows, which the planner does not keep; group by "
                "a column, or drop the GROUP BY for a global aggregate"
            )
        groups = [g for g in groups if g not in constants]
        outputs = {s.unalias() for s in selects}
        if qualified.args.get("distinct") is not None and not all(g in outputs for g in groups):
            # One row per group, so DISTINCT only matters when a group is not output.
            raise Refused("SELECT DISTINCT over a GROUP BY whose expressions are not all output")
    elif qualified.args.get("distinct") is not None:
        if any(s.find(exp.AggFunc) for s in selects):
            raise Refused("SELECT DISTINCT with aggregates")
        groups = [s.unalias() for s in selects]
    else:
        groups = []
    # A repeated group expression (GROUP BY g, g; SELECT DISTINCT g, g AS g2) groups by
    # nothing more: one group each, its outputs all read it.
    return list(dict.fromkeys(groups))


def _aggregate_outputs(
    selects: Sequence[exp.Expression], groups: Sequence[exp.Expression]
) -> list[Output]:
    """Each output: a group expression (by index), or an expression over aggregate calls
    and group expressions, kept as a template (``Output.template``)."""
    outputs = []
    calls = 0  # aggregate calls of the outputs before this one
    output_groups: set[int] = set()
    for select in selects:
        name, body = select.alias_or_name, select.unalias()
        assert isinstance(body, exp.Expression)
        if body in groups and groups.index(body) not in output_groups:
            outputs.append(Output(name, render(body), groups.index(body)))
            output_groups.add(groups.index(body))
        elif body in groups:  # a group output again (g, g AS g2): a copy of the first
            copy = exp.Placeholder(this=f"g{groups.index(body)}")
            outputs.append(Output(name, render(body), template=copy))
        else:  # over aggregates, group expressions and constants (a union branch's label)
            template, calls = _template(body, groups, calls)
            if body.find(exp.AggFunc) is None and template.find(exp.Column) is not None:
                raise Refused(f"output {name} is neither a GROUP BY expression nor an aggregate")
            outputs.append(Output(name, render(body), template=template))
    return outputs


def _template(
    body: exp.Expression, groups: Sequence[exp.Expression], first: int
) -> tuple[exp.Expression, int]:
    """``body`` with its aggregate calls as ``:a<k>`` (numbered from ``first``, in the
    order ``plan_aggregate`` lists them) and group expressions outside them as ``:g<i>``;
    and the number of the next call."""
    copy = body.copy()
    numbers = {id(node): first + n for n, node in enumerate(copy.find_all(exp.AggFunc))}

    def swap(node: exp.Expression) -> exp.Expression:
        if id(node) in numbers:
            return exp.Placeholder(this=f"a{numbers[id(node)]}")
        if node in groups:
            return exp.Placeholder(this=f"g{groups.index(node)}")
        return node

    return copy.transform(swap, copy=False), first + len(numbers)
