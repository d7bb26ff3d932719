"""Rendering a delta into the view: the target, and a MERGE or its overwrite form."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from sqlglot import exp

from dbt.adapters.fastrefresh.ivm.analysis import ViewPlan
from dbt.adapters.fastrefresh.sqltext import TableName, ident, replace_all


@dataclass(frozen=True)
class Target:
    """The view a delta is applied to.

    ``types``: the Spark SQL type of each of its columns (hidden ones included);
    ``avg_types``: Spark's result type of each ``AVG(arg)`` of the query, by argument, so an
    incremental average is cast like the query's; ``overwrite``: write the delta as one
    statement replacing the whole view (a copy-on-write view of a file or two, which a
    MERGE would rewrite whole anyway); ``required_keys``: the masters whose log's key
    holds no NULL for this delta: the table's Iceberg identifier fields, which are never
    NULL, or a key found with none where the delta reads it (``outer.null_key_probe``).
    """

    view: TableName
    types: Mapping[str, str]
    avg_types: Mapping[str, str] = field(default_factory=dict)
    overwrite: bool = False
    required_keys: frozenset[TableName] = frozenset()


@dataclass(frozen=True)
class Merge:
    """What a MERGE of ``source`` (alias ``s``) into the view (alias ``t``) does.

    ``on``: the match condition (None: the view's one row, a global aggregate); ``update``:
    the new value of each column a matched row takes; ``delete_when``: matched rows to
    delete instead; ``insert``/``insert_when``: the columns of an unmatched source row to
    insert, and which rows (no insert: every source row matches).
    """

    source: str
    on: str | None
    update: Mapping[str, str]
    delete_when: str | None = None
    insert: Mapping[str, str] = field(default_factory=dict)
    insert_when: str | None = None


@dataclass(frozen=True)
class KeyGuard:
    """A delete-and-insert's source has rows, ``__fr_op`` ``'C'``, that check the view
    holds no row of their key: a key its log's range added (the commit, ``__fr_added``),
    which a view row can hold only if another row of the master held it too
    (``images.added_key_error``). They are never inserted.

    ``error``: ``raise_error`` of a matching ``'C'`` row, given the alias its key's values
    are read from (``s``, or ``t``: a matching view row holds the same values).
    """

    error: Callable[[str], str]


def q(name: str) -> str:
    return ident(name)


def over(node: exp.Expression, alias: str) -> exp.Expression:
    """``node`` (an expression over one table's alias) over another alias, ``alias``."""
    copy = node.copy()
    for column in copy.find_all(exp.Column):
        column.set("table", exp.to_identifier(alias))
    return copy


def operand(node: exp.Expression) -> exp.Expression:
    """``node`` as the operand of an operator built around it: parenthesized unless it is
    a column, a literal or parenthesized already. sqlglot writes a tree as it was built,
    so ``a AND b > 1`` put under ``<=>`` would be written ``a AND b > 1 <=> v``, which
    Spark reads as ``a AND (b > 1 <=> v)``, and ``x IS NULL <=> v`` does not parse."""
    if isinstance(node, (exp.Column, exp.Literal, exp.Paren)):
        return node
    return exp.Paren(this=node)


def null(column: str, types: Mapping[str, str]) -> str:
    return f"CAST(NULL AS {types[column]})"


def insert_clause(plan: ViewPlan, values: Mapping[str, str]) -> str:
    cols = list(plan.view_columns)
    return f"INSERT ({', '.join(q(c) for c in cols)}) VALUES ({', '.join(values[c] for c in cols)})"


def render(plan: ViewPlan, target: Target, merge: Merge) -> str:
    """The statement of ``merge``: a MERGE, or under ``target.overwrite`` its overwrite."""
    if target.overwrite:
        return _overwrite(plan, target.view, merge)
    view = target.view.sql
    sets = ", ".join(f"{q(c)} = {v}" for c, v in merge.update.items())
    statement = f"MERGE INTO {view} t USING ({merge.source}) s ON {merge.on or '1 = 1'} "
    if merge.delete_when:
        statement += f"WHEN MATCHED AND {merge.delete_when} THEN DELETE "
    statement += f"WHEN MATCHED THEN UPDATE SET {sets}"
    if merge.insert:
        statement += (
            f" WHEN NOT MATCHED AND {merge.insert_when or 'TRUE'} THEN "
            f"{insert_clause(plan, merge.insert)}"
        )
    return statement


def delete_insert(
    plan: ViewPlan,
    target: Target,
    source: str,
    on: str,
    *,
    ctes: Sequence[str] = (),
    deleted: str | None = None,
    guard: KeyGuard | None = None,
) -> str:
    """Delete the view's rows that a ``'D'`` row of ``source`` (its ``__fr_op``) matches on
    ``on`` (over ``t``, the view, and ``s``), and insert its ``'I'`` rows: a MERGE, or
    under ``target.overwrite`` the rows it leaves written whole (the view's rows no
    ``'D'`` row matches, and every ``'I'`` row: one never matches, the MERGE's match
    needs ``'D'``).

    ``ctes``: CTEs ``source`` reads (``WITH`` them). ``deleted``: under the overwrite, a
    SELECT over them of the view rows to delete (``on`` matches its rows as ``s``) in
    place of ``source``'s ``'D'`` rows: Spark computes a CTE once per reference, and a
    second pass over ``source`` repeats all its work where the ``'D'`` side may need
    less (a keyed projection's: a scan of the range, without the sort by key).

    ``guard``: ``source`` has rows that check the view holds no row of their key
    (``KeyGuard``); ``deleted``, when given, then holds them too, with its rows' ``__fr_op``
    and ``__fr_added``. The MERGE matches them too, and a match raises: the match the MERGE
    computes anyway, so the view is read no more. (Spark then checks that no view row
    matches two source rows, which the unguarded MERGE, an unconditional delete, skips:
    a key has a ``'C'`` row only where it has no ``'D'`` row.)"""
    cols = list(plan.view_columns)
    with_ctes = f"WITH {', '.join(ctes)} " if ctes else ""
    if not target.overwrite:
        matched = "= 'D' WHEN MATCHED THEN DELETE"
        if guard is not None:
            matched = (
                "IN ('D', 'C') WHEN MATCHED AND s.__fr_op = 'D' THEN DELETE "
                f"WHEN MATCHED AND CAST({guard.error('s')} AS BOOLEAN) THEN DELETE"
            )
        return (
            f"MERGE INTO {target.view.sql} t USING ({with_ctes}{source}) s ON {on} "
            f"AND s.__fr_op {matched} WHEN NOT MATCHED AND s.__fr_op = 'I' THEN "
            f"{insert_clause(plan, {c: f's.{q(c)}' for c in cols})}"
        )
    plain = ", ".join(q(c) for c in cols)
    kept = ", ".join(f"t.{q(c)}" for c in cols)
    defined = ", ".join([*ctes, f"__fr_s AS ({source})"])
    if guard is not None:
        removed = _removed_or_raised(deleted, on, guard)
    elif deleted is None:
        removed = f"LEFT ANTI JOIN (SELECT * FROM __fr_s WHERE __fr_op = 'D') s ON {on}"
    else:
        removed = f"LEFT ANTI JOIN ({deleted}) s ON {on}"
    return (
        f"{replace_all(target.view)} SELECT {plain} FROM (WITH {defined} "
        f"SELECT {kept} FROM {target.view.sql} t {removed} "
        f"UNION ALL SELECT {plain} FROM __fr_s WHERE __fr_op = 'I')"
    )


def _removed_or_raised(deleted: str | None, on: str, guard: KeyGuard) -> str:
    """The overwrite's anti join of the view ``t`` with the rows to delete and the rows
    that check (``guard``), in one join: ``deleted``, which carries both (its ``__fr_op``
    and ``__fr_added``), or ``__fr_s``'s own. A view row a ``'D'`` row matches is removed;
    one a check matches raises, in the join's condition, which a hash join evaluates on
    the rows of a matching key only. The error reads the key from ``t``, so no part of the
    condition reads ``s`` alone, for Spark to push down to it and raise for every check."""
    if deleted is None:
        deleted = "SELECT * FROM __fr_s WHERE __fr_op IN ('D', 'C')"
    return (
        f"LEFT ANTI JOIN ({deleted}) s ON {on} AND IF(s.__fr_op = 'D', TRUE, "
        f"CAST({guard.error('t')} AS BOOLEAN))"
    )


def _overwrite(plan: ViewPlan, view: TableName, merge: Merge) -> str:
    """The MERGE as one statement replacing the whole view: the view's rows joined with
    the delta (a full outer join), each kept, updated, deleted or inserted as the MERGE
    would. For a view of a file or two, which a MERGE rewrites whole anyway, it saves the
    MERGE's extra pass to find the files to rewrite."""
    values = []
    for c in plan.view_columns:
        kept = f"t.{q(c)}"
        changed = merge.update.get(c, kept)
        new = merge.insert.get(c, kept)  # (no insert: a global aggregate's one row)
        values.append(
            f"CASE WHEN s.__fr_in IS NULL THEN {kept} WHEN t.__fr_in IS NULL THEN {new} "
            f"ELSE {changed} END AS {q(c)}"
        )
    join = "FULL OUTER JOIN" if merge.insert else "LEFT JOIN"
    return (
        f"{replace_all(view)} SELECT {', '.join(values)} FROM "
        f"(SELECT *, TRUE AS __fr_in FROM {view.sql}) t {join} "
        f"(SELECT *, TRUE AS __fr_in FROM ({merge.source})) s ON {merge.on or 'TRUE'} "
        f"WHERE NOT (t.__fr_in IS NOT NULL AND s.__fr_in IS NOT NULL AND "
        f"({merge.delete_when or 'FALSE'})) "
        f"AND NOT (t.__fr_in IS NULL AND NOT ({merge.insert_when or 'FALSE'}))"
    )
