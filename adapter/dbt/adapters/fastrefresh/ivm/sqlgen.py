"""SQL of a refresh: the complete-refresh SELECT and the one-statement MERGE of a delta.

Pure: from a ``ViewPlan``, the view's column types and where the changed rows come from.

Changed rows become *images*: master rows with a sign, -1 for a row as it was before the
refresh range and +1 for a row as it is after. On a keyed log, the net change per key is
the first old image and the last new image by ``sequence__``; on a key-less log every
row counts; when the log lacks a column the view reads, the images are read from the
master by time travel for the changed keys (old: the snapshot the view reflected, new:
the pinned one). Every delta is applied with one MERGE, so it is atomic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from dbt.adapters.fastrefresh.ivm.analysis import DIALECT, ViewPlan
from dbt.adapters.fastrefresh.protocol import changevector as cv
from dbt.adapters.fastrefresh.sqltext import TableName, ident, string


@dataclass(frozen=True)
class LogSource:
    """Images from a log range."""

    log_table: TableName
    range_predicate: str
    key_columns: tuple[str, ...]  # empty for a key-less log
    master_columns: tuple[str, ...]  # all master columns at log creation (vector positions)
    logged: tuple[str, ...] = ()  # the master columns the log holds (key included)


@dataclass(frozen=True)
class MasterSource:
    """Images from the master by time travel, for the keys changed in a log range."""

    log: LogSource
    master: TableName
    old_snapshot: int
    new_snapshot: int


Source = LogSource | MasterSource


def _q(name: str) -> str:
    return ident(name)


def _cv_skip(columns_read: Sequence[str], log: LogSource) -> str:
    """Skip updates that changed no column the view reads (``change_vector__``)."""
    positions = [log.master_columns.index(c) + 1 for c in columns_read if c in log.master_columns]
    if not positions:
        return "TRUE"
    touches = cv.sql_touches("change_vector__", positions, len(log.master_columns))
    return f"(dmltype__ <> 'U' OR {touches})"


def image_ctes(
    plan: ViewPlan, source: Source, columns: Sequence[str] | None = None, name: str = "imgs"
) -> list[str]:
    """CTEs ending in ``name``: the needed master columns plus ``__fr_sign``.

    ``columns``: the master columns to read (default: all the view reads); ``name`` names
    the last CTE and prefixes the others, so several masters' images can sit side by side.
    """
    log = source.log if isinstance(source, MasterSource) else source
    read = plan.columns_read if columns is None else columns
    cols = list(log.key_columns) + [c for c in read if c not in log.key_columns]
    p = "__fr_" if name == "imgs" else f"{name}_"
    sel = ", ".join(_q(c) for c in cols)
    where = f"({log.range_predicate}) AND {_cv_skip(read, log)}"
    if isinstance(source, MasterSource):
        keys = ", ".join(_q(k) for k in log.key_columns)
        on = " AND ".join(f"m.{_q(k)} <=> c.{_q(k)}" for k in log.key_columns)
        m = source.master.sql
        msel = ", ".join(f"m.{_q(c)}" for c in cols)
        return [
            f"{p}keys AS (SELECT DISTINCT {keys} FROM {log.log_table.sql} WHERE {where})",
            f"{p}old AS (SELECT {msel}, -1 AS __fr_sign FROM {m} VERSION AS OF {source.old_snapshot} m "
            f"LEFT SEMI JOIN {p}keys c ON {on})",
            f"{p}new AS (SELECT {msel}, 1 AS __fr_sign FROM {m} VERSION AS OF {source.new_snapshot} m "
            f"LEFT SEMI JOIN {p}keys c ON {on})",
            f"{name} AS (SELECT * FROM {p}old UNION ALL SELECT * FROM {p}new)",
        ]
    if not log.key_columns:
        return [
            f"{name} AS (SELECT {sel}, IF(old_new__ = 'N', 1, -1) AS __fr_sign "
            f"FROM {log.log_table.sql} WHERE {where})"
        ]
    part = ", ".join(_q(k) for k in log.key_columns)
    return [
        f"{p}rng AS (SELECT {sel}, old_new__, sequence__ FROM {log.log_table.sql} WHERE {where})",
        # Net change per key: its first old image and its last new image. One window
        # (one sort) and one pass; a UNION ALL of two passes would read the log twice.
        f"{p}ranked AS (SELECT *, "
        f"row_number() OVER (PARTITION BY {part} ORDER BY sequence__) AS __fr_pos, "
        f"count(1) OVER (PARTITION BY {part} ORDER BY sequence__ "
        "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS __fr_n "
        f"FROM {p}rng)",
        f"{name} AS (SELECT {sel}, IF(old_new__ = 'O', -1, 1) AS __fr_sign FROM {p}ranked "
        "WHERE (__fr_pos = 1 AND old_new__ = 'O') OR (__fr_pos = __fr_n AND old_new__ = 'N'))",
    ]


def _aggregate_columns(plan: ViewPlan) -> list[str]:
    """What an aggregate's delta needs of each changed row: groups, arguments."""
    return [f"{g} AS __fr_g_{i}" for i, g in enumerate(plan.groups)] + [
        f"{arg} AS __fr_a_{j}" for j, arg in enumerate(plan.components)
    ]


def _aggregate_rows(plan: ViewPlan) -> str:
    """A single-table aggregate's changed rows (images passing the filter), signed."""
    where = f" WHERE {plan.filter}" if plan.filter else ""
    cols = ", ".join([*_aggregate_columns(plan), f"{plan.alias}.__fr_sign AS __fr_sign"])
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
                _pin(table, (pins if j < i else old_pins).get(plan.inputs[j].master))
        _read_from(tree, inp.alias, f"SELECT * FROM {images[inp.master]}")
        for arg in ("group", "distinct", "having", "order"):
            tree.set(arg, None)
        columns = [*_aggregate_columns(plan), f"{inp.alias}.__fr_sign AS __fr_sign"]
        tree = tree.select(*columns, append=False, dialect=DIALECT, copy=False)
        parts.append(tree.sql(dialect=DIALECT))
    return ctes, " UNION ALL ".join(parts)


# -- complete refresh ---------------------------------------------------------------------


def _pin(table: exp.Table, snapshot: int | None) -> None:
    if snapshot is not None:
        table.set(
            "version",
            exp.Version(this="VERSION", kind="AS OF", expression=exp.Literal.number(snapshot)),
        )


def _read_from(tree: exp.Select, alias: str, select: str) -> None:
    """Read the query's table ``alias`` from ``select`` (changed rows) instead."""
    table = next(t for t in tree.find_all(exp.Table) if t.alias_or_name.lower() == alias.lower())
    table.replace(
        exp.Subquery(
            this=sqlglot.parse_one(select, read=DIALECT),
            alias=exp.TableAlias(this=exp.to_identifier(alias)),
        )
    )


def pin_tables(tree: Any, pins: Mapping[TableName, int | None]) -> Any:
    """Read every pinned master at its snapshot (``VERSION AS OF``)."""
    for table in tree.find_all(exp.Table):
        if table.db:
            _pin(table, pins.get(TableName(table.db.lower(), table.name.lower())))
    return tree


def complete_select(plan: ViewPlan, pins: Mapping[TableName, int | None]) -> str:
    """The SELECT that builds the whole view, hidden columns included, on pinned masters."""
    if not plan.supported:
        try:
            tree = sqlglot.parse_one(plan.sql, read=DIALECT)
        except sqlglot.errors.SqlglotError:
            return plan.sql
        return pin_tables(tree, pins).sql(dialect=DIALECT)
    tree = pin_tables(sqlglot.parse_one(plan.qualified, read=DIALECT), pins)
    assert isinstance(tree, exp.Select)
    if plan.shape == "projection" and not plan.keyed:
        names = ", ".join(_q(o.name) for o in plan.outputs)
        return (
            f"SELECT *, count(1) OVER (PARTITION BY {names}) AS __fr_multiplicity "
            f"FROM ({tree.sql(dialect=DIALECT)}) __fr_q"
        )
    if plan.shape == "aggregate" and tree.args.get("distinct") is not None:
        tree.set("distinct", None)
        tree = tree.group_by(*[sqlglot.parse_one(g, read=DIALECT) for g in plan.groups], copy=False)
    extra = [f"{sql} AS {_q(name)}" for name, sql in plan.hidden]
    if extra:
        tree = tree.select(*extra, dialect=DIALECT, copy=False)
    return tree.sql(dialect=DIALECT)


# -- deltas --------------------------------------------------------------------------------


def _null(column: str, types: Mapping[str, str]) -> str:
    return f"CAST(NULL AS {types[column]})"


def _insert(plan: ViewPlan, values: Mapping[str, str]) -> str:
    cols = list(plan.view_columns)
    return (
        f"INSERT ({', '.join(_q(c) for c in cols)}) VALUES ({', '.join(values[c] for c in cols)})"
    )


def _projection_keyed(
    plan: ViewPlan,
    view: TableName,
    types: Mapping[str, str],
    ctes: Sequence[str],
    overwrite: bool = False,
) -> str:
    alias = plan.alias
    key_exprs = {
        vc: f"{alias}.{_q(k)}"
        for k, vc in zip(plan.key_columns, plan.key_view_columns, strict=True)
    }
    outputs = {o.name: o.sql for o in plan.outputs}
    outputs.update({name: sql for name, sql in plan.hidden})
    cols = list(plan.view_columns)
    deletes = [key_exprs[c] if c in key_exprs else _null(c, types) for c in cols]
    inserts = [f"CAST({outputs[c]} AS {types[c]})" for c in cols]
    where = f" AND ({plan.filter})" if plan.filter else ""
    # One pass over the images (a second would read the log again): a key's old image
    # (at most one) deletes the key's row (the view can hold one only if the key had an
    # old image); its new image, when it passes the filter, inserts the row again.
    rows = ", ".join(
        f"IF({alias}.__fr_sign = -1, {d}, {i}) AS {_q(c)}"
        for c, d, i in zip(cols, deletes, inserts, strict=True)
    )
    changes = (
        f"SELECT {rows}, IF({alias}.__fr_sign = -1, 'D', 'I') AS __fr_op FROM imgs {alias} "
        f"WHERE {alias}.__fr_sign = -1 OR (TRUE{where})"
    )
    source = f"WITH {', '.join(ctes)} {changes}"
    on = " AND ".join(f"t.{_q(c)} <=> s.{_q(c)}" for c in plan.key_view_columns)
    if overwrite:
        # What the MERGE below leaves, written whole: the view's rows but those a 'D' row
        # matches, and every 'I' row (an 'I' row never matches: the MERGE's ON needs 'D').
        plain = ", ".join(_q(c) for c in cols)
        kept = ", ".join(f"t.{_q(c)}" for c in cols)
        return (
            f"INSERT OVERWRITE {view.sql} SELECT {plain} FROM ("
            f"WITH {', '.join(ctes)}, __fr_s AS ({changes}) "
            f"SELECT {kept} FROM {view.sql} t "
            f"LEFT ANTI JOIN (SELECT * FROM __fr_s WHERE __fr_op = 'D') s ON {on} "
            f"UNION ALL SELECT {plain} FROM __fr_s WHERE __fr_op = 'I')"
        )
    return (
        f"MERGE INTO {view.sql} t USING ({source}) s ON {on} AND s.__fr_op = 'D' "
        "WHEN MATCHED THEN DELETE "
        f"WHEN NOT MATCHED AND s.__fr_op = 'I' THEN {_insert(plan, {c: f's.{_q(c)}' for c in cols})}"
    )


def _projection_counted(
    plan: ViewPlan, view: TableName, types: Mapping[str, str], ctes: Sequence[str]
) -> str:
    alias = plan.alias
    names = [o.name for o in plan.outputs]
    where = f" WHERE {plan.filter}" if plan.filter else ""
    outs = ", ".join(f"CAST({o.sql} AS {types[o.name]}) AS {_q(o.name)}" for o in plan.outputs)
    groups = ", ".join(o.sql for o in plan.outputs)
    eq = " AND ".join(f"c.{_q(n)} <=> d.{_q(n)}" for n in names)
    plain = ", ".join(_q(n) for n in names)
    message = string(
        f"dbt-fastrefresh: {view} holds fewer rows than its log deletes; refresh it completely"
    )
    source = (
        f"WITH {', '.join(ctes)}, "
        f"__fr_d AS (SELECT {outs}, sum({alias}.__fr_sign) AS __fr_delta FROM imgs {alias}{where} GROUP BY {groups}), "
        "__fr_dn AS (SELECT * FROM __fr_d WHERE __fr_delta <> 0), "
        f"__fr_cur AS (SELECT DISTINCT {', '.join('c.' + _q(n) for n in names)}, c.__fr_multiplicity "
        f"FROM {view.sql} c LEFT SEMI JOIN __fr_dn d ON {eq}), "
        f"__fr_j AS (SELECT {', '.join('d.' + _q(n) for n in names)}, "
        "coalesce(c.__fr_multiplicity, 0) + d.__fr_delta AS __fr_new "
        f"FROM __fr_dn d LEFT JOIN __fr_cur c ON {eq} "
        f"WHERE IF(coalesce(c.__fr_multiplicity, 0) + d.__fr_delta < 0, CAST(raise_error({message}) AS BOOLEAN), TRUE)) "
        f"SELECT {plain}, CAST(0 AS BIGINT) AS __fr_multiplicity, 'D' AS __fr_op FROM __fr_j "
        f"UNION ALL SELECT {plain}, CAST(__fr_new AS BIGINT), 'I' FROM __fr_j "
        "LATERAL VIEW explode(sequence(1, CAST(greatest(__fr_new, 1) AS INT))) __fr_e AS __fr_i "
        "WHERE __fr_new > 0"
    )
    on = " AND ".join(f"t.{_q(n)} <=> s.{_q(n)}" for n in names)
    return (
        f"MERGE INTO {view.sql} t USING ({source}) s ON {on} AND s.__fr_op = 'D' "
        "WHEN MATCHED THEN DELETE "
        f"WHEN NOT MATCHED AND s.__fr_op = 'I' THEN "
        f"{_insert(plan, {c: f's.{_q(c)}' for c in plan.view_columns})}"
    )


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


def _aggregate_signed(
    plan: ViewPlan,
    view: TableName,
    types: Mapping[str, str],
    ctes: Sequence[str],
    avg_types: Mapping[str, str],
    rows: str,
    overwrite: bool = False,
) -> str:
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
    group_t = [f"t.{_q(c)}" for c in plan.group_columns]
    group_s = [f"s.__fr_g_{i}" for i in range(len(plan.groups))]
    sets = [f"{_q(n)} = CAST({v} AS {types[n]})" for n, v in old_hidden.items()]
    for o in plan.outputs:
        if o.group is None:
            value = _replace(o.sql, plan, old_values, group_t)
            sets.append(f"{_q(o.name)} = CAST({value} AS {types[o.name]})")
    inserts: dict[str, str] = {}
    for i, column in enumerate(plan.group_columns):
        inserts[column] = f"CAST(s.__fr_g_{i} AS {types[column]})"
    for name, value in new_hidden.items():
        inserts[name] = f"CAST({value} AS {types[name]})"
    for o in plan.outputs:
        if o.group is None:
            inserts[o.name] = (
                f"CAST({_replace(o.sql, plan, new_values, group_s)} AS {types[o.name]})"
            )
    cols = list(plan.view_columns)
    update = {n: f"CAST({v} AS {types[n]})" for n, v in old_hidden.items()}
    for o in plan.outputs:
        if o.group is None:
            value = _replace(o.sql, plan, old_values, group_t)
            update[o.name] = f"CAST({value} AS {types[o.name]})"
    if plan.global_aggregate:
        if overwrite:
            return _overwrite(view, cols, source, "TRUE", update, {}, "FALSE", "FALSE")
        return (
            f"MERGE INTO {view.sql} t USING ({source}) s ON 1 = 1 "
            f"WHEN MATCHED THEN UPDATE SET {', '.join(sets)}"
        )
    on = " AND ".join(f"t.{_q(c)} <=> s.__fr_g_{i}" for i, c in enumerate(plan.group_columns))
    if overwrite:
        return _overwrite(
            view, cols, source, on, update, inserts,
            "t.__fr_count + s.__fr_d_count = 0", "s.__fr_d_count > 0",
        )  # fmt: skip
    return (
        f"MERGE INTO {view.sql} t USING ({source}) s ON {on} "
        "WHEN MATCHED AND t.__fr_count + s.__fr_d_count = 0 THEN DELETE "
        f"WHEN MATCHED THEN UPDATE SET {', '.join(sets)} "
        f"WHEN NOT MATCHED AND s.__fr_d_count > 0 THEN {_insert(plan, inserts)}"
    )


def _overwrite(
    view: TableName,
    cols: Sequence[str],
    source: str,
    on: str,
    update: Mapping[str, str],
    insert: Mapping[str, str],
    delete_when: str,
    insert_when: str,
) -> str:
    """The MERGE ``source`` into ``view`` as one ``INSERT OVERWRITE`` of the whole view:
    the view's rows joined with the delta (a full outer join), each kept, updated,
    deleted or inserted as the MERGE would. For a view of a file or two, which a MERGE
    rewrites whole anyway, it saves the MERGE's extra pass to find the files to rewrite."""
    values = []
    for c in cols:
        kept = f"t.{_q(c)}"
        changed = update.get(c, kept)
        new = insert.get(c, kept)  # (no insert: a global aggregate, whose row always exists)
        values.append(
            f"CASE WHEN s.__fr_in IS NULL THEN {kept} WHEN t.__fr_in IS NULL THEN {new} "
            f"ELSE {changed} END AS {_q(c)}"
        )
    join = "FULL OUTER JOIN" if insert else "LEFT JOIN"
    return (
        f"INSERT OVERWRITE {view.sql} SELECT {', '.join(values)} FROM "
        f"(SELECT *, TRUE AS __fr_in FROM {view.sql}) t {join} "
        f"(SELECT *, TRUE AS __fr_in FROM ({source})) s ON {on} "
        f"WHERE NOT (t.__fr_in IS NOT NULL AND s.__fr_in IS NOT NULL AND ({delete_when})) "
        f"AND NOT (t.__fr_in IS NULL AND NOT ({insert_when}))"
    )


def _aggregate_recompute(
    plan: ViewPlan,
    view: TableName,
    types: Mapping[str, str],
    ctes: Sequence[str],
    pins: Mapping[TableName, int | None],
    rows: str,
    overwrite: bool = False,
) -> str:
    """Recompute the groups the changes touched, from the pinned masters."""
    cols = list(plan.view_columns)
    full = complete_select(plan, pins)
    taken = {c: f"s.{_q(c)}" for c in cols}
    if plan.global_aggregate:
        source = (
            f"WITH {', '.join(ctes)}, __fr_rows AS ({rows}) SELECT * FROM ({full}) __fr_re "
            "WHERE EXISTS (SELECT 1 FROM __fr_rows)"
        )
        if overwrite:
            return _overwrite(view, cols, source, "TRUE", taken, {}, "FALSE", "FALSE")
        sets = ", ".join(f"{_q(c)} = s.{_q(c)}" for c in cols)
        return f"MERGE INTO {view.sql} t USING ({source}) s ON 1 = 1 WHEN MATCHED THEN UPDATE SET {sets}"
    affected = ", ".join(f"__fr_g_{i}" for i in range(len(plan.groups)))
    tree = sqlglot.parse_one(full, read=DIALECT)
    assert isinstance(tree, exp.Select)
    semi = " AND ".join(f"{g} <=> __fr_ag.__fr_g_{i}" for i, g in enumerate(plan.groups))
    tree = tree.join("__fr_ag", on=semi, join_type="left semi", dialect=DIALECT, copy=False)
    back = " AND ".join(f"re.{_q(c)} <=> ag.__fr_g_{i}" for i, c in enumerate(plan.group_columns))
    picks = ", ".join(f"re.{_q(c)}" for c in cols)
    source = (
        f"WITH {', '.join(ctes)}, __fr_rows AS ({rows}), "
        f"__fr_ag AS (SELECT DISTINCT {affected} FROM __fr_rows), "
        f"__fr_re AS ({tree.sql(dialect=DIALECT)}) "
        f"SELECT {picks}, {', '.join(f'ag.__fr_g_{i}' for i in range(len(plan.groups)))}, "
        "re.__fr_count IS NULL AS __fr_gone "
        f"FROM __fr_ag ag LEFT JOIN __fr_re re ON {back}"
    )
    on = " AND ".join(f"t.{_q(c)} <=> s.__fr_g_{i}" for i, c in enumerate(plan.group_columns))
    if overwrite:
        return _overwrite(view, cols, source, on, taken, taken, "s.__fr_gone", "NOT s.__fr_gone")
    sets = ", ".join(f"{_q(c)} = s.{_q(c)}" for c in cols)
    return (
        f"MERGE INTO {view.sql} t USING ({source}) s ON {on} "
        "WHEN MATCHED AND s.__fr_gone THEN DELETE "
        f"WHEN MATCHED THEN UPDATE SET {sets} "
        f"WHEN NOT MATCHED AND NOT s.__fr_gone THEN {_insert(plan, {c: f's.{_q(c)}' for c in cols})}"
    )


def join_merge(
    plan: ViewPlan,
    view: TableName,
    types: Mapping[str, str],
    sources: Mapping[TableName, LogSource],
    pins: Mapping[TableName, int | None],
) -> str:
    """Apply the changes of every master of a join view in one MERGE (Oracle's DEL/INS).

    A view row is a function of one row per joined table, identified by their keys. So the
    rows that can have changed are exactly those holding a changed key (a key in the log
    range, old or new image) of some table: delete those rows, and insert the query's rows
    on the pinned snapshots that hold a changed key. Input i's part takes the rows of its
    changed keys (the log's last new images when the log holds what the input reads, else
    the pinned master's rows) and excludes the changed keys of inputs before it, so no row
    is inserted twice. When one input changed (one master's changes, the common case), the
    changed keys themselves are the rows to delete; with several, the view is read to find
    each such row once (a MERGE may match a target row with one source row only).
    """
    ctes = []
    key_cte: dict[TableName, str] = {}
    images: dict[TableName, str] = {}
    for m, master in enumerate(plan.masters):
        log = sources.get(master)
        if log is None:
            continue
        # The key is read too: a row moved to another key must leave its old place.
        read = sorted(set(plan.columns_read_of(master)) | set(log.key_columns))
        keys = ", ".join(_q(k) for k in log.key_columns)
        key_cte[master] = f"__fr_ck{m}"
        ctes.append(
            f"__fr_ck{m} AS (SELECT DISTINCT {keys}, TRUE AS __fr_hit FROM {log.log_table.sql} "
            f"WHERE ({log.range_predicate}) AND {_cv_skip(read, log)})"
        )
        if set(read) <= set(log.logged):
            # The log holds what the view reads of this table: its changed rows as they are
            # now are the last new images in the range, so the master is not read for them.
            images[master] = f"__fr_img{m}"
            ctes += image_ctes(plan, log, read, images[master])
    changed = [(i, inp) for i, inp in enumerate(plan.inputs) if inp.master in key_cte]
    base = pin_tables(sqlglot.parse_one(plan.qualified, read=DIALECT), pins)
    assert isinstance(base, exp.Select)
    extra = [f"{sql} AS {_q(name)}" for name, sql in plan.hidden]
    if extra:
        base = base.select(*extra, dialect=DIALECT, copy=False)
    cols = list(plan.view_columns)
    casts = ", ".join(f"CAST(__fr_p.{_q(c)} AS {types[c]}) AS {_q(c)}" for c in cols)
    parts = []

    def on(alias: str, cte_alias: str, keys: Sequence[str]) -> str:
        return " AND ".join(f"{alias}.{_q(k)} = {cte_alias}.{_q(k)}" for k in keys)

    for n, (i, inp) in enumerate(changed):
        part = base.copy()
        if inp.master in images:
            _read_from(part, inp.alias, f"SELECT * FROM {images[inp.master]} WHERE __fr_sign = 1")
        else:
            part = part.join(
                f"{key_cte[inp.master]} AS __fr_in{i}",
                on=on(inp.alias, f"__fr_in{i}", inp.key_columns),
                join_type="left semi", dialect=DIALECT, copy=False,
            )  # fmt: skip
        for j, before in changed[:n]:
            part = part.join(
                f"{key_cte[before.master]} AS __fr_out{j}",
                on=on(before.alias, f"__fr_out{j}", before.key_columns),
                join_type="left anti", dialect=DIALECT, copy=False,
            )  # fmt: skip
        parts.append(f"SELECT {casts}, 'I' AS __fr_op FROM ({part.sql(dialect=DIALECT)}) __fr_p")
    if len(changed) == 1:
        # One input changed: its changed keys are the rows to delete, matched on its key
        # columns in the view, so the view is read only by the MERGE itself.
        _, inp = changed[0]
        pairs = dict(zip(inp.key_view_columns, inp.key_columns, strict=True))
        olds = ", ".join(
            f"CAST({_q(pairs[c])} AS {types[c]}) AS {_q(c)}"
            if c in pairs
            else f"{_null(c, types)} AS {_q(c)}"
            for c in cols
        )
        ctes.append(f"__fr_old AS (SELECT {olds}, 'D' AS __fr_op FROM {key_cte[inp.master]})")
        match = " AND ".join(f"t.{_q(c)} = s.{_q(c)}" for c in pairs)
    else:
        # Several inputs changed: a row holding changed keys of two of them must be deleted
        # once, so the rows to delete are read from the view, each by its whole key.
        hits = []
        joins = []
        for i, inp in changed:
            hit_on = " AND ".join(
                f"v.{_q(vc)} = __fr_h{i}.{_q(k)}"
                for k, vc in zip(inp.key_columns, inp.key_view_columns, strict=True)
            )
            joins.append(f"LEFT JOIN {key_cte[inp.master]} __fr_h{i} ON {hit_on}")
            hits.append(f"__fr_h{i}.__fr_hit")
        keyed = set(plan.key_view_columns)
        olds = ", ".join(
            f"v.{_q(c)}" if c in keyed else f"{_null(c, types)} AS {_q(c)}" for c in cols
        )
        ctes.append(
            f"__fr_old AS (SELECT {olds}, 'D' AS __fr_op FROM {view.sql} v {' '.join(joins)} "
            f"WHERE {' OR '.join(hits)})"
        )
        match = " AND ".join(
            f"t.{_q(c)} <=> s.{_q(c)}" for c in dict.fromkeys(plan.key_view_columns)
        )
    source = f"WITH {', '.join(ctes)} SELECT * FROM __fr_old UNION ALL " + " UNION ALL ".join(parts)
    return (
        f"MERGE INTO {view.sql} t USING ({source}) s ON {match} AND s.__fr_op = 'D' "
        "WHEN MATCHED THEN DELETE "
        f"WHEN NOT MATCHED AND s.__fr_op = 'I' THEN {_insert(plan, {c: f's.{_q(c)}' for c in cols})}"
    )


def delta_merge(
    plan: ViewPlan,
    view: TableName,
    types: Mapping[str, str],
    source: Source,
    pins: Mapping[TableName, int | None],
    avg_types: Mapping[str, str],
    overwrite: bool = False,
) -> str:
    """The MERGE that applies the changes of ``source`` to the view."""
    ctes = image_ctes(plan, source)
    if plan.shape == "projection":
        if plan.keyed:
            return _projection_keyed(plan, view, types, ctes, overwrite)
        return _projection_counted(plan, view, types, ctes)
    rows = _aggregate_rows(plan)
    if plan.algebraic:
        return _aggregate_signed(plan, view, types, ctes, avg_types, rows, overwrite)
    return _aggregate_recompute(plan, view, types, ctes, pins, rows, overwrite)


def join_aggregate_merge(
    plan: ViewPlan,
    view: TableName,
    types: Mapping[str, str],
    sources: Mapping[TableName, Source],
    pins: Mapping[TableName, int | None],
    old_pins: Mapping[TableName, int | None],
    avg_types: Mapping[str, str],
    overwrite: bool = False,
) -> str:
    """The MERGE that applies every master's changes to an aggregate over a join."""
    ctes, rows = join_delta_rows(plan, sources, pins, old_pins)
    if plan.algebraic:
        return _aggregate_signed(plan, view, types, ctes, avg_types, rows, overwrite)
    return _aggregate_recompute(plan, view, types, ctes, pins, rows, overwrite)


def delta_statement(
    plan: ViewPlan,
    view: TableName,
    types: Mapping[str, str],
    sources: Mapping[TableName, Source],
    pins: Mapping[TableName, int | None],
    old_pins: Mapping[TableName, int | None],
    avg_types: Mapping[str, str],
    overwrite: bool = False,
) -> str:
    """The one MERGE that applies ``sources`` (the masters with changes) to the view: the
    single place that maps a view's shape to its delta, for refresh and explain alike.
    ``overwrite``: as one INSERT OVERWRITE of the whole view where the shape allows (a
    view of a file or two)."""
    if plan.shape == "join":
        logs = {m: s for m, s in sources.items() if isinstance(s, LogSource)}
        return join_merge(plan, view, types, logs, pins)
    if plan.inputs:  # an aggregate over a join: every master's changes in one MERGE
        return join_aggregate_merge(
            plan, view, types, sources, pins, old_pins, avg_types, overwrite
        )
    (source,) = sources.values()
    return delta_merge(plan, view, types, source, pins, avg_types, overwrite)


def notes(plan: ViewPlan) -> list[str]:
    """How the view's delta is computed, for ``explain_mview``."""
    if plan.shape == "join":
        return [
            "a join reads the changed keys from its logs and joins their rows from the "
            "masters at the pinned snapshots"
        ]
    if plan.inputs:
        return [
            "each table's changes (from its log, or from the master by time travel when the "
            "log lacks a column) are joined with the tables before it as they are now and "
            "the tables after it as they were"
        ]
    return []
