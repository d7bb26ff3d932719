"""Joins: a join view's delete-and-insert of the rows holding changed keys (Oracle's DEL/INS)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sqlglot import exp

from dbt.adapters.fastrefresh.ivm.analysis import DIALECT, JoinInput, ViewPlan
from dbt.adapters.fastrefresh.ivm.sqlgen.complete import pin_tables, read_from
from dbt.adapters.fastrefresh.ivm.sqlgen.images import (
    FIRST_ADDED,
    LogSource,
    added_key_error,
    added_key_guard,
    cv_skip,
    image_ctes,
)
from dbt.adapters.fastrefresh.ivm.sqlgen.render import KeyGuard, Target, delete_insert, null, q
from dbt.adapters.fastrefresh.sqltext import TableName


def join_merge(
    plan: ViewPlan,
    target: Target,
    sources: Mapping[TableName, LogSource],
    *,
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
    keys = _changed_keys(plan, sources)
    changed = [(i, inp) for i, inp in enumerate(plan.inputs) if inp.master in keys.cte]
    guard = _guard(changed, keys, sources)
    parts = _inserts(plan, target, changed, keys, pins, guarded=guard is not None)
    old, match = _deletes(plan, target, changed, keys, sources)
    ctes = [*keys.ctes, old]
    source = f"WITH {', '.join(ctes)} SELECT * FROM __fr_old UNION ALL " + " UNION ALL ".join(parts)
    return delete_insert(plan, target, source, match, guard=guard)


def _guard(
    changed: Sequence[tuple[int, JoinInput]], keys: _Keys, sources: Mapping[TableName, LogSource]
) -> KeyGuard | None:
    """When one input changed and its new rows are its log's images: its changed keys that
    the range added check that the view holds no row of them (``render.KeyGuard``). A view
    row holding such a key joined another row of the master with that key, which the
    images leave out (the net change of a key is one row). Read from the master by time
    travel, a key's rows are all there, so nothing is checked. Several inputs changed:
    ``_deletes`` reads the view, and checks there."""
    if len(changed) != 1 or changed[0][1].master not in keys.images:
        return None
    _, inp = changed[0]
    return added_key_guard(sources[inp.master], inp.key_view_columns)


@dataclass
class _Keys:
    """Per changed master: the CTE of its changed keys, and of its new images when its log
    holds what the view reads of it."""

    ctes: list[str] = field(default_factory=list)
    cte: dict[TableName, str] = field(default_factory=dict)
    images: dict[TableName, str] = field(default_factory=dict)


def _changed_keys(plan: ViewPlan, sources: Mapping[TableName, LogSource]) -> _Keys:
    found = _Keys()
    for m, master in enumerate(plan.masters):
        log = sources.get(master)
        if log is None:
            continue
        # The key is read too: a row moved to another key must leave its old place.
        read = sorted(set(plan.columns_read_of(master)) | set(log.key_columns))
        keys = ", ".join(q(k) for k in log.key_columns)
        found.cte[master] = f"__fr_ck{m}"
        where = f"({log.range_predicate}) AND {cv_skip(read, log)}"
        if not set(read) <= set(log.logged):
            found.ctes.append(
                f"__fr_ck{m} AS (SELECT DISTINCT {keys}, TRUE AS __fr_hit FROM {log.relation} "
                f"WHERE {where})"
            )
        else:
            # With the images, each key also carries the commit that added it when its
            # first image in the range is new (``__fr_added``, ``_guard``): one aggregate,
            # as DISTINCT is.
            found.ctes.append(
                f"__fr_ck{m} AS (SELECT {keys}, TRUE AS __fr_hit, {FIRST_ADDED} AS __fr_added "
                f"FROM {log.relation} WHERE {where} GROUP BY {keys})"
            )
            # The log holds what the view reads of this table: its changed rows as they are
            # now are the last new images in the range, so the master is not read for them.
            found.images[master] = f"__fr_img{m}"
            found.ctes += image_ctes(plan, log, read, found.images[master])
    return found


def _quoted(table: str, column: str) -> exp.Column:
    """``table.`column```: the column name quoted as ``q`` quotes it."""
    return exp.Column(this=exp.to_identifier(column, quoted=True), table=exp.to_identifier(table))


def _key_match(alias: str, cte_alias: str, keys: Sequence[str]) -> exp.Expr:
    """``alias.k <=> cte_alias.k`` for every key column ``k``, as a tree (a log's key may
    hold one NULL, which identifies its row like any value)."""
    return exp.and_(
        *(exp.NullSafeEQ(this=_quoted(alias, k), expression=_quoted(cte_alias, k)) for k in keys)
    )  # fmt: skip


def _inserts(
    plan: ViewPlan,
    target: Target,
    changed: Sequence[tuple[int, JoinInput]],
    keys: _Keys,
    pins: Mapping[TableName, int | None],
    *,
    guarded: bool,
) -> list[str]:
    """The rows to insert: input i's part holds its changed keys and none of the changed
    keys of the inputs before it, so no row is inserted twice. ``guarded``: the rows to
    delete carry ``__fr_added`` (``_guard``), so these do too."""
    base = pin_tables(plan.query(), pins)
    extra = plan.hidden_selects()
    if extra:
        base = base.select(*extra, copy=False)
    casts = ", ".join(
        f"CAST(__fr_p.{q(c)} AS {target.types[c]}) AS {q(c)}" for c in plan.view_columns
    )
    parts = []
    for n, (i, inp) in enumerate(changed):
        part = base.copy()
        if inp.master in keys.images:
            inserted = (
                exp.select("*")
                .from_(keys.images[inp.master])
                .where(exp.EQ(this=exp.column("__fr_sign"), expression=exp.Literal.number(1)))
            )
            read_from(part, inp.alias, inserted)
        else:
            part = part.join(
                exp.to_table(keys.cte[inp.master]).as_(f"__fr_in{i}"),
                on=_key_match(inp.alias, f"__fr_in{i}", inp.key_columns),
                join_type="left semi", copy=False,
            )  # fmt: skip
        for j, before in changed[:n]:
            part = part.join(
                exp.to_table(keys.cte[before.master]).as_(f"__fr_out{j}"),
                on=_key_match(before.alias, f"__fr_out{j}", before.key_columns),
                join_type="left anti", copy=False,
            )  # fmt: skip
        added = ", CAST(NULL AS BIGINT) AS __fr_added" if guarded else ""
        parts.append(
            f"SELECT {casts}, 'I' AS __fr_op{added} FROM ({part.sql(dialect=DIALECT)}) __fr_p"
        )
    return parts


def _deletes(
    plan: ViewPlan,
    target: Target,
    changed: Sequence[tuple[int, JoinInput]],
    keys: _Keys,
    sources: Mapping[TableName, LogSource],
) -> tuple[str, str]:
    """(The CTE ``__fr_old`` of the rows to delete, the MERGE's match on them). With
    several inputs changed, a view row holding a key an input's range added (that input's
    new rows its log's images) raises: another row of the master held that key
    (``_guard``)."""
    types, cols = target.types, plan.view_columns
    if len(changed) == 1:
        # One input changed: its changed keys are the rows to delete, matched on its key
        # columns in the view, so the view is read only by the MERGE itself.
        _, inp = changed[0]
        pairs = dict(zip(inp.key_view_columns, inp.key_columns, strict=True))
        olds = ", ".join(
            f"CAST({q(pairs[c])} AS {types[c]}) AS {q(c)}"
            if c in pairs
            else f"{null(c, types)} AS {q(c)}"
            for c in cols
        )
        match = " AND ".join(f"t.{q(c)} <=> s.{q(c)}" for c in pairs)
        op = "'D' AS __fr_op"
        if inp.master in keys.images:
            op = "IF(__fr_added IS NULL, 'D', 'C') AS __fr_op, __fr_added"
        return f"__fr_old AS (SELECT {olds}, {op} FROM {keys.cte[inp.master]})", match
    # Several inputs changed: a row holding changed keys of two of them must be deleted
    # once, so the rows to delete are read from the view, each by its whole key.
    hits: list[str] = []
    joins: list[str] = []
    guards: list[str] = []
    for i, inp in changed:
        hit_on = " AND ".join(
            f"v.{q(vc)} <=> __fr_h{i}.{q(k)}"
            for k, vc in zip(inp.key_columns, inp.key_view_columns, strict=True)
        )
        joins.append(f"LEFT JOIN {keys.cte[inp.master]} __fr_h{i} ON {hit_on}")
        hits.append(f"__fr_h{i}.__fr_hit")
        if inp.master in keys.images:
            values = [f"v.{q(vc)}" for vc in inp.key_view_columns]
            error = added_key_error(sources[inp.master], values, f"__fr_h{i}.__fr_added")
            guards.append(f"IF(__fr_h{i}.__fr_added IS NULL, TRUE, CAST({error} AS BOOLEAN))")
    hit = " OR ".join(hits)
    keyed = set(plan.key_view_columns)
    olds = ", ".join(f"v.{q(c)}" if c in keyed else f"{null(c, types)} AS {q(c)}" for c in cols)
    old = (
        f"__fr_old AS (SELECT {olds}, 'D' AS __fr_op FROM {target.view.sql} v {' '.join(joins)} "
        f"WHERE {' AND '.join([*guards, f'({hit})' if guards else hit])})"
    )
    match = " AND ".join(f"t.{q(c)} <=> s.{q(c)}" for c in dict.fromkeys(plan.key_view_columns))
    return old, match
