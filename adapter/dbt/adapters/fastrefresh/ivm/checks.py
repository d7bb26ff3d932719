"""What every planner of a shape shares: the refusal that names a construct, rendering,
qualification against the masters' columns, and the checks of a query's parts."""

from __future__ import annotations

import re
from collections.abc import Sequence

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify

from dbt.adapters.fastrefresh.iceberg.columns import Column
from dbt.adapters.fastrefresh.ivm.inline import HIDDEN_PREFIX
from dbt.adapters.fastrefresh.ivm.plan import DIALECT, NONDETERMINISTIC
from dbt.adapters.fastrefresh.sqltext import TableName

# The end of the reason for a table that is no master (``engine.refresh.plan_of`` says why).
NOT_A_MASTER = " is not a known master table"


class Refused(Exception):
    """The query does not refresh fast; the message says why (a ``ViewPlan.reason``)."""

    def __init__(self, reason: str, code: str = "unsupported_query") -> None:
        super().__init__(reason)
        self.code = code


def render(node: exp.Expression) -> str:
    return node.sql(dialect=DIALECT)


def qualify_tree(tree: exp.Expression, schema: dict[str, object]) -> exp.Expression:
    """The query with stars expanded and every column qualified by its table's alias."""
    return qualify(
        tree.copy(), schema=schema, dialect=DIALECT, quote_identifiers=True,
        validate_qualify_columns=True, expand_stars=True, identify=False,
    )  # fmt: skip


def first_offender(tree: exp.Expression) -> str | None:
    """What a shape's planner does not take in the part of the query it plans (the
    constructs no part of a query may hold are ``anywhere_offender``'s, which ``analyze``
    asks first)."""
    checks: list[tuple[type[exp.Expression] | tuple[type[exp.Expression], ...], str]] = [
        (exp.With, "a WITH clause (CTE; also how dbt inlines ephemeral models)"),
        (exp.Window, "a window function (OVER ...)"),
        (exp.Lateral, "LATERAL VIEW / a generator"),
        ((exp.Explode, exp.Posexplode, exp.Inline), "a generator (explode/inline)"),
        (exp.Rollup, "ROLLUP"),
        (exp.Cube, "CUBE"),
        (exp.GroupingSets, "GROUPING SETS"),
    ]
    for kind, why in checks:
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if tree.find(*kinds) is not None:
            return why
    for sub in tree.find_all(exp.Subquery, exp.Exists):
        if sub is not tree:
            return _subquery(tree, sub)
    for node in tree.find_all(exp.In):
        if node.args.get("query") is not None:
            return _subquery(tree, node)
    return None


# Where in a SELECT a subquery sits (the clause's argument in sqlglot's tree), as a
# refusal names it.
_CLAUSES = {
    "expressions": "the SELECT list",
    "where": "WHERE",
    "having": "HAVING",
    "group": "GROUP BY",
    "joins": "a join's ON",
    "order": "ORDER BY",
}


def _subquery(tree: exp.Expr, sub: exp.Expr) -> str:
    """``first_offender``'s words for the subquery ``sub`` of ``tree``: where it sits, and
    for a filter, which form of it refreshes fast."""
    node = sub
    while node.parent is not None and node.parent is not tree:
        node = node.parent
    if node.arg_key in ("from", "from_"):
        return "a derived table (a subquery in FROM) that cannot be merged into the query"
    place = _CLAUSES.get(node.arg_key or "", "the query")
    if isinstance(sub, exp.Exists | exp.In) or isinstance(sub.parent, exp.In):
        if node.arg_key == "where":
            return (
                "a subquery filter (EXISTS/IN) under OR or inside another expression; only "
                "one that is a term of the WHERE's AND ([NOT] EXISTS (...), IN (SELECT ...)) "
                "refreshes fast"
            )
        return f"a subquery filter (EXISTS/IN) in {place}"
    return f"a scalar subquery in {place}"


def set_operation(node: exp.Expression) -> str:
    """An ``INTERSECT`` or ``EXCEPT`` as the query writes it (with ``ALL`` or not), for a
    refusal: each is refused on its own, and named so."""
    word = "INTERSECT" if isinstance(node, exp.Intersect) else "EXCEPT"
    return f"{word} ALL" if node.args.get("distinct") is False else word


def anywhere_offender(tree: exp.Expr) -> str | None:
    """What no part of a query may hold, its subqueries, derived tables and CTEs included:
    a refresh recomputes only what its changed rows reach, so a result that changes with
    the clock or by chance (``current_date()``, ``rand()``, a sample, the rows a LIMIT or
    OFFSET picks) would go stale wherever it sits."""
    for func in tree.find_all(exp.Func):
        name = (func.sql_name() if not isinstance(func, exp.Anonymous) else func.name).lower()
        if isinstance(func, exp.CurrentTimestamp) and isinstance(func.parent, exp.StrToUnix):
            name = "unix_timestamp"  # sqlglot reads unix_timestamp() with its default made explicit
        if name in NONDETERMINISTIC or isinstance(func, (exp.Rand, exp.Randn, exp.Uuid)):
            return f"the non-deterministic function {name}()"
        if isinstance(func, (exp.CurrentTimestamp, exp.CurrentDate, exp.CurrentTime)):
            return f"the non-deterministic function {name}()"
    for kind, why in (
        (exp.TableSample, "TABLESAMPLE"),
        (exp.Limit, "LIMIT"),
        (exp.Offset, "OFFSET"),
    ):
        if tree.find(kind) is not None:
            return why
    return None


# The strings Spark reads as the clock wherever it casts them to a date or a timestamp:
# typed literals (timestamp'now', date'today'), casts of constants (cast('now' AS
# timestamp), to_date('tomorrow')), and the casts it adds where a date or a timestamp is
# wanted (`d < 'today'`, year('today')). 'epoch' is one too, but a constant.
CLOCK_WORDS = frozenset({"now", "today", "yesterday", "tomorrow"})
# Where a value takes the type of the values beside it.
_COMPARED = (
    exp.Predicate, exp.Binary, exp.Between, exp.In, exp.Coalesce, exp.If, exp.Case,
    exp.Nullif, exp.Greatest, exp.Least, exp.Array,
)  # fmt: skip
# Spark's functions of dates and timestamps, by sqlglot's class name (``Year``,
# ``DateDiff``, ``TsOrDsToDate``, ``StrToTime``, ``UnixToTime``) or, for functions it
# does not know, by name (``make_date``, ``from_utc_timestamp``): a string given them
# is cast to a date or a timestamp.
_TEMPORAL_CLASS = re.compile(r"Date|Time|Ts|Year|Quarter|Month|Week|Day|Hour|Minute|Second|Unix")
_TEMPORAL_NAME = re.compile(r"date|time|year|quarter|month|week|day|hour|minute|second|unix")


def clock_literal(tree: exp.Expr, schema: dict[str, object]) -> str | None:
    """A string in the query that Spark reads as the clock (``CLOCK_WORDS``), as
    ``anywhere_offender`` names what it finds: a filter on it goes stale, like one on
    ``current_date()``. Where it is compared, the other side's type says whether Spark
    casts it (``s = 'today'`` on a string column is a string; a side of unknown type
    counts as a date); a function of dates and timestamps takes it for one; elsewhere
    (an output, a string function's argument) it is a string. Typed from the masters'
    columns in ``schema``; a query that cannot be typed is refused for that elsewhere,
    and here only its casts and date functions are read."""
    words = [w for w in tree.find_all(exp.Literal) if _clock_word(w)]
    if not words:
        return None
    try:
        qualified = qualify_tree(tree, schema)  # type: ignore[arg-type]
        typed = annotate_types(qualified, schema=schema, dialect=DIALECT)
        words = [w for w in typed.find_all(exp.Literal) if _clock_word(w)]
        known = True
    except (SqlglotError, KeyError, ValueError):
        known = False
    for word in words:
        parent = word.parent
        while isinstance(parent, exp.Paren):
            parent = parent.parent
        if isinstance(parent, (exp.Cast, exp.TryCast)):
            clock = parent.to.is_type(*exp.DataType.TEMPORAL_TYPES)
        elif isinstance(parent, _COMPARED):
            clock = known and _beside_a_date(parent, word)
        elif isinstance(parent, exp.Anonymous):
            clock = bool(_TEMPORAL_NAME.search(parent.name.lower()))
        else:
            clock = isinstance(parent, exp.Func) and bool(
                _TEMPORAL_CLASS.search(type(parent).__name__)
            )
        if clock:
            return (
                f"the string {word.sql(dialect=DIALECT)}, which Spark reads as the clock "
                "where it takes it for a date or a timestamp (now, today, yesterday, "
                "tomorrow), as it does here"
            )
    return None


def _clock_word(node: exp.Literal) -> bool:
    return bool(node.is_string) and str(node.this).strip().lower() in CLOCK_WORDS


def _beside_a_date(parent: exp.Expr, word: exp.Literal) -> bool:
    """Whether something compared with ``word`` (in a CASE, another of its values) is a
    date or a timestamp, or of a type not known."""
    if isinstance(parent, exp.If) and isinstance(parent.parent, exp.Case):
        parent = parent.parent
    if isinstance(parent, exp.Case):
        others = [i.args.get("true") for i in parent.args.get("ifs") or []]
        others.append(parent.args.get("default"))
    elif isinstance(parent, exp.If):
        others = [parent.args.get("true"), parent.args.get("false")]
    else:
        others = [c for c in parent.iter_expressions() if c is not word]
    for other in others:
        if other is None or isinstance(other, exp.Literal):
            continue
        kind = other.type
        if kind is None or kind.is_type(exp.DataType.Type.UNKNOWN, *exp.DataType.TEMPORAL_TYPES):
            return True
    return False


def master_of(table: exp.Table, master_columns: dict[TableName, list[Column]]) -> TableName:
    """The known master ``table`` names, read as it is now (not by time travel)."""
    if not table.db:
        raise Refused(f"the table {table.name} is not schema-qualified")
    master = TableName(table.db.lower(), table.name.lower())
    if master_columns.get(master) is None:
        raise Refused(f"{master}{NOT_A_MASTER}")
    if table.args.get("version") is not None:
        raise Refused("the query already uses time travel (VERSION AS OF)")
    return master


def check_output_names(names: Sequence[str], hint: str) -> None:
    lowered = [n.lower() for n in names]
    if len(set(lowered)) != len(lowered):
        raise Refused(f"two output columns have the same name{hint}")
    if any(n.startswith(HIDDEN_PREFIX) for n in lowered):
        raise Refused(f"output columns named {HIDDEN_PREFIX}* are reserved")


def is_aggregate(select: exp.Select) -> bool:
    return bool(
        select.args.get("group")
        or select.args.get("distinct") is not None
        or any(s.find(exp.AggFunc) for s in select.expressions)
    )
