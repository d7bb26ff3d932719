"""Views stored merge-on-read (the user's `tblproperties`) refresh fast and right: their
MERGEs write delete files. Compacting a view (a `replace` commit, no row changed) keeps
the next refresh fast; any other change of the view outside a refresh still rebuilds it."""

from __future__ import annotations

import random
from typing import Any

import pytest

from dbt.adapters.fastrefresh.engine import refresh
from dbt.adapters.fastrefresh.runtime.executor import SparkExecutor
from dbt.adapters.fastrefresh.sqltext import TableName, replace_all
from tests.functional.sites import keyed_master_with_log, matches, refresh_and_check

SCHEMA = "viewmodes"
MERGE_ON_READ = refresh.TableSpec(
    properties={
        "write.merge.mode": "merge-on-read", "write.update.mode": "merge-on-read",
        "write.delete.mode": "merge-on-read", "format-version": "2",
    }
)  # fmt: skip
VIEWS = {
    "rows_v": f"SELECT k, g, x FROM {SCHEMA}.m WHERE x % 3 <> 0",
    "agg_v": f"SELECT g, count(*) AS n, sum(x) AS sx, max(x) AS mx FROM {SCHEMA}.m GROUP BY g",
}


def _operation(spark: Any, table: str) -> str:
    return str(
        spark.sql(
            f"SELECT operation FROM {table}.snapshots ORDER BY committed_at DESC LIMIT 1"
        ).collect()[0][0]
    )


def _delete_files(spark: Any, table: str) -> int:
    return int(spark.sql(f"SELECT count(*) FROM {table}.delete_files").collect()[0][0])


def test_merge_on_read_views_refresh_fast_and_survive_compaction(spark: Any) -> None:
    env = keyed_master_with_log(spark, SCHEMA, rows=200, groups=7)
    rng = random.Random(5)

    def refresh_all(
        first: bool, expect: str, rows_v: str | None = None
    ) -> dict[str, refresh.RefreshResult]:
        """Refresh both views, expecting refresh type ``expect`` (``rows_v`` for that one)."""
        results = {}
        for name, sql in VIEWS.items():
            results[name] = refresh_and_check(
                spark, env, TableName(SCHEMA, name), sql, exists=not first,
                expect=rows_v if name == "rows_v" and rows_v else expect, table=MERGE_ON_READ,
            )  # fmt: skip
        return results

    def change() -> None:
        top = 1000 + rng.randrange(10**6)
        spark.sql(f"INSERT INTO {SCHEMA}.m VALUES ({top}, {rng.randrange(7)}, {rng.randrange(9)})")
        spark.sql(
            f"UPDATE {SCHEMA}.m SET x = x + {rng.randrange(1, 5)} WHERE k % 11 = {rng.randrange(11)}"
        )
        spark.sql(
            f"UPDATE {SCHEMA}.m SET g = {rng.randrange(7)} WHERE k % 17 = {rng.randrange(17)}"
        )
        spark.sql(f"DELETE FROM {SCHEMA}.m WHERE k % 23 = {rng.randrange(23)}")

    refresh_all(first=True, expect="COMPLETE")
    for _ in range(3):
        change()
        refresh_all(first=False, expect="FAST")
    rows_v = f"{SCHEMA}.rows_v__fr_data"  # the view's storage table
    assert _delete_files(spark, rows_v) > 0, "the MERGEs wrote delete files: merge-on-read"

    # Compaction: every view's files rewritten with their deletes applied; no row changed.
    for name in VIEWS:
        spark.sql(
            f"CALL system.rewrite_data_files(table => '{SCHEMA}.{name}__fr_data', "
            "options => map('rewrite-all', 'true'))"
        )
        assert _operation(spark, f"{SCHEMA}.{name}__fr_data") == "replace"
    change()
    refresh_all(first=False, expect="FAST")

    # A real change of the view outside dbt-fastrefresh is still caught.
    spark.sql(f"DELETE FROM {rows_v} WHERE g = 1")
    change()
    results = refresh_all(first=False, expect="FAST", rows_v="COMPLETE")  # agg_v untouched
    assert "changed outside dbt-fastrefresh" in str(results["rows_v"].reason)


@pytest.mark.parametrize("path", ["java", "sql"])
def test_a_refresh_that_empties_a_view_empties_it_under_dynamic_overwrite(
    spark: Any, path: str
) -> None:
    """dbt-spark's ``insert_overwrite`` strategy sets Spark's dynamic partition overwrite
    mode for the whole session, and under it an ``INSERT OVERWRITE`` replaces only the
    partitions its rows reach: with no rows, nothing. The small view's one-statement delta
    and the complete refresh in place must still empty the view, or a partition of it,
    when its query returns no rows there."""
    schema = f"{SCHEMA}_dyn_{path}"
    env = keyed_master_with_log(spark, schema, rows=50, groups=5, path=path)
    views = {
        "rows_v": (f"SELECT k, g, x FROM {schema}.m WHERE x > 0", None),
        "agg_v": (f"SELECT g, count(*) AS n, sum(x) AS sx FROM {schema}.m GROUP BY g", None),
        # Two partitions, a file each: small enough for the one-statement delta.
        "part_v": (
            f"SELECT k, x, g % 2 AS p FROM {schema}.m",
            refresh.TableSpec(options="PARTITIONED BY (p)"),
        ),
    }

    def refresh_all(expect: str, *, exists: bool = True) -> None:
        for name, (sql, table) in views.items():
            view = TableName(schema, name)
            refresh_and_check(spark, env, view, sql, exists=exists, expect=expect, table=table)

    refresh_all("COMPLETE", exists=False)
    for name in views:  # each takes its delta as the statement replacing it whole
        record = refresh.load_view(env, TableName(schema, name))
        assert record is not None and refresh.overwrites(record), name
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        spark.sql(f"DELETE FROM {schema}.m WHERE g % 2 = 1")  # part_v's partition p = 1
        refresh_all("FAST")
        spark.sql(f"DELETE FROM {schema}.m WHERE k >= 0")
        refresh_all("FAST")
        spark.sql(f"INSERT INTO {schema}.m VALUES (1, 1, 1)")
        refresh_all("FAST")
        spark.sql(f"DELETE FROM {schema}.m WHERE k = 1")
        for name, (sql, table) in views.items():
            result = refresh.refresh_view(
                env, view=TableName(schema, name), sql=sql, method="complete", exists=True,
                table=table,
            )  # fmt: skip
            assert result.refresh_type == "COMPLETE", result.reason
            assert spark.sql(f"SELECT count(*) FROM {schema}.{name}").collect()[0][0] == 0, name
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")


@pytest.mark.parametrize("path", ["java", "sql"])
def test_a_view_takes_its_delta_in_one_statement_while_it_is_small(
    spark: Any, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy-on-write view of at most ``OVERWRITE_MAX_FILES`` data files, or of at most
    ``OVERWRITE_MAX_BYTES``, takes its delta as one statement replacing it, a larger one
    as a MERGE, on both paths. The Java path reads the count and size from the current
    snapshot's summary; the SQL path reads them after each commit (one ``.snapshots``
    query) while the view may be small, and keeps them in the view's state: a view it
    found large stays so, unread, until a complete refresh. (A view of more bytes than
    the threshold would take seconds to build here: the test lowers the threshold.)"""
    schema = f"{SCHEMA}_files_{path}"
    env = keyed_master_with_log(spark, schema, rows=20, groups=1, path=path)  # g = 0 only
    view, storage = TableName(schema, "part_v"), TableName(schema, "part_v__fr_data")
    sql = f"SELECT k, g, x FROM {schema}.m"
    table = refresh.TableSpec(options="PARTITIONED BY (g)")  # a file per group

    def data_files() -> int:
        return int(
            spark.sql(f"SELECT count(*) FROM {storage.metadata('data_files')}").collect()[0][0]
        )

    executor = env.sql
    assert isinstance(executor, SparkExecutor)

    def step(dml: str, expect: str = "FAST", method: str = "force") -> list[str]:
        """``dml`` on the master, then a refresh checked against the query: its statements."""
        spark.sql(dml)
        before = len(executor.statements)
        result = refresh.refresh_view(
            env, view=view, sql=sql, method=method, exists=True, table=table
        )
        assert result.refresh_type == expect, result.reason
        assert matches(spark, view, sql)
        return executor.statements[before:]

    def counted(ran: list[str]) -> bool:
        return any(storage.metadata("snapshots") in s for s in ran)

    def choice() -> bool:
        record = refresh.load_view(env, view)
        assert record is not None
        return refresh.overwrites(record)

    refresh_and_check(spark, env, view, sql, exists=False, expect="COMPLETE", table=table)
    assert data_files() == 1 and choice()
    # Two more groups: the one-statement delta writes three files.
    ran = step(f"INSERT INTO {schema}.m VALUES (100, 1, 1), (101, 2, 1)")
    assert any(replace_all(storage) in s for s in ran), "the one-statement delta"
    assert counted(ran) is (path == "sql"), "the SQL path reads the count after it"
    # Three files of a few hundred bytes: still one statement, which writes three again.
    assert data_files() == 3 and choice()
    ran = step(f"UPDATE {schema}.m SET x = 5 WHERE k = 101")
    assert any(replace_all(storage) in s for s in ran), "the one-statement delta"
    assert counted(ran) is (path == "sql")
    assert data_files() == 3 and choice()
    # Were those bytes more than a one-statement delta suits, it is large.
    size = refresh.load_view(env, view)
    assert size is not None and size.data_bytes is not None and size.data_bytes > 0
    monkeypatch.setattr(refresh, "OVERWRITE_MAX_BYTES", size.data_bytes // 2)
    assert not choice()
    ran = step(f"UPDATE {schema}.m SET x = 2 WHERE k = 100")
    assert any("MERGE INTO" in s for s in ran) and not counted(ran)
    # Back to one file: the Java path sees it; the SQL path keeps the view large, unread.
    ran = step(f"DELETE FROM {schema}.m WHERE g > 0")
    assert any("MERGE INTO" in s for s in ran) and not counted(ran)
    assert data_files() == 1 and choice() is (path == "java")
    # A complete refresh counts again.
    step(f"UPDATE {schema}.m SET x = 3 WHERE k = 1", expect="COMPLETE", method="complete")
    assert data_files() == 1 and choice()
    ran = step(f"UPDATE {schema}.m SET x = 4 WHERE k = 1")
    assert any(replace_all(storage) in s for s in ran)
