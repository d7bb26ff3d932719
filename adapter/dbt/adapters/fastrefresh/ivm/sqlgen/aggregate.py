"""Aggregates: signed deltas of algebraic aggregates, recomputed groups for the others.

An algebraic aggregate (COUNT, SUM, AVG) keeps hidden counts and sums per group: the
delta's signed sums update them, a group whose count reaches 0 goes, a new group comes in.
Any other aggregate (MIN, MAX, COUNT(DISTINCT)) recomputes the groups the changes touched
from the pinned masters. Over a join, the changed rows come from the delta rule
(``join_delta_rows``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from sqlglot import exp

from dbt.adapters.fastrefresh.ivm.analysis import DIALECT, Aggregate, ViewPlan
from dbt.adapters.fastrefresh.ivm.sqlgen.complete import complete_tree, pin, read_from
from dbt.adapters.fastrefresh.ivm.sqlgen.images import Source, image_ctes
from dbt.adapters.fastrefresh.ivm.sqlgen.render import Merge, Target, operand, q, render
from dbt.adapters.fastrefresh.sqltext import TableName, replace_all, string

# The start of the error a delta statement raises when a NaN or an infinity leaves a
# floating-point sum (``signed_terms``); the refresh then rebuilds the view
# (``engine/refresh.py``). Spark's sum of a group holding a NaN is NaN, and one holding
# +Infinity (and no -Infinity) is +Infinity: such a value can come into a kept sum, but
# not leave it (NaN - NaN and Infinity - Infinity are NaN, not the sum of the rest). The
# changed rows' NaNs, +Infinities and -Infinities are counted apart per group (old images
# negative), so one that leaves while another of its kind comes (a row updated in
# another column) cancels; only a group that loses more of a kind than it gains stops.
NON_FINITE_LEFT = "dbt-fastrefresh: a NaN or an infinity left the floating-point sum of "
# After the argument: the fix, for whoever reads the error without the refresh's own.
NON_FINITE_FIX = " (rebuild the view: dbt run --full-refresh)"
_FLOATING = frozenset({"double", "float"})
# The start of the error a delta raises when a group's BIGINT sum passes what a BIGINT
# holds: Spark's SUM wraps there (ANSI off) and its AVG, which sums in DOUBLE, does not, so
# no kept BIGINT can give both. The view's hidden sum is built with try_sum (NULL past it);
# a changed group's sum is added up as DECIMAL(38,0), exactly, and the refresh stops where
# it leaves the BIGINT range or was NULL over values: under 'force' the view is rebuilt.
WIDE_SUM_PASSED = "dbt-fastrefresh: a group's BIGINT sum passed 2^63, where Spark's SUM wraps, of "
# After the argument: while a group's sum stays past 2^63, each rebuild keeps it so.
WIDE_SUM_FIX = (
    " (rebuild the view: dbt run --full-refresh; to refresh it fast, sum or average the "
    "argument cast to DECIMAL(38,0))"
)
# The start of a DECIMAL sum's guard: Spark's SUM is NULL where a group's exact sum passes
# its type (ANSI off), and a kept NULL over values cannot be added to; the build's answer
# is NULL, or a number once rows left, so the refresh stops and 'force' rebuilds.
DECIMAL_SUM_OVERFLOWED = (
    "dbt-fastrefresh: a group's DECIMAL sum passed its type, where Spark's SUM is NULL, of "
)
DECIMAL_SUM_FIX = " (rebuild the view: dbt run --full-refresh)"
# What every guard of a group's sum says first (the two above and ``_unless_beyond``'s).
SUM_GUARD = "dbt-fastrefresh: a group's "
_WIDE = "decimal(38,0)"
_BIGINT_RANGE = (-(2**63), 2**63 - 1)


def aggregate_columns(plan: ViewPlan) -> list[str]:
    """What an aggregate's delta needs of each changed row: groups, arguments."""
    return [f"{g} AS __fr_g_{i}" for i, g in enumerate(plan.groups)] + [
        f"{arg} AS __fr_a_{j}" for j, arg in enumerate(plan.components)
    ]


def aggregate_rows(plan: ViewPlan) -> str:
    """A single-table aggregate's changed rows (images passing the filter), signed."""
    where = f" WHERE {plan.filter}" if plan.filter else ""
    cols = ", ".join([*aggregate_columns(plan), f"{plan.alias}.__fr_sign AS __fr_sign"])
    return f"SELECT {cols} FROM imgs {plan.alias}{where}"


def _aggregate_selects(plan: ViewPlan) -> list[exp.Expr]:
    """``aggregate_columns`` as trees."""
    return [exp.alias_(g.copy(), f"__fr_g_{i}") for i, g in enumerate(plan.group_nodes)] + [
        exp.alias_(arg.copy(), f"__fr_a_{j}") for j, arg in enumerate(plan.component_nodes)
    ]


def join_delta_rows(
    plan: ViewPlan,
    sources: Mapping[TableName, Source],
    pins: Mapping[TableName, int | None],
    old_pins: Mapping[TableName, int | None],
) -> tuple[list[str], str]:
    """(CTEs, SELECT) of an aggregate-over-join's changed rows, signed: the delta rule.

    For each joined table i with changes, its signed images joined with the tables before
    it as they are now (the pinned snapshots) and the tables after it as they were (the
    snapshots the view last reflected): the sum over i is exactly the change of the join.
    """
    ctes: list[str] = []
    images: dict[TableName, str] = {}
    for m, master in enumerate(plan.masters):
        if master in sources:
            read = plan.columns_read_of(master)
            images[master] = f"__fr_img{m}"
            ctes += image_ctes(plan, sources[master], read, images[master], net=not plan.algebraic)
    position = {inp.alias.lower(): j for j, inp in enumerate(plan.inputs)}
    parts = []
    for i, inp in enumerate(plan.inputs):
        if inp.master not in images:
            continue
        tree = plan.query()
        for table in tree.find_all(exp.Table):
            j = position[table.alias_or_name.lower()]
            if j != i:
                pin(table, (pins if j < i else old_pins).get(plan.inputs[j].master))
        read_from(tree, inp.alias, exp.select("*").from_(images[inp.master]))
        for arg in ("group", "distinct", "having", "order"):
            tree.set(arg, None)
        sign = exp.alias_(exp.column("__fr_sign", table=inp.alias), "__fr_sign")
        tree = tree.select(*_aggregate_selects(plan), sign, append=False, copy=False)
        parts.append(tree.sql(dialect=DIALECT))
    return ctes, " UNION ALL ".join(parts)


def fill(
    template: exp.Expression,
    aggregates: Sequence[exp.Expression],
    groups: Sequence[exp.Expression],
) -> exp.Expression:
    """An aggregate output (its ``Output.template``) over new values: the k-th aggregate
    call's placeholder ``:a<k>`` by ``aggregates[k]``, a group's ``:g<i>`` by ``groups[i]``."""

    def swap(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Placeholder):
            pool = aggregates if node.name.startswith("a") else groups
            return pool[int(node.name[1:])].copy()
        return node

    return template.transform(swap)


def _col(table: str, name: str) -> exp.Column:
    return exp.column(name, table=table)


def _cast(value: exp.Expression, to: str) -> exp.Cast:
    """``CAST(value AS to)``, always (``exp.cast`` drops a cast to the type it has)."""
    return exp.Cast(this=value, to=exp.DataType.build(to, dialect=DIALECT))


def _coalesce0(value: exp.Expression) -> exp.Coalesce:
    return exp.Coalesce(this=value, expressions=[exp.Literal.number(0)])


def _component_values(
    plan: ViewPlan, side: str | None, avg_types: Mapping[str, str], types: Mapping[str, str]
) -> tuple[dict[str, exp.Expression], list[exp.Expression]]:
    """(new hidden column values, new value of each aggregate call, by its index).

    ``side`` 't' for an existing group (old value + delta), None for a new group. Each
    value has the type of the call it stands for: a sum is cast to its hidden column's type
    (the type of ``sum(arg)``), since old + delta is a wider decimal, and arithmetic over a
    wider decimal rounds to other digits than the query's (``sum(y) / count(*)``). An
    average divides that sum as Spark's AVG does, then takes AVG's type.
    """

    def new(name: str, delta: str) -> exp.Expression:
        if side:
            return exp.Paren(this=exp.Add(this=_col("t", name), expression=_col("s", delta)))
        return _col("s", delta)

    hidden: dict[str, exp.Expression] = {"__fr_count": new("__fr_count", "__fr_d_count")}
    for j in range(len(plan.components)):
        count = new(f"__fr_cnt_{j}", f"__fr_d_cnt_{j}")
        hidden[f"__fr_cnt_{j}"] = count
        if j in plan.sum_components:
            sum_type = types[f"__fr_sum_{j}"]
            total: exp.Expression = (
                exact_add(
                    _coalesce0(_col("t", f"__fr_sum_{j}")),
                    _coalesce0(_col("s", f"__fr_d_sum_{j}")),
                    sum_type,
                )
                if side
                else _col("s", f"__fr_d_sum_{j}")
            )
            old = _col("t", f"__fr_sum_{j}") if side else None
            old_count = _col("t", f"__fr_cnt_{j}") if side else exp.Literal.number(0)
            if _delta_type(sum_type) != sum_type:
                total = _kept_bigint(total, old_count, old, plan.components[j])
            elif old is not None and _DECIMAL.fullmatch(sum_type):
                total = _kept_decimal(total, old_count, old, plan.components[j], sum_type)
            hidden[f"__fr_sum_{j}"] = exp.If(
                this=exp.EQ(this=count.copy(), expression=exp.Literal.number(0)),
                true=exp.Null(), false=total,
            )  # fmt: skip

    def typed(name: str) -> exp.Cast:
        return _cast(hidden[name].copy(), types[name])

    def value(agg: Aggregate) -> exp.Expression:
        if agg.kind == "count_star":
            return typed("__fr_count")
        if agg.kind == "count":
            return typed(f"__fr_cnt_{agg.component}")
        total = f"__fr_sum_{agg.component}"
        if agg.kind == "sum":
            return typed(total)
        count = typed(f"__fr_cnt_{agg.component}")
        return average(typed(total), count, types[total], avg_types.get(agg.arg or ""))

    return hidden, [value(agg) for agg in plan.aggregates]


_DECIMAL = re.compile(r"decimal\((\d+),\s*(\d+)\)", re.IGNORECASE)


def exact_add(old: exp.Expression, delta: exp.Expression, sum_type: str) -> exp.Expression:
    """``old + delta``, two values of a sum's type, without the digit Spark drops.

    Two ``decimal(38,s)`` add up to ``decimal(39,s)``, which Spark narrows to 38 digits by
    cutting the scale to ``s - 1`` (to no less than 6): the group's sum would lose its last
    digit. Cast to ``decimal(37,s)`` first, they add up exactly in ``decimal(38,s)``; a sum
    of 10^(37-s) or more (one integer digit short of what SUM itself allows) stops the
    refresh with a message rather than give a wrong digit or overflow to NULL."""
    decimal = _DECIMAL.fullmatch(sum_type)
    if decimal is None or int(decimal[1]) < 38 or int(decimal[2]) <= 6:
        return exp.Add(this=old, expression=delta)
    scale = int(decimal[2])
    room = 37 - scale  # integer digits each operand may have
    narrow = f"decimal(37,{scale})"
    added = exp.Add(this=_cast(old, narrow), expression=_cast(delta, narrow))
    return _unless_beyond((old, delta), room, f"SUM over {sum_type}", added)


def _unless_beyond(
    sums: Sequence[exp.Expression], room: int, what: str, value: exp.Expression
) -> exp.Expression:
    """``value``, unless one of ``sums`` reached 10^``room``, past what ``what`` can be
    kept exactly in Spark's decimals: then the refresh stops with the fix."""
    too_wide = exp.or_(
        *(exp.GTE(this=exp.Abs(this=s.copy()), expression=exp.Literal.number(10**room))
          for s in sums)
    )  # fmt: skip
    message = (
        f"{SUM_GUARD}sum reached 1E{room}, beyond what {what} can be "
        "maintained exactly; rebuild the view (dbt run --full-refresh) or set "
        "refresh_method='complete'"
    )
    stop = exp.Anonymous(this="raise_error", expressions=[exp.Literal.string(message)])
    return exp.If(this=too_wide, true=stop, false=value)


def average(
    total: exp.Expression, count: exp.Expression, sum_type: str, avg_type: str | None
) -> exp.Expression:
    """``AVG`` from a group's sum and count, equal to what Spark's AVG returns.

    Over a DECIMAL Spark divides the sum by the count and rounds the exact quotient once,
    half up, to AVG's scale S. A plain ``sum / count`` rounds to a scale of its own (at
    least 6, fewer than S when the sum is wide), and a second cast to S rounds again: a
    digit lost, or 1 in the last digit off on a tie. The division here is typed so Spark
    rounds once, to max(S, 6): the sum is cast to ``decimal(38 - max(S, 6) + s, s)``,
    which makes ``decimal(38, max(S, 6))`` the quotient's type; when S < 6 the count is
    multiplied by 10^(6 - S) and the quotient by the same power of ten afterwards, exact
    shifts of the point. A sum too wide for that cast (at least 10^(38 - max(S, 6)), far
    beyond real data) stops the refresh with a message rather than give a wrong digit.
    """
    sum_decimal, avg_decimal = _DECIMAL.fullmatch(sum_type), _DECIMAL.fullmatch(avg_type or "")
    if sum_decimal is None or avg_decimal is None:
        ratio = exp.Div(this=total, expression=count)
        return _cast(ratio, avg_type) if avg_type else exp.Paren(this=ratio)
    precision, scale = int(sum_decimal[1]), int(sum_decimal[2])
    digits = max(int(avg_decimal[2]), 6)
    shift = digits - int(avg_decimal[2])
    divisor: exp.Expression = _cast(count, "decimal(20,0)")
    if shift:
        divisor = exp.Paren(this=exp.Mul(this=divisor, expression=exp.Literal.number(10**shift)))
    room = 38 - digits  # integer digits the sum may have
    quotient: exp.Expression = exp.Paren(
        this=exp.Div(
            this=_cast(total.copy(), f"decimal({room + scale},{scale})"), expression=divisor
        )
    )
    if shift:
        quotient = exp.Paren(this=exp.Mul(this=quotient, expression=exp.Literal.number(10**shift)))
    if precision - scale > room:
        quotient = _unless_beyond((total,), room, f"AVG over {sum_type}", quotient)
    return _cast(quotient, avg_decimal[0])


class SignedTerm(NamedTuple):
    """One hidden count or sum of an algebraic aggregate: ``delta``, its column in the
    delta; ``hidden``, its column in the view; ``signed``, a changed row's signed value
    (of a floating-point sum, its finite part); ``value``, of a floating-point sum, a
    changed row's value (its non-finite ones are counted apart: ``counted``)."""

    delta: str
    hidden: str
    signed: str
    is_sum: bool
    value: str | None = None
    stop: str | None = None

    def counted(self) -> list[tuple[str, str]]:
        """(a changed row's signed count, its column) of each non-finite value of a
        floating-point sum: NaN, +Infinity, -Infinity (none for another term)."""
        if self.value is None:
            return []
        v = self.value
        return [
            (f"IF(isnan({v}), __fr_sign, 0)", f"{self.delta}_nan"),
            (f"IF({v} = double('Infinity'), __fr_sign, 0)", f"{self.delta}_pinf"),
            (f"IF({v} = double('-Infinity'), __fr_sign, 0)", f"{self.delta}_ninf"),
        ]

    def summed(self, total: str, counts: Sequence[str]) -> str:
        """The group's delta of this term from ``total`` (the summed ``signed``) and
        ``counts`` (the summed ``counted``): a floating-point sum's finite part with each
        non-finite value that came in, or the statement stopped where one left."""
        if self.value is None:
            return total
        nan, pinf, ninf = counts
        return (
            f"IF(least({nan}, {pinf}, {ninf}) < 0, {self.stop}, {total} "
            f"+ IF({nan} > 0, double('NaN'), 0D) + IF({pinf} > 0, double('Infinity'), 0D) "
            f"+ IF({ninf} > 0, double('-Infinity'), 0D))"
        )


def _delta_type(sum_type: str) -> str:
    """The type a changed group's sum is added up in: a BIGINT sum's as DECIMAL(38,0),
    which holds any sum of BIGINTs a group has (``WIDE_SUM_PASSED``), others as their own."""
    return _WIDE if sum_type.lower() == "bigint" else sum_type


def _wide_sum_message(what: str) -> str:
    """The error of a BIGINT sum of ``what`` past 2^63 (``WIDE_SUM_PASSED``)."""
    return WIDE_SUM_PASSED + what + WIDE_SUM_FIX


def _kept_bigint(
    total: exp.Expression, count: exp.Expression, old: exp.Expression | None, what: str
) -> exp.Expression:
    """A group's new BIGINT sum from its exact DECIMAL(38,0) ``total``, unless it left the
    BIGINT range, or the kept ``old`` sum is NULL over values (``count`` > 0): try_sum's
    answer where the build's sum passed it. Then the statement stops (``WIDE_SUM_PASSED``)."""
    low, high = _BIGINT_RANGE
    conditions: list[exp.Expression] = [
        exp.LT(this=total.copy(), expression=exp.Literal.number(low)),
        exp.GT(this=total.copy(), expression=exp.Literal.number(high)),
    ]
    if old is not None:
        conditions.append(exp.Paren(this=_null_over_values(old, count)))
    passed = exp.or_(*conditions)
    stop = exp.Anonymous(
        this="raise_error", expressions=[exp.Literal.string(_wide_sum_message(what))]
    )
    return exp.If(this=passed, true=_cast(stop, "bigint"), false=_cast(total, "bigint"))


def _kept_decimal(
    total: exp.Expression, count: exp.Expression, old: exp.Expression, what: str, sum_type: str
) -> exp.Expression:
    """A group's new DECIMAL sum, unless its kept ``old`` sum is NULL over values (``count``
    > 0): past its type at the build or an earlier refresh, as Spark's SUM gives it
    (``DECIMAL_SUM_OVERFLOWED``). A sum that passes its type here is NULL, as Spark's."""
    message = DECIMAL_SUM_OVERFLOWED + what + DECIMAL_SUM_FIX
    stop = exp.Anonymous(this="raise_error", expressions=[exp.Literal.string(message)])
    return exp.If(this=_null_over_values(old, count), true=_cast(stop, sum_type), false=total)


def _null_over_values(old: exp.Expression, count: exp.Expression) -> exp.Condition:
    """A kept sum that is NULL while its group counts values (``count`` > 0): Spark's
    answer past the sum's type (DECIMAL) or try_sum's past 2^63 (BIGINT)."""
    return exp.and_(
        exp.Is(this=old.copy(), expression=exp.Null()),
        exp.GT(this=count.copy(), expression=exp.Literal.number(0)),
    )


def signed_terms(plan: ViewPlan, types: Mapping[str, str]) -> list[SignedTerm]:
    """The hidden counts and sums of ``plan``, each with a changed row's signed value.

    A sum's value is the argument cast to the hidden sum's type (``types``: that of
    ``sum(arg)``), then negated for an old image. Multiplied by the sign instead, an INT
    argument of -2^31 would wrap (its negation overflows INT, not the BIGINT of its sum),
    and a DECIMAL one would widen past 38 digits, which Spark pays for in scale: a
    ``decimal(38,18)`` sum kept 6 digits after the point."""
    terms = [SignedTerm("__fr_d_count", "__fr_count", "__fr_sign", False)]
    for j in range(len(plan.components)):
        terms.append(SignedTerm(
            f"__fr_d_cnt_{j}", f"__fr_cnt_{j}", f"IF(__fr_a_{j} IS NULL, 0, __fr_sign)", False
        ))  # fmt: skip
        if j in plan.sum_components:
            sum_type = types[f"__fr_sum_{j}"]
            value = f"CAST(__fr_a_{j} AS {_delta_type(sum_type)})"
            signed = f"IF(__fr_sign > 0, {value}, -{value})"
            if sum_type.lower() not in _FLOATING:
                terms.append(SignedTerm(f"__fr_d_sum_{j}", f"__fr_sum_{j}", signed, True))
                continue
            message = string(NON_FINITE_LEFT + plan.components[j] + NON_FINITE_FIX)
            stop = f"CAST(raise_error({message}) AS {sum_type})"
            finite = f"IF(isnan({value}) OR abs({value}) = double('Infinity'), 0D, {signed})"
            terms.append(SignedTerm(f"__fr_d_sum_{j}", f"__fr_sum_{j}", finite, True, value, stop))
    return terms


def aggregate_signed(plan: ViewPlan, target: Target, ctes: Sequence[str], rows: str) -> str:
    """The signed delta of an algebraic aggregate: per group, the changed rows' signed
    counts and sums added to the hidden ones; a group whose count reaches 0 is deleted."""
    types, avg_types = target.types, target.avg_types
    groups = [f"__fr_g_{i}" for i in range(len(plan.groups))]
    parts, changed = list(groups), []
    for t in signed_terms(plan, types):
        if t.is_sum:  # NULL when no row has a value
            counts = [f"sum({row})" for row, _ in t.counted()]
            parts.append(f"{t.summed(f'sum({t.signed})', counts)} AS {t.delta}")
            changed.append(f"coalesce({t.delta}, 0) <> 0")
        else:
            parts.append(f"coalesce(sum({t.signed}), 0) AS {t.delta}")
            changed.append(f"{t.delta} <> 0")
    group_by = f" GROUP BY {', '.join(groups)}" if groups else ""
    source = (
        f"WITH {', '.join(ctes)}, __fr_rows AS ({rows}), "
        f"__fr_d AS (SELECT {', '.join(parts)} FROM __fr_rows{group_by}) "
        f"SELECT * FROM __fr_d WHERE {' OR '.join(changed)}"
    )
    old_hidden, old_values = _component_values(plan, "t", avg_types, types)
    new_hidden, new_values = _component_values(plan, None, avg_types, types)
    group_t = [_col("t", c) for c in plan.group_columns]
    group_s = [_col("s", f"__fr_g_{i}") for i in range(len(plan.groups))]

    def text(value: exp.Expression, column: str) -> str:
        return _cast(value, types[column]).sql(dialect=DIALECT)

    update = {n: text(v, n) for n, v in old_hidden.items()}
    inserts = {column: text(group_s[i], column) for i, column in enumerate(plan.group_columns)}
    inserts.update({n: text(v, n) for n, v in new_hidden.items()})
    for o in plan.outputs:
        if o.template is not None:
            update[o.name] = text(fill(o.template, old_values, group_t), o.name)
            inserts[o.name] = text(fill(o.template, new_values, group_s), o.name)
    if plan.global_aggregate:
        return render(plan, target, Merge(source, None, update))
    if target.overwrite:
        return _signed_overwrite(plan, target, ctes, rows, inserts)
    on = " AND ".join(f"t.{q(c)} <=> s.__fr_g_{i}" for i, c in enumerate(plan.group_columns))
    merge = Merge(
        source, on, update, delete_when="t.__fr_count + s.__fr_d_count = 0",
        insert=inserts, insert_when="s.__fr_d_count > 0",
    )  # fmt: skip
    return render(plan, target, merge)


def _signed_overwrite(
    plan: ViewPlan, target: Target, ctes: Sequence[str], rows: str, inserts: Mapping[str, str]
) -> str:
    """A grouped algebraic aggregate's delta replacing the whole view in one aggregation.

    The view's rows (each group's hidden counts and sums) and the changed rows (signed)
    go into one ``UNION ALL`` and are summed per group: each group's new counts and sums,
    as if the whole group were new, so its columns are the ones ``inserts`` gives a new
    group; a group whose count reaches 0 goes. One shuffle, where the MERGE's overwrite
    form aggregates the changed rows and then joins them with the view (a full outer
    join: both sides shuffled). Groups are compared as the view's columns are typed.
    """
    types = target.types
    groups = [f"__fr_g_{i}" for i in range(len(plan.groups))]
    view_part = [f"t.{q(c)} AS {g}" for g, c in zip(groups, plan.group_columns, strict=True)]
    rows_part = [
        f"CAST({g} AS {types[c]}) AS {g}" for g, c in zip(groups, plan.group_columns, strict=True)
    ]
    terms = signed_terms(plan, types)
    view_part += [_view_term(plan, t, types) for t in terms]
    rows_part += [f"{t.signed} AS {t.delta}" for t in terms]
    # A floating-point sum's non-finite values of the changed rows, counted (the view's
    # rows count none: their sums hold them already).
    view_part += [f"0 AS {name}" for t in terms for _, name in t.counted()]
    rows_part += [f"{row} AS {name}" for t in terms for row, name in t.counted()]
    summed = [
        t.summed(f"sum({t.delta})", [f"sum({name})" for _, name in t.counted()]) for t in terms
    ]
    sums = ", ".join([*groups, *(f"{s} AS {t.delta}" for s, t in zip(summed, terms, strict=True))])
    values = ", ".join(f"{inserts[c]} AS {q(c)}" for c in plan.view_columns)
    return (
        f"{replace_all(target.view)} SELECT {values} FROM ("
        f"WITH {', '.join(ctes)}, __fr_rows AS ({rows}), "
        f"__fr_u AS (SELECT {', '.join(view_part)} FROM {target.view.sql} t "
        f"UNION ALL SELECT {', '.join(rows_part)} FROM __fr_rows) "
        f"SELECT {sums} FROM __fr_u GROUP BY {', '.join(groups)}) s "
        "WHERE s.__fr_d_count > 0"
    )


def _view_term(plan: ViewPlan, term: SignedTerm, types: Mapping[str, str]) -> str:
    """A view row's hidden count or sum in the overwrite's ``UNION ALL``: a BIGINT sum as
    DECIMAL(38,0), stopping the statement where it is NULL over values (passed 2^63 at the
    build, ``WIDE_SUM_PASSED``); a DECIMAL sum NULL over values (past its type,
    ``DECIMAL_SUM_OVERFLOWED``) stops it too, where ``sum()`` would skip it as 0."""
    kept = f"t.{term.hidden}"
    sum_type = types[term.hidden] if term.is_sum else ""
    j = term.hidden.removeprefix("__fr_sum_")
    if _DECIMAL.fullmatch(sum_type):
        message, as_type = (
            DECIMAL_SUM_OVERFLOWED + plan.components[int(j)] + DECIMAL_SUM_FIX,
            sum_type,
        )
    elif term.is_sum and _delta_type(sum_type) != sum_type:
        message, as_type = _wide_sum_message(plan.components[int(j)]), _WIDE
        kept = f"CAST({kept} AS {_WIDE})"
    else:
        return f"{kept} AS {term.delta}"
    return (
        f"IF(t.{term.hidden} IS NULL AND t.__fr_cnt_{j} > 0, CAST(raise_error({string(message)}) "
        f"AS {as_type}), {kept}) AS {term.delta}"
    )


def aggregate_recompute(
    plan: ViewPlan,
    target: Target,
    ctes: Sequence[str],
    rows: str,
    *,
    pins: Mapping[TableName, int | None],
) -> str:
    """Recompute the groups the changes touched, from the pinned masters."""
    cols = list(plan.view_columns)
    tree = complete_tree(plan, pins)
    taken = {c: f"s.{q(c)}" for c in cols}
    if plan.global_aggregate:
        source = (
            f"WITH {', '.join(ctes)}, __fr_rows AS ({rows}) SELECT * FROM "
            f"({tree.sql(dialect=DIALECT)}) __fr_re WHERE EXISTS (SELECT 1 FROM __fr_rows)"
        )
        return render(plan, target, Merge(source, None, taken))
    affected = ", ".join(f"__fr_g_{i}" for i in range(len(plan.groups)))
    semi = exp.and_(
        *(
            exp.NullSafeEQ(this=operand(g.copy()), expression=_col("__fr_ag", f"__fr_g_{i}"))
            for i, g in enumerate(plan.group_nodes)
        )
    )
    tree = tree.join(exp.to_table("__fr_ag"), on=semi, join_type="left semi", copy=False)
    back = " AND ".join(f"re.{q(c)} <=> ag.__fr_g_{i}" for i, c in enumerate(plan.group_columns))
    picks = ", ".join(f"re.{q(c)}" for c in cols)
    source = (
        f"WITH {', '.join(ctes)}, __fr_rows AS ({rows}), "
        f"__fr_ag AS (SELECT DISTINCT {affected} FROM __fr_rows), "
        f"__fr_re AS ({tree.sql(dialect=DIALECT)}) "
        # The affected groups go by __fr_k_<i>: a group expression the query does not
        # output is a view column of its own, __fr_g_<i>, among the picks.
        f"SELECT {picks}, "
        f"{', '.join(f'ag.__fr_g_{i} AS __fr_k_{i}' for i in range(len(plan.groups)))}, "
        "re.__fr_count IS NULL AS __fr_gone "
        f"FROM __fr_ag ag LEFT JOIN __fr_re re ON {back}"
    )
    on = " AND ".join(f"t.{q(c)} <=> s.__fr_k_{i}" for i, c in enumerate(plan.group_columns))
    merge = Merge(
        source, on, taken, delete_when="s.__fr_gone", insert=taken, insert_when="NOT s.__fr_gone"
    )
    return render(plan, target, merge)


def aggregate(plan: ViewPlan, target: Target, ctes: Sequence[str], rows: str, *,
              pins: Mapping[TableName, int | None]) -> str:  # fmt: skip
    """The delta statement of an aggregate whose changed rows are ``rows`` (after ``ctes``)."""
    if plan.algebraic:
        return aggregate_signed(plan, target, ctes, rows)
    return aggregate_recompute(plan, target, ctes, rows, pins=pins)


def single_table(plan: ViewPlan, target: Target, source: Source, *,
                 pins: Mapping[TableName, int | None]) -> str:  # fmt: skip
    """An aggregate over one master."""
    ctes = image_ctes(plan, source, net=not plan.algebraic)
    return aggregate(plan, target, ctes, aggregate_rows(plan), pins=pins)


def over_join(
    plan: ViewPlan,
    target: Target,
    sources: Mapping[TableName, Source],
    *,
    pins: Mapping[TableName, int | None],
    old_pins: Mapping[TableName, int | None],
) -> str:
    """An aggregate over a join: every master's changes in one statement."""
    ctes, rows = join_delta_rows(plan, sources, pins, old_pins)
    return aggregate(plan, target, ctes, rows, pins=pins)
