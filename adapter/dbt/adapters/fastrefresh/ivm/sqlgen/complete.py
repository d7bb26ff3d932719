"""The complete refresh: the SELECT that builds the whole view on pinned masters."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlglot
from sqlglot import exp

from dbt.adapters.fastrefresh.iceberg.changes import select_list
from dbt.adapters.fastrefresh.iceberg.columns import AtSnapshot, Column
from dbt.adapters.fastrefresh.ivm.analysis import DIALECT, Shape, ViewPlan
from dbt.adapters.fastrefresh.ivm.inline import HAVING_COLUMN
from dbt.adapters.fastrefresh.ivm.plan import UnionBranch
from dbt.adapters.fastrefresh.ivm.sqlgen.render import null, q
from dbt.adapters.fastrefresh.ivm.union import UNION_COLUMN
from dbt.adapters.fastrefresh.sqltext import FLOATING_TYPES, TableName


def pin(table: exp.Table, snapshot: int | None) -> None:
    if snapshot is not None:
        table.set(
            "version",
            exp.Version(this="VERSION", kind="AS OF", expression=exp.Literal.number(snapshot)),
        )


def read_from(tree: exp.Select, alias: str, select: exp.Select) -> None:
    """Read the query's table ``alias`` from ``select`` (changed rows) instead."""
    table = next(t for t in tree.find_all(exp.Table) if t.alias_or_name.lower() == alias.lower())
    table.replace(exp.Subquery(this=select, alias=exp.TableAlias(this=exp.to_identifier(alias))))


def filled_read(master: TableName, snapshot: int, columns: Sequence[Column], at: AtSnapshot) -> str:
    """A read of ``master`` at ``snapshot`` with the table's current ``columns``, in their
    order: Iceberg reads a snapshot with the schema it was committed under (``at`` says
    how it differs), so a column added after it is NULL there, as Iceberg reads it in
    the data files written before it, and a renamed one is read by its old name."""
    return f"SELECT {select_list(columns, at)} FROM {master.sql} VERSION AS OF {snapshot}"


def pin_tables(
    tree: Any, pins: Mapping[TableName, int | None], fills: Mapping[TableName, str] | None = None
) -> Any:
    """Read every pinned master at its snapshot (``VERSION AS OF``); a master in ``fills``
    through that read (``filled_read``) instead."""
    for table in list(tree.find_all(exp.Table)):
        if not table.db:
            continue
        name = TableName(table.db.lower(), table.name.lower())
        if fills and name in fills:
            alias = exp.TableAlias(this=exp.to_identifier(table.alias_or_name))
            body = sqlglot.parse_one(fills[name], read=DIALECT)
            table.replace(exp.Subquery(this=body, alias=alias))
        else:
            pin(table, pins.get(name))
    return tree


def complete_select(
    plan: ViewPlan,
    pins: Mapping[TableName, int | None],
    fills: Mapping[TableName, str] | None = None,
) -> str:
    """The SELECT that builds the whole view, hidden columns included, on pinned masters
    (``fills``: see ``pin_tables``)."""
    if not plan.supported:
        try:
            tree = sqlglot.parse_one(plan.sql, read=DIALECT)
        except sqlglot.errors.SqlglotError:
            return plan.sql
        return pin_tables(tree, pins, fills).sql(dialect=DIALECT)
    if plan.shape is Shape.UNION_ALL:
        return " UNION ALL ".join(branch_select(plan, b, pins, fills=fills) for b in plan.branches)
    if plan.shape is Shape.PROJECTION and not plan.keyed:
        # Rows equal but for a FLOAT or DOUBLE -0.0 and 0.0 (in a value or inside one) are
        # two distinct rows; Spark takes them for one (``sqltext.sign_key``). The columns'
        # types are not known here: ``typeof`` folds to a constant, and the key to NULL
        # for a type without FLOAT or DOUBLE. A string tells the zeros apart.
        floating = "|".join(FLOATING_TYPES)
        names = ", ".join(
            [q(o.name) for o in plan.outputs]
            + [
                f"IF(typeof({q(o.name)}) RLIKE '{floating}', CAST({q(o.name)} AS STRING), NULL)"
                for o in plan.outputs
            ]
        )
        return (
            f"SELECT *, count(1) OVER (PARTITION BY {names}) AS __fr_multiplicity "
            f"FROM ({complete_tree(plan, pins, fills).sql(dialect=DIALECT)}) __fr_q"
        )
    return complete_tree(plan, pins, fills).sql(dialect=DIALECT)


def complete_tree(
    plan: ViewPlan,
    pins: Mapping[TableName, int | None],
    fills: Mapping[TableName, str] | None = None,
) -> exp.Select:
    """The qualified query on pinned masters with the hidden columns it computes (a
    DISTINCT as the GROUP BY it is); a key-less projection's multiplicity excepted."""
    tree = pin_tables(plan.query(), pins, fills)
    if plan.shape is Shape.AGGREGATE and tree.args.get("distinct") is not None:
        tree.set("distinct", None)  # over a GROUP BY it outputs whole, a no-op
        if tree.args.get("group") is None:
            tree = tree.group_by(*[not_ordinal(g) for g in plan.group_nodes], copy=False)
    extra = plan.hidden_selects()
    if extra:
        tree = tree.select(*extra, copy=False)
    return tree


def not_ordinal(group: exp.Expression) -> exp.Expression:
    """A group expression as GROUP BY may hold it: Spark reads an integer literal there as
    an output's position (``SELECT DISTINCT g, 0 AS z`` grouped by ``g, 0`` is grouped by
    ``g`` and a third output), so one is cast, which keeps its value and type. Spark's
    parser reads a negative one (``-1``) and one in parentheses as a literal too.

    >>> not_ordinal(sqlglot.parse_one("-(1)", read="spark")).sql("spark")
    'CAST(-(1) AS INT)'
    >>> not_ordinal(sqlglot.parse_one("-x", read="spark")).sql("spark")
    '-x'
    """
    core, sign = group.unnest(), 1
    if isinstance(core, exp.Neg):
        core, sign = core.this.unnest(), -1
    if (
        isinstance(core, exp.Literal)
        and not core.is_string
        and core.is_int
        and -(2**31) <= sign * int(core.this) < 2**31  # larger ones are BIGINT: not positions
    ):
        return exp.Cast(this=group.copy(), to=exp.DataType.build("int"))
    return group.copy()


def branch_select(
    plan: ViewPlan,
    branch: UnionBranch,
    pins: Mapping[TableName, int | None],
    types: Mapping[str, str] | None = None,
    fills: Mapping[TableName, str] | None = None,
) -> str:
    """The branch's rows over the pinned masters, as the union's columns: its outputs, its
    marker, the hidden columns it carries and NULL for the other branches' (typed by
    ``types``, the view's, when given)."""
    inner = complete_tree(branch.plan, pins, fills).sql(dialect=DIALECT)
    names = [o.name for o in plan.outputs]
    carried = {union: mine for mine, union in branch.carried}
    values = [f"n.{q(mine)} AS {q(name)}" for mine, name in zip(branch.outputs, names, strict=True)]
    values.append(f"{branch.index} AS {q(UNION_COLUMN)}")
    for name, _ in plan.hidden[1:]:
        if name in carried:
            values.append(f"n.{q(carried[name])} AS {q(name)}")
        else:
            values.append(f"{null(name, types) if types else 'NULL'} AS {q(name)}")
    where = f" WHERE n.{q(HAVING_COLUMN)}" if branch.plan.having else ""
    return f"SELECT {', '.join(values)} FROM ({inner}) n{where}"
