"""The model's view over its storage table after a complete refresh: created in one
statement when nothing has its name, and over the columns the rebuild gave the table, read
after the rebuild without reloading the table (the SQL path: one ``DESCRIBE``)."""

from __future__ import annotations

from typing import Any

import pytest

from dbt.adapters.fastrefresh.engine import refresh
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.runtime.executor import SparkExecutor
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.functional.sites import PATHS, keyed_master_with_log, refresh_and_check


def after_rebuild(statements: list[str], storage: str) -> list[str]:
    """The statements after the storage table's ``CREATE OR REPLACE TABLE`` (before it, a
    refresh on a shared catalog reads the table fresh: another process may have written)."""
    rebuilds = [
        i for i, s in enumerate(statements) if s.startswith(f"CREATE OR REPLACE TABLE {storage} ")
    ]
    assert len(rebuilds) == 1, statements
    return statements[rebuilds[0] + 1 :]


def read_once(statements: list[str], storage: str) -> None:
    """On the SQL path, after the rebuild: the storage table's columns from one
    ``DESCRIBE``, its properties read once (by the write of the view's state). A fresh
    load of the table, as before, would add a ``SHOW TBLPROPERTIES``."""
    described = [s for s in statements if s.startswith(f"DESCRIBE TABLE EXTENDED {storage}")]
    shown = [s for s in statements if s.startswith(f"SHOW TBLPROPERTIES {storage}")]
    assert (len(described), len(shown)) == (1, 1), statements


@pytest.mark.parametrize("path", PATHS)
def test_a_first_build_creates_its_view_and_a_rebuild_shows_its_new_columns(
    spark: Any, path: str
) -> None:
    schema = f"surface_{path}"
    env = keyed_master_with_log(spark, schema, rows=60, groups=4, path=path)
    assert isinstance(env.sql, SparkExecutor)
    statements = env.sql.statements
    view = TableName(schema, "v")
    storage = f"`{schema}`.`v__fr_data`"

    before = len(statements)
    narrow = f"SELECT g, count(*) AS n FROM {schema}.m GROUP BY g"
    refresh_and_check(spark, env, view, narrow, exists=False, expect="COMPLETE")
    built = statements[before:]
    creates = [s for s in built if s.startswith("CREATE VIEW `")]
    assert len(creates) == 1 and creates[0].startswith(f"CREATE VIEW {view.sql} "), built
    assert not [s for s in built if s.startswith(("DROP VIEW", "CREATE OR REPLACE VIEW"))]
    # The storage table was this session's own commit: not refreshed to read its columns.
    assert f"REFRESH TABLE {storage}" not in after_rebuild(built, storage), built
    if path == "sql":
        read_once(after_rebuild(built, storage), storage)
    assert spark.table(view.sql).columns == ["g", "n"]

    # The query changed: the table is replaced with more columns, and the view, which
    # exists now, is replaced over all of them.
    before = len(statements)
    wide = f"SELECT g, count(*) AS n, sum(x) AS sx FROM {schema}.m GROUP BY g"
    result = refresh_and_check(spark, env, view, wide, exists=True, expect="COMPLETE")
    assert result.reason is not None
    rebuilt = statements[before:]
    assert f"REFRESH TABLE {storage}" not in after_rebuild(rebuilt, storage), rebuilt
    if path == "sql":
        read_once(after_rebuild(rebuilt, storage), storage)
    assert [s for s in rebuilt if s.startswith(f"CREATE OR REPLACE VIEW {view.sql} ")], rebuilt
    assert spark.table(view.sql).columns == ["g", "n", "sx"]

    # Fewer columns again, after changes: the view follows, and its rows are the query's.
    spark.sql(f"UPDATE {schema}.m SET x = x + 2 WHERE k % 5 = 1")
    refresh_and_check(spark, env, view, narrow, exists=True, expect="COMPLETE")
    assert spark.table(view.sql).columns == ["g", "n"]


def no_plain_create(statements: list[str]) -> None:
    """No plain ``CREATE VIEW`` was tried: the read of the view's fingerprint found the
    name taken (a plain one would fail there, and a Thrift server logs that failure as
    an error with its stack)."""
    assert not [s for s in statements if s.startswith("CREATE VIEW ")], statements


@pytest.mark.parametrize("path", PATHS)
def test_a_view_of_another_query_on_the_name_is_replaced(spark: Any, path: str) -> None:
    """A view without the model's fingerprint (a dbt `view` model switched to
    fast_refresh) is dropped, without a plain CREATE VIEW tried first, and the model's
    view created in its place, answering the model's query."""
    schema = f"surface_switch_{path}"
    env = keyed_master_with_log(spark, schema, rows=40, groups=3, path=path)
    assert isinstance(env.sql, SparkExecutor)
    spark.sql(f"CREATE VIEW {schema}.v AS SELECT k AS other FROM {schema}.m")
    before = len(env.sql.statements)
    result = refresh.refresh_view(
        env, view=TableName(schema, "v"), sql=f"SELECT g, count(*) AS n FROM {schema}.m "
        "GROUP BY g", method="force", exists=False,
    )  # fmt: skip
    assert result.refresh_type == "COMPLETE"
    ran = env.sql.statements[before:]
    dropped = ran.index(f"DROP VIEW IF EXISTS `{schema}`.`v`")
    assert ran[dropped + 1].startswith(f"CREATE OR REPLACE VIEW `{schema}`.`v` "), ran
    no_plain_create(ran)
    assert spark.table(f"{schema}.v").columns == ["g", "n"]
    assert sorted(tuple(r) for r in spark.table(f"{schema}.v").collect()) == [
        (0, 14), (1, 13), (2, 13),
    ]  # fmt: skip


@pytest.mark.parametrize("path", PATHS)
def test_a_name_taken_between_its_read_and_the_create_is_replaced(spark: Any, path: str) -> None:
    """Another writer creates a view on the name after the refresh found it free: the
    plain CREATE VIEW fails, and the refresh drops that view and creates the model's."""
    schema = f"surface_race_{path}"
    env = keyed_master_with_log(spark, schema, rows=30, groups=3, path=path)
    assert isinstance(env.sql, SparkExecutor)
    read = env.tables.view_entry

    def then_taken(name: TableName, key: str) -> tuple[bool, str | None]:
        found = read(name, key)
        if name == TableName(schema, "v"):
            spark.sql(f"CREATE VIEW {schema}.v AS SELECT k AS other FROM {schema}.m")
        return found

    env.tables.view_entry = then_taken  # type: ignore[method-assign]
    before = len(env.sql.statements)
    refresh_and_check(
        spark, env, TableName(schema, "v"), f"SELECT g, count(*) AS n FROM {schema}.m GROUP BY g",
        exists=False, expect="COMPLETE",
    )  # fmt: skip
    ran = [s.split(" (")[0] for s in env.sql.statements[before:] if "VIEW" in s.split(" (")[0]]
    assert ran[-3:] == [
        f"CREATE VIEW `{schema}`.`v`", f"DROP VIEW IF EXISTS `{schema}`.`v`",
        f"CREATE OR REPLACE VIEW `{schema}`.`v`",
    ], ran  # fmt: skip
    assert spark.table(f"{schema}.v").columns == ["g", "n"]


@pytest.mark.parametrize("path", PATHS)
def test_a_table_on_the_name_is_reported_with_the_fix_and_kept(spark: Any, path: str) -> None:
    """A table where the model's view goes (left by another materialization, refreshed
    here without dbt's materialization, which would drop it): the name is found taken,
    the replacing CREATE VIEW fails, and the refresh stops with the cause and the fix;
    the table keeps its rows."""
    schema = f"surface_table_{path}"
    env = keyed_master_with_log(spark, schema, rows=20, groups=2, path=path)
    spark.sql(f"CREATE TABLE {schema}.v USING iceberg AS SELECT 7 AS other")
    assert isinstance(env.sql, SparkExecutor)
    before = len(env.sql.statements)
    with pytest.raises(FastRefreshError) as raised:
        refresh.refresh_view(
            env, view=TableName(schema, "v"), sql=f"SELECT g, count(*) AS n FROM {schema}.m "
            "GROUP BY g", method="force", exists=False,
        )  # fmt: skip
    message = str(raised.value)
    assert f"{schema}.v is a table" in message and "Fix: dbt run the model" in message, message
    assert [tuple(r) for r in spark.table(f"{schema}.v").collect()] == [(7,)]
    no_plain_create(env.sql.statements[before:])
