"""Joins: inner joins of keyed masters (``shape = "join"``), aggregates over them, and
outer joins of two (``shape = "outer_join"``, ``outer.py``; an aggregate over one keeps
``shape = "aggregate"`` with its ``outer``, and its groups are recomputed). A view row of an inner join is
a function of one row of each joined table, so the tuple of their keys identifies it: each
table's key is in the view (hidden ``__fr_j<i>_<col>`` columns when the query lacks it). A
table read twice (a self-join) is two inputs of one master."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.errors import SqlglotError

from dbt.adapters.fastrefresh.iceberg.columns import Column
from dbt.adapters.fastrefresh.ivm.aggregates import plan_aggregate
from dbt.adapters.fastrefresh.ivm.checks import (
    Refused,
    check_output_names,
    is_aggregate,
    master_of,
    qualify_tree,
    render,
)
from dbt.adapters.fastrefresh.ivm.inline import (
    HIDDEN_PREFIX,
    REPEAT_COLUMN,
    sqlglot_schema,
)
from dbt.adapters.fastrefresh.ivm.outer import OuterJoinError, is_outer, outer_join
from dbt.adapters.fastrefresh.ivm.plan import JoinInput, Output, Shape, ViewPlan, query_hash
from dbt.adapters.fastrefresh.sqltext import TableName


def _join_offender(join: exp.Join, *, outer: bool = False) -> str | None:
    if outer and is_outer(join):
        return None
    side = (join.args.get("side") or "").upper()
    kind = (join.args.get("kind") or "").upper()
    if join.args.get("method"):
        return f"a {join.args['method'].upper()} join; name the join columns with ON or USING"
    if kind in ("SEMI", "ANTI"):
        return f"a {side} {kind} join".replace("  ", " ")
    if side:
        return (
            f"a {side} OUTER join beside other joins (an outer join refreshes fast as the one "
            "join of two tables; joining more tables, every join must be inner)"
        )
    if kind not in ("", "INNER", "CROSS"):
        return f"a {kind} join"
    return None


def analyze_join(
    sql: str,
    tree: exp.Select,
    masters: list[TableName],
    master_columns: dict[TableName, list[Column]],
    keys: dict[TableName, list[str]],
) -> ViewPlan:
    """Plan an inner join (``shape = "join"``; of a key-less table, the counted rows of
    ``_as_bag``), an aggregate over an inner or outer join (``shape = "aggregate"``), or
    an outer join of two keyed tables (``shape = "outer_join"``)."""
    joins = tree.args.get("joins") or []
    outer = len(joins) == 1 and is_outer(joins[0])
    aggregate = is_aggregate(tree)
    # The delta rule of an aggregate over an inner join sums every table's signed changes
    # joined with the others: bags, no key needed (a key-less log holds every column); an
    # inner join of a key-less table is kept as such an aggregate (``_as_bag``).
    qualified = _qualified_join(tree, master_columns, keys, outer=outer, keyless_ok=not outer)
    selects = list(qualified.expressions)
    names = [s.alias_or_name for s in selects]
    check_output_names(names, " (alias them, e.g. b.id AS b_id)")
    read = [TableName(t.db.lower(), t.name.lower()) for t in qualified.find_all(exp.Table)]
    if not aggregate and not outer and not all(keys.get(m) for m in read):
        _as_bag(qualified)
        aggregate = True
    inputs, hidden, nodes = _join_inputs(qualified, keys, with_keys=not aggregate)
    where = qualified.args.get("where")
    base: dict[str, object] = {
        "sql": sql, "query_hash": query_hash(sql), "masters": tuple(masters),
        "filter": render(where.this) if where is not None else None,
        "columns_read": tuple(sorted({c for i in inputs for c in i.columns_read})),
        "qualified": render(qualified), "tree": qualified, "keyed": True,
        "inputs": tuple(inputs),
        "expressions": tuple(render(s.unalias()) for s in selects),
    }  # fmt: skip
    if outer:
        try:
            spec = outer_join(qualified.args["joins"][0], (inputs[0].alias, inputs[1].alias))
        except OuterJoinError as exc:
            raise Refused(f"the query uses {exc}") from exc
        base["outer"] = spec
    if aggregate:
        plan = plan_aggregate(qualified, base)
        if outer:
            grouping_side(plan)
        return plan
    return ViewPlan(
        shape=Shape.OUTER_JOIN if outer else Shape.JOIN,
        outputs=tuple(Output(n, render(s.unalias())) for n, s in zip(names, selects, strict=True)),
        key_view_columns=tuple(c for i in inputs for c in i.key_view_columns),
        hidden=tuple(hidden), hidden_nodes=tuple(nodes), **base,  # type: ignore[arg-type]
    )  # fmt: skip


def _qualified_join(
    tree: exp.Select,
    master_columns: dict[TableName, list[Column]],
    keys: dict[TableName, list[str]],
    *,
    outer: bool = False,
    keyless_ok: bool = False,
) -> exp.Select:
    """The join qualified against its tables, each a known master with a keyed log
    (``outer``: its one join may be an outer join; ``keyless_ok``: a key-less log will do)."""
    for join in tree.args.get("joins") or []:
        offender = _join_offender(join, outer=outer)
        if offender:
            raise Refused(f"the query uses {offender}")
        if not isinstance(join.this, exp.Table):
            raise Refused("a join of something other than a table")
    from_ = tree.args.get("from_") or tree.args.get("from")
    if from_ is None or not isinstance(from_.this, exp.Table):
        raise Refused("the query must read tables in FROM")
    masters = [master_of(table, master_columns) for table in tree.find_all(exp.Table)]
    unkeyed = list(dict.fromkeys(m for m in masters if not keys.get(m)))
    if unkeyed and not keyless_ok:
        named = " and ".join(str(m) for m in unkeyed)
        raise Refused(
            f"the outer join reads {named}, which {'has' if len(unkeyed) == 1 else 'have'} "
            "no keyed materialized view log (an outer join refreshes fast only when the "
            "logs of both its tables have a primary key: its rows belong to the preserved "
            "side's keys; a table gets one from `mview_log: {key: [...]}` on the dbt "
            "model, seed or source that holds it, when the run creates its log (drop a "
            "key-less log first: fast_refresh.drop_mview_log), or from create_mview_log's "
            "`key`)",
            code="no_keyed_log",
        )
    try:
        qualified = qualify_tree(tree, sqlglot_schema({m: master_columns[m] for m in masters}))
    except SqlglotError as exc:
        raise Refused(f"the query could not be resolved against its tables ({exc})") from exc
    assert isinstance(qualified, exp.Select)
    return qualified


def _join_inputs(
    qualified: exp.Select, keys: dict[TableName, list[str]], *, with_keys: bool
) -> tuple[list[JoinInput], list[tuple[str, str]], list[exp.Expression]]:
    """Each joined table as an input (``with_keys``: its key kept in the view, hidden when
    not an output), and the hidden key columns (as text and as trees)."""
    plain = {
        (s.unalias().table.lower(), s.unalias().name.lower()): s.alias_or_name
        for s in qualified.expressions
        if isinstance(s.unalias(), exp.Column)
    }
    inputs: list[JoinInput] = []
    hidden: list[tuple[str, str]] = []
    nodes: list[exp.Expression] = []
    for index, table in enumerate(qualified.find_all(exp.Table)):
        master = TableName(table.db.lower(), table.name.lower())
        alias = table.alias_or_name
        if any(i.alias.lower() == alias.lower() for i in inputs):
            raise Refused(f"two tables of the join are both called {alias}")
        key_view = []
        for k in keys.get(master, []) if with_keys else []:
            holder = plain.get((alias.lower(), k))
            if holder is None:
                holder = f"{HIDDEN_PREFIX}j{index}_{k}"
                hidden.append((holder, f"{alias}.{k}"))
                nodes.append(exp.column(k, table=alias))
            key_view.append(holder)
        read = sorted(
            {
                c.name.lower()
                for c in qualified.find_all(exp.Column)
                if c.table.lower() == alias.lower()
            }
        )
        key = tuple(keys.get(master, []))
        inputs.append(JoinInput(alias, master, key, tuple(key_view), tuple(read)))
    return inputs, hidden, nodes


def grouping_side(plan: ViewPlan) -> int | None:
    """The input whose columns an aggregate over an outer join groups by (None: a global
    aggregate); refused when its groups read both sides, for then no one side's changes
    say which groups they reach."""
    aliases = {i.alias.lower(): n for n, i in enumerate(plan.inputs)}
    sides = {aliases[c.table.lower()] for g in plan.group_nodes for c in g.find_all(exp.Column)}
    if len(sides) > 1:
        raise Refused(
            "the query aggregates over an OUTER join grouped by columns of both sides; group "
            "by columns of one side (the other side's through a join of its own, or in a "
            "view over this one)"
        )
    return next(iter(sides), None)


def _as_bag(qualified: exp.Select) -> None:
    """An inner join of a key-less table (a bag: its rows have no identity) as the
    aggregate that counts each distinct output row: ``GROUP BY`` the outputs with
    ``count(*) AS __fr_repeat``, maintained by the signed deltas of an aggregate over a
    join; the model's view repeats each row that many times (``engine/surface.py``)."""
    # A constant output (``2 AS two``) groups nothing, and a literal in a GROUP BY is a
    # position in Spark: it stays out of the groups (only constants: a global aggregate).
    outputs = [s.unalias().copy() for s in qualified.expressions]
    grouped = [o for o in outputs if o.find(exp.Column) is not None]
    if grouped:
        qualified.group_by(*grouped, copy=False)
    qualified.select(exp.alias_(exp.Count(this=exp.Star()), REPEAT_COLUMN), append=True, copy=False)
