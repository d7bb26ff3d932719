"""The planner's vocabulary: a view's shape and its plan (``ViewPlan``), with the pieces
the SQL generator builds statements from. Pure data; ``analysis.analyze`` makes them.

Shapes and what their hidden columns are: ``analysis`` (the dispatcher) and the planners of
each shape (``aggregates``, ``joins``, ``semi``, ``window``, ``outer``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from dbt.adapters.fastrefresh.ivm.dialect import DIALECT
from dbt.adapters.fastrefresh.ivm.inline import HAVING_COLUMN, HIDDEN_PREFIX, REPEAT_COLUMN
from dbt.adapters.fastrefresh.ivm.outer import OuterJoin
from dbt.adapters.fastrefresh.ivm.semi import SemiJoin
from dbt.adapters.fastrefresh.protocol.decisions import Word
from dbt.adapters.fastrefresh.sqltext import TableName

__all__ = ["HAVING_COLUMN", "HIDDEN_PREFIX"]


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
    UNION_ALL = "union_all"  # UNION ALL of branches that each refresh fast (``union.py``)
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
class Dim:
    """What of a UNION ALL branch's rows a change of ``master`` reaches: the rows whose
    ``holders`` (view columns) equal ``nodes`` (expressions over the branch's table
    ``alias``) evaluated over a changed row, old or new; with no nodes, every row."""

    master: TableName
    alias: str
    holders: tuple[str, ...]
    nodes: tuple[exp.Expression, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class UnionBranch:
    """One branch of a UNION ALL: its own plan, its view columns' names in the union, and
    the dimensions its rows are reached by.

    ``outputs``: the branch's user columns, in the union's order; ``carried``: (branch
    column, union column) of each hidden column the union keeps for the branch (what
    identifies its rows and it does not show).
    """

    index: int
    plan: ViewPlan
    outputs: tuple[str, ...]
    carried: tuple[tuple[str, str], ...]
    dims: tuple[Dim, ...]


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
    branches: tuple[UnionBranch, ...] = ()  # union_all: its branches, in query order
    # window: the expressions every window partitions by (over ``alias``), and the view
    # column holding each
    partitions: tuple[str, ...] = ()
    partition_view_columns: tuple[str, ...] = ()
    partition_nodes: tuple[exp.Expression, ...] = field(default=(), compare=False, repr=False)
    reason_code: str | None = None  # decisions.ReasonCode value of ``reason``
    # What in the query reads the session's time zone (``zones.zoned_read``; None: its
    # rows are the same in every zone), set by ``engine.refresh.plan_of``
    zoned: str | None = None
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
        if self.branches:
            return tuple(
                sorted(
                    {
                        c
                        for b in self.branches
                        if master in b.plan.masters
                        for c in b.plan.columns_read_of(master)
                    }
                )
            )
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
    def over_inner_join(self) -> bool:
        """An aggregate over an inner join: its delta joins each table's changes with the
        others as they were (the old pins), unlike an aggregate over an outer join, whose
        groups are recomputed."""
        return self.shape is Shape.AGGREGATE and bool(self.inputs) and self.outer is None

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
        if self.shape is Shape.UNION_ALL:
            parts = "; ".join(f"branch {b.index + 1}: {b.plan.describe()}" for b in self.branches)
            return (
                f"UNION ALL of {len(self.branches)} branches, each row marked by its branch "
                f"(the rows of each branch the changes reach are recomputed): {parts}"
            )
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
        if any(o.name == REPEAT_COLUMN for o in self.outputs):
            tables = ", ".join(f"{i.master} {i.alias}" for i in self.inputs)
            return (
                f"inner join of {tables}, a key-less table among them: each distinct row is "
                "kept with its count (signed deltas), the view repeats it that many times"
            )
        kinds = sorted({a.kind for a in self.aggregates}) or ["distinct"]
        signed = self.algebraic and self.outer is None
        method = "signed deltas" if signed else "recompute of the affected groups"
        groups = f"{len(self.groups)} group expression(s)" if self.groups else "no GROUP BY"
        joined = f" {self.outer.side} JOIN " if self.outer is not None else ", "
        of = (
            "a join of " + joined.join(f"{i.master} {i.alias}" for i in self.inputs)
            if self.inputs
            else str(self.masters[0])
        )
        having = (
            "; HAVING kept per group, the view shows the groups it holds for" if self.having else ""
        )
        return f"aggregate of {of} ({groups}; {', '.join(kinds)}; {method}{having})"


def query_hash(sql: str) -> str:
    """A hash of the query that ignores formatting (whitespace, case of keywords) and
    comments."""
    try:
        normal = sqlglot.parse_one(sql, read=DIALECT).sql(
            dialect=DIALECT, normalize=True, comments=False
        )
    except SqlglotError:
        normal = " ".join(sql.split())
    return hashlib.sha256(normal.encode()).hexdigest()[:16]


def tables_of(sql: str) -> list[TableName]:
    """The tables a query reads (for the masters of any view, fast-refreshable or not)."""
    try:
        tree = sqlglot.parse_one(sql, read=DIALECT)
    except SqlglotError:
        return []
    # A CTE is named without a schema, and a master with one (dbt's relations are
    # qualified): an import CTE named like the table it reads (`with orders as (select *
    # from shop.orders)`) leaves that table a master.
    found = []
    for table in tree.find_all(exp.Table):
        if table.db and table.name:
            name = TableName(table.db.lower(), table.name.lower())
            if name not in found:
                found.append(name)
    return sorted(found)
