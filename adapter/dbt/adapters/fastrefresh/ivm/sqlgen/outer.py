"""Outer joins: recompute the rows of the preserved side's keys the changes reach
(``ivm/outer.py``).

For each preserved input, the keys reached are its own changed keys and the keys of its
rows (as pinned) whose join values equal those of a changed row of the other input, old
or new image. A LEFT (RIGHT) join recomputes the rows of those keys from the pinned tables,
the preserved table restricted to them, and merges them by that key: the old rows of the
key deleted, the new ones inserted. A FULL join's rows belong to either side's key: the
view's rows holding a reached key on either side are deleted (found in the view) and the
join's rows holding one are inserted.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

from dbt.adapters.fastrefresh.ivm.analysis import DIALECT, JoinInput, ViewPlan
from dbt.adapters.fastrefresh.ivm.sqlgen.complete import complete_tree, pin, read_from
from dbt.adapters.fastrefresh.ivm.sqlgen.images import Source, image_ctes
from dbt.adapters.fastrefresh.ivm.sqlgen.render import Target, insert_clause, null, q
from dbt.adapters.fastrefresh.sqltext import TableName


def _over(node: exp.Expression, alias: str) -> exp.Expression:
    copy = node.copy()
    for column in copy.find_all(exp.Column):
        column.set("table", exp.to_identifier(alias))
    return copy


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
        name = f"__fr_oth{owner}"
        ctes += image_ctes(plan, sources[other.master], other.columns_read, name)
        pairs = [(p[owner], p[1 - owner]) for p in plan.outer.pairs]
        listed = ", ".join(
            f"{_over(theirs, name).sql(dialect=DIALECT)} AS __fr_c{j}"
            for j, (_, theirs) in enumerate(pairs)
        )
        ctes.append(f"{name}_v AS (SELECT DISTINCT {listed} FROM {name})")
        table = exp.table_(mine.master.table, db=mine.master.schema, quoted=True, alias="__fr_p")
        pin(table, pins.get(mine.master))
        on = " AND ".join(
            f"{_over(ours, '__fr_p').sql(dialect=DIALECT)} = v.__fr_c{j}"
            for j, (ours, _) in enumerate(pairs)
        )
        parts.append(
            f"SELECT {', '.join('__fr_p.' + q(k) for k in mine.key_columns)} "
            f"FROM {table.sql(dialect=DIALECT)} LEFT SEMI JOIN {name}_v v ON {on}"
        )
    if not parts:
        return [], None
    ctes.append(f"__fr_reached{owner} AS ({' UNION '.join(parts)})")
    return ctes, f"__fr_reached{owner}"


def _holds(alias: str, held: JoinInput, reached: str) -> str:
    """A row of ``alias`` holds a reached key of ``held``."""
    on = " AND ".join(
        f"{alias}.{q(view)} <=> r.{q(key)}"
        for key, view in zip(held.key_columns, held.key_view_columns, strict=True)
    )
    return f"EXISTS (SELECT 1 FROM {reached} r WHERE {on})"


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
    holds_n = " OR ".join(_holds("n", plan.inputs[i], r) for i, r in reached.items())
    holds_t = " OR ".join(_holds("t", plan.inputs[i], r) for i, r in reached.items())
    gone = ", ".join(
        f"t.{q(c)}" if c in keyed else f"{null(c, target.types)} AS {q(c)}" for c in cols
    )
    new = complete_tree(plan, pins).sql(dialect=DIALECT)
    source = (
        f"WITH {', '.join(ctes)} SELECT {', '.join('n.' + q(c) for c in cols)}, 'I' AS __fr_op "
        f"FROM ({new}) n WHERE {holds_n} "
        f"UNION ALL SELECT {gone}, 'D' AS __fr_op FROM {target.view.sql} t WHERE {holds_t}"
    )
    return _merge(plan, target, source, keyed)


def _merge(plan: ViewPlan, target: Target, source: str, match: list[str]) -> str:
    """Delete the view's rows a 'D' row matches on ``match``; insert the 'I' rows."""
    on = " AND ".join(f"t.{q(c)} <=> s.{q(c)}" for c in match)
    cols = list(plan.view_columns)
    return (
        f"MERGE INTO {target.view.sql} t USING ({source}) s ON {on} AND s.__fr_op = 'D' "
        "WHEN MATCHED THEN DELETE "
        f"WHEN NOT MATCHED AND s.__fr_op = 'I' THEN "
        f"{insert_clause(plan, {c: f's.{q(c)}' for c in cols})}"
    )
