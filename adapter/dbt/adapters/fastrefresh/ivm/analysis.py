"""Analysis: parse a view's compiled SQL, classify its shape, plan its hidden columns.

Pure: takes the SQL and the master's columns, returns a ``ViewPlan``. A query that cannot
refresh fast gets ``shape = "unsupported"`` and a ``reason`` naming the construct.

Shapes (single master table):

- ``projection``: ``SELECT <expressions> FROM t [WHERE ...]``. Keyed masters: the master
  key is in the view (hidden ``__fr_k_<col>`` columns when the query lacks it). Key-less
  masters: each row carries ``__fr_multiplicity``, the number of identical rows.
- ``aggregate``: ``GROUP BY`` (or ``SELECT DISTINCT``, or a global aggregate). Hidden
  ``__fr_count`` (rows per group), ``__fr_cnt_<n>`` / ``__fr_sum_<n>`` per aggregated
  expression, ``__fr_g_<n>`` for a group expression the query does not output. COUNT,
  SUM and AVG are maintained from signed deltas (``algebraic``); any other aggregate
  (MIN, MAX, COUNT(DISTINCT), ...) makes the view recompute the affected groups.

Shape over several masters:

- ``join``: inner joins (``JOIN ... ON``/``USING``, ``CROSS JOIN``, comma) of keyed masters,
  with any ``WHERE`` and output expressions, no aggregate. A view row is a function of one
  row of each joined table, so the tuple of their keys identifies it: each table's key is in
  the view (hidden ``__fr_j<i>_<col>`` columns when the query lacks it). A table read twice
  (a self-join) is two inputs of one master.
- ``aggregate`` with ``inputs``: an aggregate over such a join; planned like a single-table
  aggregate, its deltas come from the join's delta rule.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.qualify import qualify

from dbt.adapters.fastrefresh.iceberg.columns import Column
from dbt.adapters.fastrefresh.ivm.inline import (
    HAVING_COLUMN,
    HIDDEN_PREFIX,
    InlineError,
    derived_table,
    inline,
    needs_inlining,
    visible,
)
from dbt.adapters.fastrefresh.ivm.outer import OuterJoin, OuterJoinError, is_outer, outer_join
from dbt.adapters.fastrefresh.ivm.semi import (
    SemiJoin,
    SemiJoinError,
    conjuncts,
    is_semi,
    semi_joins,
    without_semis,
)
from dbt.adapters.fastrefresh.ivm.window import WindowError, has_window, partitions, window_select
from dbt.adapters.fastrefresh.protocol.decisions import Word
from dbt.adapters.fastrefresh.sqltext import TableName

DIALECT = "spark"

# Functions whose value is not a function of the row: a view using them cannot be
# maintained from changes (Spark and Hive names, lower case).
NONDETERMINISTIC = {
    "rand", "random", "randn", "uuid", "shuffle", "now", "current_timestamp",
    "current_date", "current_time", "localtimestamp", "unix_timestamp",
    "monotonically_increasing_id", "spark_partition_id", "input_file_name",
    "input_file_block_start", "input_file_block_length", "current_user", "user",
    "session_user", "try_reflect", "reflect", "java_method", "rand_str", "uniform",
}  # fmt: skip

ALGEBRAIC = ("count_star", "count", "sum", "avg")


@dataclass(frozen=True)
class Shape(Word):
    """What a view's query is, for its maintenance."""

    PROJECTION = "projection"  # a filter and projection of one master
    WINDOW = "window"  # window functions over one master, recomputed by partition
    OUTER_JOIN = "outer_join"  # a LEFT/RIGHT/FULL join of two keyed masters
    AGGREGATE = "aggregate"  # GROUP BY, DISTINCT or a global aggregate (of one master or a join)
    JOIN = "join"  # an inner join of keyed masters
    UNSUPPORTED = "unsupported"  # does not refresh fast: ``reason`` says why


@dataclass(frozen=True)
class Aggregate:
    """One aggregate call of the query."""

    kind: str  # count_star, count, sum, avg, or other (MIN, MAX, COUNT DISTINCT, ...)
    arg: str | None  # SQL of the argument over the qualified master alias
    node_sql: str  # the call as written (qualified), to find it again
    component: int | None = None  # index of its __fr_cnt_/__fr_sum_ component


@dataclass(frozen=True)
class Output:
    """One output column of the query.

    ``template``: an aggregate output's expression with each aggregate call replaced by the
    placeholder ``:a<k>`` (the k-th of ``ViewPlan.aggregates``) and each GROUP BY
    expression by ``:g<i>``, so that the delta writes it over new values by substitution
    (``sqlgen.aggregate.fill``), never by matching rendered text.
    """

    name: str
    sql: str  # expression over the qualified master alias (projection and group outputs)
    group: int | None = None  # index in ``groups`` when the output is a group expression
    template: exp.Expression | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class JoinInput:
    """One table of a join: its alias, its master, and where its key sits in the view."""

    alias: str
    master: TableName
    key_columns: tuple[str, ...]
    key_view_columns: tuple[str, ...]
    columns_read: tuple[str, ...]  # the master's columns this input reads


@dataclass(frozen=True)
class ViewPlan:
    """What the planner knows about a view: its shape, its master, its hidden columns."""

    sql: str
    query_hash: str
    shape: Shape
    reason: str | None = None
    masters: tuple[TableName, ...] = ()
    alias: str = ""
    outputs: tuple[Output, ...] = ()
    filter: str | None = None
    groups: tuple[str, ...] = ()
    group_columns: tuple[str, ...] = ()  # the view column holding each group expression
    aggregates: tuple[Aggregate, ...] = ()
    components: tuple[str, ...] = ()  # argument SQL of each __fr_cnt_/__fr_sum_ pair
    sum_components: frozenset[int] = frozenset()  # components that also keep a sum
    columns_read: tuple[str, ...] = ()  # master columns the query reads
    keyed: bool = False
    key_columns: tuple[str, ...] = ()  # master key columns
    key_view_columns: tuple[str, ...] = ()  # the view column holding each key column
    hidden: tuple[tuple[str, str], ...] = ()  # (name, SQL) of hidden columns, in order
    qualified: str = ""  # the qualified query (stars expanded, columns qualified)
    expressions: tuple[str, ...] = field(default=())  # output expressions as written
    inputs: tuple[JoinInput, ...] = ()  # join: the joined tables, in FROM order
    semis: tuple[SemiJoin, ...] = ()  # a projection's [NOT] EXISTS / IN (SELECT) filters
    outer: OuterJoin | None = None  # outer_join: its side and join equalities
    having: bool = False  # an aggregate's HAVING, kept as the hidden output HAVING_COLUMN
    # window: the expressions every window partitions by (over ``alias``), and the view
    # column holding each
    partitions: tuple[str, ...] = ()
    partition_view_columns: tuple[str, ...] = ()
    partition_nodes: tuple[exp.Expression, ...] = field(default=(), compare=False, repr=False)
    reason_code: str | None = None  # decisions.ReasonCode value of ``reason``
    # Trees, for the SQL generator to build statements from (never re-parsed from text):
    tree: exp.Select | None = field(default=None, compare=False, repr=False)  # ``qualified``
    group_nodes: tuple[exp.Expression, ...] = field(default=(), compare=False, repr=False)
    component_nodes: tuple[exp.Expression, ...] = field(default=(), compare=False, repr=False)
    hidden_nodes: tuple[exp.Expression | None, ...] = field(default=(), compare=False, repr=False)

    def query(self) -> exp.Select:
        """A fresh copy of the qualified query's tree, for a statement to change."""
        assert self.tree is not None, "an unsupported plan has no qualified query"
        return self.tree.copy()

    def hidden_selects(self) -> list[exp.Expr]:
        """The hidden columns as ``expression AS name`` trees (all but a multiplicity)."""
        return [
            exp.alias_(node.copy(), name, quoted=True)
            for (name, _), node in zip(self.hidden, self.hidden_nodes, strict=True)
            if node is not None
        ]

    def columns_read_of(self, master: TableName) -> tuple[str, ...]:
        """The columns of ``master`` the query reads (over all its inputs, for a join;
        as the outer table and in subquery filters, for a semi-join)."""
        if self.semis:
            read = set(self.columns_read) if master == self.masters[0] else set()
            read |= {c for s in self.semis if s.master == master for c in s.columns_read}
            return tuple(sorted(read))
        if not self.inputs:
            return self.columns_read
        return tuple(sorted({c for i in self.inputs if i.master == master for c in i.columns_read}))

    @property
    def supported(self) -> bool:
        return self.shape is not Shape.UNSUPPORTED

    @property
    def algebraic(self) -> bool:
        return all(a.kind in ALGEBRAIC for a in self.aggregates)

    @property
    def global_aggregate(self) -> bool:
        return self.shape is Shape.AGGREGATE and not self.groups

    @property
    def user_columns(self) -> tuple[str, ...]:
        """The columns the view shows: its query's outputs (a HAVING's column is hidden)."""
        return tuple(o.name for o in self.outputs if not o.name.startswith(HIDDEN_PREFIX))

    @property
    def view_columns(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.outputs) + tuple(n for n, _ in self.hidden)

    def describe(self) -> str:
        if not self.supported:
            return f"not fast-refreshable: {self.reason}"
        if self.shape is Shape.OUTER_JOIN:
            assert self.outer is not None
            tables = f" {self.outer.side} JOIN ".join(f"{i.master} {i.alias}" for i in self.inputs)
            return (
                f"{tables} (each row belongs to a row of the preserved side; the rows of the "
                "keys the changes reach are recomputed)"
            )
        if self.shape is Shape.JOIN:
            tables = ", ".join(f"{i.master} {i.alias}" for i in self.inputs)
            return (
                f"inner join of {tables} (each row keyed by its tables' keys; the changed "
                "keys' rows are joined again)"
            )
        if self.shape is Shape.WINDOW:
            return (
                f"window functions over {self.masters[0]}, partitioned by "
                f"{', '.join(self.partitions)} (the partitions the changes touch are "
                "recomputed)"
            )
        if self.shape is Shape.PROJECTION:
            how = "keyed by " + ", ".join(self.key_columns) if self.keyed else "key-less, counted"
            semis = "".join(f"; {s.describe()}" for s in self.semis)
            return f"projection/filter of {self.masters[0]} ({how}{semis})"
        kinds = sorted({a.kind for a in self.aggregates}) or ["distinct"]
        method = "signed deltas" if self.algebraic else "recompute of the affected groups"
        groups = f"{len(self.groups)} group expression(s)" if self.groups else "no GROUP BY"
        of = (
            "a join of " + ", ".join(f"{i.master} {i.alias}" for i in self.inputs)
            if self.inputs
            else str(self.masters[0])
        )
        having = (
            "; HAVING kept per group, the view shows the groups it holds for" if self.having else ""
        )
        return f"aggregate of {of} ({groups}; {', '.join(kinds)}; {method}{having})"


def query_hash(sql: str) -> str:
    """A hash of the query that ignores formatting (whitespace, case of keywords)."""
    try:
        normal = sqlglot.parse_one(sql, read=DIALECT).sql(dialect=DIALECT, normalize=True)
    except SqlglotError:
        normal = " ".join(sql.split())
    return hashlib.sha256(normal.encode()).hexdigest()[:16]


def tables_of(sql: str) -> list[TableName]:
    """The tables a query reads (for the masters of any view, fast-refreshable or not)."""
    try:
        tree = sqlglot.parse_one(sql, read=DIALECT)
    except SqlglotError:
        return []
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    found = []
    for table in tree.find_all(exp.Table):
        if table.name.lower() in ctes or not table.name:
            continue
        if table.db:
            name = TableName(table.db.lower(), table.name.lower())
            if name not in found:
                found.append(name)
    return sorted(found)


def _render(node: exp.Expression) -> str:
    return node.sql(dialect=DIALECT)


def _qualify(tree: exp.Expression, schema: dict[str, object]) -> exp.Expression:
    """The query with stars expanded and every column qualified by its table's alias."""
    return qualify(
        tree.copy(), schema=schema, dialect=DIALECT, quote_identifiers=False,
        validate_qualify_columns=True, expand_stars=True, identify=False,
    )  # fmt: skip


def _unsupported(
    sql: str, reason: str, masters: Sequence[TableName] = (), code: str = "unsupported_query"
) -> ViewPlan:
    return ViewPlan(
        sql, query_hash(sql), Shape.UNSUPPORTED, reason, tuple(masters), reason_code=code
    )


def _first_offender(tree: exp.Expression) -> str | None:
    checks: list[tuple[type[exp.Expression] | tuple[type[exp.Expression], ...], str]] = [
        (exp.With, "a WITH clause (CTE; also how dbt inlines ephemeral models)"),
        (exp.Window, "a window function (OVER ...)"),
        (exp.Limit, "LIMIT"),
        (exp.Offset, "OFFSET"),
        (exp.Lateral, "LATERAL VIEW / a generator"),
        ((exp.Explode, exp.Posexplode, exp.Inline), "a generator (explode/inline)"),
        (exp.Rollup, "ROLLUP"),
        (exp.Cube, "CUBE"),
        (exp.GroupingSets, "GROUPING SETS"),
        (exp.TableSample, "TABLESAMPLE"),
    ]
    for kind, why in checks:
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if tree.find(*kinds) is not None:
            return why
    for sub in tree.find_all(exp.Subquery, exp.Exists):
        if sub is not tree:
            return "a subquery"
    for node in tree.find_all(exp.In):
        if node.args.get("query") is not None:
            return "a subquery (IN (SELECT ...))"
    for func in tree.find_all(exp.Func):
        name = (func.sql_name() if not isinstance(func, exp.Anonymous) else func.name).lower()
        if name in NONDETERMINISTIC or isinstance(func, (exp.Rand, exp.Randn, exp.Uuid)):
            return f"the non-deterministic function {name}()"
        if isinstance(func, (exp.CurrentTimestamp, exp.CurrentDate, exp.CurrentTime)):
            return f"the non-deterministic function {name}()"
    return None


def _aggregate_kind(node: exp.AggFunc) -> tuple[str, exp.Expression | None]:
    if isinstance(node, exp.Count):
        arg = node.this
        if isinstance(arg, exp.Star) or arg is None:
            return "count_star", None
        if isinstance(arg, exp.Distinct):
            return "other", arg
        return "count", arg
    if isinstance(node, exp.Sum) and not isinstance(node.this, exp.Distinct):
        return "sum", node.this
    if isinstance(node, exp.Avg) and not isinstance(node.this, exp.Distinct):
        return "avg", node.this
    return "other", node.this


class _Refused(Exception):
    """The query does not refresh fast; the message says why (a ``ViewPlan.reason``)."""

    def __init__(self, reason: str, code: str = "unsupported_query") -> None:
        super().__init__(reason)
        self.code = code


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
    try:
        return _plan(sql, tree, masters, master_columns, keys)
    except _Refused as refused:
        return _unsupported(sql, str(refused), masters, refused.code)


def _plan(
    sql: str,
    tree: exp.Expr,
    masters: list[TableName],
    master_columns: dict[TableName, list[Column]],
    keys: dict[TableName, list[str]],
) -> ViewPlan:
    if needs_inlining(tree):
        tree = _inlined(tree, masters, master_columns)
    if isinstance(tree, exp.Select) and has_window(tree):
        return _plan_window(sql, tree, master_columns)
    if not isinstance(tree, exp.Select):
        what = type(tree).__name__.upper()
        if isinstance(tree, exp.Union | exp.Intersect | exp.Except):
            what = "a set operation (UNION/INTERSECT/EXCEPT)"
        raise _Refused(f"{what} is not fast-refreshable yet")
    semis = any(is_semi(t) for t in conjuncts(tree.args.get("where")))
    offender = _first_offender(without_semis(tree) if semis else tree)
    if offender:
        raise _Refused(f"the query uses {offender}")
    if tree.args.get("having") is not None and not _is_aggregate(tree):
        raise _Refused("the query uses HAVING without GROUP BY or an aggregate")
    if semis:
        return _plan_semi(sql, tree, master_columns, keys)
    if tree.args.get("joins"):
        return _analyze_join(sql, tree, masters, master_columns, keys)
    master, qualified = _single_table(tree, master_columns)
    alias = qualified.find(exp.Table).alias_or_name  # type: ignore[union-attr]
    selects = list(qualified.expressions)
    _check_output_names([s.alias_or_name for s in selects], "")
    key = list(keys.get(master, []))
    where = qualified.args.get("where")
    base = {
        "sql": sql, "query_hash": query_hash(sql), "masters": (master,), "alias": alias,
        "filter": _render(where.this) if where is not None else None,
        "columns_read": tuple(sorted({c.name.lower() for c in qualified.find_all(exp.Column)})),
        "qualified": _render(qualified), "tree": qualified,
        "expressions": tuple(_render(s.unalias()) for s in selects), "keyed": bool(key),
        "key_columns": tuple(key),
    }  # fmt: skip
    if _is_aggregate(qualified):
        return _plan_aggregate(qualified, base)
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
        raise _Refused("the query uses a subquery filter (EXISTS/IN) over a join")
    if _is_aggregate(tree):
        raise _Refused("the query uses an aggregate over a subquery filter (EXISTS/IN)")
    from_ = tree.args.get("from_") or tree.args.get("from")
    if from_ is None or not isinstance(from_.this, exp.Table):
        raise _Refused("the query must read one table in FROM")
    schema: dict[str, object] = {}
    for table in tree.find_all(exp.Table):
        master = _master_of(table, master_columns)
        tables: dict[str, object] = schema.setdefault(master.schema, {})  # type: ignore[assignment]
        tables[master.table] = visible(master_columns[master])
    try:
        qualified = _qualify(tree, schema)
    except SqlglotError as exc:
        raise _Refused(f"the query could not be resolved against its tables ({exc})") from exc
    assert isinstance(qualified, exp.Select)
    outer_table = qualified.find(exp.Table)
    assert outer_table is not None
    alias, outer = outer_table.alias_or_name, _master_of(outer_table, master_columns)
    try:
        semis = semi_joins(qualified, alias, lambda t: _master_of(t, master_columns))
    except SemiJoinError as exc:
        raise _Refused(f"the query uses {exc}") from exc
    key = list(keys.get(outer) or [])
    if not key:
        raise _Refused(
            f"the query filters {outer} by a subquery (EXISTS/IN), which refreshes fast only "
            "when that table's materialized view log has a primary key",
            code="no_keyed_log",
        )
    selects = list(qualified.expressions)
    _check_output_names([s.alias_or_name for s in selects], "")
    where = qualified.args.get("where")
    read = {c.name.lower() for c in qualified.find_all(exp.Column) if c.table == alias}
    others = sorted({s.master for s in semis} - {outer}, key=str)
    base: dict[str, object] = {
        "sql": sql, "query_hash": query_hash(sql), "masters": (outer, *others), "alias": alias,
        "filter": _render(where.this) if where is not None else None,
        "columns_read": tuple(sorted(read)), "qualified": _render(qualified), "tree": qualified,
        "expressions": tuple(_render(s.unalias()) for s in selects), "keyed": True,
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
            _master_of(table, master_columns)
    try:
        merged = inline(tree, {m: master_columns[m] for m in masters})
    except InlineError as exc:
        raise _Refused(f"the query uses CTEs or derived tables, and {exc}") from exc
    left = derived_table(merged)
    if left is not None and not (isinstance(merged, exp.Select) and has_window(merged)):
        raise _Refused(
            f"the query reads the CTE or derived table {left}, which cannot be merged into it "
            "(it aggregates, is DISTINCT, or uses a window, LIMIT or set operation)"
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
        raise _Refused(f"the query uses {exc}") from exc
    tables = [t for t in tree.find_all(exp.Table) if t.db]
    if len(tables) != 1:
        raise _Refused("the query uses window functions over more than one table")
    master = _master_of(tables[0], master_columns)
    offender = _first_offender(_without_windows(tree))
    if offender:
        raise _Refused(f"the query uses {offender}")
    schema: dict[str, object] = {master.schema: {master.table: visible(master_columns[master])}}
    try:
        qualified = _qualify(tree, schema)
    except SqlglotError as exc:
        raise _Refused(f"the query could not be resolved against {master} ({exc})") from exc
    assert isinstance(qualified, exp.Select)
    inner, derived = window_select(qualified)
    parts = partitions(inner)
    alias = qualified.find(exp.Table).alias_or_name  # type: ignore[union-attr]
    selects = list(qualified.expressions)
    _check_output_names([s.alias_or_name for s in selects], "")
    outputs = tuple(Output(s.alias_or_name, _render(s.unalias())) for s in selects)
    holders = [f"{HIDDEN_PREFIX}p_{i}" for i in range(len(parts))]
    nodes: list[exp.Expression | None] = []
    for part, holder in zip(parts, holders, strict=True):
        if derived is None:
            nodes.append(part.copy())
        else:  # the derived table hands each partition value out to the view
            inner.select(exp.alias_(part.copy(), holder), append=True, copy=False)
            nodes.append(exp.column(holder, table=derived))
    read = {c.name.lower() for c in qualified.find_all(exp.Column) if c.table == alias}
    return ViewPlan(
        sql=sql, query_hash=query_hash(sql), shape=Shape.WINDOW, masters=(master,),
        alias=alias, outputs=outputs, hidden=tuple((h, _render(p)) for h, p in zip(holders, parts, strict=True)),
        hidden_nodes=tuple(nodes), columns_read=tuple(sorted(read)),
        qualified=_render(qualified), tree=qualified,
        expressions=tuple(_render(s.unalias()) for s in selects),
        partitions=tuple(_render(p) for p in parts), partition_view_columns=tuple(holders),
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


def _is_aggregate(select: exp.Select) -> bool:
    return bool(
        select.args.get("group")
        or select.args.get("distinct") is not None
        or any(s.find(exp.AggFunc) for s in select.expressions)
    )


def _single_table(
    tree: exp.Select, master_columns: dict[TableName, list[Column]]
) -> tuple[TableName, exp.Select]:
    """The one master a single-table query reads, and the query qualified against it."""
    from_ = tree.args.get("from_") or tree.args.get("from")
    tables = list(tree.find_all(exp.Table))
    if from_ is None or len(tables) != 1 or not isinstance(from_.this, exp.Table):
        raise _Refused("the query must read exactly one table in FROM")
    master = _master_of(tables[0], master_columns)
    columns = master_columns[master]
    schema: dict[str, object] = {master.schema: {master.table: visible(columns)}}
    try:
        qualified = _qualify(tree, schema)
    except SqlglotError as exc:
        raise _Refused(f"the query could not be resolved against {master} ({exc})") from exc
    assert isinstance(qualified, exp.Select)
    return master, qualified


def _master_of(table: exp.Table, master_columns: dict[TableName, list[Column]]) -> TableName:
    """The known master ``table`` names, read as it is now (not by time travel)."""
    if not table.db:
        raise _Refused(f"the table {table.name} is not schema-qualified")
    master = TableName(table.db.lower(), table.name.lower())
    if master_columns.get(master) is None:
        raise _Refused(f"{master} is not a known master table")
    if table.args.get("version") is not None:
        raise _Refused("the query already uses time travel (VERSION AS OF)")
    return master


def _check_output_names(names: Sequence[str], hint: str) -> None:
    lowered = [n.lower() for n in names]
    if len(set(lowered)) != len(lowered):
        raise _Refused(f"two output columns have the same name{hint}")
    if any(n.startswith(HIDDEN_PREFIX) for n in lowered):
        raise _Refused(f"output columns named {HIDDEN_PREFIX}* are reserved")


def _plan_projection(
    qualified: exp.Select, alias: str, key: Sequence[str], base: dict[str, object]
) -> ViewPlan:
    """A projection: the view keeps the master's key (hidden when not an output), or, with
    no key, a multiplicity per distinct row."""
    selects = list(qualified.expressions)
    names = [s.alias_or_name for s in selects]
    outputs = tuple(Output(n, _render(s.unalias())) for n, s in zip(names, selects, strict=True))
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
            hidden.append((f"{HIDDEN_PREFIX}k_{k}", f"{alias}.{k}"))
            nodes.append(exp.column(k, table=alias))
            key_view.append(f"{HIDDEN_PREFIX}k_{k}")
    if not key:
        hidden.append((f"{HIDDEN_PREFIX}multiplicity", ""))
        nodes.append(None)  # a window count over the outputs (sqlgen.complete)
    return ViewPlan(
        shape=Shape.PROJECTION, outputs=outputs, hidden=tuple(hidden),
        hidden_nodes=tuple(nodes), key_view_columns=tuple(key_view),
        **base,  # type: ignore[arg-type]
    )  # fmt: skip


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
    base["qualified"] = _render(qualified)
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
        base["qualified"] = _render(qualified)


def _plan_aggregate(qualified: exp.Select, base: dict[str, object]) -> ViewPlan:
    """Plan an aggregate (GROUP BY, DISTINCT, or a global aggregate) of ``qualified``."""
    _filters_as_arguments(qualified, base)
    having = _having_as_output(qualified, base)
    selects = list(qualified.expressions)
    group_nodes = _groups(qualified)
    groups = [_render(g) for g in group_nodes]
    components: list[str] = []
    component_nodes: list[exp.Expression] = []
    sums: set[int] = set()
    aggregates: list[Aggregate] = []
    for node in (a for s in selects for a in s.find_all(exp.AggFunc)):
        kind, arg = _aggregate_kind(node)
        arg_sql = _render(arg) if arg is not None and kind != "other" else None
        component = None
        if kind in ("count", "sum", "avg") and arg is not None and arg_sql is not None:
            if arg_sql not in components:
                components.append(arg_sql)
                component_nodes.append(arg)
            component = components.index(arg_sql)
            if kind in ("sum", "avg"):
                sums.add(component)
        aggregates.append(Aggregate(kind, arg_sql, _render(node), component))
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
            hidden.append((f"{HIDDEN_PREFIX}sum_{index}", f"sum({arg_sql})"))
            nodes.append(exp.Sum(this=component_nodes[index].copy()))
    return ViewPlan(
        shape=Shape.AGGREGATE, outputs=tuple(outputs), groups=tuple(groups), having=having,
        group_columns=tuple(group_columns), aggregates=tuple(aggregates),
        components=tuple(components), sum_components=frozenset(sums), hidden=tuple(hidden),
        group_nodes=tuple(g.copy() for g in group_nodes), hidden_nodes=tuple(nodes),
        component_nodes=tuple(c.copy() for c in component_nodes),
        **base,  # type: ignore[arg-type]
    )  # fmt: skip


def _groups(qualified: exp.Select) -> list[exp.Expression]:
    """The aggregate's group expressions: GROUP BY's, or under DISTINCT the outputs."""
    group_node = qualified.args.get("group")
    selects = list(qualified.expressions)
    if group_node is not None:
        groups = list(group_node.expressions)
        if any(isinstance(g, exp.Literal) for g in groups):
            raise _Refused("GROUP BY by position (GROUP BY 1); name the expressions")
    elif qualified.args.get("distinct") is not None:
        if any(s.find(exp.AggFunc) for s in selects):
            raise _Refused("SELECT DISTINCT with aggregates")
        groups = [s.unalias() for s in selects]
    else:
        groups = []
    if len(set(groups)) != len(groups):
        raise _Refused("a GROUP BY expression is repeated")
    return groups


def _aggregate_outputs(
    selects: Sequence[exp.Expression], groups: Sequence[exp.Expression]
) -> list[Output]:
    """Each output: a group expression (by index), or an expression over aggregate calls
    and group expressions, kept as a template (``Output.template``)."""
    outputs = []
    calls = 0  # aggregate calls of the outputs before this one
    for select in selects:
        name, body = select.alias_or_name, select.unalias()
        assert isinstance(body, exp.Expression)
        if body in groups:
            outputs.append(Output(name, _render(body), groups.index(body)))
        elif body.find(exp.AggFunc) is not None:
            template, calls = _template(body, groups, calls)
            outputs.append(Output(name, _render(body), template=template))
        else:
            raise _Refused(f"output {name} is neither a GROUP BY expression nor an aggregate")
    return outputs


def _template(
    body: exp.Expression, groups: Sequence[exp.Expression], first: int
) -> tuple[exp.Expression, int]:
    """``body`` with its aggregate calls as ``:a<k>`` (numbered from ``first``, in the
    order ``_plan_aggregate`` lists them) and group expressions outside them as ``:g<i>``;
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
        return f"a {side} OUTER join (only inner joins refresh fast)"
    if kind not in ("", "INNER", "CROSS"):
        return f"a {kind} join"
    return None


def _analyze_join(
    sql: str,
    tree: exp.Select,
    masters: list[TableName],
    master_columns: dict[TableName, list[Column]],
    keys: dict[TableName, list[str]],
) -> ViewPlan:
    """Plan an inner join of keyed masters (``shape = "join"``), or an aggregate over one,
    or an outer join of two (``shape = "outer_join"``)."""
    joins = tree.args.get("joins") or []
    outer = len(joins) == 1 and is_outer(joins[0])
    qualified = _qualified_join(tree, master_columns, keys, outer=outer)
    aggregate = _is_aggregate(tree)
    if outer and aggregate:
        raise _Refused("the query uses an aggregate over an OUTER join")
    selects = list(qualified.expressions)
    names = [s.alias_or_name for s in selects]
    _check_output_names(names, " (alias them, e.g. b.id AS b_id)")
    inputs, hidden, nodes = _join_inputs(qualified, keys, with_keys=not aggregate)
    where = qualified.args.get("where")
    base: dict[str, object] = {
        "sql": sql, "query_hash": query_hash(sql), "masters": tuple(masters),
        "filter": _render(where.this) if where is not None else None,
        "columns_read": tuple(sorted({c for i in inputs for c in i.columns_read})),
        "qualified": _render(qualified), "tree": qualified, "keyed": True,
        "inputs": tuple(inputs),
        "expressions": tuple(_render(s.unalias()) for s in selects),
    }  # fmt: skip
    if aggregate:
        return _plan_aggregate(qualified, base)
    if outer:
        try:
            spec = outer_join(qualified.args["joins"][0], (inputs[0].alias, inputs[1].alias))
        except OuterJoinError as exc:
            raise _Refused(f"the query uses {exc}") from exc
        base["outer"] = spec
    return ViewPlan(
        shape=Shape.OUTER_JOIN if outer else Shape.JOIN,
        outputs=tuple(Output(n, _render(s.unalias())) for n, s in zip(names, selects, strict=True)),
        key_view_columns=tuple(c for i in inputs for c in i.key_view_columns),
        hidden=tuple(hidden), hidden_nodes=tuple(nodes), **base,  # type: ignore[arg-type]
    )  # fmt: skip


def _qualified_join(
    tree: exp.Select,
    master_columns: dict[TableName, list[Column]],
    keys: dict[TableName, list[str]],
    *,
    outer: bool = False,
) -> exp.Select:
    """The join qualified against its tables, each a known master with a keyed log
    (``outer``: its one join may be an outer join)."""
    for join in tree.args.get("joins") or []:
        offender = _join_offender(join, outer=outer)
        if offender:
            raise _Refused(f"the query uses {offender}")
        if not isinstance(join.this, exp.Table):
            raise _Refused("a join of something other than a table")
    from_ = tree.args.get("from_") or tree.args.get("from")
    if from_ is None or not isinstance(from_.this, exp.Table):
        raise _Refused("the query must read tables in FROM")
    schema: dict[str, object] = {}
    for table in tree.find_all(exp.Table):
        master = _master_of(table, master_columns)
        if not keys.get(master):
            raise _Refused(
                f"the join reads {master}, which has no keyed materialized view log (a join "
                "refreshes fast only when the log of every table it joins has a primary key)",
                code="no_keyed_log",
            )
        tables: dict[str, object] = schema.setdefault(master.schema, {})  # type: ignore[assignment]
        tables[master.table] = visible(master_columns[master])
    try:
        qualified = _qualify(tree, schema)
    except SqlglotError as exc:
        raise _Refused(f"the query could not be resolved against its tables ({exc})") from exc
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
            raise _Refused(f"two tables of the join are both called {alias}")
        key_view = []
        for k in keys[master] if with_keys else []:
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
        inputs.append(JoinInput(alias, master, tuple(keys[master]), tuple(key_view), tuple(read)))
    return inputs, hidden, nodes
