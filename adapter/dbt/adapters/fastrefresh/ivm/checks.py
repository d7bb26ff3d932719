"""What every planner of a shape shares: the refusal that names a construct, rendering,
qualification against the masters' columns, and the checks of a query's parts."""

from __future__ import annotations

import re
from collections.abc import Sequence

from sqlglot import exp
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
# typed literals (timestamp'now', date'today', timestamp'today UTC'), casts of constants
# (cast('now' AS timestamp), to_date('tomorrow')), and the casts it adds where a date or
# a timestamp is wanted (`d < 'today'`, `'now' - interval 1 day`, year('today')).
# 'epoch' is one too, but a constant.
CLOCK_WORDS = frozenset({"now", "today", "yesterday", "tomorrow"})
# Where a value takes the type of the values beside it. With ANSI off Spark makes a
# date and a string in COALESCE, CASE, IN or array() strings, with ANSI on dates: both
# are taken for the clock.
_COMPARED = (
    exp.Predicate, exp.Binary, exp.Between, exp.In, exp.Coalesce, exp.If, exp.Case,
    exp.Nullif, exp.Greatest, exp.Least, exp.Array,
)  # fmt: skip
# Comparisons and operators whose sides are strings whatever the other side is.
_OF_STRINGS = (exp.DPipe, exp.Like, exp.ILike, exp.RegexpLike, exp.PropertyEQ)
# Spark's functions of dates and timestamps, by sqlglot's class name (``Year``,
# ``DateDiff``, ``TsOrDsToDate``, ``StrToTime``, ``UnixToTime``, ``Extract``) or, for
# functions it does not know, by name (``make_date``, ``from_utc_timestamp``,
# ``trunc``): a string given them is cast to a date or a timestamp.
_TEMPORAL_CLASS = re.compile(
    r"Date|Time|Ts|Year|Quarter|Month|Week|Day|Hour|Minute|Second|Unix|Extract"
)
_TEMPORAL_NAME = re.compile(
    r"date|time|year|quarter|month|week|day|hour|minute|second|unix|trunc|extract"
)


def clock_literal(tree: exp.Expr, schema: dict[str, object]) -> str | None:
    """A string in the query that Spark reads as the clock (``CLOCK_WORDS``), as
    ``anywhere_offender`` names what it finds: a filter on it goes stale, like one on
    ``current_date()``. Where it is compared, the other side's type says whether Spark
    casts it (``s = 'today'`` on a string column is a string; a side of unknown type
    counts as a date, an interval too); a function of dates and timestamps takes it for
    one; elsewhere (an output, a string function's argument) it is a string. Typed from
    the masters' columns in ``schema``: a query over tables all known that sqlglot
    cannot type has each comparison taken for one with a date (a query over a table not
    known is refused for that)."""
    words = [w for w in tree.find_all(exp.Literal) if _clock_word(w)]
    if not words:
        return None
    try:
        qualified = qualify_tree(tree, schema)  # type: ignore[arg-type]
        typed = annotate_types(qualified, schema=schema, dialect=DIALECT)
        words = [w for w in typed.find_all(exp.Literal) if _clock_word(w)]
        unknown = False
    except Exception:  # sqlglot's, or a type it cannot read
        unknown = all(_in_schema(t, schema) for t in tree.find_all(exp.Table) if t.db)
    for word in words:
        if _read_as_clock(word, unknown=unknown):
            return (
                f"the string {word.sql(dialect=DIALECT)}, which Spark reads as the clock "
                "where it takes it for a date or a timestamp (now, today, yesterday, "
                "tomorrow), as it may here"
            )
    return None


# Calls whose value is a MAP: such an output has no plan either, typed or not.
_MAP_CALLS = (exp.Map, exp.VarMap, exp.StarMap, exp.ToMap, exp.MapFromEntries)
_MAP_NAMES = frozenset({"map_from_arrays", "str_to_map", "map_concat", "map_filter"}) | {
    "transform_keys", "transform_values", "map_zip_with",
}  # fmt: skip


def map_output(tree: exp.Expr, schema: dict[str, object]) -> str | None:
    """An output of the query that is a MAP or holds one, as ``anywhere_offender`` names
    what it finds: Spark can neither compare, group nor partition by a map, and every
    plan keeps a view's rows by comparing them (a key-less view counts its distinct rows),
    so its build failed with Spark's `partition keys cannot be map type`. With no plan
    the view is built as a ``table`` model is. Typed from the masters' columns in
    ``schema``, only when a master has a MAP column or the query calls a map function."""
    text = tree.sql(dialect=DIALECT).lower()
    if "map<" not in str(schema).lower() and "map" not in text:
        return None
    outputs = tree.selects if isinstance(tree, exp.Query) else []
    try:
        typed = annotate_types(qualify_tree(tree, schema), schema=schema, dialect=DIALECT)  # type: ignore[arg-type]
        outputs = typed.selects if isinstance(typed, exp.Query) else outputs
    except Exception:  # sqlglot's, or a type it cannot read: the calls alone tell
        pass
    for output in outputs:
        value = output.unalias()
        kind = output.type.sql(dialect=DIALECT).lower() if output.type is not None else ""
        named = isinstance(value, exp.Anonymous) and value.name.lower() in _MAP_NAMES
        if "map<" in kind or kind == "map" or isinstance(value, _MAP_CALLS) or named:
            return (
                f"a MAP output, {output.alias_or_name}, which Spark cannot compare, group "
                "or partition by (to_json(...) outputs it as a string that can)"
            )
    return None


def _read_as_clock(word: exp.Literal, *, unknown: bool) -> bool:
    """Whether Spark casts ``word`` to a date or a timestamp where it stands (``unknown``:
    the query could not be typed; its comparisons count as with a date)."""
    parent = word.parent
    while isinstance(parent, exp.Paren):
        parent = parent.parent
    if isinstance(parent, (exp.Cast, exp.TryCast)):
        return bool(parent.to.is_type(*exp.DataType.TEMPORAL_TYPES))
    if isinstance(parent, _OF_STRINGS):
        return False
    if isinstance(parent, _COMPARED):
        return unknown or (word.type is not None and _beside_a_date(parent, word))
    if isinstance(parent, exp.Anonymous):
        return bool(_TEMPORAL_NAME.search(parent.name.lower()))
    return isinstance(parent, exp.Func) and bool(_TEMPORAL_CLASS.search(type(parent).__name__))


def _in_schema(table: exp.Table, schema: dict[str, object]) -> bool:
    tables = schema.get(table.db.lower())
    return isinstance(tables, dict) and table.name.lower() in tables


def _clock_word(node: exp.Literal) -> bool:
    """A string whose first word is one of ``CLOCK_WORDS`` (``'today UTC'`` too)."""
    words = str(node.this).split() if node.is_string else []
    return bool(words) and words[0].lower() in CLOCK_WORDS


def _beside_a_date(parent: exp.Expr, word: exp.Literal) -> bool:
    """Whether something compared with ``word`` (in a CASE, another of its values, or the
    operand a simple CASE compares it with) is a date, a timestamp or an interval, or of
    a type not known."""
    if isinstance(parent, exp.If) and isinstance(parent.parent, exp.Case):
        if parent.this is word and parent.parent.this is not None:  # CASE d WHEN 'today'
            return _dated(parent.parent.this)
        parent = parent.parent
    if isinstance(parent, exp.Case):
        others = [i.args.get("true") for i in parent.args.get("ifs") or []]
        others.append(parent.args.get("default"))
    elif isinstance(parent, exp.If):
        others = [parent.args.get("true"), parent.args.get("false")]
    else:
        others = [c for c in parent.iter_expressions() if c is not word]
    return any(o is not None and not isinstance(o, exp.Literal) and _dated(o) for o in others)


def _dated(node: exp.Expr) -> bool:
    """Whether ``node`` is a date, a timestamp or an interval, or of a type not known."""
    if isinstance(node, exp.Interval):
        return True
    kind, types = node.type, exp.DataType.Type
    return kind is None or bool(
        kind.is_type(types.UNKNOWN, types.INTERVAL, *exp.DataType.TEMPORAL_TYPES)
    )


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
