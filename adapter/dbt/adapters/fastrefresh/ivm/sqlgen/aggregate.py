"""Aggregates: signed deltas of algebraic aggregates, recomputed groups for the others.

An algebraic aggregate (COUNT, SUM, AVG) keeps hidden counts and sums per group: the
delta's signed sums update them, a group whose count reaches 0 goes, a new group comes in.
Any other aggregate (MIN, MAX, COUNT(DISTINCT)) recomputes the groups the changes touched
from the pinned masters. Over a join, the changed rows come from the delta rule
(``join_delta_rows``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlglot
from sqlglot import exp

from dbt.adapters.fastrefresh.ivm.analysis import DIALECT, ViewPlan
from dbt.adapters.fastrefresh.ivm.sqlgen.complete import complete_select, pin, read_from
from dbt.adapters.fastrefresh.ivm.sqlgen.images import Source, image_ctes
from dbt.adapters.fastrefresh.ivm.sqlgen.render import Merge, Target, q, render
from dbt.adapters.fastrefresh.sqltext import TableName


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
            ctes += image_ctes(plan, sources[master], read, images[master])
    position = {inp.alias.lower(): j for j, inp in enumerate(plan.inputs)}
    parts = []
    for i, inp in enumerate(plan.inputs):
        if inp.master not in images:
            continue
        tree = sqlglot.parse_one(plan.qualified, read=DIALECT)
        assert isinstance(tree, exp.Select)
        for table in tree.find_all(exp.Table):
            j = position[table.alias_or_name.lower()]
            if j != i:
                pin(table, (pins if j < i else old_pins).get(plan.inputs[j].master))
        read_from(tree, inp.alias, f"SELECT * FROM {images[inp.master]}")
        for arg in ("group", "distinct", "having", "order"):
            tree.set(arg, None)
        columns = [*aggregate_columns(plan), f"{inp.alias}.__fr_sign AS __fr_sign"]
        tree = tree.select(*columns, append=False, dialect=DIALECT, copy=False)
        parts.append(tree.sql(dialect=DIALECT))
    return ctes, " UNION ALL ".join(parts)


def _replace(
    sql: str,
    plan: ViewPlan,
    aggregate_value: Mapping[str, str],
    group_value: Sequence[str],
) -> str:
    """An output expression over new component values instead of aggregate calls."""
    tree = sqlglot.parse_one(sql, read=DIALECT)
    groups = list(plan.groups)

    def swap(node: Any) -> Any:
        text = node.sql(dialect=DIALECT)
        if isinstance(node, exp.AggFunc) and text in aggregate_value:
            return sqlglot.parse_one(aggregate_value[text], read=DIALECT)
        if text in groups and not isinstance(node, exp.AggFunc):
            return sqlglot.parse_one(group_value[groups.index(text)], read=DIALECT)
        return node

    return tree.transform(swap).sql(dialect=DIALECT)


def _component_values(
    plan: ViewPlan, side: str | None, avg_types: Mapping[str, str], types: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """(new hidden column values, new value of each aggregate call).

    ``side`` 't' for an existing group (old value + delta), None for a new group. Each
    value has the type of the call it stands for: a sum is cast to its hidden column's type
    (the type of ``sum(arg)``), since old + delta is a wider decimal, and arithmetic over a
    wider decimal rounds to other digits than the query's (``sum(y) / count(*)``). An
    average divides that sum as Spark's AVG does, then takes AVG's type.
    """

    def new(name: str, delta: str) -> str:
        return f"(t.{name} + s.{delta})" if side else f"s.{delta}"

    hidden = {"__fr_count": new("__fr_count", "__fr_d_count")}
    for j in range(len(plan.components)):
        count = new(f"__fr_cnt_{j}", f"__fr_d_cnt_{j}")
        hidden[f"__fr_cnt_{j}"] = count
        if j in plan.sum_components:
            total = (
                f"coalesce(t.__fr_sum_{j}, 0) + coalesce(s.__fr_d_sum_{j}, 0)"
                if side
                else f"s.__fr_d_sum_{j}"
            )
            hidden[f"__fr_sum_{j}"] = f"IF({count} = 0, NULL, {total})"

    def typed(name: str) -> str:
        return f"CAST({hidden[name]} AS {types[name]})"

    values: dict[str, str] = {}
    for agg in plan.aggregates:
        if agg.kind == "count_star":
            values[agg.node_sql] = typed("__fr_count")
        elif agg.kind == "count":
            values[agg.node_sql] = typed(f"__fr_cnt_{agg.component}")
        elif agg.kind == "sum":
            values[agg.node_sql] = typed(f"__fr_sum_{agg.component}")
        elif agg.kind == "avg":
            c = agg.component
            ratio = f"{typed(f'__fr_sum_{c}')} / {typed(f'__fr_cnt_{c}')}"
            kind = avg_types.get(agg.arg or "")
            values[agg.node_sql] = f"CAST({ratio} AS {kind})" if kind else f"({ratio})"
    return hidden, values


def aggregate_signed(plan: ViewPlan, target: Target, ctes: Sequence[str], rows: str) -> str:
    """The signed delta of an algebraic aggregate: per group, the changed rows' signed
    counts and sums added to the hidden ones; a group whose count reaches 0 is deleted."""
    types, avg_types = target.types, target.avg_types
    groups = [f"__fr_g_{i}" for i in range(len(plan.groups))]
    parts = [*groups, "coalesce(sum(__fr_sign), 0) AS __fr_d_count"]
    changed = ["__fr_d_count <> 0"]
    for j in range(len(plan.components)):
        parts.append(f"coalesce(sum(IF(__fr_a_{j} IS NULL, 0, __fr_sign)), 0) AS __fr_d_cnt_{j}")
        changed.append(f"__fr_d_cnt_{j} <> 0")
        if j in plan.sum_components:
            parts.append(f"sum(__fr_sign * __fr_a_{j}) AS __fr_d_sum_{j}")
            changed.append(f"coalesce(__fr_d_sum_{j}, 0) <> 0")
    group_by = f" GROUP BY {', '.join(groups)}" if groups else ""
    source = (
        f"WITH {', '.join(ctes)}, __fr_rows AS ({rows}), "
        f"__fr_d AS (SELECT {', '.join(parts)} FROM __fr_rows{group_by}) "
        f"SELECT * FROM __fr_d WHERE {' OR '.join(changed)}"
    )
    old_hidden, old_values = _component_values(plan, "t", avg_types, types)
    new_hidden, new_values = _component_values(plan, None, avg_types, types)
    group_t = [f"t.{q(c)}" for c in plan.group_columns]
    group_s = [f"s.__fr_g_{i}" for i in range(len(plan.groups))]
    update = {n: f"CAST({v} AS {types[n]})" for n, v in old_hidden.items()}
    inserts = {
        column: f"CAST(s.__fr_g_{i} AS {types[column]})"
        for i, column in enumerate(plan.group_columns)
    }
    inserts.update({n: f"CAST({v} AS {types[n]})" for n, v in new_hidden.items()})
    for o in plan.outputs:
        if o.group is None:
            old = _replace(o.sql, plan, old_values, group_t)
            update[o.name] = f"CAST({old} AS {types[o.name]})"
            new = _replace(o.sql, plan, new_values, group_s)
            inserts[o.name] = f"CAST({new} AS {types[o.name]})"
    if plan.global_aggregate:
        return render(plan, target, Merge(source, None, update))
    on = " AND ".join(f"t.{q(c)} <=> s.__fr_g_{i}" for i, c in enumerate(plan.group_columns))
    merge = Merge(
        source, on, update, delete_when="t.__fr_count + s.__fr_d_count = 0",
        insert=inserts, insert_when="s.__fr_d_count > 0",
    )  # fmt: skip
    return render(plan, target, merge)


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
    full = complete_select(plan, pins)
    taken = {c: f"s.{q(c)}" for c in cols}
    if plan.global_aggregate:
        source = (
            f"WITH {', '.join(ctes)}, __fr_rows AS ({rows}) SELECT * FROM ({full}) __fr_re "
            "WHERE EXISTS (SELECT 1 FROM __fr_rows)"
        )
        return render(plan, target, Merge(source, None, taken))
    affected = ", ".join(f"__fr_g_{i}" for i in range(len(plan.groups)))
    tree = sqlglot.parse_one(full, read=DIALECT)
    assert isinstance(tree, exp.Select)
    semi = " AND ".join(f"{g} <=> __fr_ag.__fr_g_{i}" for i, g in enumerate(plan.groups))
    tree = tree.join("__fr_ag", on=semi, join_type="left semi", dialect=DIALECT, copy=False)
    back = " AND ".join(f"re.{q(c)} <=> ag.__fr_g_{i}" for i, c in enumerate(plan.group_columns))
    picks = ", ".join(f"re.{q(c)}" for c in cols)
    source = (
        f"WITH {', '.join(ctes)}, __fr_rows AS ({rows}), "
        f"__fr_ag AS (SELECT DISTINCT {affected} FROM __fr_rows), "
        f"__fr_re AS ({tree.sql(dialect=DIALECT)}) "
        f"SELECT {picks}, {', '.join(f'ag.__fr_g_{i}' for i in range(len(plan.groups)))}, "
        "re.__fr_count IS NULL AS __fr_gone "
        f"FROM __fr_ag ag LEFT JOIN __fr_re re ON {back}"
    )
    on = " AND ".join(f"t.{q(c)} <=> s.__fr_g_{i}" for i, c in enumerate(plan.group_columns))
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
    return aggregate(plan, target, image_ctes(plan, source), aggregate_rows(plan), pins=pins)


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
