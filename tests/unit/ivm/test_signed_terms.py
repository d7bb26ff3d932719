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


def test_a_floating_point_sum_counts_its_non_finite_values_apart() -> None:
    plan = analyze("select g, sum(d) as sd, avg(y) as ay from shop.m group by g", COLUMNS,
                   {M: ["k"]})  # fmt: skip
    sums = {plan.components[j]: j for j in plan.sum_components}
    d, y = sums["m.d"], sums["m.y"]
    types = {f"__fr_sum_{d}": "double", f"__fr_sum_{y}": "decimal(20,2)"}
    terms = {t.delta: t for t in signed_terms(plan, types) if t.is_sum}
    value = f"CAST(__fr_a_{d} AS double)"
    double = terms[f"__fr_d_sum_{d}"]
    # The finite part is summed; NaN, +Infinity and -Infinity are counted, each signed.
    assert double.signed == (
        f"IF(isnan({value}) OR abs({value}) = double('Infinity'), 0D, "
        f"IF(__fr_sign > 0, {value}, -{value}))"
    )
    assert [row for row, _ in double.counted()] == [
        f"IF(isnan({value}), __fr_sign, 0)",
        f"IF({value} = double('Infinity'), __fr_sign, 0)",
        f"IF({value} = double('-Infinity'), __fr_sign, 0)",
    ]
    # A group stops only where a kind's count falls (one left, none came back in).
    summed = double.summed("f", ["n", "p", "m"])
    assert summed.startswith("IF(least(n, p, m) < 0, CAST(raise_error(")
    assert f"'{NON_FINITE_LEFT}m.d{NON_FINITE_FIX}'" in summed
    assert summed.endswith(
        "f + IF(n > 0, double('NaN'), 0D) + IF(p > 0, double('Infinity'), 0D) "
        "+ IF(m > 0, double('-Infinity'), 0D))"
    )
    decimal = terms[f"__fr_d_sum_{y}"]
    cast = f"CAST(__fr_a_{y} AS decimal(20,2))"
    assert decimal.signed == f"IF(__fr_sign > 0, {cast}, -{cast})"
    assert decimal.counted() == [] and decimal.summed("f", []) == "f"
