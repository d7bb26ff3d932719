"""Analysis: parse a view's compiled SQL, classify its shape, plan its hidden columns.

Pure: takes the SQL and the masters' columns, returns a ``ViewPlan`` (``plan.py``). A query
that cannot refresh fast gets ``shape = "unsupported"`` and a ``reason`` naming the
construct. ``analyze`` inlines CTEs and derived tables (``inline.py``), then hands the
query to the planner of its shape:

- ``projection`` (here): ``SELECT <expressions> FROM t [WHERE ...]``. Keyed masters: the
  master key is in the view (hidden ``__fr_k_<col>`` columns when the query lacks it).
  Key-less masters: each row carries ``__fr_multiplicity``, the number of identical rows.
  With ``[NOT] EXISTS`` / ``IN (SELECT ...)`` filters: a semi-join (``semi.py``).
- ``aggregate`` (``aggregates.py``): ``GROUP BY``, ``SELECT DISTINCT`` or a global aggregate,
  of one master or of a join, with or without ``HAVING``.
- ``join`` and ``outer_join`` (``joins.py``, ``outer.py``): inner joins of keyed masters,
  outer joins of two.
- ``window`` (here and ``window.py``): window functions over one master, recomputed by
  partition.
- ``union_all`` (``union.py``): UNION ALL of branches each planned as above.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from dbt.adapters.fastrefresh.iceberg.columns import Column
from dbt.adapters.fastrefresh.ivm.aggregates import explicit_group_by_all, plan_aggregate
from dbt.adapters.fastrefresh.ivm.checks import (
    Refused,
    anywhere_offender,
    check_output_names,
    clock_literal,
    first_offender,
    is_aggregate,
    map_output,
    master_of,
    qualify_tree,
    render,
    set_operation,
)
from dbt.adapters.fastrefresh.ivm.inline import (
    HAVING_COLUMN,
    HIDDEN_PREFIX,
    InlineError,
    derived_table,
    inline,
    needs_inlining,
    sqlglot_schema,
    visible,
)
from dbt.adapters.fastrefresh.ivm.joins import analyze_join
from dbt.adapters.fastrefresh.ivm.plan import (
    ALGEBRAIC,
    DIALECT,
    Aggregate,
    JoinInput,
    Output,
    Shape,
    ViewPlan,
    query_hash,
    tables_of,
)
from dbt.adapters.fastrefresh.ivm.semi import (
    SemiJoinError,
    conjuncts,
    is_semi,
    semi_joins,
    without_semis,
)
from dbt.adapters.fastrefresh.ivm.union import plan_union
from dbt.adapters.fastrefresh.ivm.window import WindowError, has_window, partitions, window_select
from dbt.adapters.fastrefresh.sqltext import TableName

# The plan's vocabulary is ``plan.py``'s; these names stay importable from here.
__all__ = [
    "ALGEBRAIC", "DIALECT", "HAVING_COLUMN", "HIDDEN_PREFIX", "Aggregate", "JoinInput",
    "Output", "Shape", "ViewPlan", "analyze", "query_hash", "tables_of",
]  # fmt: skip


def _unsupported(
    sql: str, reason: str, masters: Sequence[TableName] = (), code: str = "unsupported_query"
) -> ViewPlan:
    return ViewPlan(
        sql, query_hash(sql), Shape.UNSUPPORTED, reason, tuple(masters), reason_code=code
    )


_UNRESOLVED = re.compile(r"Column '([^']+)' could not be resolved")


def _unresolved(against: str, exc: SqlglotError) -> Refused:
    """The refusal of a query sqlglot could not resolve against its tables: a master
    column named like a hidden one (``__fr_*``, left out of what the query may name) said
    so, not as a column that is not there."""
    found = _UNRESOLVED.search(str(exc))
    if found is not None and found[1].strip('`"').lower().startswith(HIDDEN_PREFIX):
        return Refused(
            f"the query reads column {found[1]} of {against}, a name dbt-fastrefresh keeps "
            "for the hidden columns of its storage tables (rename the column on its table)"
        )
    return Refused(f"the query could not be resolved against {against} ({exc})")


def analyze(
    sql: str, master_columns: dict[TableName, list[Column]], keys: dict[TableName, list[str]]
) -> ViewPlan:
    """Classify ``sql`` (a view's compiled SELECT) and plan its maintenance.

    ``master_columns`` and ``keys`` describe the tables the query reads; a table without
    columns there is not a known master.
    """
    try:
        tree = sqlglot.parse_one(sql, read=DIALECT)
    except SqlglotError as exc:
        return _unsupported(sql, f"the SQL could not be parsed for analysis ({exc})")
    masters = tables_of(sql)
    tree = spark_aggregates(tree)
    schema = sqlglot_schema(master_columns)
    offender = anywhere_offender(tree) or clock_literal(tree, schema) or map_output(tree, schema)
    if offender:
        return _unsupported(sql, f"the query uses {offender}", masters)
    try:
        return _plan(sql, tree, masters, master_columns, keys)
    except Refused as refused:
        return _unsupported(sql, str(refused), masters, refused.code)


# Spark aggregate functions sqlglot reads as plain function calls (or, ``any``, as the
# quantifier of ``= ANY (subquery)``): without this the planner took ``try_sum(x)`` for a
# row-level expression (a "projection" whose build failed), or grouped by it under
# GROUP BY ALL. Recomputed per group like any aggregate without a delta rule; ``mean``
# and ``std`` are AVG's and STDDEV's other names.
SPARK_AGGREGATES = frozenset({
    "try_sum", "try_avg", "every", "some", "any", "count_min_sketch", "histogram_numeric",
    "hll_sketch_agg", "hll_union_agg",
})  # fmt: skip


def spark_aggregates(tree: exp.Expr) -> exp.Expr:
    """``tree`` with every Spark aggregate call an ``exp.AggFunc``, as the planner finds
    aggregates (``SPARK_AGGREGATES``; ``mean`` as AVG, ``std`` as STDDEV)."""

    def swap(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Any) and not isinstance(node.this, exp.Subquery | exp.Select):
            return exp.AnonymousAggFunc(this="any", expressions=[node.this.unnest()])
        if not isinstance(node, exp.Anonymous):
            return node
        name = node.name.lower()
        if name == "mean" and len(node.expressions) == 1:
            return exp.Avg(this=node.expressions[0])
        if name == "std" and len(node.expressions) == 1:
            return exp.Stddev(this=node.expressions[0])
        if name in SPARK_AGGREGATES:
            return exp.AnonymousAggFunc(this=node.name, expressions=node.expressions)
        return node

    return tree.transform(swap)


def _plan(
    sql: str,
    tree: exp.Expr,
    masters: list[TableName],
    master_columns: dict[TableName, list[Column]],
    keys: dict[TableName, list[str]],
) -> ViewPlan:
    if isinstance(tree, exp.Union) and not isinstance(tree, exp.Intersect | exp.Except):

        def branch(branch_sql: str, select: exp.Select) -> ViewPlan:
            return _plan(branch_sql, select, tables_of(branch_sql), master_columns, keys)

        return plan_union(sql, tree, branch)
    if needs_inlining(tree):
        tree = _inlined(tree, masters, master_columns)
    if isinstance(tree, exp.Select):
        tree = explicit_group_by_all(tree)
    if isinstance(tree, exp.Select) and has_window(tree):
        return _plan_window(sql, tree, master_columns)
    if isinstance(tree, exp.Intersect | exp.Except):
        raise Refused(f"the query uses {set_operation(tree)}, which is not fast-refreshable")
    if not isinstance(tree, exp.Select):
        raise Refused(f"{type(tree).__name__.upper()} is not fast-refreshable yet")
    semis = any(is_semi(t) for t in conjuncts(tree.args.get("where")))
    offender = first_offender(without_semis(tree) if semis else tree)
    if offender:
        raise Refused(f"the query uses {offender}")
    if tree.args.get("having") is not None and not is_aggregate(tree):
        raise Refused("the query uses HAVING without GROUP BY or an aggregate")
    if semis:
        return _plan_semi(sql, tree, master_columns, keys)
    if tree.args.get("joins"):
        return analyze_join(sql, tree, masters, master_columns, keys)
    master, qualified = _single_table(tree, master_columns)
    alias = qualified.find(exp.Table).alias_or_name  # type: ignore[union-attr]
    selects = list(qualified.expressions)
    check_output_names([s.alias_or_name for s in selects], "")
    key = list(keys.get(master, []))
    where = qualified.args.get("where")
    # The master's columns, qualified by its alias: an output's alias (ORDER BY n) is none.
    read = {c.name.lower() for c in qualified.find_all(exp.Column) if c.table == alias}
    base = {
        "sql": sql, "query_hash": query_hash(sql), "masters": (master,), "alias": alias,
        "filter": render(where.this) if where is not None else None,
        "columns_read": tuple(sorted(read)),
        "qualified": render(qualified), "tree": qualified,
        "expressions": tuple(render(s.unalias()) for s in selects), "keyed": bool(key),
        "key_columns": tuple(key),
    }  # fmt: skip
    if is_aggregate(qualified):
        return plan_aggregate(qualified, base)
    return _plan_projection(qualified, alias, key, base)


def _plan_semi(
    sql: str,
    tree: exp.Select,
    master_columns: dict[TableName, list[Column]],
    keys: dict[TableName, list[str]],
) -> ViewPlan:
    """A keyed projection filtered by ``[NOT] EXISTS`` / ``IN (SELECT ...)`` (``semi.py``):
    the outer table's key identifies a view row, and each subquery's correlation says
    which rows a change of its table reaches."""
    if tree.args.get("joins"):
        raise Refused("the query uses a subquery filter (EXISTS/IN) over a join")
    if is_aggregate(tree):
        raise Refused("the query uses an aggregate over a subquery filter (EXISTS/IN)")
    from_ = tree.args.get("from_") or tree.args.get("from")
    if from_ is None or not isinstance(from_.this, exp.Table):
        raise Refused("the query must read one table in FROM")
    masters = [master_of(table, master_columns) for table in tree.find_all(exp.Table)]
    try:
        qualified = qualify_tree(tree, sqlglot_schema({m: master_columns[m] for m in masters}))
    except SqlglotError as exc:
        raise _unresolved("its tables", exc) from exc
    assert isinstance(qualified, exp.Select)
    outer_table = qualified.find(exp.Table)
    assert outer_table is not None
    alias, outer = outer_table.alias_or_name, master_of(outer_table, master_columns)
    try:
        semis = semi_joins(qualified, alias, lambda t: master_of(t, master_columns))
    except SemiJoinError as exc:
        raise Refused(f"the query uses {exc}") from exc
    key = list(keys.get(outer) or [])
    if not key:
        raise Refused(
            f"the query filters {outer} by a subquery (EXISTS/IN), which refreshes fast only "
            "when that table's materialized view log has a primary key",
            code="no_keyed_log",
        )
    selects = list(qualified.expressions)
    check_output_names([s.alias_or_name for s in selects], "")
    where = qualified.args.get("where")
    read = {c.name.lower() for c in qualified.find_all(exp.Column) if c.table == alias}
    others = sorted({s.master for s in semis} - {outer}, key=str)
    base: dict[str, object] = {
        "sql": sql, "query_hash": query_hash(sql), "masters": (outer, *others), "alias": alias,
        "filter": render(where.this) if where is not None else None,
        "columns_read": tuple(sorted(read)), "qualified": render(qualified), "tree": qualified,
        "expressions": tuple(render(s.unalias()) for s in selects), "keyed": True,
        "key_columns": tuple(key), "semis": semis,
    }  # fmt: skip
    return _plan_projection(qualified, alias, key, base)


def _inlined(
    tree: exp.Expr, masters: list[TableName], master_columns: dict[TableName, list[Column]]
) -> exp.Expr:
    """The query with its CTEs and derived tables merged in (``inline.py``), or refused
    naming the one that cannot be."""
    for table in tree.find_all(exp.Table):
        if table.db:
            master_of(table, master_columns)
    try:
        merged = inline(tree, {m: master_columns[m] for m in masters})
    except InlineError as exc:
        raise Refused(f"the query uses CTEs or derived tables, and {exc}") from exc
    left = derived_table(merged)
    if left is not None and not (isinstance(merged, exp.Select) and has_window(merged)):
        name, because = left
        named = "a derived table without an alias" if re.fullmatch(r"_\d+", name) else name
        raise Refused(
            f"the query reads the CTE or derived table {named}, which cannot be merged into "
            f"it: {because}"
        )
    return merged


def _plan_window(
    sql: str, tree: exp.Select, master_columns: dict[TableName, list[Column]]
) -> ViewPlan:
    """Window functions over one master (``window.py``): the view's rows are recomputed by
    partition, each partition's value kept in the view (hidden ``__fr_p_<i>`` columns)."""
    try:
        inner, derived = window_select(tree)
        parts = partitions(inner)
    except WindowError as exc:
        raise Refused(f"the query uses {exc}") from exc
    tables = [t for t in tree.find_all(exp.Table) if t.db]
    if len(tables) != 1:
        raise Refused("the query uses window functions over more than one table")
    master = master_of(tables[0], master_columns)
    offender = first_offender(_without_windows(tree))
    if offender:
        raise Refused(f"the query uses {offender}")
    schema: dict[str, object] = {master.schema: {master.table: visible(master_columns[master])}}
    try:
        qualified = qualify_tree(tree, schema)
    except SqlglotError as exc:
        raise _unresolved(str(master), exc) from exc
    assert isinstance(qualified, exp.Select)
    inner, derived = window_select(qualified)
    parts = partitions(inner)
    alias = qualified.find(exp.Table).alias_or_name  # type: ignore[union-attr]
    selects = list(qualified.expressions)
    check_output_names([s.alias_or_name for s in selects], "")
    outputs = tuple(Output(s.alias_or_name, render(s.unalias())) for s in selects)
    holders = [f"{HIDDEN_PREFIX}p_{i}" for i in range(len(parts))]
    nodes: list[exp.Expression | None] = []
    for part, holder in zip(parts, holders, strict=True):
        if derived is None:
            nodes.append(part.copy())
        else:  # the derived table hands each partition value out to the view
            inner.select(exp.alias_(part.copy(), holder), append=True, copy=False)
            nodes.append(exp.column(holder, table=derived))
    # The master's columns are those of the select that reads it: a derived table may
    # carry the master's alias too, and the outer query's columns are then its outputs.
    scope = qualified.find(exp.Table).parent_select or qualified  # type: ignore[union-attr]
    read = {c.name.lower() for c in scope.find_all(exp.Column) if c.table == alias}
    return ViewPlan(
        sql=sql, query_hash=query_hash(sql), shape=Shape.WINDOW, masters=(master,),
        alias=alias, outputs=outputs, hidden=tuple((h, render(p)) for h, p in zip(holders, parts, strict=True)),
        hidden_nodes=tuple(nodes), columns_read=tuple(sorted(read)),
        qualified=render(qualified), tree=qualified,
        expressions=tuple(render(s.unalias()) for s in selects),
        partitions=tuple(render(p) for p in parts), partition_view_columns=tuple(holders),
        partition_nodes=tuple(p.copy() for p in parts),
    )  # fmt: skip


def _without_windows(tree: exp.Select) -> exp.Select:
    """A copy of ``tree`` with its window functions and derived tables out of the way, for
    the checks of everything else (non-deterministic functions, LIMIT, ...)."""
    copy = tree.copy()
    for window in list(copy.find_all(exp.Window)):
        window.replace(exp.Null())
    for sub in list(copy.find_all(exp.Subquery)):
        if isinstance(sub.parent, exp.From | exp.Join):
            sub.replace(exp.to_table("x"))
    return copy


def _single_table(
    tree: exp.Select, master_columns: dict[TableName, list[Column]]
) -> tuple[TableName, exp.Select]:
    """The one master a single-table query reads, and the query qualified against it."""
    from_ = tree.args.get("from_") or tree.args.get("from")
    tables = list(tree.find_all(exp.Table))
    if from_ is None or len(tables) != 1 or not isinstance(from_.this, exp.Table):
        raise Refused("the query must read exactly one table in FROM")
    master = master_of(tables[0], master_columns)
    columns = master_columns[master]
    schema: dict[str, object] = {master.schema: {master.table: visible(columns)}}
    try:
        qualified = qualify_tree(tree, schema)
    except SqlglotError as exc:
        raise _unresolved(str(master), exc) from exc
    assert isinstance(qualified, exp.Select)
    return master, qualified


def _plan_projection(
    qualified: exp.Select, alias: str, key: Sequence[str], base: dict[str, object]
) -> ViewPlan:
    """A projection: the view keeps the master's key (hidden when not an output), or, with
    no key, a multiplicity per distinct row."""
    selects = list(qualified.expressions)
    names = [s.alias_or_name for s in selects]
    outputs = tuple(Output(n, render(s.unalias())) for n, s in zip(names, selects, strict=True))
    hidden: list[tuple[str, str]] = []
    nodes: list[exp.Expression | None] = []
    key_view: list[str] = []
    plain = {
        s.unalias().name.lower(): n
        for n, s in zip(names, selects, strict=True)
        if isinstance(s.unalias(), exp.Column)
    }
    for k in key:
        if k in plain:
            key_view.append(plain[k])
        else:
            node = exp.column(k, table=alias, quoted=True)  # any key name, quoted
            hidden.append((f"{HIDDEN_PREFIX}k_{k}", render(node)))
            nodes.append(node)
            key_view.append(f"{HIDDEN_PREFIX}k_{k}")
    if not key:
        hidden.append((f"{HIDDEN_PREFIX}multiplicity", ""))
        nodes.append(None)  # a window count over the outputs (sqlgen.complete)
    return ViewPlan(
        shape=Shape.PROJECTION, outputs=outputs, hidden=tuple(hidden),
        hidden_nodes=tuple(nodes), key_view_columns=tuple(key_view),
        **base,  # type: ignore[arg-type]
    )  # fmt: skip
