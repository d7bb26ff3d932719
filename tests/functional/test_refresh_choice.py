"""Under `force`, a log range larger than a fraction of the master refreshes completely,
saying why in the registry; under `fast` the same range refreshes fast. A refresh that
must read a master snapshot expired since the view's last refresh falls back (`force`) or
fails naming cause and fix (`fast`)."""

from __future__ import annotations

from typing import Any

import pytest

from dbt.adapters.fastrefresh.engine import refresh
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.mlog import capture
from dbt.adapters.fastrefresh.mlog import ddl as mlog
from dbt.adapters.fastrefresh.mlog.consumers import read_view_state
from dbt.adapters.fastrefresh.protocol.decisions import ReasonCode
from dbt.adapters.fastrefresh.protocol.env import Env
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.functional.sites import env_for, keyed_master_with_log

ROWS = refresh.CHEAP_RANGE  # updating every row logs 2 * ROWS rows: 200% of the master


@pytest.mark.parametrize("method", ["force", "fast"])
def test_large_log_range_refreshes_completely_under_force(spark, method: str) -> None:  # type: ignore[no-untyped-def]
    schema = f"choice_{method}"
    env = keyed_master_with_log(spark, schema, rows=ROWS, groups=10)
    view, sql = TableName(schema, "v"), f"SELECT g, sum(x) AS sx FROM {schema}.m GROUP BY g"

    def run(exists: bool) -> refresh.RefreshResult:
        return refresh.refresh_view(env, view=view, sql=sql, method=method, exists=exists)

    assert run(False).refresh_type == "COMPLETE"
    spark.sql(f"UPDATE {schema}.m SET x = 2 WHERE k < 10")  # small: fast either way
    assert run(True).refresh_type == "FAST"
    spark.sql(f"UPDATE {schema}.m SET x = 3")  # every row: 2 * ROWS log rows
    result = run(True)
    expected = sorted(spark.sql(sql).collect())
    assert sorted(spark.sql(f"SELECT g, sx FROM {schema}.v").collect()) == expected
    state = read_view_state(env, view)
    assert state is not None
    if method == "force":
        assert result.refresh_type == "COMPLETE"
        assert result.reason is not None and result.reason.code is ReasonCode.RANGE_TOO_LARGE
        assert "a complete refresh is cheaper" in str(result.reason)
        assert state.last_fallback_reason == str(result.reason), "the reason is kept"
    else:
        assert result.refresh_type == "FAST", str(result.reason)
        assert result.log_rows == 2 * ROWS


def _fact_and_dimension(
    spark: Any,
    schema: str,
    dimension_files: int = 1,
) -> Env:
    """A fact `a` (k, g, x) of 20 rows, a dimension `b` (g, region), and a registry."""
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(f"CREATE TABLE {schema}.a (k BIGINT NOT NULL, g INT, x INT) USING iceberg")
    spark.sql(f"CREATE TABLE {schema}.b (g INT NOT NULL, region STRING) USING iceberg")
    spark.sql(f"INSERT INTO {schema}.a SELECT id, CAST(id % 4 AS INT), 1 FROM range(20)")
    rows = ["(0, 'n')", "(1, 's')", "(2, 'n')", "(3, 'e')"]
    per_file = len(rows) // dimension_files
    for start in range(0, len(rows), per_file):  # one INSERT (one file) per slice
        spark.sql(f"INSERT INTO {schema}.b VALUES {', '.join(rows[start : start + per_file])}")
    return env_for(spark, f"{schema}_registry")


def _join_aggregate(env: Env, schema: str) -> str:
    """Logs on `a` (full) and `b` (key only); an aggregate over their join."""
    mlog.create_mview_log(env, f"{schema}.a", key=["k"])
    mlog.create_mview_log(env, f"{schema}.b", columns=[], key=["g"])
    return (
        f"SELECT b.region, sum(a.x) AS sx, count(*) AS n FROM {schema}.a a "
        f"JOIN {schema}.b b ON a.g = b.g GROUP BY b.region"
    )


@pytest.mark.parametrize("method", ["force", "fast"])
@pytest.mark.parametrize("shape", ["join_aggregate", "key_only_log"])
def test_expired_snapshot_the_refresh_reads_falls_back_or_fails_clearly(
    spark: Any,
    shape: str,
    method: str,
) -> None:
    # Both shapes read a master as the view last reflected it: the delta rule of an
    # aggregate over a join, and a log holding only the key (the rest by time travel).
    schema = f"expired_{shape}_{method}"
    env = _fact_and_dimension(spark, schema)
    if shape == "join_aggregate":
        sql = _join_aggregate(env, schema)
    else:
        mlog.create_mview_log(env, f"{schema}.a", columns=[], key=["k"])
        sql = f"SELECT g, sum(x) AS sx, count(*) AS n FROM {schema}.a GROUP BY g"
    view = TableName(schema, "v")

    def run(exists: bool) -> refresh.RefreshResult:
        return refresh.refresh_view(env, view=view, sql=sql, method=method, exists=exists)

    def rows() -> list[object]:  # the query's columns (the view keeps hidden ones)
        return sorted(
            spark.sql(f"SELECT {', '.join(spark.sql(sql).columns)} FROM {view.sql}").collect()
        )

    assert run(False).refresh_type == "COMPLETE"
    spark.sql(f"UPDATE {schema}.a SET x = 5 WHERE k < 3")
    assert run(True).refresh_type == "FAST"  # the view now reflects this snapshot of a
    spark.sql(f"UPDATE {schema}.a SET x = 7, g = 3 WHERE k = 4")
    # The delta rule reads b as it was for a's changes: b must have changed too.
    expired = "b" if shape == "join_aggregate" else "a"
    if expired == "b":
        spark.sql(f"UPDATE {schema}.b SET region = 's' WHERE g = 2")
    for master in ("a", expired):  # the logs are complete...
        capture.capture(env, TableName(schema, master))
    spark.sql(
        f"CALL spark_catalog.system.expire_snapshots(table => '{schema}.{expired}', "
        "older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)"
    )  # ...but the snapshot the view last reflected is gone
    if method == "fast":
        before = rows()
        with pytest.raises(
            FastRefreshError, match=r"is gone \(expire_snapshots.*Fix: .*older_than"
        ):
            run(True)
        assert rows() == before, "the failed refresh left the view as it was"
        method = "force"
    result = run(True)
    assert result.refresh_type == "COMPLETE"
    assert result.reason is not None and result.reason.code is ReasonCode.HISTORY_GONE
    assert "expire_snapshots removed it" in str(result.reason)
    assert rows() == sorted(spark.sql(sql).collect())
    spark.sql(f"DELETE FROM {schema}.a WHERE k = 5")
    assert run(True).refresh_type == "FAST", "fast again from the rebuilt view's snapshot"
    assert rows() == sorted(spark.sql(sql).collect())


def test_a_compacted_and_expired_unchanged_dimension_keeps_the_join_aggregate_fast(
    spark: Any,
) -> None:
    # Compaction commits change no row and give no log rows: the dimension as the view
    # last reflected it is its current snapshot, so expiring the older ones costs nothing.
    schema = "expired_compacted"
    env = _fact_and_dimension(spark, schema, dimension_files=4)
    sql = _join_aggregate(env, schema)
    view = TableName(schema, "v")

    def run() -> refresh.RefreshResult:
        exists = spark.catalog.tableExists(view.sql.replace("`", ""))
        return refresh.refresh_view(env, view=view, sql=sql, method="fast", exists=exists)

    assert run().refresh_type == "COMPLETE"
    before = spark.sql(f"SELECT snapshot_id FROM {schema}.b.snapshots").collect()
    spark.sql(
        f"CALL spark_catalog.system.rewrite_data_files(table => '{schema}.b', options => map('min-input-files', '2'))"
    )
    spark.sql(
        f"CALL spark_catalog.system.expire_snapshots(table => '{schema}.b', "
        "older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)"
    )
    after = spark.sql(f"SELECT snapshot_id FROM {schema}.b.snapshots").collect()
    assert len(after) == 1 and after[0] not in before, "the reflected snapshot is gone"
    spark.sql(f"UPDATE {schema}.a SET x = 9 WHERE k < 6")
    result = run()
    assert result.refresh_type == "FAST", str(result.reason)
    columns = ", ".join(spark.sql(sql).columns)
    assert sorted(spark.sql(f"SELECT {columns} FROM {view.sql}").collect()) == sorted(
        spark.sql(sql).collect()
    )
