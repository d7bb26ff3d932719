"""A refresh that reads few rows runs its statements without Spark's generated code, and
gives the session its settings back (``runtime/interpreted.py``)."""

from __future__ import annotations

import itertools
import os
from typing import Any

import pytest

from dbt.adapters.fastrefresh.engine import refresh
from dbt.adapters.fastrefresh.runtime import interpreted
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.functional.sites import keyed_master_with_log, matches

_counter = itertools.count()
SETTINGS = tuple(interpreted.CODEGEN_OFF)


def compiled_classes(spark: Any) -> int:
    """Classes Spark's code generator has compiled in this JVM so far (driver side)."""
    metrics = spark.sparkContext._jvm.org.apache.spark.metrics.source.CodegenMetrics
    return int(metrics.METRIC_COMPILATION_TIME().getCount())


@pytest.mark.usefixtures("product_settings")
def test_a_small_refresh_compiles_nothing_and_gives_the_settings_back(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = f"small_{next(_counter)}_{os.getpid()}"
    env = keyed_master_with_log(spark, schema, rows=200, groups=7)
    view = TableName(schema, "v")
    # A literal no other statement in this JVM has: Spark writes it into the generated
    # code, so a compiled run of this view's statements cannot reuse earlier classes.
    unique = 1_000_003 + next(_counter) * 7919 + os.getpid()
    sql = f"SELECT k, g, x FROM {schema}.m WHERE k <> {unique}"
    refresh.refresh_view(env, view=view, sql=sql, method="force", exists=False)
    before = {key: spark.conf.get(key, None) for key in SETTINGS}

    def change_and_refresh(k: int) -> int:
        spark.sql(f"UPDATE {schema}.m SET x = x + 1 WHERE k = {k}")
        start = compiled_classes(spark)
        result = refresh.refresh_view(env, view=view, sql=sql, method="force", exists=True)
        assert result.refresh_type == "FAST", result.reason
        return compiled_classes(spark) - start

    # 200 master rows, a 199-row view, two log rows: small. Capture and the delta run
    # interpreted. Spark compiles at most a row joiner, which its hash aggregation
    # generates in every mode (a few lines, cached by shape).
    interpreted_run = change_and_refresh(3)
    assert interpreted_run <= 1
    assert {key: spark.conf.get(key, None) for key in SETTINGS} == before
    assert matches(spark, view, sql)
    # Nothing counts as small: the same refresh compiles its statements (the check that
    # the count above could have been larger).
    monkeypatch.setattr(interpreted, "SMALL_ROWS", -1)
    assert change_and_refresh(5) >= 5
    assert {key: spark.conf.get(key, None) for key in SETTINGS} == before
    assert matches(spark, view, sql)


@pytest.mark.usefixtures("product_settings")
def test_a_refresh_beside_another_threads_statement_keeps_generated_code(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With another thread in a statement (a dbt model building), the small refresh does
    not turn generated code off under it: it compiles, as any refresh did before."""
    import threading

    schema = f"small_{next(_counter)}_{os.getpid()}"
    env = keyed_master_with_log(spark, schema, rows=50, groups=3)
    view = TableName(schema, "v")
    unique = 2_000_003 + next(_counter) * 7919 + os.getpid()
    sql = f"SELECT g, count(*) AS n, sum(x) AS s FROM {schema}.m WHERE k <> {unique} GROUP BY g"
    refresh.refresh_view(env, view=view, sql=sql, method="force", exists=False)
    inside, leave = threading.Event(), threading.Event()

    def other_statement() -> None:
        with interpreted.GATE.statement():
            inside.set()
            leave.wait(60)

    thread = threading.Thread(target=other_statement, daemon=True)
    thread.start()
    try:
        assert inside.wait(10)
        spark.sql(f"UPDATE {schema}.m SET x = x + 1 WHERE k = 4")
        start = compiled_classes(spark)
        result = refresh.refresh_view(env, view=view, sql=sql, method="force", exists=True)
        assert result.refresh_type == "FAST", result.reason
        assert compiled_classes(spark) - start > 0
        assert spark.conf.get(SETTINGS[0], None) is None  # never switched
    finally:
        leave.set()
        thread.join(10)
    assert matches(spark, view, sql)
