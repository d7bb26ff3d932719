"""SQL of a refresh: the complete-refresh SELECT and the one-statement MERGE of a delta.

Pure: from a ``ViewPlan``, the view's column types and where the changed rows come from.

Changed rows become *images*: master rows with a sign, -1 for a row as it was before the
refresh range and +1 for a row as it is after. On a keyed log, the net change per key is
the first old image and the last new image by ``sequence__``; on a key-less log every
row counts; when the log lacks a column the view reads, the images are read from the
master by time travel for the changed keys (old: the snapshot the view reflected, new:
the pinned one). Every delta is applied with one statement, so it is atomic: a
MERGE, or for a small view the view's rows replaced whole (``render``).

One module per concern: ``images`` (where changed rows come from), ``complete`` (the
complete refresh's SELECT), ``projection``, ``aggregate``, ``join``, ``outer``, ``semi``,
``window`` and ``union`` (each shape's delta), ``render`` (a MERGE or its overwrite form). ``delta_statement`` here is the one
dispatcher from a view's plan to its delta statement, for refresh and explain alike.
"""

from __future__ import annotations

from collections.abc import Mapping

from dbt.adapters.fastrefresh.ivm.analysis import Shape, ViewPlan
from dbt.adapters.fastrefresh.ivm.sqlgen import aggregate, outer, projection, semi, union, window
from dbt.adapters.fastrefresh.ivm.sqlgen.complete import complete_select, filled_read, pin_tables
from dbt.adapters.fastrefresh.ivm.sqlgen.images import (
    LogSource,
    MasterSource,
    Source,
    added_log,
    changed_keys,
    image_ctes,
)
from dbt.adapters.fastrefresh.ivm.sqlgen.join import join_merge
from dbt.adapters.fastrefresh.ivm.sqlgen.outer import null_key_probe
from dbt.adapters.fastrefresh.ivm.sqlgen.render import Target
from dbt.adapters.fastrefresh.sqltext import TableName

__all__ = [
    "LogSource",
    "MasterSource",
    "Source",
    "Target",
    "complete_select",
    "delta_statement",
    "filled_read",
    "image_ctes",
    "join_merge",
    "notes",
    "null_key_probe",
    "pin_tables",
]


def delta_statement(
    plan: ViewPlan,
    target: Target,
    sources: Mapping[TableName, Source],
    *,
    pins: Mapping[TableName, int | None],
    old_pins: Mapping[TableName, int | None],
) -> str:
    """The one statement that applies ``sources`` (the masters with changes) to the view.

    Args:
        plan: the view's plan (``analysis.analyze``).
        target: the view, its column types, and whether to overwrite it whole.
        sources: where each changed master's changes come from (its log, or the master
            by time travel for the keys its log names).
        pins: the master snapshots the refresh reflects (``VERSION AS OF``).
        old_pins: the master snapshots the view reflected before (an aggregate over a
            join joins each table's changes with the tables after it as they were).
    """
    if plan.shape is Shape.UNION_ALL:
        return union.union_recompute(plan, target, sources, pins=pins)
    if plan.shape is Shape.JOIN:
        logs = {m: s for m, s in sources.items() if isinstance(s, LogSource)}
        return join_merge(plan, target, logs, pins=pins)
    if plan.shape is Shape.OUTER_JOIN:
        return outer.outer_recompute(plan, target, sources, pins=pins)
    if plan.outer is not None:  # an aggregate over an outer join: its groups recomputed
        return outer.outer_aggregate(plan, target, sources, pins=pins)
    if plan.inputs:  # an aggregate over a join: every master's changes in one statement
        return aggregate.over_join(plan, target, sources, pins=pins, old_pins=old_pins)
    if plan.semis:  # a keyed projection filtered by [NOT] EXISTS / IN (SELECT ...)
        return semi.semi_join(plan, target, sources, pins=pins)
    (source,) = sources.values()
    if plan.shape is Shape.WINDOW:
        return window.window_recompute(plan, target, source, pins=pins)
    if plan.shape is Shape.PROJECTION:
        if plan.keyed:
            added = added_log(source)
            ctes = image_ctes(plan, source, added=added is not None)
            keys = changed_keys(source)
            return projection.projection_keyed(plan, target, ctes, keys=keys, added=added)
        return projection.projection_counted(plan, target, image_ctes(plan, source))
    return aggregate.single_table(plan, target, source, pins=pins)


def notes(plan: ViewPlan) -> list[str]:
    """How the view's delta is computed, for ``explain_mview``."""
    if plan.shape is Shape.JOIN:
        return [
            "a join reads the changed keys from its logs and joins their rows from the "
            "masters at the pinned snapshots"
        ]
    if plan.outer is not None:
        return [
            "the groups the changes reach (the grouping side's changed rows' groups, old and "
            "new, those of its rows joined to the other side's changed rows, and a "
            "NULL-extended row's) are recomputed from the pinned tables and merged"
        ]
    if plan.shape is Shape.OUTER_JOIN:
        return [
            "the keys of the preserved side the changes reach (its own changed keys, and "
            "the keys of its rows whose join values equal a changed row's of the other side, "
            "old or new) have their rows recomputed from the pinned tables and merged"
        ]
    if plan.shape is Shape.UNION_ALL:
        return [
            "each branch's rows the changes reach (by its table's key, its groups, its "
            "partitions, each joined table's key, or the whole row of a key-less table) are "
            "deleted and recomputed from the pinned masters, every branch in one MERGE"
        ]
    if plan.shape is Shape.WINDOW:
        return [
            "the partitions the changed rows (old and new images) are in are recomputed "
            "from the pinned master, restricted to them, and merged by partition"
        ]
    if plan.semis:
        return [
            "changes of the outer table alone: its changed keys' rows deleted and their new "
            "rows inserted when they pass the filter, its subqueries reading their tables "
            "as pinned",
            "changes of a subquery's table: the outer rows whose correlated values equal a "
            "changed row's, before or after, are recomputed from the pinned tables and "
            "merged by the outer key",
        ]
    if plan.inputs:
        return [
            "each table's changes (from its log, or from the master by time travel when the "
            "log lacks a column) are joined with the tables before it as they are now and "
            "the tables after it as they were"
        ]
    return []
