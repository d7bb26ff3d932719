"""UNION ALL: recompute each branch's rows the changes reach (``ivm/union.py``).

For each branch and each of its dimensions whose master changed, the values the changed
rows (old and new images) give the dimension's expressions are the reached ones. The
view's rows of the branch holding a reached value are deleted (found in the view, by
``__fr_union`` and the columns that identify a row of any branch) and the branch's rows
holding one, computed from the pinned masters, inserted: every branch in one MERGE. The
restriction is a semi join on the branch's output, which Spark pushes down to the scan of
the changed table (through projections, aggregates by their groups, windows by their
partitions and joins by the side it names).
"""

from __future__ import annotations

from collections.abc import Mapping

from dbt.adapters.fastrefresh.ivm.plan import DIALECT, UnionBranch, ViewPlan
from dbt.adapters.fastrefresh.ivm.sqlgen.complete import branch_select
from dbt.adapters.fastrefresh.ivm.sqlgen.images import Source, image_ctes
from dbt.adapters.fastrefresh.ivm.sqlgen.render import Target, delete_insert, null, over, q
from dbt.adapters.fastrefresh.ivm.union import UNION_COLUMN
from dbt.adapters.fastrefresh.sqltext import TableName


def identifying(plan: ViewPlan) -> list[str]:
    """The columns that identify a row of any branch, the marker first (the MERGE's match)."""
    held = {h for b in plan.branches for d in b.dims for h in d.holders}
    return [UNION_COLUMN] + [c for c in plan.view_columns if c in held]


def union_recompute(
    plan: ViewPlan,
    target: Target,
    sources: Mapping[TableName, Source],
    *,
    pins: Mapping[TableName, int | None],
) -> str:
    """The MERGE that recomputes the rows of each branch the changes in ``sources`` reach."""
    cols = list(plan.view_columns)
    match = identifying(plan)
    ctes: list[str] = []
    parts: list[str] = []
    for branch in plan.branches:
        reached = _reached(branch, sources, ctes)
        if not reached:
            continue
        rows = f"__fr_u{branch.index}"
        ctes.append(f"{rows} AS ({branch_select(plan, branch, pins, target.types)})")
        new = [_restricted(f"SELECT n.* FROM {rows} n", "n", r) for r in reached]
        kept = ", ".join(f"t.{q(c)}" for c in match)
        mine = f"t.{q(UNION_COLUMN)} = {branch.index}"
        old = [
            _restricted(f"SELECT DISTINCT {kept} FROM {target.view.sql} t", "t", r, mine)
            for r in reached
        ]
        inserted = ", ".join(f"CAST(n.{q(c)} AS {target.types[c]}) AS {q(c)}" for c in cols)
        parts.append(f"SELECT {inserted}, 'I' AS __fr_op FROM ({' UNION '.join(new)}) n")
        gone = ", ".join(f"d.{q(c)}" if c in match else f"{null(c, target.types)}" for c in cols)
        parts.append(f"SELECT {gone}, 'D' AS __fr_op FROM ({' UNION '.join(old)}) d")
    assert parts, "a union's changed masters reach none of its branches"
    on = " AND ".join(f"t.{q(c)} <=> s.{q(c)}" for c in match)
    source = f"WITH {', '.join(ctes)} {' UNION ALL '.join(parts)}"
    return delete_insert(plan, target, source, on)


Reached = tuple[str | None, tuple[str, ...]]


def _reached(
    branch: UnionBranch, sources: Mapping[TableName, Source], ctes: list[str]
) -> list[Reached]:
    """(CTE of the reached values or None for every row, the view columns holding them) of
    each dimension of ``branch`` whose master changed; their CTEs appended to ``ctes``."""
    images: dict[TableName, str] = {}
    reached: list[Reached] = []
    for j, dim in enumerate(branch.dims):
        if dim.master not in sources:
            continue
        if dim.master not in images:
            images[dim.master] = f"__fr_u{branch.index}_{len(images)}"
            read = branch.plan.columns_read_of(dim.master)
            ctes += image_ctes(
                branch.plan, sources[dim.master], read, images[dim.master], net=False
            )
        if not dim.nodes:  # a global aggregate: its one row
            reached.append((None, ()))
            continue
        name = f"__fr_u{branch.index}_r{j}"
        values = ", ".join(
            f"{over(n, images[dim.master]).sql(dialect=DIALECT)} AS __fr_v{k}"
            for k, n in enumerate(dim.nodes)
        )
        ctes.append(f"{name} AS (SELECT DISTINCT {values} FROM {images[dim.master]})")
        reached.append((name, dim.holders))
    return reached


def _restricted(select: str, alias: str, reached: Reached, where: str = "") -> str:
    """``select`` (of ``alias``) restricted to the rows holding a reached value."""
    name, holders = reached
    if name is not None:
        on = " AND ".join(f"{alias}.{q(h)} <=> r.__fr_v{k}" for k, h in enumerate(holders))
        select += f" LEFT SEMI JOIN {name} r ON {on}"
    return select + (f" WHERE {where}" if where else "")
