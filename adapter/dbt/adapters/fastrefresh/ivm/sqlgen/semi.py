"""Semi-joins (``[NOT] EXISTS``, ``IN (SELECT ...)`` filters on a keyed projection).

When only the outer table changed, the view takes the keyed projection's delta, its filter
reading the subqueries' tables as pinned. When a subquery's table changed, the outer rows
it can reach are those whose correlated values equal a changed inner row's, before or
after; those rows (and the outer table's own changed keys) are recomputed from the pinned
tables and merged by key: a row that no longer qualifies is deleted, one that newly does is
inserted. Reading the outer table for them costs a scan of it, as Oracle's refresh of a
view with a subquery reads its master; the outer table's own changes alone cost only its
log range.
"""

from __future__ import annotations

from collections.abc import Mapping

from dbt.adapters.fastrefresh.ivm.analysis import DIALECT, ViewPlan
from dbt.adapters.fastrefresh.ivm.semi import SemiJoin
from dbt.adapters.fastrefresh.ivm.sqlgen.complete import complete_tree, pin_tables
from dbt.adapters.fastrefresh.ivm.sqlgen.images import (
    Source,
    added_log,
    changed_keys,
    image_ctes,
)
from dbt.adapters.fastrefresh.ivm.sqlgen.projection import projection_keyed
from dbt.adapters.fastrefresh.ivm.sqlgen.render import Merge, Target, null, operand, q, render
from dbt.adapters.fastrefresh.sqltext import TableName


def semi_join(
    plan: ViewPlan,
    target: Target,
    sources: Mapping[TableName, Source],
    *,
    pins: Mapping[TableName, int | None],
) -> str:
    """The delta statement of a keyed projection with subquery filters."""
    outer = plan.masters[0]
    if not any(s.master in sources for s in plan.semis):
        where = pin_tables(plan.query(), pins).args.get("where")
        pinned = where.this.sql(dialect=DIALECT) if where is not None else None
        added = added_log(sources[outer])
        ctes = image_ctes(plan, sources[outer], plan.columns_read, added=added is not None)
        keys = changed_keys(sources[outer])
        return projection_keyed(plan, target, ctes, filter=pinned, keys=keys, added=added)
    return _recompute(plan, target, sources, pins=pins)


def _reached(semi: SemiJoin, index: int, plan: ViewPlan, outer_pin: int | None) -> list[str]:
    """CTEs ending in ``__fr_r<index>``: the keys of the outer rows (as pinned) whose
    correlated values equal those of a changed row of the subquery's table."""
    a, images, values = plan.alias, f"__fr_ib{index}", f"__fr_v{index}"
    pairs = list(enumerate(semi.pairs))
    listed = ", ".join(f"{inner.sql(dialect=DIALECT)} AS __fr_c{j}" for j, (_, inner) in pairs)
    on = " AND ".join(
        f"{operand(outer).sql(dialect=DIALECT)} = v.__fr_c{j}" for j, (outer, _) in pairs
    )
    keys = ", ".join(f"{a}.{q(k)}" for k in plan.key_columns)
    version = f" VERSION AS OF {outer_pin}" if outer_pin is not None else ""
    return [
        f"{values} AS (SELECT DISTINCT {listed} FROM {images} {semi.alias})",
        f"__fr_r{index} AS (SELECT {keys} FROM {plan.masters[0].sql}{version} {a} "
        f"LEFT SEMI JOIN {values} v ON {on})",
    ]


def _recompute(
    plan: ViewPlan,
    target: Target,
    sources: Mapping[TableName, Source],
    *,
    pins: Mapping[TableName, int | None],
) -> str:
    """Recompute the outer rows the changes reach, and merge them by the outer key."""
    outer, a = plan.masters[0], plan.alias
    keys = ", ".join(f"{a}.{q(k)}" for k in plan.key_columns)
    ctes: list[str] = []
    reached: list[str] = []
    if outer in sources:
        ctes += image_ctes(plan, sources[outer], plan.columns_read, "__fr_ia")
        reached.append(f"SELECT {keys} FROM __fr_ia {a}")
    for index, semi in enumerate(plan.semis):
        if semi.master in sources:
            ctes += image_ctes(plan, sources[semi.master], semi.columns_read, f"__fr_ib{index}")
            ctes += _reached(semi, index, plan, pins.get(outer))
            reached.append(f"SELECT * FROM __fr_r{index}")
    ctes.append(f"__fr_keys AS ({' UNION '.join(reached)})")
    pairs = list(zip(plan.key_columns, plan.key_view_columns, strict=True))
    on_keys = " AND ".join(f"n.{q(view)} <=> k.{q(key)}" for key, view in pairs)
    new = complete_tree(plan, pins).sql(dialect=DIALECT)
    ctes.append(f"__fr_new AS (SELECT n.* FROM ({new}) n LEFT SEMI JOIN __fr_keys k ON {on_keys})")
    cols = list(plan.view_columns)
    holders = {view: key for key, view in pairs}
    gone = ", ".join(
        f"k.{q(holders[c])} AS {q(c)}" if c in holders else f"{null(c, target.types)} AS {q(c)}"
        for c in cols
    )
    plain = ", ".join(q(c) for c in cols)
    source = (
        f"WITH {', '.join(ctes)} SELECT {plain}, FALSE AS __fr_gone FROM __fr_new "
        f"UNION ALL SELECT {gone}, TRUE AS __fr_gone FROM __fr_keys k "
        f"LEFT ANTI JOIN __fr_new n ON {on_keys}"
    )
    taken = {c: f"s.{q(c)}" for c in cols}
    merge = Merge(
        source,
        " AND ".join(f"t.{q(c)} <=> s.{q(c)}" for c in dict.fromkeys(plan.key_view_columns)),
        taken, delete_when="s.__fr_gone", insert=taken, insert_when="NOT s.__fr_gone",
    )  # fmt: skip
    return render(plan, target, merge)
