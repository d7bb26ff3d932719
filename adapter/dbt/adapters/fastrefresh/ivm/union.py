"""UNION ALL: a view of branches that each refresh fast, as Oracle's UNION ALL materialized
views are, each row marked by its branch.

Each branch is planned as a view of its own (by ``analysis``). The view keeps the branch's
number in the hidden ``__fr_union`` (Oracle's marker column) and, hidden too, whatever
identifies a branch's rows that the branch does not show (``__fr_b<i>_<name>``). A branch's
*dimensions* (``plan.Dim``) say which of its rows a change of a master reaches: a keyed
projection's by the master's key, an inner join's by each table's key, an aggregate's by
its groups, a window's by its partitions, a key-less projection's by the whole row. A
refresh deletes each branch's reached rows and inserts the branch's query restricted to
them, every branch in one MERGE (``sqlgen/union.py``).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from dbt.adapters.fastrefresh.ivm.checks import Refused, check_output_names, set_operation
from dbt.adapters.fastrefresh.ivm.inline import HIDDEN_PREFIX, REPEAT_COLUMN
from dbt.adapters.fastrefresh.ivm.plan import (
    DIALECT,
    Dim,
    Output,
    Shape,
    UnionBranch,
    ViewPlan,
    query_hash,
)
from dbt.adapters.fastrefresh.sqltext import TableName

UNION_COLUMN = f"{HIDDEN_PREFIX}union"


def branches_of(tree: exp.Union) -> list[exp.Select]:
    """The SELECTs of a (nested) UNION ALL, in order, each with the CTEs it reads."""
    found: list[exp.Select] = []

    def walk(node: exp.Expression) -> None:
        while isinstance(node, exp.Subquery) and not node.alias:
            node = node.this
        if isinstance(node, exp.Intersect | exp.Except):
            raise Refused(f"the query uses {set_operation(node)}, which is not fast-refreshable")
        if isinstance(node, exp.Union):
            if node.args.get("distinct"):
                raise Refused(
                    "the query uses UNION (without ALL), which removes duplicates across its "
                    "branches and is not fast-refreshable; write UNION ALL (each branch "
                    "refreshes fast), with SELECT DISTINCT in a branch where it is needed"
                )
            if node.args.get("by_name"):
                raise Refused("the query uses UNION ALL BY NAME; list the columns by position")
            for arg, words in (("order", "ORDER BY"), ("limit", "LIMIT"), ("offset", "OFFSET")):
                if node.args.get(arg):
                    raise Refused(f"the query uses {words} on a UNION ALL")
            walk(node.this)
            walk(node.expression)
            return
        if not isinstance(node, exp.Select):
            raise Refused(f"a UNION ALL branch is a {type(node).__name__.upper()}")
        found.append(node.copy())

    walk(tree)
    with_ = tree.args.get("with_")
    if with_ is not None:
        for select in found:
            _attach_ctes(select, with_)
    return found


def _attach_ctes(select: exp.Select, with_: exp.With) -> None:
    """Give ``select`` the CTEs of ``with_`` it reads, directly or through another."""
    ctes = {c.alias_or_name.lower(): c for c in with_.expressions}
    needed: set[str] = set()
    stack: list[exp.Expression] = [select]
    while stack:
        for table in stack.pop().find_all(exp.Table):
            name = table.name.lower()
            if not table.db and name in ctes and name not in needed:
                needed.add(name)
                stack.append(ctes[name].this)
    kept = [c.copy() for c in with_.expressions if c.alias_or_name.lower() in needed]
    if kept:
        select.set("with_", exp.With(expressions=kept))


def _dims(index: int, plan: ViewPlan) -> list[tuple[TableName, str, tuple, tuple[str, ...]]]:
    """(master, alias, expressions over the alias, the branch's view columns holding them)
    of each dimension of a branch's rows; refused for the shapes a union cannot take."""
    where = f"branch {index + 1} of the UNION ALL"
    if plan.shape is Shape.PROJECTION:
        if plan.semis:
            raise Refused(f"{where} filters by a subquery (EXISTS/IN), not fast-refreshable there")
        master = plan.masters[0]
        if plan.keyed:
            keys = tuple(exp.column(k, table=plan.alias) for k in plan.key_columns)
            return [(master, plan.alias, keys, plan.key_view_columns)]
        assert plan.tree is not None
        whole = tuple(s.unalias().copy() for s in plan.tree.expressions)
        return [(master, plan.alias, whole, tuple(o.name for o in plan.outputs))]
    if plan.shape is Shape.AGGREGATE:
        if plan.inputs and any(o.name == REPEAT_COLUMN for o in plan.outputs):
            bags = ", ".join(str(i.master) for i in plan.inputs if not i.key_columns)
            raise Refused(
                f"{where} joins {bags or 'a table'}, whose log is key-less (its rows have no "
                "identity), not fast-refreshable there; create that log with a key "
                "(create_mview_log with key: [...])"
            )
        if plan.inputs:
            raise Refused(f"{where} aggregates over a join, not fast-refreshable there")
        return [(plan.masters[0], plan.alias, plan.group_nodes, plan.group_columns)]
    if plan.shape is Shape.JOIN:
        return [
            (
                i.master,
                i.alias,
                tuple(exp.column(k, table=i.alias) for k in i.key_columns),
                i.key_view_columns,
            )
            for i in plan.inputs
        ]
    if plan.shape is Shape.WINDOW:
        return [(plan.masters[0], plan.alias, plan.partition_nodes, plan.partition_view_columns)]
    raise Refused(f"{where} is an outer join, not fast-refreshable there yet")


def plan_union(
    sql: str, tree: exp.Union, plan_branch: Callable[[str, exp.Select], ViewPlan]
) -> ViewPlan:
    """Plan a UNION ALL: each branch by ``plan_branch`` (the planner of a whole query),
    the union's hidden columns, and each branch's dimensions."""
    plans: list[ViewPlan] = []
    first_names: list[str] = []
    for index, select in enumerate(branches_of(tree)):
        said = [s.alias_or_name for s in select.expressions if not s.is_star]
        if index and len({n.lower() for n in said}) < len(said):
            # The union's columns are the first branch's; a later branch's names only
            # need to be told apart.
            twice = sorted({n for n in said if [m.lower() for m in said].count(n.lower()) > 1})
            raise Refused(
                f"branch {index + 1} of the UNION ALL outputs {', '.join(twice)} more than "
                f"once; alias its columns as the first branch names them "
                f"({', '.join(first_names)})"
            )
        first_names = first_names or said
        try:
            plans.append(plan_branch(select.sql(dialect=DIALECT), select))
        except Refused as refused:
            raise Refused(f"branch {index + 1} of the UNION ALL: {refused}", refused.code) from None
    names = plans[0].user_columns
    check_output_names(names, " (in the first branch of the UNION ALL)")
    for index, plan in enumerate(plans[1:], start=2):
        if len(plan.user_columns) != len(names):
            raise Refused(
                f"branch {index} of the UNION ALL has {len(plan.user_columns)} columns, the "
                f"first {len(names)}; give every branch the same columns, in the same order"
            )
    hidden: list[tuple[str, str]] = [(UNION_COLUMN, "the row's branch")]
    branches: list[UnionBranch] = []
    for index, plan in enumerate(plans):
        union_name = dict(zip(plan.user_columns, names, strict=True))
        found = _dims(index, plan)
        carried: dict[str, str] = {}
        for column in (c for *_, held in found for c in held):
            if column not in union_name and column not in carried:
                carried[column] = f"{HIDDEN_PREFIX}b{index}_{column[len(HIDDEN_PREFIX) :]}"
        hidden += [(name, f"branch {index + 1}: {column}") for column, name in carried.items()]
        held = union_name | carried
        dims = tuple(
            Dim(master, alias, tuple(held[c] for c in holders), tuple(n.copy() for n in nodes))
            for master, alias, nodes, holders in found
        )
        branches.append(UnionBranch(index, plan, plan.user_columns, tuple(carried.items()), dims))
    first = {o.name: o.sql for o in plans[0].outputs}
    return ViewPlan(
        sql=sql, query_hash=query_hash(sql), shape=Shape.UNION_ALL,
        masters=tuple(sorted({m for p in plans for m in p.masters})),
        outputs=tuple(Output(n, first[n]) for n in names), hidden=tuple(hidden),
        hidden_nodes=(None,) * len(hidden),
        columns_read=tuple(sorted({c for p in plans for c in p.columns_read})),
        qualified=" UNION ALL ".join(p.qualified for p in plans),
        branches=tuple(branches),
    )  # fmt: skip
