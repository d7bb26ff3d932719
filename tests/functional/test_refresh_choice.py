"""Under `force`, a log range larger than a fraction of the master refreshes completely,
saying why in the registry; under `fast` the same range refreshes fast."""

from __future__ import annotations

import pytest

from dbt.adapters.fastrefresh import logs, refresh
from dbt.adapters.fastrefresh.clock import utcnow
from dbt.adapters.fastrefresh.executor import SparkExecutor
from dbt.adapters.fastrefresh.registry import Registry
from dbt.adapters.fastrefresh.sqltext import TableName

ROWS = refresh.CHEAP_RANGE  # updating every row logs 2 * ROWS rows: 200% of the master


@pytest.mark.parametrize("method", ["force", "fast"])
def test_large_log_range_refreshes_completely_under_force(spark, method: str) -> None:  # type: ignore[no-untyped-def]
    schema = f"choice_{method}"
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(f"CREATE TABLE {schema}.m (k BIGINT NOT NULL, g INT, x INT) USING iceberg")
    spark.sql(f"ALTER TABLE {schema}.m SET IDENTIFIER FIELDS k")
    spark.sql(f"INSERT INTO {schema}.m SELECT id, CAST(id % 10 AS INT), 1 FROM range({ROWS})")
    x = SparkExecutor(spark)
    registry = Registry(x, f"{schema}_registry")
    registry.ensure()
    logs.create_mview_log(x, registry, f"{schema}.m", None, False, None, utcnow)
    view, sql = TableName(schema, "v"), f"SELECT g, sum(x) AS sx FROM {schema}.m GROUP BY g"

    def run(exists: bool) -> refresh.RefreshResult:
        return refresh.refresh_view(x, registry, view, sql, method, False, exists, "", utcnow)

    assert run(False).refresh_type == "COMPLETE"
    spark.sql(f"UPDATE {schema}.m SET x = 2 WHERE k < 10")  # small: fast either way
    assert run(True).refresh_type == "FAST"
    spark.sql(f"UPDATE {schema}.m SET x = 3")  # every row: 2 * ROWS log rows
    result = run(True)
    expected = sorted(spark.sql(sql).collect())
    assert sorted(spark.sql(f"SELECT g, sx FROM {schema}.v").collect()) == expected
    row = registry.mview(view)
    assert row is not None
    if method == "force":
        assert result.refresh_type == "COMPLETE"
        assert "a complete refresh is cheaper" in (result.reason or "")
        assert row.last_fallback_reason == result.reason, "the reason is in the registry"
    else:
        assert result.refresh_type == "FAST", result.reason
        assert result.log_rows == 2 * ROWS
