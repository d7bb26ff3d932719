"""Window functions: recompute the partitions the changes touch (``ivm/window.py``).

The partition values of the changed rows' old and new images are the partitions to redo:
the view's rows of those partitions are deleted and the query's rows for them, computed
from the pinned master restricted to those partitions, inserted, in one MERGE. A row's
partition is kept in the view (``__fr_p_<i>``), so the MERGE finds the rows to delete
without computing anything from the view.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

from dbt.adapters.fastrefresh.ivm.analysis import DIALECT, ViewPlan
from dbt.adapters.fastrefresh.ivm.sqlgen.complete import complete_tree, read_from
from dbt.adapters.fastrefresh.ivm.sqlgen.images import Source, image_ctes
from dbt.adapters.fastrefresh.ivm.sqlgen.render import Target, delete_insert, null, operand, over, q
from dbt.adapters.fastrefresh.sqltext import TableName

IMAGES, PARTS, MASTER, KEYS = "__fr_i", "__fr_parts", "__fr_m", "__fr_pp"


def window_recompute(
    plan: ViewPlan,
    target: Target,
    source: Source,
    *,
    pins: Mapping[TableName, int | None],
) -> str:
    """The MERGE that recomputes the partitions ``source``'s changes touch."""
    ctes = image_ctes(plan, source, net=False)
    values = ", ".join(
        f"{over(p, IMAGES).sql(dialect=DIALECT)} AS __fr_pv{i}"
        for i, p in enumerate(plan.partition_nodes)
    )
    ctes.append(f"{PARTS} AS (SELECT DISTINCT {values} FROM imgs {IMAGES})")
    master = plan.masters[0]
    table = exp.table_(master.table, db=master.schema, quoted=True, alias=MASTER)
    pin = pins.get(master)
    if pin is not None:
        table.set(
            "version", exp.Version(this="VERSION", kind="AS OF", expression=exp.Literal.number(pin))
        )
    on = exp.and_(
        *(
            exp.NullSafeEQ(
                this=operand(over(p, MASTER)), expression=exp.column(f"__fr_pv{i}", table=KEYS)
            )
            for i, p in enumerate(plan.partition_nodes)
        )
    )
    rows = (
        exp.select(exp.Star())
        .from_(table)
        .join(exp.table_(PARTS, alias=KEYS), on=on, join_type="left semi")
    )
    tree = complete_tree(plan, pins)
    read_from(tree, plan.alias, rows)
    cols = list(plan.view_columns)
    holders = dict(zip(plan.partition_view_columns, range(len(plan.partitions)), strict=True))
    gone = ", ".join(
        f"__fr_pv{holders[c]} AS {q(c)}" if c in holders else f"{null(c, target.types)} AS {q(c)}"
        for c in cols
    )
    plain = ", ".join(q(c) for c in cols)
    source_sql = (
        f"WITH {', '.join(ctes)}, __fr_recomputed AS ({tree.sql(dialect=DIALECT)}) "
        f"SELECT {plain}, 'I' AS __fr_op FROM __fr_recomputed "
        f"UNION ALL SELECT {gone}, 'D' AS __fr_op FROM {PARTS}"
    )
    match = " AND ".join(f"t.{q(c)} <=> s.{q(c)}" for c in plan.partition_view_columns)
    return delete_insert(plan, target, source_sql, match)
