"""Outer joins: recompute the rows of the preserved side's keys the changes reach
(``ivm/outer.py``).

For each preserved input, the keys reached are its own changed keys and the keys of its
rows (as pinned) whose join values equal those of a changed row of the other input, old
or new image. A LEFT (RIGHT) join recomputes the rows of those keys from the pinned tables,
the preserved table restricted to them, and merges them by that key: the old rows of the
key deleted, the new ones inserted. A FULL join's rows belong to either side's key: the
view's rows holding a reached key on either side are deleted (found in the view) and the
join's rows holding one are inserted.

An aggregate over an outer join groups by the columns of one side, the grouping side
(``joins.grouping_side``), and its groups are recomputed: those of the grouping side's
changed rows (old and new images), those of its rows (as pinned) whose join values equal
a changed row's of the other side, and, when its columns can be NULL-extended (the other
side is preserved), the group of a NULL-extended row. The view's rows of those groups are
deleted and the query's rows for them, computed from the pinned tables, inserted.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

from dbt.adapters.fastrefresh.ivm.analysis import DIALECT, JoinInput, Shape, ViewPlan
from dbt.adapters.fastrefresh.ivm.joins import grouping_side
from dbt.adapters.fastrefresh.ivm.sqlgen.complete import complete_tree, pin, read_from
from dbt.adapters.fastrefresh.ivm.sqlgen.images import MasterSource, Source, image_ctes
from dbt.adapters.fastrefresh.ivm.sqlgen.render import Target, delete_insert, null, operand, over, q
from dbt.adapters.fastrefresh.sqltext import TableName


def _reached(
    plan: ViewPlan,
    owner: int,
    sources: Mapping[TableName, Source],
    pins: Mapping[TableName, int | None],
) -> tuple[list[str], str | None]:
    """(CTEs, SELECT of the keys) of the ``owner`` input's rows the changes reach (None:
    none can be)."""
    assert plan.outer is not None
    mine, other = plan.inputs[owner], plan.inputs[1 - owner]
    keys = ", ".join(q(k) for k in mine.key_columns)
    ctes: list[str] = []
    parts: list[str] = []
    if mine.master in sources:
        name = f"__fr_own{owner}"
        ctes += image_ctes(plan, sources[mine.master], mine.columns_read, name)
        parts.append(f"SELECT {keys} FROM {name}")
    if other.master in sources:
        more, values = _join_values(plan, owner, sources[other.master], f"__fr_oth{owner}")
        ctes += more
        held = ", ".join(f"__fr_p.{q(k)}" for k in mine.key_columns)
        parts.append(_matching(plan, owner, values, held, pins))
    if not parts:
        return [], None
    ctes.append(f"__fr_reached{owner} AS ({' UNION '.join(parts)})")
    return ctes, f"__fr_reached{owner}"


def _holding(select: str, alias: str, held: JoinInput, reached: str) -> str:
    """``select`` (of ``alias``) restricted to the rows holding a reached key of ``held``:
    a semi join (a disjunction of EXISTS subqueries here lost rows whose first key is
    NULL, as a FULL join's NULL-extended rows are, in Spark 3.5's MERGE)."""
    on = " AND ".join(
        f"{alias}.{q(view)} <=> r.{q(key)}"
        for key, view in zip(held.key_columns, held.key_view_columns, strict=True)
    )
    return f"{select} LEFT SEMI JOIN {reached} r ON {on}"


def outer_recompute(
    plan: ViewPlan,
    target: Target,
    sources: Mapping[TableName, Source],
    *,
    pins: Mapping[TableName, int | None],
) -> str:
    """The MERGE that recomputes the rows of an outer join the changes reach."""
    assert plan.outer is not None
    ctes: list[str] = []
    reached: dict[int, str] = {}
    for owner in plan.outer.preserved:
        more, name = _reached(plan, owner, sources, pins)
        ctes += more
        if name is not None:
            reached[owner] = name
    if len(plan.outer.preserved) == 1:
        (owner,) = plan.outer.preserved
        return _by_one_key(plan, target, ctes, owner, reached[owner], pins=pins)
    return _by_either_key(plan, target, ctes, reached, pins=pins)


def _restricted_tree(
    plan: ViewPlan, owner: int, reached: str, pins: Mapping[TableName, int | None]
) -> exp.Select:
    """The query with the ``owner`` input's table restricted to the reached keys (a semi
    join on its scan) and, for a FULL join, the join made that side's LEFT/RIGHT join:
    the rows holding one of those keys."""
    mine = plan.inputs[owner]
    table = exp.table_(mine.master.table, db=mine.master.schema, quoted=True, alias="__fr_m")
    pin(table, pins.get(mine.master))
    on = exp.and_(
        *(
            exp.NullSafeEQ(
                this=exp.column(k, table="__fr_m"), expression=exp.column(k, table="__fr_r")
            )
            for k in mine.key_columns
        )
    )
    rows = (
        exp.select(exp.Star())
        .from_(table)
        .join(exp.table_(reached, alias="__fr_r"), on=on, join_type="left semi")
    )
    tree = complete_tree(plan, pins)
    read_from(tree, mine.alias, rows)
    join = tree.args["joins"][0]
    join.set("side", "LEFT" if owner == 0 else "RIGHT")
    join.set("kind", None)
    return tree


def _by_one_key(
    plan: ViewPlan,
    target: Target,
    ctes: list[str],
    owner: int,
    reached: str,
    *,
    pins: Mapping[TableName, int | None],
) -> str:
    """LEFT/RIGHT: the preserved table restricted to the reached keys, merged by its key."""
    mine = plan.inputs[owner]
    tree = _restricted_tree(plan, owner, reached, pins)
    cols = list(plan.view_columns)
    holders = dict(zip(mine.key_view_columns, mine.key_columns, strict=True))
    gone = ", ".join(
        f"r.{q(holders[c])} AS {q(c)}" if c in holders else f"{null(c, target.types)} AS {q(c)}"
        for c in cols
    )
    source = (
        f"WITH {', '.join(ctes)}, __fr_recomputed AS ({tree.sql(dialect=DIALECT)}) "
        f"SELECT {', '.join(q(c) for c in cols)}, 'I' AS __fr_op FROM __fr_recomputed "
        f"UNION ALL SELECT {gone}, 'D' AS __fr_op FROM {reached} r"
    )
    return _merge(plan, target, source, list(dict.fromkeys(mine.key_view_columns)))


def _by_either_key(
    plan: ViewPlan,
    target: Target,
    ctes: list[str],
    reached: Mapping[int, str],
    *,
    pins: Mapping[TableName, int | None],
) -> str:
    """FULL: the view's rows holding a reached key of either side are deleted (found in
    the view), the join's rows holding one inserted; matched by both sides' keys."""
    cols = list(plan.view_columns)
    keyed = list(dict.fromkeys(c for i in plan.inputs for c in i.key_view_columns))
    if not all(i.master in target.required_keys for i in plan.inputs):
        # A key that can be NULL: the rows a NULL key reaches (``_null_closed``). Keys
        # that cannot (Iceberg identifier fields) reach none, and the closure, which
        # Spark plans again at each of its references, is left out.
        more, reached = _null_closed(plan, target, reached)
        ctes = ctes + more
    # A row of a FULL join is unique by both sides' keys, so UNION (distinct) of the rows
    # each side's reached keys hold loses none. Those rows are computed with the side's
    # table restricted to its reached keys (its LEFT/RIGHT join with the other): a filter
    # on the FULL join's output lost NULL-extended rows in Spark 3.5's writes.
    new = " UNION ".join(
        _restricted_tree(plan, i, r, pins).sql(dialect=DIALECT) for i, r in reached.items()
    )
    kept = ", ".join(f"t.{q(c)}" for c in keyed)
    old = " UNION ".join(
        _holding(f"SELECT {kept} FROM {target.view.sql} t", "t", plan.inputs[i], r)
        for i, r in reached.items()
    )
    gone = ", ".join(f"d.{q(c)}" if c in keyed else f"{null(c, target.types)}" for c in cols)
    source = (
        f"WITH {', '.join(ctes)} SELECT {', '.join('n.' + q(c) for c in cols)}, 'I' AS __fr_op "
        f"FROM ({new}) n UNION ALL SELECT {gone}, 'D' AS __fr_op FROM ({old}) d"
    )
    return _merge(plan, target, source, keyed)


def _null_closed(
    plan: ViewPlan, target: Target, reached: Mapping[int, str]
) -> tuple[list[str], dict[int, str]]:
    """(CTEs, the reached keys of each side) with the rows a NULL key reaches.

    A FULL join's row NULL-extended on one side holds NULL in that side's key, as the rows
    of a row of that side whose key is NULL do (a declared key of a nullable column). So
    when a side's reached keys hold NULL, the view's rows it finds are those rows and the
    other side's NULL-extended ones: those are recomputed too, by the other side's key
    (added to its reached keys). Where such a row is NULL on both sides' keys, the other
    side's reached keys hold NULL in turn: a second round adds this side's keys of the
    rows that NULL finds, and a third would add nothing (the NULL it could bring to this
    side's keys came from this side's reached keys already). Without it, a change of a
    row sharing its join values with a NULL-keyed row deleted the other table's unmatched
    rows and inserted back only those its own key reached."""
    sides = (0, 1)
    both = " OR ".join(
        "(" + " AND ".join(f"t.{q(c)} IS NULL" for c in plan.inputs[i].key_view_columns) + ")"
        for i in sides
    )
    kept = ", ".join(
        f"t.{q(c)}" for c in dict.fromkeys(c for i in plan.inputs for c in i.key_view_columns)
    )
    # The view's rows NULL on either side's key, read once for the rounds below.
    ctes = [f"__fr_nullrows AS (SELECT {kept} FROM {target.view.sql} t WHERE {both})"]
    current = dict(reached)
    for round_no in (1, 2):
        closed: dict[int, str] = {}
        for i in sides:
            mine, other = plan.inputs[i], plan.inputs[1 - i]
            keys = ", ".join(q(k) for k in mine.key_columns)
            parts = [f"SELECT {keys} FROM {current[i]}"] if i in current else []
            if 1 - i in current:
                held = ", ".join(
                    f"t.{q(v)} AS {q(k)}"
                    for k, v in zip(mine.key_columns, mine.key_view_columns, strict=True)
                )
                nulls = " AND ".join(f"t.{q(c)} IS NULL" for c in other.key_view_columns)
                found = _holding(f"SELECT {held} FROM __fr_nullrows t", "t", other, current[1 - i])
                parts.append(f"{found} WHERE {nulls}")
            if parts:
                name = f"__fr_closed{round_no}_{i}"
                ctes.append(f"{name} AS ({' UNION '.join(parts)})")
                closed[i] = name
        current = closed
    return ctes, current


def null_key_probe(
    plan: ViewPlan,
    sources: Mapping[TableName, Source],
    pins: Mapping[TableName, int | None],
    required: frozenset[TableName],
) -> str | None:
    """A query whose one value is 0 when no key of a FULL join's inputs is NULL where the
    delta reads it; the closure of the NULL keys (``_null_closed``) then adds nothing,
    and the delta may leave it out (``Target.required_keys``). None: nothing to ask (not
    a FULL join, or every key is required already).

    Where a NULL key could come from, for each input whose key is not required: the
    master as pinned and, where its images come from it, at the view's earlier snapshot
    (its data files' column metrics, read from the ``files`` metadata table: a file
    without them counts as holding a NULL, and one with rows deleted since is counted
    as written), and the rows of its log range. The closure, which Spark plans and runs
    again at each of its references, made a FULL join's refresh two to three times as
    long (docs/bookkeeping.md)."""
    if plan.shape is not Shape.OUTER_JOIN or plan.outer is None or len(plan.outer.preserved) < 2:
        return None
    parts: list[str] = []
    for put in plan.inputs:
        if put.master in required:
            continue
        log = sources.get(put.master)
        snapshots = [pins.get(put.master)]
        if isinstance(log, MasterSource):
            snapshots.append(log.old_snapshot)
            log = log.log
        files = put.master.metadata("files")
        held = " OR ".join(
            f"coalesce(readable_metrics.{q(k)}.null_value_count, 1) > 0" for k in put.key_columns
        )
        for snapshot in snapshots:
            if snapshot is not None:
                parts.append(
                    f"(SELECT count_if({held}) FROM {files} VERSION AS OF {snapshot} "
                    "WHERE content = 0)"
                )
        if log is not None:
            nulls = " OR ".join(f"{q(k)} IS NULL" for k in put.key_columns)
            parts.append(
                f"(SELECT count(*) FROM (SELECT 1 FROM {log.relation} "
                f"WHERE ({log.range_predicate}) AND ({nulls}) LIMIT 1))"
            )
    if not parts:
        return None
    return "SELECT " + " + ".join(dict.fromkeys(parts))


def _merge(plan: ViewPlan, target: Target, source: str, match: list[str]) -> str:
    """Delete the view's rows a 'D' row matches on ``match``; insert the 'I' rows."""
    on = " AND ".join(f"t.{q(c)} <=> s.{q(c)}" for c in match) or "TRUE"
    return delete_insert(plan, target, source, on)


def outer_aggregate(
    plan: ViewPlan,
    target: Target,
    sources: Mapping[TableName, Source],
    *,
    pins: Mapping[TableName, int | None],
) -> str:
    """The MERGE that recomputes the groups of an aggregate over an outer join the
    changes reach (every group, for a global aggregate)."""
    assert plan.outer is not None
    side = grouping_side(plan)
    cols = list(plan.view_columns)
    tree = complete_tree(plan, pins)
    if side is None:
        reached, match = None, []
        ctes: list[str] = []
    else:
        ctes, reached = _reached_groups(plan, side, sources, pins)
        match = list(plan.group_columns)
    new = f"SELECT n.* FROM ({tree.sql(dialect=DIALECT)}) n"
    gone = [null(c, target.types) for c in cols]
    if reached is not None:
        on = " AND ".join(f"n.{q(c)} <=> r.__fr_v{k}" for k, c in enumerate(match))
        new += f" LEFT SEMI JOIN {reached} r ON {on}"
        for k, c in enumerate(match):
            gone[cols.index(c)] = f"__fr_v{k}"
        gone_rows = f"FROM {reached}"
    else:  # a global aggregate: its one row
        gone_rows = ""
    values = ", ".join(f"{v} AS {q(c)}" for v, c in zip(gone, cols, strict=True))
    source = (
        f"{'WITH ' + ', '.join(ctes) + ' ' if ctes else ''}"
        f"SELECT {', '.join(q(c) for c in cols)}, 'I' AS __fr_op FROM ({new}) "
        f"UNION ALL SELECT {values}, 'D' AS __fr_op {gone_rows}"
    )
    return _merge(plan, target, source, match)


def _reached_groups(
    plan: ViewPlan,
    side: int,
    sources: Mapping[TableName, Source],
    pins: Mapping[TableName, int | None],
) -> tuple[list[str], str]:
    """(CTEs, the last one's name) of the group values the changes reach, as
    ``__fr_v<k>`` columns (``outer_aggregate``)."""
    assert plan.outer is not None
    mine, other = plan.inputs[side], plan.inputs[1 - side]
    ctes: list[str] = []
    parts: list[str] = []

    def groups(alias: str) -> str:
        return ", ".join(
            f"{over(g, alias).sql(dialect=DIALECT)} AS __fr_v{k}"
            for k, g in enumerate(plan.group_nodes)
        )

    if mine.master in sources:
        ctes += image_ctes(plan, sources[mine.master], mine.columns_read, "__fr_gown", net=False)
        parts.append(f"SELECT {groups('__fr_gown')} FROM __fr_gown")
    if other.master in sources:
        more, values = _join_values(plan, side, sources[other.master], "__fr_goth")
        ctes += more
        parts.append(_matching(plan, side, values, groups("__fr_p"), pins))
    if 1 - side in plan.outer.preserved:  # the group of a NULL-extended row
        nulls = ", ".join(
            f"{_nulled(g).sql(dialect=DIALECT)} AS __fr_v{k}"
            for k, g in enumerate(plan.group_nodes)
        )
        parts.append(f"SELECT {nulls}")
    ctes.append(f"__fr_groups AS (SELECT DISTINCT * FROM ({' UNION ALL '.join(parts)}))")
    return ctes, "__fr_groups"


def _join_values(plan: ViewPlan, owner: int, source: Source, name: str) -> tuple[list[str], str]:
    """(CTEs, the last one's name) of the join values of the other side's changed rows,
    old and new images, as ``__fr_c<j>`` (the ``j``-th equality's)."""
    assert plan.outer is not None
    other = plan.inputs[1 - owner]
    ctes = image_ctes(plan, source, other.columns_read, name)
    listed = ", ".join(
        f"{over(p[1 - owner], name).sql(dialect=DIALECT)} AS __fr_c{j}"
        for j, p in enumerate(plan.outer.pairs)
    )
    ctes.append(f"{name}_v AS (SELECT DISTINCT {listed} FROM {name})")
    return ctes, f"{name}_v"


def _nulled(node: exp.Expression) -> exp.Expression:
    """``node`` with its columns NULL: its value on a NULL-extended row."""
    return node.copy().transform(lambda n: exp.Null() if isinstance(n, exp.Column) else n)


def _matching(
    plan: ViewPlan, owner: int, values: str, select: str, pins: Mapping[TableName, int | None]
) -> str:
    """``select`` over the ``owner`` input's rows (alias ``__fr_p``, as pinned) whose join
    values are among ``values``'s (``_join_values``)."""
    assert plan.outer is not None
    mine = plan.inputs[owner]
    table = exp.table_(mine.master.table, db=mine.master.schema, quoted=True, alias="__fr_p")
    pin(table, pins.get(mine.master))
    on = " AND ".join(
        f"{operand(over(p[owner], '__fr_p')).sql(dialect=DIALECT)} = v.__fr_c{j}"
        for j, p in enumerate(plan.outer.pairs)
    )
    return f"SELECT {select} FROM {table.sql(dialect=DIALECT)} LEFT SEMI JOIN {values} v ON {on}"
