"""Projections and filters: a keyed view deletes its changed keys' rows and inserts their
new rows; a key-less view keeps a multiplicity per distinct row."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlglot import exp

from dbt.adapters.fastrefresh.ivm.analysis import DIALECT, ViewPlan
from dbt.adapters.fastrefresh.ivm.sqlgen.complete import not_ordinal
from dbt.adapters.fastrefresh.ivm.sqlgen.images import LogSource, added_key_guard, changed_key_ops
from dbt.adapters.fastrefresh.ivm.sqlgen.render import KeyGuard, Target, delete_insert, null, q
from dbt.adapters.fastrefresh.sqltext import holds_float, sign_key, string


def projection_keyed(
    plan: ViewPlan,
    target: Target,
    ctes: Sequence[str],
    *,
    filter: str | None = None,
    keys: str | None = None,
    added: LogSource | None = None,
) -> str:
    """A keyed projection: a changed key's old image deletes its row, its new image (when
    it passes the filter) inserts the row again. ``filter``: the view's filter with the
    tables its subqueries read pinned (a semi-join's), instead of ``plan.filter``.
    ``keys``: the changed keys over ``ctes`` (``images.changed_keys``): the rows the
    overwrite form deletes, read without the images' sort by key (unless ``added``).
    ``added``: the log whose images carry ``__fr_added`` (``images.added_log``): a key the
    range added must have no row in the view, which only another row of the master can
    have put there (``render.KeyGuard``); the overwrite form then finds the keys to
    delete and those to check in one aggregate of the range (``keys`` unused)."""
    types = target.types
    alias = plan.alias
    key_exprs = {
        vc: f"{alias}.{q(k)}" for k, vc in zip(plan.key_columns, plan.key_view_columns, strict=True)
    }
    outputs = {o.name: o.sql for o in plan.outputs}
    outputs.update({name: sql for name, sql in plan.hidden})
    cols = list(plan.view_columns)
    deletes = [key_exprs[c] if c in key_exprs else null(c, types) for c in cols]
    inserts = [f"CAST({outputs[c]} AS {types[c]})" for c in cols]
    condition = filter if filter is not None else plan.filter
    where = f" AND ({condition})" if condition else ""
    # One pass over the images (a second would read the log again): a key's old image
    # (at most one) deletes the key's row (the view can hold one only if the key had an
    # old image); its new image, when it passes the filter, inserts the row again.
    rows = ", ".join(
        f"IF({alias}.__fr_sign = -1, {d}, {i}) AS {q(c)}"
        for c, d, i in zip(cols, deletes, inserts, strict=True)
    )
    changes = (
        f"SELECT {rows}, IF({alias}.__fr_sign = -1, 'D', 'I') AS __fr_op FROM imgs {alias} "
        f"WHERE {alias}.__fr_sign = -1 OR (TRUE{where})"
    )
    guard = None
    if added is not None:
        changes, guard = _guarded(plan, rows, where, added)
    on = " AND ".join(f"t.{q(c)} <=> s.{q(c)}" for c in plan.key_view_columns)
    names = ", ".join(
        f"{q(k)} AS {q(vc)}" for k, vc in zip(plan.key_columns, plan.key_view_columns, strict=True)
    )
    deleted = None
    if added is not None:  # the keys to delete and those to check, in one aggregate
        deleted = f"SELECT {names}, __fr_op, __fr_added FROM ({changed_key_ops(added)})"
    elif keys is not None:
        deleted = f"SELECT {names} FROM ({keys})"
    return delete_insert(plan, target, changes, on, ctes=ctes, deleted=deleted, guard=guard)


def _guarded(plan: ViewPlan, rows: str, where: str, added: LogSource) -> tuple[str, KeyGuard]:
    """The keyed projection's changes with the rows that check (``render.KeyGuard``): the
    last image of each key the range added (``__fr_added``) is read twice, once as the
    check, whatever the filter and whether it is new or old, once as the insert it
    would be anyway. (The filter may hold a subquery, which Spark allows in a WHERE
    only; a generator doubles the rows in the one pass over the images.)"""
    alias = plan.alias
    changes = (
        f"SELECT {rows}, {alias}.__fr_added, IF(__fr_check = 1, 'C', "
        f"IF({alias}.__fr_sign = -1, 'D', 'I')) AS __fr_op FROM imgs {alias} "
        f"LATERAL VIEW explode(IF({alias}.__fr_added IS NULL, array(0), array(0, 1))) "
        f"__fr_twice AS __fr_check WHERE __fr_check = 1 OR ({alias}.__fr_sign = -1 AND "
        f"{alias}.__fr_added IS NULL) OR ({alias}.__fr_sign = 1{where})"
    )
    return changes, added_key_guard(added, plan.key_view_columns)


def projection_counted(plan: ViewPlan, target: Target, ctes: Sequence[str]) -> str:
    """A key-less projection: each distinct row's multiplicity moves by its signed images;
    the rows of a changed multiplicity are deleted and inserted again that many times."""
    view, types = target.view, target.types
    alias = plan.alias
    names = [o.name for o in plan.outputs]
    where = f" WHERE {plan.filter}" if plan.filter else ""
    # A FLOAT or DOUBLE -0.0 (or a value holding one) is a distinct row of its own
    # (``complete_select``); GROUP BY returns 0.0 for it, ``first`` the value as read.
    cast = {o.name: f"CAST({o.sql} AS {types[o.name]})" for o in plan.outputs}
    signed = {n: types[n] for n in names if holds_float(types[n])}
    outs = ", ".join(
        f"first({cast[n]}) AS {q(n)}" if n in signed else f"{cast[n]} AS {q(n)}" for n in names
    )
    groups = ", ".join(
        [
            *(
                not_ordinal(exp.maybe_parse(o.sql, dialect=DIALECT)).sql(dialect=DIALECT)
                for o in plan.outputs
            ),
            *(sign_key(cast[n], t) for n, t in signed.items()),
        ]
    )
    signs = "".join(
        f", {sign_key(f'c.{q(n)}', t)} AS __fr_z{i}" for i, (n, t) in enumerate(signed.items())
    )
    eq = _same_rows("c", "d", names, signed, signed_left=True)
    cur_eq = _same_rows("c", "d", names, signed)
    plain = ", ".join(q(n) for n in names)
    message = string(
        f"dbt-fastrefresh: {view} holds fewer rows than its log deletes; refresh it completely"
    )
    source = (
        f"WITH {', '.join(ctes)}, "
        f"__fr_d AS (SELECT {outs}, sum({alias}.__fr_sign) AS __fr_delta FROM imgs {alias}{where} GROUP BY {groups}), "
        "__fr_dn AS (SELECT * FROM __fr_d WHERE __fr_delta <> 0), "
        f"__fr_cur AS (SELECT DISTINCT {', '.join('c.' + q(n) for n in names)}{signs}, "
        f"c.__fr_multiplicity FROM {view.sql} c LEFT SEMI JOIN __fr_dn d ON {cur_eq}), "
        f"__fr_j AS (SELECT {', '.join('d.' + q(n) for n in names)}, "
        "coalesce(c.__fr_multiplicity, 0) + d.__fr_delta AS __fr_new "
        f"FROM __fr_dn d LEFT JOIN __fr_cur c ON {eq} "
        f"WHERE IF(coalesce(c.__fr_multiplicity, 0) + d.__fr_delta < 0, CAST(raise_error({message}) AS BOOLEAN), TRUE)) "
        f"SELECT {plain}, CAST(0 AS BIGINT) AS __fr_multiplicity, 'D' AS __fr_op FROM __fr_j "
        f"UNION ALL SELECT {plain}, CAST(__fr_new AS BIGINT), 'I' FROM __fr_j "
        "LATERAL VIEW explode(sequence(1, CAST(greatest(__fr_new, 1) AS INT))) __fr_e AS __fr_i "
        "WHERE __fr_new > 0"
    )
    return delete_insert(plan, target, source, _same_rows("t", "s", names, signed))


def _same_rows(
    left: str,
    right: str,
    names: Sequence[str],
    signed: Mapping[str, str],
    *,
    signed_left: bool = False,
) -> str:
    """SQL: rows ``left`` and ``right`` equal in every column of ``names``, a -0.0 of the
    ``signed`` ones (name: type) told from 0.0 (``sqltext.sign_key``); ``signed_left``:
    the left row's keys are its columns ``__fr_z<i>`` (a DISTINCT of the view's rows,
    which returns 0.0 for -0.0)."""
    same = [f"{left}.{q(n)} <=> {right}.{q(n)}" for n in names]
    for i, (n, t) in enumerate(signed.items()):
        mine = f"{left}.__fr_z{i}" if signed_left else sign_key(f"{left}.{q(n)}", t)
        same.append(f"{mine} <=> {sign_key(f'{right}.{q(n)}', t)}")
    return " AND ".join(same)
