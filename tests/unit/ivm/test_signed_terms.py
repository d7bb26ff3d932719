"""The signed values an algebraic aggregate's delta sums (pure: the SQL text)."""

from __future__ import annotations

from dbt.adapters.fastrefresh.iceberg.columns import Column
from dbt.adapters.fastrefresh.ivm.analysis import analyze
from dbt.adapters.fastrefresh.ivm.sqlgen.aggregate import (
    NON_FINITE_FIX,
    NON_FINITE_LEFT,
    signed_terms,
)
from dbt.adapters.fastrefresh.sqltext import TableName

M = TableName("shop", "m")
COLUMNS = {M: [Column("k", "bigint"), Column("g", "string"), Column("d", "double"),
               Column("y", "decimal(10,2)")]}  # fmt: skip


def test_only_an_old_image_of_a_floating_point_sum_is_checked_for_nan_and_infinity() -> None:
    plan = analyze("select g, sum(d) as sd, avg(y) as ay from shop.m group by g", COLUMNS,
                   {M: ["k"]})  # fmt: skip
    sums = {plan.components[j]: j for j in plan.sum_components}
    d, y = sums["m.d"], sums["m.y"]
    types = {f"__fr_sum_{d}": "double", f"__fr_sum_{y}": "decimal(20,2)"}
    terms = {t.delta: t.signed for t in signed_terms(plan, types) if t.is_sum}
    value = f"CAST(__fr_a_{d} AS double)"
    checked = (
        f"IF(isnan({value}) OR abs({value}) = double('Infinity'), "
        f"CAST(raise_error('{NON_FINITE_LEFT}m.d{NON_FINITE_FIX}') AS double), {value})"
    )
    # A new image brings any value in, as SUM would; an old one stops on NaN or infinity.
    assert terms[f"__fr_d_sum_{d}"] == f"IF(__fr_sign > 0, {value}, -{checked})"
    decimal = f"CAST(__fr_a_{y} AS decimal(20,2))"
    assert terms[f"__fr_d_sum_{y}"] == f"IF(__fr_sign > 0, {decimal}, -{decimal})"
