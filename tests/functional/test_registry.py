"""The registry: what a publish shows, its versioning, and the migration of release 0.1's
registry in place (nothing it held is lost; views keep refreshing fast)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import pytest

from dbt.adapters.fastrefresh import admin
from dbt.adapters.fastrefresh.engine import refresh
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.iceberg import columns as mt
from dbt.adapters.fastrefresh.iceberg.sql import SqlTables
from dbt.adapters.fastrefresh.ivm.analysis import query_hash
from dbt.adapters.fastrefresh.mlog import ddl as mlog
from dbt.adapters.fastrefresh.registry import store as registry
from dbt.adapters.fastrefresh.runtime.executor import SparkExecutor
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.functional.sites import SHARED, env_for, keyed_master_with_log, matches

# Release 0.1's registry tables (registry version 1), as it created them.
V1 = {
    "mview_logs": "master STRING, log_table STRING, flavour STRING, key_columns ARRAY<STRING>, "
    "logged_columns ARRAY<STRING>, master_columns ARRAY<STRING>, keyless BOOLEAN, created "
    "TIMESTAMP_NTZ, oldest TIMESTAMP_NTZ, youngest TIMESTAMP_NTZ, last_purge_time "
    "TIMESTAMP_NTZ, last_purge_rows BIGINT, captured_through BIGINT, captured_at TIMESTAMP_NTZ, "
    "last_sequence BIGINT, marked_sequence BIGINT, purged_through TIMESTAMP_NTZ, "
    "purged_sequence BIGINT, younger_than TIMESTAMP_NTZ, younger_reason STRING",
    "mview_log_users": "log_table STRING, master STRING, mview STRING, registered_at "
    "TIMESTAMP_NTZ, last_refresh TIMESTAMP_NTZ, last_sequence BIGINT, master_snapshot BIGINT",
    "mviews": "mview STRING, query_hash STRING, refresh_method STRING, masters ARRAY<STRING>, "
    "shape STRING, last_refresh_type STRING, last_refresh_time TIMESTAMP_NTZ, staleness STRING, "
    "last_fallback_reason STRING, view_snapshot BIGINT, master_snapshots MAP<STRING, BIGINT>, "
    "master_schema_hash STRING, registered_at TIMESTAMP_NTZ, definition STRING, table_options STRING",
    "refresh_runs": "run_id STRING, mview STRING, started TIMESTAMP_NTZ, ended TIMESTAMP_NTZ, "
    "refresh_type STRING, reason STRING, log_rows_read BIGINT, rows_applied BIGINT, status "
    "STRING, error STRING, phase_seconds MAP<STRING, DOUBLE>",
    "capture_runs": "log_table STRING, master STRING, captured_at TIMESTAMP_NTZ, from_snapshot "
    "BIGINT, to_snapshot BIGINT, snapshots BIGINT, first_sequence BIGINT, last_sequence BIGINT, "
    "log_rows BIGINT, oldest_commit TIMESTAMP_NTZ, newest_commit TIMESTAMP_NTZ, seconds DOUBLE",
}
T0 = dt.datetime(2026, 1, 2, 3, 4, 5)


def _tables(spark: Any, schema: str) -> set[str]:
    """The tables and views of ``schema``. SHOW TABLES also lists the session's temporary
    views (another test's, in this worker); an Iceberg catalog's views (the JDBC catalog's)
    only SHOW VIEWS lists."""
    names = set()
    for listing in ("TABLES", "VIEWS"):
        rows = spark.sql(f"SHOW {listing} IN {schema}").collect()
        names |= {r[1] for r in rows if not r[2]}
    return names


@pytest.mark.parametrize("path", ["java", "sql"])
def test_ensure_creates_a_missing_schema_and_lists_a_present_one_alone(
    spark: Any, path: str
) -> None:
    """``ensure_registry`` (every dbt run's start hook) on a registry that is there runs its
    two listings and, on the SQL path, reads the version property: no CREATE SCHEMA (the
    listings fail without the schema, which is then created), and on the Java path no
    statement for the version (Iceberg's Java API reads it)."""
    schema = f"reg_listed_{path}"
    env = env_for(spark, schema, path)
    statements: list[str] = []
    query, execute = env.sql.query, env.sql.execute

    def recorded(run: Any) -> Any:
        def call(sql: str) -> Any:
            statements.append(sql.split()[0] + " " + sql.split()[1])
            return run(sql)

        return call

    env.sql.query, env.sql.execute = recorded(query), recorded(execute)  # type: ignore[method-assign]
    registry.ensure(env, again=True)
    assert _tables(spark, schema) == {"registry", "leases", *registry.VIEWS}
    # Spark's catalog lists no views of a missing schema; Iceberg's (a shared one) fails.
    assert statements[0] == "SHOW VIEWS" and "CREATE SCHEMA" in statements[1:3], statements
    statements.clear()
    registry.ensure(env, again=True)
    listings = ["SHOW VIEWS", "SHOW TABLES"]
    assert statements == listings + (["SHOW TBLPROPERTIES"] if path == "sql" else []), statements
    # The version is still checked on both paths.
    spark.sql(
        f"ALTER TABLE {schema}.registry SET TBLPROPERTIES ('{registry.VERSION_PROPERTY}'='99')"
    )
    with pytest.raises(FastRefreshError, match=r"newer dbt-fastrefresh.*version 99.*upgrade"):
        registry.ensure(env, again=True)


def test_a_foreign_table_named_like_the_registry_is_refused(spark: Any) -> None:
    spark.sql("CREATE SCHEMA reg_foreign")
    spark.sql("CREATE TABLE reg_foreign.registry (x INT) USING iceberg")
    env = env_for(spark, "reg_foreign")
    with pytest.raises(FastRefreshError, match=r"not a dbt-fastrefresh registry.*Fix:"):
        registry.ensure(env)
    assert _tables(spark, "reg_foreign") == {"registry"}, "nothing created beside it"


def test_a_registry_of_a_newer_release_is_refused(spark: Any) -> None:
    spark.sql("CREATE SCHEMA reg_newer")
    spark.sql(
        "CREATE TABLE reg_newer.registry (x INT) USING iceberg "
        f"TBLPROPERTIES ('{registry.VERSION_PROPERTY}'='99')"
    )
    with pytest.raises(FastRefreshError, match=r"newer dbt-fastrefresh.*version 99.*upgrade"):
        registry.ensure(env_for(spark, "reg_newer"))


def test_a_foreign_table_named_like_a_registry_view_is_refused(spark: Any) -> None:
    spark.sql("CREATE SCHEMA reg_foreign_view")
    spark.sql("CREATE TABLE reg_foreign_view.mviews (x INT) USING iceberg")
    with pytest.raises(FastRefreshError, match=r"mviews is a table.*Fix:"):
        registry.ensure(env_for(spark, "reg_foreign_view"))


def test_a_temporary_view_is_not_taken_for_a_table(spark: Any) -> None:
    """SHOW TABLES lists the session's temporary views in every schema: a view named like
    a registry object or a master must not pass for it."""
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW mviews AS SELECT 1 AS x")
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW orders_tmp AS SELECT 1 AS x")
    try:
        env = env_for(spark, "reg_temp")
        registry.ensure(env)
        assert _tables(spark, "reg_temp") == {"registry", "leases", *registry.VIEWS}
        # ``table_names`` lists views from SHOW TABLES, which on Iceberg's own catalog (a
        # shared one) leaves them out: there the registry's views are not listed.
        assert mt.table_exists(env.sql, TableName("reg_temp", "mviews")) is not SHARED
        assert not mt.table_exists(env.sql, TableName("reg_temp", "orders_tmp"))
        # The SQL path's load asks DESCRIBE alone: a qualified name never finds a temp view.
        assert SqlTables(env.sql).load(TableName("reg_temp", "orders_tmp")) is None
    finally:
        spark.sql("DROP VIEW IF EXISTS mviews")
        spark.sql("DROP VIEW IF EXISTS orders_tmp")


def test_the_sql_path_loads_in_two_statements_and_once_inside_reading(spark: Any) -> None:
    """A missing table (or schema) is None from one failed DESCRIBE; inside ``reading`` a
    table's first load answers the next (another writer's commit is seen after the block),
    and a write through the same object ends the reuse."""
    spark.sql("CREATE SCHEMA reg_reading")
    spark.sql("CREATE TABLE reg_reading.t (k BIGINT) USING iceberg")
    spark.sql("INSERT INTO reg_reading.t VALUES (1)")
    x = SparkExecutor(spark)
    tables = SqlTables(x)
    t = TableName("reg_reading", "t")
    assert tables.load(TableName("reg_reading", "absent")) is None
    assert tables.load(TableName("reg_reading_absent", "t")) is None
    assert x.statements == ["DESCRIBE TABLE EXTENDED `reg_reading`.`absent`",
                            "DESCRIBE TABLE EXTENDED `reg_reading_absent`.`t`"]  # fmt: skip

    class Dropped(SparkExecutor):
        def query(self, sql: str) -> list[tuple[Any, ...]]:
            raise RuntimeError("Connection reset by peer")

    with pytest.raises(RuntimeError, match="Connection reset"):  # not taken for "missing"
        SqlTables(Dropped(spark)).load(t)
    before = len(x.statements)
    first = tables.load(t)
    assert first is not None and first.iceberg and [c.name for c in first.columns] == ["k"]
    assert x.statements[before:] == ["DESCRIBE TABLE EXTENDED `reg_reading`.`t`",
                                     "SHOW TBLPROPERTIES `reg_reading`.`t`"]  # fmt: skip
    with tables.reading():
        inside = tables.load(t)
        spark.sql("INSERT INTO reg_reading.t VALUES (2)")
        before = len(x.statements)
        assert tables.load(t, fresh=True) == inside
        assert len(x.statements) == before, "the first load inside the block answers"
        tables.set_properties(t, {"fast_refresh.probe": "1"})
        reread = tables.load(t)
        assert reread is not None and reread.properties == {"fast_refresh.probe": "1"}
        assert reread.current_snapshot != inside.current_snapshot  # type: ignore[union-attr]
    after = tables.load(t, fresh=True)
    assert after is not None and after.current_snapshot == reread.current_snapshot
    # load_state: the same but the columns, from SHOW TBLPROPERTIES alone.
    before = len(x.statements)
    assert tables.load_state(t) == dataclasses.replace(after, columns=())
    assert x.statements[before:] == ["SHOW TBLPROPERTIES `reg_reading`.`t`"]
    # Inside ``reading`` a table's state answers the next read of its state, and a full
    # load of it then adds its columns alone; a write through the object ends the reuse.
    with tables.reading():
        before = len(x.statements)
        state = tables.load_state(t)
        assert tables.load_state(t) == state
        assert tables.load(t) == after and tables.load_state(t) == after
        assert x.statements[before:] == ["SHOW TBLPROPERTIES `reg_reading`.`t`",
                                         "DESCRIBE TABLE EXTENDED `reg_reading`.`t`"]  # fmt: skip
        tables.set_properties(t, {"fast_refresh.probe": "2"})
        before = len(x.statements)
        changed = tables.load_state(t)
        assert changed is not None and changed.properties == {"fast_refresh.probe": "2"}
        assert x.statements[before:] == ["SHOW TBLPROPERTIES `reg_reading`.`t`"]
    assert tables.load_state(TableName("reg_reading", "absent"), fresh=True) is None
    spark.sql("CREATE TABLE reg_reading.p (k BIGINT) USING parquet")
    plain = tables.load_state(TableName("reg_reading", "p"))
    # A shared catalog's session catalog is Iceberg's SparkCatalog: every table it makes
    # is an Iceberg table, whatever USING says.
    assert plain is not None and plain.iceberg is SHARED
    assert plain.provider == ("iceberg" if SHARED else "parquet")


def test_a_block_that_keeps_some_tables_reads_the_others_at_each_call(spark: Any) -> None:
    """``SqlTables.reading(keep=...)``: the tables ``keep`` accepts are read once, the
    others at each call; a write through the object forgets the table it writes alone, a
    write by another path is seen at the next read of a table not kept; a block without
    ``keep`` nested in it reads every table once, and what it read of the others is
    dropped when it ends."""
    spark.sql("CREATE SCHEMA reg_keep")
    for name, value in (("kept", "1"), ("other", None)):
        spark.sql(f"CREATE TABLE reg_keep.{name} (k BIGINT) USING iceberg")
        spark.sql(f"INSERT INTO reg_keep.{name} VALUES (1)")
        if value:
            spark.sql(f"ALTER TABLE reg_keep.{name} SET TBLPROPERTIES ('fast_refresh.kept'='1')")
    x = SparkExecutor(spark)
    tables = SqlTables(x)
    kept, other = TableName("reg_keep", "kept"), TableName("reg_keep", "other")
    show = "SHOW TBLPROPERTIES `reg_keep`.`{}`".format
    with tables.reading(keep=lambda properties: "fast_refresh.kept" in properties):
        before = len(x.statements)
        first = tables.load_state(other)
        tables.load_state(kept)
        # Written by another path (a statement, not this object): seen at the next read.
        spark.sql("INSERT INTO reg_keep.other VALUES (2)")
        second = tables.load_state(other)
        assert first is not None and second is not None
        assert second.current_snapshot != first.current_snapshot
        assert tables.load_state(kept) is not None
        assert x.statements[before:] == [show("other"), show("kept"), show("other")]
        # A write through the object forgets the table it writes alone.
        tables.set_properties(other, {"fast_refresh.probe": "1"})
        before = len(x.statements)
        tables.load_state(kept)
        assert x.statements[before:] == [], "the kept table is still read once"
        tables.set_properties(kept, {"fast_refresh.probe": "1"})
        assert tables.load_state(kept).properties["fast_refresh.probe"] == "1"  # type: ignore[union-attr]
        assert x.statements[-1] == show("kept")
        with tables.reading():
            before = len(x.statements)
            tables.load_state(other)
            tables.load_state(other)
            tables.load_state(kept)
            assert x.statements[before:] == [show("other")]
        before = len(x.statements)
        tables.load_state(other)
        tables.load_state(kept)
        assert x.statements[before:] == [show("other")]


def test_the_sql_path_tells_a_table_from_a_view_by_one_fresh_read(spark: Any) -> None:
    """``iceberg_table`` on the SQL path: a table in three statements (its fresh load), a
    view in two whose properties answer the view-property call after them, and the view's
    name asked for its property at once the next time; a name that becomes a table is
    taken as one again after its first fresh load. (On a JDBC catalog Iceberg's views do
    not refresh: the view is asked for its property then, two statements too.)"""
    s = "reg_tell"
    spark.sql(f"CREATE SCHEMA {s}")
    spark.sql(f"CREATE TABLE {s}.t (k BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {s}.t VALUES (1)")
    spark.sql(
        f"CREATE VIEW {s}.v TBLPROPERTIES ('fast_refresh.view-of'='abc') AS SELECT k FROM {s}.t"
    )
    t, v = TableName(s, "t"), TableName(s, "v")
    key = "fast_refresh.view-of"
    x = SparkExecutor(spark)
    tables = SqlTables(x)
    first = tables.iceberg_table(t)
    assert first == tables.load(t, fresh=True)
    assert first is not None and first.iceberg and first.current_snapshot is not None
    assert x.statements[:3] == [f"REFRESH TABLE `{s}`.`t`", f"SHOW TBLPROPERTIES `{s}`.`t`",
                                f"DESCRIBE TABLE EXTENDED `{s}`.`t`"]  # fmt: skip
    before = len(x.statements)
    assert tables.iceberg_table(v) is None
    assert tables.view_property(v, key) == "abc"
    # On a JDBC catalog the view refuses REFRESH TABLE: it is asked for its property.
    shown = f"SHOW TBLPROPERTIES `{s}`.`v`" + (f" ('{key}')" if SHARED else "")
    assert x.statements[before:] == [f"REFRESH TABLE `{s}`.`v`", shown]
    before = len(x.statements)
    assert tables.iceberg_table(v) is None  # known not to be a table: no statement
    assert tables.view_property(v, key) == "abc"
    assert x.statements[before:] == [f"SHOW TBLPROPERTIES `{s}`.`v` ('{key}')"]
    assert tables.iceberg_table(TableName(s, "absent")) is None
    # The view replaced by a table: asked as a view first, then loaded, then a table again.
    spark.sql(f"DROP VIEW {s}.v")
    spark.sql(f"CREATE TABLE {s}.v (k BIGINT) USING iceberg")
    fresh = SqlTables(x)
    assert fresh.iceberg_table(v) is None and fresh.view_property(v, key) is None
    loaded = fresh.load(v, fresh=True)
    assert loaded is not None and loaded.iceberg
    assert fresh.iceberg_table(v) == loaded

    class CommitAfterShow(SparkExecutor):
        """A commit to the table between its properties and its columns."""

        def query(self, sql: str) -> list[tuple[Any, ...]]:
            rows = super().query(sql)
            if sql.startswith("SHOW TBLPROPERTIES") and len(self.statements) == 2:
                spark.sql(f"INSERT INTO {s}.t VALUES (2)")
            return rows

    raced = CommitAfterShow(spark)
    meta = SqlTables(raced).iceberg_table(t)  # the snapshot of the columns, or later
    assert raced.statements == [f"REFRESH TABLE `{s}`.`t`", f"SHOW TBLPROPERTIES `{s}`.`t`",
                                f"DESCRIBE TABLE EXTENDED `{s}`.`t`",
                                f"SHOW TBLPROPERTIES `{s}`.`t`"]  # fmt: skip
    now = SqlTables(x).load(t, fresh=True)
    assert meta is not None and now is not None
    assert meta.current_snapshot == now.current_snapshot != first.current_snapshot


@pytest.mark.parametrize("path", ["java", "sql"])
def test_a_view_property_read_tells_a_free_name_from_a_taken_one(spark: Any, path: str) -> None:
    """``view_entry``: one read gives a view's property and whether anything has the
    name, so that a first build creates its view with a plain CREATE VIEW and a name
    taken by a view of another query or by a table is never tried that way."""
    s = f"reg_entry_{path}"
    spark.sql(f"CREATE SCHEMA {s}")
    spark.sql(f"CREATE TABLE {s}.t (k BIGINT) USING iceberg")
    spark.sql(f"CREATE VIEW {s}.plain AS SELECT k FROM {s}.t")
    spark.sql(
        f"CREATE VIEW {s}.marked TBLPROPERTIES ('fast_refresh.view-of'='abc') AS "
        f"SELECT k FROM {s}.t"
    )
    tables = env_for(spark, f"{s}_registry", path).tables
    key = "fast_refresh.view-of"
    entries = {n: tables.view_entry(TableName(s, n), key) for n in ("free", "t", "plain", "marked")}
    assert entries == {
        "free": (False, None), "t": (True, None), "plain": (True, None), "marked": (True, "abc"),
    }  # fmt: skip
    assert [tables.view_property(TableName(s, n), key) for n in entries] == [
        None, None, None, "abc",
    ]  # fmt: skip
    # Several properties in the one read (a query over a fast_refresh view reads its
    # fingerprint and its column order): those it has.
    spark.sql(f"ALTER VIEW {s}.marked SET TBLPROPERTIES ('fast_refresh.view-order'='[\"k\"]')")
    keys = (key, "fast_refresh.view-order", "absent")
    assert {n: tables.view_entries(TableName(s, n), keys) for n in entries} == {
        "free": (False, {}), "t": (True, {}), "plain": (True, {}),
        "marked": (True, {key: "abc", "fast_refresh.view-order": '["k"]'}),
    }  # fmt: skip


def test_a_refresh_with_nothing_to_capture_reads_its_log_once(spark: Any) -> None:
    """A refresh whose log holds every change of its master already (none, or captured by
    another view's refresh) takes the log as it first read it: no second load under the
    log's lock. SQL path, where each load is statements (a shared catalog reads its state
    again, fresh, by design). No load describes the log: its columns are the recorded
    ones while the master's types are (``LogConfig.column_types``)."""
    schema = "reg_log_once"
    env = keyed_master_with_log(spark, schema, rows=10, groups=3, path="sql")
    log = f"DESCRIBE TABLE EXTENDED `{schema}`.`mlog__m`"
    properties = f"SHOW TBLPROPERTIES `{schema}`.`mlog__m`"
    views = {
        TableName(schema, "v"): f"SELECT g, count(*) AS n FROM {schema}.m GROUP BY g",
        TableName(schema, "w"): f"SELECT k, x FROM {schema}.m WHERE g = 1",
    }
    for view, sql in views.items():
        refresh.refresh_view(env, view=view, sql=sql, method="force", exists=False)
    v, w = views
    statements = env.sql.statements  # type: ignore[attr-defined]

    def refresh_w_reading_the_log_once(step: str) -> None:
        before = len(statements)
        result = refresh.refresh_view(env, view=w, sql=views[w], method="force", exists=True)
        assert result.refresh_type == "FAST", (step, result.reason)
        assert statements[before:].count(log) == 0, (step, statements[before:])
        assert SHARED or statements[before:].count(properties) == 1, step
        assert matches(spark, w, views[w]), step

    refresh_w_reading_the_log_once("no change")
    spark.sql(f"UPDATE {schema}.m SET x = 5 WHERE k IN (1, 4)")
    before = len(statements)
    result = refresh.refresh_view(env, view=v, sql=views[v], method="force", exists=True)
    assert result.log_rows == 4, result  # captured here: old and new image of each
    # Read again under the lock and after the append, the log keeps the columns it was
    # first read with (a write to it changes none), which the first read took from the
    # log's configuration: no DESCRIBE, where there were three, then one.
    assert statements[before:].count(log) == 0, statements[before:]
    refresh_w_reading_the_log_once("captured by v")
    # The end of the invocation (the release of views that no longer hold their logs
    # back, its deferred purge, the registry's rows) reads the log's state alone.
    before = len(statements)
    assert admin.release_orphans(env) == []
    # The release reads the log's users and nothing of the two views this process has
    # just refreshed (it read each storage table fresh, two statements a view, before),
    # after one look for logs on the storage tables they wrote (views over views, whose
    # logs the release reads too), which the publish then does not repeat.
    lookup = f"SHOW TABLES IN `{schema}` LIKE 'mlog__*__fr_data'"
    released = statements[before:]
    assert not [x for x in released if "__fr_data" in x and x != lookup], released
    assert SHARED or released == [lookup, properties], released
    registry.publish(env)
    published = statements[before:]
    assert published.count(lookup) == 1, published
    assert f"DELETE FROM `{schema}`.`mlog__m` WHERE `capture__` <= 4" in published, published
    assert log not in published, published
    # ... and each view's configuration and state alone: neither the release nor the
    # view's row needs a column of its storage table, which is not described (it was
    # described twice per view before, once by each).
    for view in views:
        storage = f"DESCRIBE TABLE EXTENDED `{schema}`.`{view.table}__fr_data`"
        assert storage not in published, published
        # The purge reads the view's state, and the registry's rows take it from there.
        state = f"SHOW TBLPROPERTIES `{schema}`.`{view.table}__fr_data`"
        assert published.count(state) == 1, published
    rows = {r["mview"]: r for r in registry.select(env, "mviews")}
    for view in views:
        assert rows[str(view)]["last_refresh_type"] == "FAST", rows
        assert rows[str(view)]["staleness"] == "FRESH", rows


def test_a_view_dropped_after_this_process_refreshed_it_is_released_at_the_next_run(
    spark: Any,
) -> None:
    """The release at the end of an invocation does not read the views this process has
    just refreshed: one that another session drops in between is released by the next
    invocation that touches its log, and its rows are purged then."""
    schema = "reg_release_next"
    env = keyed_master_with_log(spark, schema, rows=10, groups=3)
    views = {
        TableName(schema, "v"): f"SELECT g, count(*) AS n FROM {schema}.m GROUP BY g",
        TableName(schema, "w"): f"SELECT k, x FROM {schema}.m WHERE g = 1",
    }
    v, w = views

    def refreshed(view: TableName) -> str:
        return refresh.refresh_view(
            env, view=view, sql=views[view], method="fast", exists=True
        ).refresh_type

    for view, sql in views.items():
        refresh.refresh_view(env, view=view, sql=sql, method="force", exists=False)
    registry.publish(env)
    spark.sql(f"UPDATE {schema}.m SET x = 5 WHERE k IN (1, 4)")
    assert [refreshed(v), refreshed(w)] == ["FAST", "FAST"]
    # Another session drops w (its dbt view and its table) after this run refreshed it.
    spark.sql(f"DROP VIEW {schema}.w")
    spark.sql(f"DROP TABLE {schema}.w__fr_data")
    assert admin.release_orphans(env) == []
    registry.publish(env)
    log = mlog.load_log(env, TableName(schema, "m"))
    assert log is not None and set(log.state.users) == {str(v), str(w)}

    # The next invocation refreshes v after a change: the log is touched, w is read.
    spark.sql(f"INSERT INTO {schema}.m VALUES (100, 1, 1)")
    assert refreshed(v) == "FAST"
    (released,) = admin.release_orphans(env)
    assert released.startswith(f"released {w} from the log of {schema}.m: its table "), released
    assert f"{schema}.w__fr_data is gone" in released, released
    registry.publish(env)
    log = mlog.load_log(env, TableName(schema, "m"))
    assert log is not None and set(log.state.users) == {str(v)}
    # Only v held the rows back now, and it has consumed them all: none is left.
    assert spark.sql(f"SELECT count(*) FROM {schema}.mlog__m").collect()[0][0] == 0
    assert matches(spark, v, views[v])


@pytest.mark.parametrize("path", ["java", "sql"])
def test_a_run_is_published_in_one_commit_and_shows_the_newest_state(spark: Any, path: str) -> None:
    schema = f"reg_pub_{path}"
    env = keyed_master_with_log(spark, schema, rows=10, groups=3, path=path)
    view = TableName(schema, "v")
    sql = f"SELECT g, count(*) AS n FROM {schema}.m GROUP BY g"
    refresh.refresh_view(env, view=view, sql=sql, method="force", exists=False)
    registry.publish(env)
    table = registry.table(env)
    before = spark.sql(f"SELECT count(*) FROM {table.sql}.snapshots").collect()[0][0]
    for k in (100, 101):
        spark.sql(f"INSERT INTO {schema}.m VALUES ({k}, 1, 1)")
        refresh.refresh_view(env, view=view, sql=sql, method="fast", exists=True)
    assert "published" in registry.publish(env)
    after = spark.sql(f"SELECT count(*) FROM {table.sql}.snapshots").collect()[0][0]
    assert after == before + 1, "two refreshes, one registry commit"
    assert registry.publish(env).endswith("nothing to publish")
    reg = f"{schema}_registry"
    (row,) = spark.sql(f"SELECT last_sequence, youngest FROM {reg}.mview_logs").collect()
    assert row[0] == 2, "the log's newest row, not an earlier one"
    users = spark.sql(f"SELECT mview, last_sequence FROM {reg}.mview_log_users").collect()
    assert [tuple(u) for u in users] == [(str(view), 2)]
    runs = spark.sql(f"SELECT refresh_type FROM {reg}.refresh_runs ORDER BY started").collect()
    assert [r[0] for r in runs] == ["COMPLETE", "FAST", "FAST"]
    (staleness,) = spark.sql(f"SELECT staleness FROM {reg}.mviews").collect()[0]
    assert staleness == "FRESH"
    mlog.drop_mview_log(env, f"{schema}.m")
    registry.publish(env)
    assert spark.sql(f"SELECT * FROM {reg}.mview_logs").collect() == [], "a dropped log is gone"
    assert spark.sql(f"SELECT * FROM {reg}.mview_log_users").collect() == []


@pytest.mark.parametrize("path", ["java", "sql"])
def test_a_view_over_a_view_is_stale_once_the_view_under_it_refreshed(
    spark: Any, path: str
) -> None:
    """`dbt run -s <the view under>` alone: the publish shows the view over it STALE
    (nothing has captured the write to its master yet; Oracle's view is STALE as the DML
    commits), where it showed FRESH with no pending row."""
    schema = f"reg_stack_{path}"
    env = keyed_master_with_log(spark, schema, rows=10, groups=3, path=path)
    under, over = TableName(schema, "u"), TableName(schema, "o")
    sqls = {
        under: f"SELECT k, g, x FROM {schema}.m WHERE x > 0",
        over: f"SELECT g, count(*) AS n, sum(x) AS sx FROM {schema}.u GROUP BY g",
    }
    refresh.refresh_view(env, view=under, sql=sqls[under], method="force", exists=False)
    mlog.create_mview_log(env, str(under))
    refresh.refresh_view(env, view=over, sql=sqls[over], method="force", exists=False)
    registry.publish(env)
    reg = f"{schema}_registry"

    def staleness() -> dict[str, str]:
        rows = spark.sql(f"SELECT mview, staleness FROM {reg}.mviews").collect()
        return {r[0].split(".")[1]: r[1] for r in rows}

    assert staleness() == {"u": "FRESH", "o": "FRESH"}
    spark.sql(f"UPDATE {schema}.m SET x = 2 WHERE k = 1")
    refresh.refresh_view(env, view=under, sql=sqls[under], method="fast", exists=True)
    registry.publish(env)
    assert staleness() == {"u": "FRESH", "o": "STALE"}
    result = refresh.refresh_view(env, view=over, sql=sqls[over], method="fast", exists=True)
    assert str(result.refresh_type) == "FAST" and result.log_rows == 2, result
    assert matches(spark, over, sqls[over])
    registry.publish(env)
    assert staleness() == {"u": "FRESH", "o": "FRESH"}


def test_a_release_0_1_registry_is_migrated_and_its_views_stay_fast(spark: Any) -> None:
    schema, reg = "reg_v1", "reg_v1_registry"
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(f"CREATE SCHEMA {reg}")
    spark.sql(f"CREATE TABLE {schema}.m (k BIGINT NOT NULL, v INT) USING iceberg")
    spark.sql(f"ALTER TABLE {schema}.m SET IDENTIFIER FIELDS k")
    spark.sql(f"INSERT INTO {schema}.m VALUES (1, 10), (2, 20)")
    sql = f"SELECT k, v FROM {schema}.m"
    spark.sql(
        f"CREATE TABLE {schema}.v USING iceberg TBLPROPERTIES ('format-version'='2') AS {sql}"
    )
    built = int(spark.sql(f"SELECT snapshot_id FROM {schema}.m.snapshots").collect()[-1][0])
    view_snapshot = int(spark.sql(f"SELECT snapshot_id FROM {schema}.v.snapshots").collect()[-1][0])
    # A change release 0.1 captured and no view consumed yet.
    spark.sql(f"UPDATE {schema}.m SET v = 11 WHERE k = 1")
    now = int(
        spark.sql(
            f"SELECT snapshot_id FROM {schema}.m.snapshots ORDER BY committed_at DESC"
        ).collect()[0][0]
    )
    spark.sql(
        f"CREATE TABLE {schema}.mlog__m (k BIGINT, v INT, snaptime__ TIMESTAMP_NTZ, dmltype__ STRING, "
        "old_new__ STRING, change_vector__ BINARY, sequence__ BIGINT, xid__ BIGINT) USING iceberg "
        f"TBLPROPERTIES ('format-version'='2', 'fast_refresh.master'='{schema}.m')"
    )
    spark.sql(
        f"INSERT INTO {schema}.mlog__m VALUES (1, 10, TIMESTAMP_NTZ'4000-01-01 00:00:00', 'U', 'O', "
        f"X'04', 1, {now}), (1, 11, TIMESTAMP_NTZ'4000-01-01 00:00:00', 'U', 'N', X'04', 2, {now})"
    )
    for name, columns in V1.items():
        spark.sql(
            f"CREATE TABLE {reg}.{name} ({columns}) USING iceberg TBLPROPERTIES "
            f"('{registry.VERSION_PROPERTY}'='1', 'format-version'='2')"
        )
    ts = f"TIMESTAMP_NTZ'{T0:%Y-%m-%d %H:%M:%S}'"
    spark.sql(
        f"INSERT INTO {reg}.mview_logs VALUES ('{schema}.m', '{schema}.mlog__m', 'TIMESTAMP', "
        f"array('k'), array('v'), array('k', 'v'), false, {ts}, {ts}, {ts}, NULL, 0, {now}, {ts}, "
        f"2, 0, NULL, 0, {ts}, 'log created')"
    )
    spark.sql(
        f"INSERT INTO {reg}.mview_log_users VALUES ('{schema}.mlog__m', '{schema}.m', '{schema}.v', "
        f"{ts}, {ts}, 0, {built})"
    )
    env = env_for(spark, reg)
    masters = refresh.load_masters(env, sql)
    spark.sql(
        f"INSERT INTO {reg}.mviews VALUES ('{schema}.v', '{query_hash(sql)}', 'force', "
        f"array('{schema}.m'), 'projection', 'COMPLETE', {ts}, 'FRESH', 'first build', "
        f"{view_snapshot}, map('{schema}.m', {built}L), '{refresh.schema_hash(masters)}', {ts}, "
        f"'{sql}', '')"
    )
    spark.sql(
        f"INSERT INTO {reg}.refresh_runs VALUES ('r1', '{schema}.v', {ts}, {ts}, 'COMPLETE', "
        "'first build', 0, NULL, 'SUCCESS', NULL, map('total', 1.0D))"
    )

    registry.ensure(env)
    views = {r[1] for r in spark.sql(f"SHOW VIEWS IN {reg}").collect() if not r[2]}
    assert views == set(registry.VIEWS), "the registry's tables became views"
    assert _tables(spark, reg) == {"registry", "leases", *registry.VIEWS}, "nothing else left"
    history = spark.sql(f"SELECT run_id, reason FROM {reg}.refresh_runs").collect()
    assert [tuple(r) for r in history] == [("r1", "first build")], "history kept"

    result = refresh.refresh_view(
        env, view=TableName(schema, "v"), sql=sql, method="fast", exists=True
    )
    assert result.refresh_type == "FAST" and result.log_rows == 2
    assert matches(spark, TableName(schema, "v"), sql)
    spark.sql(f"INSERT INTO {schema}.m VALUES (3, 30)")
    result = refresh.refresh_view(
        env, view=TableName(schema, "v"), sql=sql, method="fast", exists=True
    )
    assert result.refresh_type == "FAST" and matches(spark, TableName(schema, "v"), sql)


def test_a_dropped_or_truncated_registry_is_rebuilt_from_the_tables_state(spark: Any) -> None:
    """The registry only publishes what the logs and views keep on their own tables: after
    it is dropped or emptied by hand, `rebuild_registry` shows every log and view again,
    and refreshes never noticed (they do not read it)."""
    from dbt.adapters.fastrefresh.protocol.env import Env
    from dbt.adapters.fastrefresh.runtime.process import Runtime

    s = "reg_rebuild"
    env = keyed_master_with_log(spark, s, rows=20, groups=3)
    sql = f"SELECT g, count(*) AS n FROM {s}.m GROUP BY g"
    view = TableName(s, "v")
    refresh.refresh_view(env, view=view, sql=sql, method="force", exists=False)
    registry.publish(env)

    def shown(env: Any) -> tuple[list[Any], list[Any]]:
        logs = registry.select(env, "mview_logs", f"master = '{s}.m'")
        views = registry.select(env, "mviews", f"mview = '{view}'")
        return [r["log_table"] for r in logs], [(r["mview"], r["last_refresh_type"]) for r in views]

    last = "COMPLETE"
    assert shown(env) == ([f"{s}.mlog__m"], [(str(view), last)])
    # A log elsewhere whose configuration was broken by hand is left out, named, and
    # does not keep the others from the registry (the rebuild failed on it).
    spark.sql(f"CREATE SCHEMA {s}_broken")
    spark.sql(
        f"CREATE TABLE {s}_broken.mlog__t (x INT) USING iceberg "
        "TBLPROPERTIES ('fast_refresh.log' = '{}')"
    )
    for damage in (f"DROP TABLE {s}_registry.registry", f"DELETE FROM {s}_registry.registry"):
        spark.sql(damage)
        # The next dbt invocation (a new process) finds the registry gone or empty.
        env = Env(env.sql, env.tables, env.registry, runtime=Runtime())
        registry.ensure(env)
        assert shown(env) == ([], [])
        said = registry.rebuild(env)
        assert "published" in said, said
        assert f"left out, unreadable: {s}_broken.mlog__t; " in said, said
        assert shown(env) == ([f"{s}.mlog__m"], [(str(view), last)]), damage
        spark.sql(f"INSERT INTO {s}.m SELECT max(k) + 1, 1, 1 FROM {s}.m")
        result = refresh.refresh_view(env, view=view, sql=sql, method="fast", exists=True)
        assert result.refresh_type == "FAST" and matches(spark, view, sql)
        registry.publish(env)
        last = "FAST"
    spark.sql(f"DROP TABLE {s}_broken.mlog__t")  # (a JDBC catalog drops no schema CASCADE)
    spark.sql(f"DROP SCHEMA {s}_broken")


def test_a_registry_table_dropped_after_this_process_published_is_created_again(
    spark: Any,
) -> None:
    """The registry table dropped by hand in a process that had published (a dbt run
    in process after another): its next publish creates it again and publishes, and
    `ensure_registry` and `rebuild_registry` look at it as it is now, not as the process
    last found it. A publish to a registry that is there runs no more statements."""
    s = "reg_redrop"
    env = keyed_master_with_log(spark, s, rows=20, groups=3, path="sql")
    sql = f"SELECT g, count(*) AS n FROM {s}.m GROUP BY g"
    view = TableName(s, "v")
    refresh.refresh_view(env, view=view, sql=sql, method="force", exists=False)
    registry.publish(env)
    registry_table = registry.table(env)

    def refreshed() -> None:
        spark.sql(f"INSERT INTO {s}.m SELECT max(k) + 1, 1, 1 FROM {s}.m")
        result = refresh.refresh_view(env, view=view, sql=sql, method="fast", exists=True)
        assert result.refresh_type == "FAST"

    def shown() -> tuple[list[Any], list[Any]]:
        logs = registry.select(env, "mview_logs", f"master = '{s}.m'")
        views = registry.select(env, "mviews", f"mview = '{view}'")
        return [r["log_table"] for r in logs], [(r["mview"], r["last_refresh_type"]) for r in views]

    spark.sql(f"DROP TABLE {registry_table.sql}")
    refreshed()
    assert "published" in registry.publish(env)
    assert shown() == ([f"{s}.mlog__m"], [(str(view), "FAST")])
    spark.sql(f"DROP TABLE {registry_table.sql}")
    registry.ensure(env, again=True)  # ensure_registry
    assert "registry" in _tables(spark, registry_table.schema)
    spark.sql(f"DROP TABLE {registry_table.sql}")
    said = registry.rebuild(env)
    assert "registry: published" in said, said
    assert shown() == ([f"{s}.mlog__m"], [(str(view), "FAST")])
    refreshed()
    before = len(env.sql.statements)  # type: ignore[attr-defined]
    registry.publish(env)
    published = env.sql.statements[before:]  # type: ignore[attr-defined]
    # (On a shared catalog the registry's schema also holds the leases, which a publish's
    # purge takes: the registry table's own statements are counted.)
    on_registry = [q.split(" VALUES")[0] for q in published if registry_table.sql in q]
    assert on_registry == [f"INSERT INTO {registry_table.sql}"], published


@pytest.mark.parametrize("path", ["java", "sql"])
def test_a_view_whose_query_stops_reading_a_master_is_released_from_its_log(
    spark: Any, path: str
) -> None:
    """A view rebuilt with a query that no longer reads a master gives up its place on that
    master's log at the end of the invocation, and the log's rows are purged again (its
    claim held every purge back for good). The journal says what a view this process
    refreshed reads; the state of one it did not refresh says it (a process that died
    before its end)."""
    s = f"reg_left_{path}"
    spark.sql(f"CREATE SCHEMA {s}")
    env = env_for(spark, f"{s}_registry", path)
    for t in ("a", "b"):
        spark.sql(f"CREATE TABLE {s}.{t} (k BIGINT NOT NULL, x INT) USING iceberg")
        spark.sql(f"INSERT INTO {s}.{t} VALUES (1, 1), (2, 2)")
        mlog.create_mview_log(env, f"{s}.{t}", key=["k"], purge="deferred")
    v, w = TableName(s, "v"), TableName(s, "w")
    on_a, on_b = f"SELECT k, x FROM {s}.a", f"SELECT k, x FROM {s}.b"

    def refreshed(view: TableName, sql: str, exists: bool = True) -> str:
        result = refresh.refresh_view(env, view=view, sql=sql, method="force", exists=exists)
        assert matches(spark, view, sql)
        return result.refresh_type

    def users_of_a() -> set[str]:
        log = mlog.load_log(env, TableName(s, "a"), columns=False)
        assert log is not None
        return set(log.state.users)

    def v_released_from_a() -> None:
        """The end of the invocation releases v, and w alone is left on a's log."""
        (released,) = admin.release_orphans(env)
        assert released.startswith(
            f"released {v} from the log of {s}.a: its query no longer reads {s}.a"
        ), released
        registry.publish(env)
        assert users_of_a() == {str(w)}

    assert [refreshed(v, on_a, False), refreshed(w, on_a, False)] == ["COMPLETE", "COMPLETE"]
    registry.publish(env)
    assert refreshed(v, on_b) == "COMPLETE"  # its model now reads b
    v_released_from_a()
    spark.sql(f"INSERT INTO {s}.a VALUES (3, 3)")
    assert refreshed(w, on_a) == "FAST"
    assert admin.release_orphans(env) == []
    registry.publish(env)  # the deferred purge: w alone held the rows back
    assert spark.sql(f"SELECT count(*) FROM {s}.mlog__a").collect()[0][0] == 0

    # Back to a, and off it again in a process that dies before the end of its
    # invocation: its journal is lost, and the claim with it.
    assert [refreshed(v, on_a), refreshed(v, on_b)] == ["COMPLETE", "COMPLETE"]
    env.runtime.take_journal(env.registry)
    assert users_of_a() == {str(v), str(w)}
    spark.sql(f"INSERT INTO {s}.a VALUES (4, 4)")
    assert refreshed(w, on_a) == "FAST"  # this invocation touches a's log, not v
    v_released_from_a()
    assert spark.sql(f"SELECT count(*) FROM {s}.mlog__a").collect()[0][0] == 0
