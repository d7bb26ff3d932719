"""Bad input, each refused with an error that names the object, the cause and the fix, and
leaving no partial state (issue 25's catalogue; the registry's own cases are in
test_registry.py, the profile's in tests/unit/test_connections.py, the operations' argument
spellings in tests/unit/mlog/test_arguments.py, a refused query under `fast` in
test_materialization.py, expired snapshots in test_refresh_choice.py).

Each test drives the protocol on the test session, as dbt's operations and materialization
do, and checks the refusal and what is left afterwards.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from dbt.adapters.fastrefresh import admin
from dbt.adapters.fastrefresh.engine import inspection, refresh
from dbt.adapters.fastrefresh.engine.upstream import Upstream
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.mlog import capture
from dbt.adapters.fastrefresh.mlog import ddl as mlog
from dbt.adapters.fastrefresh.protocol.decisions import ReasonCode, RefreshType
from dbt.adapters.fastrefresh.protocol.state import LOG_CONFIG
from dbt.adapters.fastrefresh.registry import store as registry
from dbt.adapters.fastrefresh.sqltext import TableName, literal
from tests.functional.sites import (
    PATHS,
    SHARED,
    env_for,
    keyed_master_with_log,
    latest_snapshot,
    matches,
    refresh_and_check,
)

AGGREGATE = "SELECT g, count(*) AS n, sum(x) AS sx FROM {s}.m GROUP BY g"


def built(spark: Any, schema: str, path: str = "java") -> tuple[Any, str, TableName]:
    """A keyed master ``m`` with its log and an aggregate view ``v`` built over it."""
    env = keyed_master_with_log(spark, schema, rows=30, groups=4, path=path)
    sql = AGGREGATE.format(s=schema)
    view = TableName(schema, "v")
    refresh_and_check(spark, env, view, sql, exists=False, expect="COMPLETE")
    return env, sql, view


def tables(spark: Any, schema: str) -> set[str]:
    return {r.tableName for r in spark.sql(f"SHOW TABLES IN {schema}").collect()}


def _first_build_fails(
    env: Any, view: TableName, sql: str, upstream: Any, method: str = "force"
) -> str:
    """The error of a first build of ``view`` (``sql``, over ``upstream``), which must fail."""
    with pytest.raises(FastRefreshError) as info:
        refresh.refresh_view(
            env, view=view, sql=sql, method=method, exists=False, upstream=upstream
        )
    return str(info.value)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    ("change", "cause"),
    [
        ("DROP COLUMN x", r"column\(s\) x of .*\.m were dropped or renamed"),
        ("RENAME COLUMN x TO x2", r"column\(s\) x of .*\.m were dropped or renamed"),
        ("ALTER COLUMN x TYPE BIGINT", r"column\(s\) x \(int -> bigint\) of .*\.m changed type"),
    ],
    ids=["dropped", "renamed", "retyped"],
)
def test_a_master_whose_columns_no_longer_fit_its_log(
    spark: Any, path: str, change: str, cause: str
) -> None:
    """Capture refuses naming the columns and the fix; `fast` fails the same way and leaves
    the view as it was; `force` rebuilds completely, saying why, and does not register on
    the log; once the log is recreated the view refreshes fast again."""
    s = f"bad_cols_{path}_{change.split()[0].lower()}"
    env, _, view = built(spark, s, path)
    spark.sql(f"ALTER TABLE {s}.m {change}")
    column = {"DROP": "k", "RENAME": "x2", "ALTER": "x"}[change.split()[0]]
    sql = f"SELECT g, count(*) AS n, sum({column}) AS sx FROM {s}.m GROUP BY g"
    spark.sql(f"INSERT INTO {s}.m VALUES (100, 1, 5000000000)" if "BIGINT" in change else
              f"INSERT INTO {s}.m VALUES (100, 1, 7)" if "RENAME" in change else
              f"INSERT INTO {s}.m VALUES (100, 1)")  # fmt: skip
    log_rows = spark.sql(f"SELECT count(*) FROM {s}.mlog__m").first()[0]

    with pytest.raises(FastRefreshError, match=cause + r".*Fix: run drop_mview_log\('" + s):
        capture.capture(env, TableName(s, "m"))
    stored = spark.sql(f"SELECT * FROM {view.sql}").collect()
    with pytest.raises(FastRefreshError, match=cause + r".*Fix: drop that log and create it again"):
        refresh.refresh_view(env, view=view, sql=sql, method="fast", exists=True)
    assert sorted(spark.sql(f"SELECT * FROM {view.sql}").collect()) == sorted(stored)
    assert spark.sql(f"SELECT count(*) FROM {s}.mlog__m").first()[0] == log_rows

    rebuilt_as_log_broken(spark, env, view, sql)
    # Until the log is recreated, every refresh rebuilds and says why.
    spark.sql(f"DELETE FROM {s}.m WHERE k = 3")
    rebuilt_as_log_broken(spark, env, view, sql)
    fast_once_the_log_is_recreated(spark, env, view, sql, f"UPDATE {s}.m SET g = 3 WHERE k < 5")


def test_a_refresh_describes_its_log_only_for_a_changed_type_or_an_older_log(
    spark: Any,
) -> None:
    """SQL path. A log records its columns' types (``LogConfig.column_types``), so a
    refresh takes the log table's columns from them instead of describing it while the
    master's types are the same. A log created before the record is described, and a
    changed type is found there too (with the record: the test above, ``retyped``)."""
    s = "bad_cols_types"
    env, sql, view = built(spark, s, "sql")
    log = f"DESCRIBE TABLE EXTENDED `{s}`.`mlog__m`"
    statements = env.sql.statements

    def describes_of_a_fast_refresh() -> int:
        before = len(statements)
        refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")
        # The log's state read once either way: a DESCRIBE comes alone, not with a load.
        assert statements[before:].count(f"SHOW TBLPROPERTIES `{s}`.`mlog__m`") == 1
        return int(statements[before:].count(log))

    config = spark.sql(f"SHOW TBLPROPERTIES {s}.mlog__m ('{LOG_CONFIG}')").first()[1]
    assert json.loads(config)["column_types"] == [["k", "bigint"], ["g", "int"], ["x", "int"]]
    assert describes_of_a_fast_refresh() == 0
    older = json.dumps({k: v for k, v in json.loads(config).items() if k != "column_types"})
    spark.sql(f"ALTER TABLE {s}.mlog__m SET TBLPROPERTIES ('{LOG_CONFIG}' = {literal(older)})")
    assert describes_of_a_fast_refresh() == 1
    spark.sql(f"ALTER TABLE {s}.m ALTER COLUMN x TYPE BIGINT")
    before = len(statements)
    with pytest.raises(
        FastRefreshError, match=r"column\(s\) x \(int -> bigint\) of .*changed type"
    ):
        refresh.refresh_view(env, view=view, sql=sql, method="fast", exists=True)
    assert statements[before:].count(log) == 1, statements[before:]


def rebuilt_as_log_broken(spark: Any, env: Any, view: TableName, sql: str) -> None:
    """A `force` refresh rebuilds the view completely, saying its log is broken."""
    result = refresh.refresh_view(env, view=view, sql=sql, method="force", exists=True)
    assert result.refresh_type == "COMPLETE"
    assert result.reason is not None and result.reason.code is ReasonCode.LOG_BROKEN, result.reason
    assert matches(spark, view, sql)


def fast_once_the_log_is_recreated(
    spark: Any, env: Any, view: TableName, sql: str, change: str
) -> None:
    """The master's log dropped and created again: one complete refresh, then fast ones."""
    mlog.drop_mview_log(env, f"{view.schema}.m")
    mlog.create_mview_log(env, f"{view.schema}.m")
    refresh_and_check(spark, env, view, sql, exists=True, expect="COMPLETE")
    spark.sql(change)
    refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")


def test_a_column_dropped_and_added_again_breaks_the_log(spark: Any) -> None:
    """Java path. The re-added column has the old name and type but a new Iceberg field id,
    and no value: the old values are gone, without a commit for capture to see, and the
    view kept them (its fast refreshes applied only the later commits). The log, created
    with the columns' field ids, now says it cannot record the master: views rebuild,
    capture refuses, until it is recreated. (The SQL path reads no field ids: there this
    goes undetected, as the docs say.)"""
    s = "bad_cols_readded"
    env, sql, view = built(spark, s)
    spark.sql(f"ALTER TABLE {s}.m DROP COLUMN x")
    spark.sql(f"ALTER TABLE {s}.m ADD COLUMN x INT")
    spark.sql(f"INSERT INTO {s}.m VALUES (100, 1, 7)")
    cause = r"column\(s\) x of .*\.m were dropped and added again"
    with pytest.raises(FastRefreshError, match=cause + r".*Fix: run drop_mview_log\('" + s):
        capture.capture(env, TableName(s, "m"))
    rebuilt_as_log_broken(spark, env, view, sql)
    fast_once_the_log_is_recreated(spark, env, view, sql, f"UPDATE {s}.m SET x = 2 WHERE k < 5")


def test_a_dropped_master_fails_the_refresh_naming_it_and_keeps_the_view(spark: Any) -> None:
    s = "bad_dropped_master"
    env, sql, view = built(spark, s)
    stored = sorted(spark.sql(f"SELECT * FROM {view.sql}").collect())
    spark.sql(f"DROP TABLE {s}.m")
    with pytest.raises(Exception, match=rf"{s}`?\.`?m"):
        refresh.refresh_view(env, view=view, sql=sql, method="force", exists=True)
    with pytest.raises(FastRefreshError, match=rf"The master table {s}\.m does not exist\. Fix:"):
        capture.capture(env, TableName(s, "m"))
    assert sorted(spark.sql(f"SELECT * FROM {view.sql}").collect()) == stored


MODES = {
    "cow": "",
    "mor": ", 'write.update.mode'='merge-on-read', 'write.delete.mode'='merge-on-read'",
}


@pytest.mark.parametrize(("mode", "path"), [("cow", "java"), ("mor", "java"), ("mor", "sql")])
def test_a_key_two_rows_share_fails_capture_once_a_change_touches_it(
    spark: Any, mode: str, path: str
) -> None:
    s = f"bad_duplicate_key_{mode}_{path}"
    spark.sql(f"CREATE SCHEMA {s}")
    spark.sql(
        f"CREATE TABLE {s}.m (k BIGINT, x INT) USING iceberg "
        f"TBLPROPERTIES ('format-version'='2'{MODES[mode]})"
    )
    env = env_for(spark, f"{s}_registry", path)
    mlog.create_mview_log(env, f"{s}.m", key=["k"])
    master = TableName(s, "m")
    log_table = mlog.load_log(env, master).log_table  # type: ignore[union-attr]
    # Two data files, both holding a row with key 2.
    for rows in ("(1, 1), (2, 1), (3, 1)", "(2, 5), (4, 1)"):
        spark.sql(f"INSERT INTO {s}.m SELECT /*+ REPARTITION(1) */ * FROM VALUES {rows}")
    assert spark.table(f"{s}.m.files").count() == 2
    spark.sql(f"UPDATE {s}.m SET x = 9 WHERE k IN (1, 3, 4)")
    # Copy-on-write rewrote both files, carrying both rows of key 2 over unchanged;
    # merge-on-read deleted only the rows it matched. No change touched key 2: the
    # capture logs the three updates, and no error.
    capture.capture(env, master)
    updated = spark.sql(
        f"SELECT k, x FROM {log_table.sql} WHERE dmltype__ = 'U' AND old_new__ = 'N' ORDER BY k"
    ).collect()
    assert [tuple(r) for r in updated] == [(1, 9), (3, 9), (4, 9)]
    logged = spark.table(log_table.sql).count()
    spark.sql(f"UPDATE {s}.m SET x = 7 WHERE k = 2")
    update = latest_snapshot(spark, f"{s}.m")
    with pytest.raises(
        FastRefreshError,
        match=rf"master {s}\.m has more than one row with key \(2\) in snapshot {update}; a keyed "
        r"log needs a unique key\. Fix: make the key unique",
    ) as info:
        capture.capture(env, master)
    said_only(str(info.value))
    # Nothing was logged, and the position did not move: the next capture fails the same way.
    assert spark.table(log_table.sql).count() == logged
    with pytest.raises(FastRefreshError, match=r"more than one row with key \(2\)"):
        capture.capture(env, master)


def said_only(message: str) -> None:
    """``message`` is dbt-fastrefresh's own (the cause and the fix), not Spark's error
    around it with a Java stack trace."""
    for java in ("at org.apache", "py4j", "Job aborted", "java.lang", "Exception"):
        assert java not in message, message
    assert len(message.splitlines()) <= 2, message


def test_two_rows_a_commit_adds_with_one_key_fail_capture_naming_the_key(spark: Any) -> None:
    """A commit that only adds rows was captured without comparing their keys: an INSERT
    of two rows with one key logged both as inserts, and a keyed projection kept one of
    them, silently. It stops the capture now, as a commit that removes rows does. A NULL
    key is named too (its message was NULL, and Spark's error said nothing)."""
    s = "bad_inserted_key"
    spark.sql(f"CREATE SCHEMA {s}")
    spark.sql(f"CREATE TABLE {s}.m (k BIGINT, x INT) USING iceberg")
    spark.sql(f"CREATE TABLE {s}.n (k BIGINT, x INT) USING iceberg")
    env = env_for(spark, f"{s}_registry", "sql")
    for master in ("m", "n"):
        mlog.create_mview_log(env, f"{s}.{master}", key=["k"])
    # Two rows with a NULL key, added by two commits: neither commit is found (no capture
    # reads the rest of the master), the DELETE of both below is.
    spark.sql(f"INSERT INTO {s}.n VALUES (1, 1), (NULL, 2)")
    spark.sql(f"INSERT INTO {s}.n VALUES (NULL, 3)")
    view, sql = TableName(s, "v"), f"SELECT k, x FROM {s}.m"
    refresh_and_check(spark, env, view, sql, exists=False, expect="COMPLETE")
    spark.sql(f"INSERT INTO {s}.m VALUES (1, 1), (2, 2), (2, 3)")
    spark.sql(f"DELETE FROM {s}.n WHERE k IS NULL")
    for master, key in (("m", "2"), ("n", "NULL")):
        snapshot = latest_snapshot(spark, f"{s}.{master}")
        with pytest.raises(
            Exception,
            match=rf"master {s}\.{master} has more than one row with key \({key}\) in snapshot "
            rf"{snapshot}; a keyed log needs a unique key\. Fix: make the key unique",
        ):
            capture.capture(env, TableName(s, master))
    # The view's refresh stops at its capture: nothing logged, the view as it was.
    with pytest.raises(FastRefreshError, match=r"more than one row with key \(2\)") as info:
        refresh.refresh_view(env, view=view, sql=sql, method="force", exists=True)
    said_only(str(info.value))
    log_table = mlog.load_log(env, TableName(s, "m")).log_table  # type: ignore[union-attr]
    assert spark.table(log_table.sql).count() == 0
    assert sorted(map(tuple, spark.sql(f"SELECT k, x FROM {view.sql}").collect())) == []
    # As the message says: the key made unique does not get past the commit; the log
    # dropped and created again from the table as it is does, and the view rebuilds once.
    spark.sql(f"DELETE FROM {s}.m WHERE k = 2 AND x = 3")
    with pytest.raises(FastRefreshError, match=r"neither the key made unique nor --full-refresh"):
        refresh.refresh_view(env, view=view, sql=sql, method="force", exists=True)
    mlog.drop_mview_log(env, f"{s}.m")
    mlog.create_mview_log(env, f"{s}.m", key=["k"])
    refresh_and_check(spark, env, view, sql, exists=True, expect="COMPLETE")
    spark.sql(f"UPDATE {s}.m SET x = 4 WHERE k = 2")
    refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")


@pytest.mark.parametrize("path", PATHS)
def test_a_key_two_rows_already_share_is_refused_at_the_logs_creation(
    spark: Any, path: str
) -> None:
    """A keyed log was created over rows that shared its key (a key named, or Iceberg's
    identifier fields, which Iceberg does not enforce), and the first capture of a commit
    touching one of them failed, to be fixed only by dropping the log by hand. The
    creation is refused now, naming the key's values, and creates nothing; on a dbt
    node the refresh that would create the log fails so, before any write."""
    s = f"bad_key_at_creation_{path}"
    spark.sql(f"CREATE SCHEMA {s}")
    spark.sql(f"CREATE TABLE {s}.m (k BIGINT NOT NULL, j STRING, x INT) USING iceberg")
    spark.sql(f"INSERT INTO {s}.m VALUES (1, 'a', 1), (2, NULL, 2), (3, 'c', 3)")
    spark.sql(f"INSERT INTO {s}.m VALUES (2, NULL, 4)")
    snapshot = latest_snapshot(spark, f"{s}.m")
    spark.sql(f"ALTER TABLE {s}.m SET IDENTIFIER FIELDS k")
    env = env_for(spark, f"{s}_registry", path)
    before = tables(spark, s)
    for key, names, shown in ((["k"], "k", "2"), (None, "k", "2"), (["j", "k"], "j, k", "NULL, 2")):
        with pytest.raises(FastRefreshError) as info:
            mlog.create_mview_log(env, f"{s}.m", key=key)
        said_only(str(info.value))
        assert (
            f"The key ({names}) of {s}.m is not unique: 2 rows have ({shown}) in snapshot "
            f"{snapshot}." in str(info.value)
        ), info.value
        assert f"no log was created. Fix: make ({names}) unique in {s}.m" in str(info.value)
        assert tables(spark, s) == before
    upstream = (Upstream(TableName(s, "m"), "model.p.m", log=True, options={"key": ["k"]}),)
    sql = f"SELECT k, x FROM {s}.m"
    message = _first_build_fails(env, TableName(s, "v"), sql, upstream)
    assert f"The key (k) of {s}.m is not unique" in message, message
    assert tables(spark, s) == before
    mlog.create_mview_log(env, f"{s}.m", key=[])  # key-less: nothing to check
    mlog.drop_mview_log(env, f"{s}.m")
    # A view's table, keyed by another column than the view's own key, is checked too.
    duplicated = TableName(s, "by_k")
    refresh_and_check(
        spark, env, duplicated, f"SELECT k, j FROM {s}.m", exists=False, expect="COMPLETE"
    )
    with pytest.raises(FastRefreshError, match=rf"The key \(j\) of {s}\.by_k__fr_data is not"):
        mlog.create_mview_log(env, str(duplicated), key=["j"])
    # The key made unique, the log is created, and the view built over it refreshes fast.
    spark.sql(f"DELETE FROM {s}.m WHERE x = 4")
    mlog.create_mview_log(env, f"{s}.m", key=["j"])  # unique now, NULL once
    mlog.drop_mview_log(env, f"{s}.m")
    view = TableName(s, "v")
    refresh.refresh_view(env, view=view, sql=sql, method="force", exists=False, upstream=upstream)
    assert mlog.load_log(env, TableName(s, "m")).config.key_columns == ("k",)  # type: ignore[union-attr]
    spark.sql(f"UPDATE {s}.m SET x = 5 WHERE k = 2")
    refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")


@pytest.mark.parametrize("path", PATHS)
def test_a_row_added_with_a_key_another_row_holds_fails_the_views_reading_it_by_key(
    spark: Any, path: str
) -> None:
    """A commit that adds a row with a key another row of the master holds is not found by
    capture (it compares a commit's own rows). A keyed projection then took each key's
    last new image and dropped the other row, silently (helper-38: `FAST refresh ... 3
    log row(s)`, a row missing). Its delta now stops where a key's new image follows
    another with no old image between, under `force` too (a rebuild would hold both
    rows, and the next change of that key would go wrong), naming the key, the commit
    and the fix. A view that sums signed images (an aggregate) is right whatever the key,
    and refreshes fast."""
    s = f"bad_added_key_{path}"
    spark.sql(f"CREATE SCHEMA {s}")
    env = env_for(spark, f"{s}_registry", path)
    for case, (key, where) in enumerate([("10", "v = 10"), ("NULL", "v IS NULL")]):
        m = f"{s}.m{case}"  # one master a case: a range holding both could name either
        spark.sql(f"CREATE TABLE {m} (id BIGINT, v INT) USING iceberg")
        spark.sql(f"INSERT INTO {m} VALUES (1, 10), (2, NULL), (3, 30)")
        mlog.create_mview_log(env, m, key=["v"])
        views = {
            TableName(s, f"p{case}"): f"SELECT id, v FROM {m}",
            TableName(s, f"a{case}"): f"SELECT v % 2 AS odd, count(*) AS n, sum(id) AS ids "
            f"FROM {m} GROUP BY v % 2",
        }
        for view, sql in views.items():
            refresh_and_check(spark, env, view, sql, exists=False, expect="COMPLETE")
        projection, aggregate = views
        spark.sql(f"UPDATE {m} SET id = id + 100 WHERE {where}")
        spark.sql(f"INSERT INTO {m} SELECT 7, v FROM {m} WHERE {where}")
        added = latest_snapshot(spark, m)
        before = sorted(map(tuple, spark.table(projection.sql).collect()))
        with pytest.raises(FastRefreshError) as info:
            refresh.refresh_view(
                env, view=projection, sql=views[projection], method="force", exists=True
            )
        said_only(str(info.value))
        assert (
            f"dbt-fastrefresh: master {m} has more than one row with key ({key}) in "
            f"snapshot {added}: that commit added a row with a key another row of the master "
            "still held." in str(info.value)
        ), info.value
        assert "Fix: make the key unique, then drop the log" in str(info.value)
        assert sorted(map(tuple, spark.table(projection.sql).collect())) == before
        refresh_and_check(spark, env, aggregate, views[aggregate], exists=True, expect="FAST")
        registry.publish(env)
        (row,) = registry.select(env, "mviews", f"mview = '{projection}'")
        assert row["staleness"] == "UNUSABLE", row
        # As the message says: the key made unique, the log dropped and created again.
        spark.sql(f"DELETE FROM {m} WHERE id = 7")
        mlog.drop_mview_log(env, m)
        mlog.create_mview_log(env, m, key=["v"])
        for view, sql in views.items():
            refresh_and_check(spark, env, view, sql, exists=True, expect="COMPLETE")
        spark.sql(f"UPDATE {m} SET id = id + 1 WHERE {where}")
        for view, sql in views.items():
            refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")


@pytest.mark.parametrize("form", ["overwrite", "merge"])
def test_a_row_added_with_the_key_of_a_row_an_earlier_refresh_took_fails_the_views_holding_it(
    spark: Any, form: str
) -> None:
    """A commit adding a row with the key of a row an earlier refresh already took (its
    commit out of the range) passed every guard: capture and the net window see the rows
    of the range only. A keyed join over the log's images then deleted the view's row of
    that key and inserted the new one alone, and a keyed projection (a semi-join's too)
    held both rows, until the next change of the key deleted both and inserted one. Now
    the view's row of a key the range added stops the delta, naming the key, the commit
    and the fix: in the MERGE (``form`` merge: a merge-on-read view) and in its overwrite
    form (a small copy-on-write view), for one join input changed and for two. Sums and
    counts stay right and refresh fast."""
    s = f"bad_added_key_later_{form}"
    spark.sql(f"CREATE SCHEMA {s}")
    env = env_for(spark, f"{s}_registry")
    spark.sql(f"CREATE TABLE {s}.m (id BIGINT, v INT) USING iceberg")
    spark.sql(f"CREATE TABLE {s}.d (v INT, name STRING) USING iceberg")
    spark.sql(f"INSERT INTO {s}.m VALUES (1, 10), (2, 20), (3, 30)")
    spark.sql(f"INSERT INTO {s}.d VALUES (10, 'a'), (20, 'b'), (30, 'c')")
    mlog.create_mview_log(env, f"{s}.m", key=["id"])
    mlog.create_mview_log(env, f"{s}.d", key=["v"])
    views = {
        TableName(s, "p"): f"SELECT id, v FROM {s}.m",
        TableName(s, "f"): f"SELECT id, v FROM {s}.m WHERE v > 25",
        TableName(s, "sj"): f"SELECT id, v FROM {s}.m WHERE v IN (SELECT v FROM {s}.d)",
        TableName(s, "j"): f"SELECT m.id, m.v, d.name FROM {s}.m m JOIN {s}.d d ON m.v = d.v",
        TableName(s, "a"): f"SELECT v, count(*) AS n, sum(id) AS ids FROM {s}.m GROUP BY v",
    }
    mor = {"write.merge.mode": "merge-on-read", "format-version": "2"}
    table = refresh.TableSpec(properties=mor) if form == "merge" else None
    for view, sql in views.items():
        refresh_and_check(spark, env, view, sql, exists=False, expect="COMPLETE", table=table)
        record = refresh.load_view(env, view)
        assert record is not None and refresh.overwrites(record) == (form == "overwrite")
    spark.sql(f"INSERT INTO {s}.m VALUES (4, 30)")  # a commit an earlier refresh takes
    for view, sql in views.items():
        refresh_and_check(spark, env, view, sql, exists=True, expect="FAST", table=table)
    spark.sql(f"INSERT INTO {s}.m VALUES (4, 30)")  # the same row sent again
    added = latest_snapshot(spark, f"{s}.m")
    said = (
        f"dbt-fastrefresh: master {s}.m has more than one row with key (4) in snapshot "
        f"{added}: that commit added a row with a key another row of the master still held."
    )

    def fails(view: TableName) -> None:
        before = sorted(map(tuple, spark.table(view.sql).collect()))
        with pytest.raises(FastRefreshError) as info:
            refresh.refresh_view(
                env, view=view, sql=views[view], method="force", exists=True, table=table
            )
        said_only(str(info.value))
        assert said in str(info.value), info.value
        assert "Fix: make the key unique, then drop the log" in str(info.value)
        assert sorted(map(tuple, spark.table(view.sql).collect())) == before

    for view in list(views)[:4]:  # one join input changed, the semi-join's outer table only
        fails(view)
    refresh_and_check(spark, env, TableName(s, "a"), views[TableName(s, "a")], exists=True,
                      expect="FAST", table=table)  # fmt: skip
    registry.publish(env)
    (row,) = registry.select(env, "mviews", f"mview = '{s}.p'")
    assert row["staleness"] == "UNUSABLE", row
    spark.sql(f"UPDATE {s}.d SET name = 'z' WHERE v = 20")
    fails(TableName(s, "j"))  # both join inputs changed: the view read for the rows to delete
    # As the message says: the key made unique, the log dropped and created again.
    spark.sql(f"DELETE FROM {s}.m WHERE id = 4")
    spark.sql(f"INSERT INTO {s}.m VALUES (4, 30)")
    mlog.drop_mview_log(env, f"{s}.m")
    mlog.create_mview_log(env, f"{s}.m", key=["id"])
    for view, sql in views.items():
        refresh_and_check(spark, env, view, sql, exists=True, expect="COMPLETE", table=table)
    spark.sql(f"UPDATE {s}.m SET v = 20 WHERE id = 4")
    spark.sql(f"INSERT INTO {s}.m VALUES (5, 20)")
    for view, sql in views.items():
        refresh_and_check(spark, env, view, sql, exists=True, expect="FAST", table=table)


@pytest.mark.parametrize("form", ["overwrite", "merge"])
def test_a_key_added_again_is_found_whatever_the_filter_and_the_keys_last_change(
    spark: Any, form: str
) -> None:
    """The check of a key the range added does not depend on the key's last image
    (helper-41): a duplicate the view's filter leaves out, and a duplicate whose
    original is then deleted (the key unique again, but the view holding the deleted
    row, which the net change, an insert then a delete, never removes)."""
    s = f"bad_added_key_any_{form}"
    spark.sql(f"CREATE SCHEMA {s}")
    env = env_for(spark, f"{s}_registry")
    mor = {"write.merge.mode": "merge-on-read", "format-version": "2"}
    table = refresh.TableSpec(properties=mor) if form == "merge" else None
    cases = {
        "filtered": (f"SELECT id, v FROM {s}.filtered WHERE v > 25", ["INSERT INTO {m} VALUES (1, 10)"]),
        "repaired": (f"SELECT id, v FROM {s}.repaired", [
            "INSERT INTO {m} VALUES (1, 31)", "DELETE FROM {m} WHERE id = 1 AND v = 30"
        ]),
    }  # fmt: skip
    for name, (sql, statements) in cases.items():
        m = f"{s}.{name}"
        spark.sql(f"CREATE TABLE {m} (id BIGINT, v INT) USING iceberg")
        spark.sql(f"INSERT INTO {m} VALUES (1, 30), (2, 40)")
        mlog.create_mview_log(env, m, key=["id"])
        view = TableName(s, f"{name}_v")
        refresh_and_check(spark, env, view, sql, exists=False, expect="COMPLETE", table=table)
        before = sorted(map(tuple, spark.table(view.sql).collect()))
        for statement in statements:
            spark.sql(statement.format(m=m))
        with pytest.raises(FastRefreshError) as info:
            refresh.refresh_view(env, view=view, sql=sql, method="force", exists=True, table=table)
        said_only(str(info.value))
        assert f"master {m} has more than one row with key (1) in snapshot " in str(info.value)
        assert sorted(map(tuple, spark.table(view.sql).collect())) == before


def test_a_log_to_make_again_over_a_key_two_rows_share_is_kept(spark: Any) -> None:
    """A log made again for columns its master gained is checked before the old one is
    dropped: a key two rows came to share (each added by a commit of its own, which no
    capture finds) fails the refresh and leaves the log, not the master without one."""
    s = "bad_key_made_again"
    spark.sql(f"CREATE SCHEMA {s}")
    spark.sql(f"CREATE TABLE {s}.raw (id INT NOT NULL, v INT) USING iceberg")
    spark.sql(f"ALTER TABLE {s}.raw SET IDENTIFIER FIELDS id")
    spark.sql(f"INSERT INTO {s}.raw VALUES (1, 1), (2, 2)")
    env = env_for(spark, f"{s}_registry")
    mlog.create_mview_log(env, f"{s}.raw")
    raw, view = TableName(s, "raw"), TableName(s, "up")
    upstream = (Upstream(raw, "source.p.raw.raw"),)
    sql = f"SELECT id, v FROM {s}.raw"
    refresh.refresh_view(env, view=view, sql=sql, method="force", exists=False, upstream=upstream)
    spark.sql(f"INSERT INTO {s}.raw VALUES (2, 3)")
    spark.sql(f"ALTER TABLE {s}.raw ADD COLUMN w INT")
    before = mlog.load_log(env, raw)
    with pytest.raises(FastRefreshError, match=rf"The key \(id\) of {s}\.raw is not unique"):
        refresh.refresh_view(
            env, view=view, sql=f"SELECT id, v, w FROM {s}.raw", method="force", exists=True,
            upstream=upstream,
        )  # fmt: skip
    kept = mlog.load_log(env, raw)
    assert before is not None and kept is not None
    assert kept.config.incarnation == before.config.incarnation


@pytest.mark.parametrize("path", PATHS)
def test_a_log_on_a_view_is_refused_and_nothing_is_created(spark: Any, path: str) -> None:
    s = f"bad_log_on_view_{path}"
    spark.sql(f"CREATE SCHEMA {s}")
    spark.sql(f"CREATE TABLE {s}.t (k BIGINT, v INT) USING iceberg")
    spark.sql(f"CREATE VIEW {s}.pv AS SELECT k, v FROM {s}.t")
    env = env_for(spark, f"{s}_registry", path)
    with pytest.raises(FastRefreshError, match=rf"{s}\.pv is a view, not a table.*Fix: use the"):
        mlog.create_mview_log(env, f"{s}.pv")
    assert "mlog__pv" not in tables(spark, s)


def test_a_table_that_is_no_master_is_named_with_what_it_is_and_the_fix(spark: Any) -> None:
    """A view over a table of another format (a dbt `table` model without
    `file_format='iceberg'`) or over a plain view rebuilds completely; the reason said only
    that the table was "not a known master table"."""
    s = "bad_not_a_master"
    spark.sql(f"CREATE SCHEMA {s}")
    spark.sql(f"CREATE TABLE {s}.t (k BIGINT, v INT) USING iceberg")
    spark.sql(f"INSERT INTO {s}.t VALUES (1, 1)")
    spark.sql(f"CREATE VIEW {s}.pv AS SELECT k, v FROM {s}.t")
    env = env_for(spark, f"{s}_registry", "java")
    cases = {"pv": "it is a view, which has no Iceberg snapshots"}
    if not SHARED:  # (a shared catalog's tables are all Iceberg)
        spark.sql(f"CREATE TABLE {s}.p (k BIGINT, v INT) USING parquet")
        spark.sql(f"INSERT INTO {s}.p VALUES (1, 1)")
        cases["p"] = "it is a 'parquet' table, and changes are read from Iceberg snapshots"
    for table, what in cases.items():
        sql = f"SELECT k, sum(v) AS v FROM {s}.{table} GROUP BY k"
        result = refresh_and_check(
            spark, env, TableName(s, f"over_{table}"), sql, exists=False, expect="COMPLETE"
        )
        assert result.reason is not None
        result = refresh_and_check(
            spark, env, TableName(s, f"over_{table}"), sql, exists=True, expect="COMPLETE"
        )
        assert result.reason is not None
        reason = result.reason.detail
        assert f"{s}.{table} is not a known master table: {what}" in reason, reason
        assert "Fix: make" in reason and "file_format='iceberg'" in reason, reason


def test_master_columns_named_like_the_logs_own_are_refused(spark: Any) -> None:
    s = "bad_reserved_columns"
    spark.sql(f"CREATE SCHEMA {s}")
    spark.sql(f"CREATE TABLE {s}.m (k BIGINT, sequence__ INT, __fr_note STRING) USING iceberg")
    env = env_for(spark, f"{s}_registry")
    with pytest.raises(
        FastRefreshError, match=r"column\(s\) sequence__, __fr_note, whose names .*Fix: rename"
    ):
        mlog.create_mview_log(env, f"{s}.m", key=["k"])
    assert "mlog__m" not in tables(spark, s)


def test_key_and_columns_given_as_strings_name_columns(spark: Any) -> None:
    """`--args "{master: s.t, key: id, columns: 'g, x'}"` hands over strings."""
    s = "bad_string_arguments"
    spark.sql(f"CREATE SCHEMA {s}")
    spark.sql(f"CREATE TABLE {s}.m (id BIGINT, g INT, x INT, y INT) USING iceberg")
    env = env_for(spark, f"{s}_registry")
    said = mlog.create_mview_log(env, f"{s}.m", key="id", columns="g, x")
    assert "keyed by (id), logging 2 column(s)" in said
    mlog.drop_mview_log(env, f"{s}.m")
    with pytest.raises(FastRefreshError, match=r"Key column\(s\) nope are not columns"):
        mlog.create_mview_log(env, f"{s}.m", key="nope")
    assert "mlog__m" not in tables(spark, s)


def test_malformed_purge_log_arguments_are_refused_before_any_write(spark: Any) -> None:
    s = "bad_purge_arguments"
    env, _, _ = built(spark, s)
    before = spark.sql(f"SELECT count(*) FROM {s}.mlog__m.snapshots").first()[0]
    with pytest.raises(FastRefreshError, match=r"num must be a whole number >= 0, got 'x'\. Fix"):
        admin.purge_log(env, f"{s}.m", "x", "delete")
    with pytest.raises(FastRefreshError, match=r"flag must be 'delete' or 'nop', got 'nope'"):
        admin.purge_log(env, f"{s}.m", 1, "nope")
    spark.sql(f"CREATE TABLE {s}.other (k BIGINT) USING iceberg")
    with pytest.raises(FastRefreshError, match=r"has no materialized view log.*Fix: dbt run-op"):
        admin.purge_log(env, f"{s}.other", 1, "delete")
    # A master that does not exist is named so, for a purge and a drop (both said it had
    # no log and told to create one); a drop of a missing log says there is nothing to do.
    missing = rf"{s}\.nosuch does not exist\. Fix: create"
    with pytest.raises(FastRefreshError, match=missing):
        admin.purge_log(env, f"{s}.nosuch", 1, "delete")
    with pytest.raises(FastRefreshError, match=missing):
        mlog.drop_mview_log(env, f"{s}.nosuch")
    with pytest.raises(FastRefreshError, match=r"nothing to drop\. Fix: check the master's name"):
        mlog.drop_mview_log(env, f"{s}.other")
    # A misspelt column of a key-less log was ignored (it logs whole rows): refused.
    with pytest.raises(FastRefreshError, match=r"Column\(s\) nosuchcol are not columns of"):
        mlog.create_mview_log(env, f"{s}.other", columns=["nosuchcol"])
    assert "mlog__other" not in tables(spark, s)
    assert spark.sql(f"SELECT count(*) FROM {s}.mlog__m.snapshots").first()[0] == before


def test_a_master_replaced_or_truncated(spark: Any) -> None:
    """CREATE OR REPLACE loses the history the log follows: the view rebuilds, saying the
    log is younger (ORA-12034); TRUNCATE TABLE is a delete of every row: captured, FAST."""
    s = "bad_replaced_master"
    env, sql, view = built(spark, s)
    spark.sql(f"CREATE OR REPLACE TABLE {s}.m USING iceberg AS SELECT * FROM {s}.m WHERE k < 9")
    result = refresh_and_check(spark, env, view, sql, exists=True, expect="COMPLETE")
    assert result.reason is not None and result.reason.code is ReasonCode.LOG_YOUNGER
    assert "not an ancestor" in str(result.reason)
    spark.sql(f"INSERT INTO {s}.m VALUES (50, 2, 3)")
    refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")
    spark.sql(f"TRUNCATE TABLE {s}.m")
    refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")
    assert spark.sql(f"SELECT count(*) FROM {view.sql}").first()[0] == 0


@pytest.mark.parametrize("path", PATHS)
def test_names_with_spaces_quotes_and_unicode(spark: Any, path: str) -> None:
    """Column names with a space, a quote and non-ASCII letters: logged, and views over
    them refresh fast (an aggregate and a keyed projection)."""
    s = f"odd_names_{path}"
    spark.sql(f"CREATE SCHEMA {s}")
    spark.sql(
        f"CREATE TABLE {s}.m (`my key` BIGINT NOT NULL, `grüppe` STRING, `it's` INT) USING iceberg"
    )
    spark.sql(f"ALTER TABLE {s}.m SET IDENTIFIER FIELDS `my key`")
    spark.sql(f"INSERT INTO {s}.m VALUES (1, 'ä', 1), (2, 'b', 2), (3, 'ä', 3)")
    env = env_for(spark, f"{s}_registry", path)
    mlog.create_mview_log(env, f"{s}.m")
    views = {
        TableName(s, "agg"): f"SELECT `grüppe`, count(*) AS `n of it's`, sum(`it's`) AS `s x` "
        f"FROM {s}.m GROUP BY `grüppe`",
        TableName(s, "proj"): f"SELECT `my key`, `grüppe` FROM {s}.m WHERE `it's` > 1",
    }
    for view, sql in views.items():
        refresh_and_check(spark, env, view, sql, exists=False, expect="COMPLETE")
    spark.sql(f"UPDATE {s}.m SET `it's` = 5, `grüppe` = 'ö' WHERE `my key` = 1")
    spark.sql(f"DELETE FROM {s}.m WHERE `my key` = 2")
    spark.sql(f"INSERT INTO {s}.m VALUES (4, 'ä', 7)")
    for view, sql in views.items():
        refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")


def test_drop_mview_log_while_a_refresh_reads_it_is_refused(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refresh in another thread is held right after its MERGE (its wrap-up, which
    registers and purges on the log, still to come); drop_mview_log then refuses, and the
    refresh finishes FAST and exact. Once it has, the drop goes through."""
    import threading

    from dbt.adapters.fastrefresh.runtime import faults

    s = "bad_drop_during_refresh"
    env, sql, view = built(spark, s)
    spark.sql(f"UPDATE {s}.m SET x = 5 WHERE k < 4")
    merged, go_on = threading.Event(), threading.Event()
    real_point = faults.point

    def pause_after_merge(name: str) -> None:
        if name == "apply.after_merge" and threading.current_thread().name == "refresher":
            merged.set()
            assert go_on.wait(120), "the test never let the refresh go on"
        real_point(name)

    monkeypatch.setattr(faults, "point", pause_after_merge)
    results: list[Any] = []
    refresher = threading.Thread(
        name="refresher",
        target=lambda: results.append(
            refresh.refresh_view(env, view=view, sql=sql, method="fast", exists=True)
        ),
    )
    refresher.start()
    try:
        assert merged.wait(300), "the refresh never reached its MERGE"
        with pytest.raises(FastRefreshError, match=r"is in use by a refresh.*Nothing was dropped"):
            mlog.drop_mview_log(env, f"{s}.m")
        assert "mlog__m" in tables(spark, s)
    finally:
        go_on.set()
        refresher.join(300)
    assert results and results[0].refresh_type == "FAST"
    assert matches(spark, view, sql)
    assert "dropped materialized view log" in mlog.drop_mview_log(env, f"{s}.m")


@pytest.mark.parametrize("path", PATHS)
def test_a_first_build_whose_query_does_not_run_names_it_and_leaves_no_log(
    spark: Any, path: str
) -> None:
    """A misspelt column or a syntax error: Spark's message over the model's query, not
    the storage table's CREATE with its plan, and the log the build created on the dbt
    source it reads is dropped again (no view uses it)."""
    schema = f"bad_query_{path}"
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(f"CREATE TABLE {schema}.src (k BIGINT NOT NULL, x INT) USING iceberg")
    spark.sql(f"INSERT INTO {schema}.src VALUES (1, 1)")
    env = env_for(spark, f"{schema}_registry", path)
    upstream = (Upstream(TableName(schema, "src"), "source.p.shop.src"),)
    before = tables(spark, schema)
    for sql, says, where in [
        # Positions in the query's own text: `y` is the 15th character of its line 1.
        (
            f"SELECT k, sum(y) AS s FROM {schema}.src GROUP BY k",
            "UNRESOLVED_COLUMN",
            "line 1 pos 14",
        ),
        (f"SELECT k FROM {schema}.src\nWHERE k >", "PARSE_SYNTAX_ERROR", "line 2, pos 9"),
        # A query may output one name twice; the view's table cannot hold both.
        (
            f"SELECT k, k, sum(x) AS s FROM {schema}.src GROUP BY k, k",
            "COLUMN_ALREADY_EXISTS",
            "outputs two columns named `k`, which a table cannot hold; alias one of them",
        ),
    ]:
        message = _first_build_fails(env, TableName(schema, "v"), sql, upstream)
        assert f"The query of {schema}.v does not run: [{says}" in message, message
        assert where in message and "Fix: correct the model's SQL" in message, message
        assert "__fr_data" not in message and "TableSpec" not in message, message
        assert tables(spark, schema) == before
    # The same source with a query that runs: its log is created, and the view is FAST.
    good = f"SELECT k, sum(x) AS s FROM {schema}.src GROUP BY k"
    result = refresh.refresh_view(
        env, view=TableName(schema, "v"), sql=good, method="force", exists=False,
        upstream=upstream,
    )  # fmt: skip
    assert result.logs_created and tables(spark, schema) > before
    spark.sql(f"INSERT INTO {schema}.src VALUES (2, 5)")
    refresh_and_check(spark, env, TableName(schema, "v"), good, exists=True, expect="FAST")


@pytest.mark.parametrize("path", PATHS)
def test_a_column_dropped_from_the_master_that_a_view_reads_names_it(spark: Any, path: str) -> None:
    """A master column a view filters on, dropped (no commit follows the drop: Spark reads
    the snapshot's schema, which has it, and Iceberg's scan of the table without it
    failed with a bare ValidationException through py4j): the error names the view, the
    master, the column and the fix."""
    s = f"bad_dropped_column_{path}"
    spark.sql(f"CREATE SCHEMA {s}")
    spark.sql(f"CREATE TABLE {s}.m (k BIGINT NOT NULL, x INT, t STRING) USING iceberg")
    spark.sql(f"ALTER TABLE {s}.m SET IDENTIFIER FIELDS k")
    spark.sql(f"INSERT INTO {s}.m VALUES (1, 1, 'a'), (2, 2, 'b')")
    env = env_for(spark, f"{s}_registry", path)
    mlog.create_mview_log(env, f"{s}.m")
    view, sql = TableName(s, "v"), f"SELECT k, x FROM {s}.m WHERE t = 'a'"
    refresh_and_check(spark, env, view, sql, exists=False, expect="COMPLETE")
    spark.sql(f"INSERT INTO {s}.m VALUES (3, 3, 'a')")
    refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")
    spark.sql(f"ALTER TABLE {s}.m DROP COLUMN t")
    with pytest.raises(FastRefreshError) as info:
        refresh.refresh_view(env, view=view, sql=sql, method="force", exists=True)
    message = str(info.value)
    assert f"The query of {view} reads column t of its master {s}.m, which the table no " in (
        message
    ), message
    assert "Fix: correct the model's SQL, or restore the column" in message, message
    said_only(message)


def test_output_columns_named_like_hidden_ones_are_refused_and_nothing_is_created(
    spark: Any,
) -> None:
    """An output column named ``__fr_*``: the view was built (COMPLETE, "reserved"), but
    without that column, which the view over the storage table left out as hidden (a hunt
    through dbt found it). The model now fails naming the column and the fix, before any
    write: no log, no table."""
    schema = "bad_reserved_output"
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(f"CREATE TABLE {schema}.src (k BIGINT NOT NULL, x INT) USING iceberg")
    spark.sql(f"INSERT INTO {schema}.src VALUES (1, 1)")
    env = env_for(spark, f"{schema}_registry", "java")
    upstream = (Upstream(TableName(schema, "src"), "source.p.shop.src"),)
    before = tables(spark, schema)
    for sql, named in [
        (f"SELECT k AS __fr_count, x FROM {schema}.src", "__fr_count"),
        (f"SELECT x, count(*) AS __FR_n FROM {schema}.src GROUP BY x", "__FR_n"),
        (f"WITH s AS (SELECT * FROM {schema}.src) SELECT k, rand() AS __fr_r FROM s", "__fr_r"),
        (f"SELECT k AS __fr_k FROM {schema}.src UNION ALL SELECT x FROM {schema}.src", "__fr_k"),
    ]:
        with pytest.raises(FastRefreshError) as info:
            refresh.refresh_view(
                env, view=TableName(schema, "v"), sql=sql, method="force", exists=False,
                upstream=upstream,
            )  # fmt: skip
        message = str(info.value)
        assert f"The query of {schema}.v outputs column(s) {named}: names starting" in message
        assert "Fix: rename them" in message, message
        assert tables(spark, schema) == before


def test_a_source_that_can_have_no_log_builds_its_views_and_says_why(spark: Any) -> None:
    """A dbt source with a MAP column (or a column named like the log's own) can have no
    log, and the refresh of every model over it failed on every run, under 'force' too,
    with create_mview_log's error, even where the query reads no such column. The view is
    now built completely under 'force', its reason naming the columns and the fix; under
    'fast' the refresh fails before anything is written. No log is created."""
    s = "bad_unloggable_source"
    spark.sql(f"CREATE SCHEMA {s}")
    spark.sql(f"CREATE TABLE {s}.m (k BIGINT, g INT, props MAP<STRING, STRING>) USING iceberg")
    spark.sql(f"CREATE TABLE {s}.r (k BIGINT, g INT, dmltype__ STRING) USING iceberg")
    for master in ("m", "r"):
        spark.sql(f"INSERT INTO {s}.{master} VALUES (1, 1, NULL), (2, 1, NULL), (3, 2, NULL)")
    env = env_for(spark, f"{s}_registry")
    for master, column, fix in [
        ("m", "MAP column(s) props", "store them as a struct/array or a JSON string"),
        ("r", "column(s) dmltype__, whose names", "rename them in the master"),
    ]:
        upstream = (Upstream(TableName(s, master), f"source.p.shop.{master}"),)
        sql = f"SELECT g, count(*) AS n FROM {s}.{master} GROUP BY g"
        view = TableName(s, f"v_{master}")
        before = tables(spark, s)
        message = _first_build_fails(env, view, sql, upstream, method="fast")
        assert f"{s}.{master} has no materialized view log" in message, message
        assert column in message and f"Fix: {fix}" in message, message
        assert tables(spark, s) == before, "nothing is written"
        for exists in (False, True):
            result = refresh.refresh_view(
                env, view=view, sql=sql, method="force", exists=exists, upstream=upstream
            )
            assert result.refresh_type is RefreshType.COMPLETE, result.reason
            assert column in str(result.reason) and f"Fix: {fix}" in str(result.reason)
            assert not result.logs_created
            assert matches(spark, view, sql)
            spark.sql(f"UPDATE {s}.{master} SET g = 2 WHERE k = 1")
        assert f"mlog__{master}" not in tables(spark, s)


def test_a_map_output_is_built_as_a_table_model_would_be(spark: Any) -> None:
    """A view outputting a MAP (a master's MAP column, or one the query makes) failed
    every build with Spark's `partition keys cannot be map type` and its Java stack trace,
    under 'complete' too: a key-less plan counts the view's distinct rows, and Spark
    cannot group maps (helper-38). Such a query has no plan now: the view is built
    completely, its reason naming the column; under 'fast' it is refused before any
    write."""
    s = "bad_map_output"
    spark.sql(f"CREATE SCHEMA {s}")
    spark.sql(f"CREATE TABLE {s}.mp (id BIGINT, m MAP<STRING, INT>) USING iceberg")
    spark.sql(f"INSERT INTO {s}.mp VALUES (1, map('a', 1)), (1, map('a', 1)), (2, NULL)")
    spark.sql(f"CREATE TABLE {s}.nk (id BIGINT, v INT) USING iceberg")
    spark.sql(f"INSERT INTO {s}.nk VALUES (1, 1), (2, 2)")
    env = env_for(spark, f"{s}_registry")
    for master, sql, named in [
        ("mp", f"SELECT id, m FROM {s}.mp", "m"),
        ("nk", f"SELECT id, map('v', v) AS vm FROM {s}.nk", "vm"),
        ("nk", f"SELECT id, struct(id, str_to_map('a:1')) AS st FROM {s}.nk", "st"),
    ]:
        upstream = (Upstream(TableName(s, master), f"source.p.shop.{master}"),)
        view = TableName(s, f"v_{named}")
        before = tables(spark, s)
        message = _first_build_fails(env, view, sql, upstream, method="fast")
        assert f"a MAP output, {named}, which Spark cannot compare" in message, message
        assert tables(spark, s) == before, "nothing is written"
        for exists in (False, True):
            result = refresh.refresh_view(
                env, view=view, sql=sql, method="force", exists=exists, upstream=upstream
            )
            assert result.refresh_type is RefreshType.COMPLETE, result.reason
            assert f"a MAP output, {named}" in str(result.reason), result.reason
            shown = "SELECT to_json(struct(*)) FROM ({})"
            got = sorted(
                r[0] for r in spark.sql(shown.format(f"SELECT * FROM {view.sql}")).collect()
            )
            assert got == sorted(r[0] for r in spark.sql(shown.format(sql)).collect())
            spark.sql(f"INSERT INTO {s}.{master} SELECT * FROM {s}.{master} WHERE id = 2")


def test_explain_mview_takes_a_view_named_like_a_keyword_for_the_view(spark: Any) -> None:
    """explain_mview took any argument holding "select" for a query: a view named
    `selected_ids` was explained as the query `selected_ids`, "not fast-refreshable"
    (helper-38). A query is what begins with SELECT or WITH (after blanks, comments and
    parentheses); anything else is a view's name."""
    s = "bad_explain_names"
    env = keyed_master_with_log(spark, s, rows=10, groups=2)
    view = TableName(s, "selected_ids")
    sql = f"SELECT k, x FROM {s}.m WHERE g = 1"
    refresh_and_check(spark, env, view, sql, exists=False, expect="COMPLETE")
    for target in (str(view), f"  -- the query\n {sql}", f"with w AS ({sql}) SELECT * FROM w"):
        said = inspection.explain(env, target)
        assert "REFRESH_FAST: yes" in said, (target, said)
    assert inspection.explain(env, str(view)).startswith(f"explain_mview {view}:")


def test_refresh_mviews_with_a_name_that_is_no_view_refreshes_none(spark: Any) -> None:
    """refresh_mviews checked each name as it came to it: a list with a typo refreshed the
    views before it, then failed saying only that the typo was none (helper-38). Every
    name is checked first now, and a bad one refreshes nothing."""
    s = "bad_refresh_list"
    env = keyed_master_with_log(spark, s, rows=10, groups=2)
    view = TableName(s, "a")
    sql = f"SELECT g, count(*) AS n FROM {s}.m GROUP BY g"
    refresh_and_check(spark, env, view, sql, exists=False, expect="COMPLETE")
    before = sorted(map(tuple, spark.table(view.sql).collect()))
    spark.sql(f"INSERT INTO {s}.m VALUES (100, 0, 1)")
    with pytest.raises(FastRefreshError, match=rf"{s}\.typo"):
        inspection.refresh_mviews(env, [str(view), f"{s}.typo"], "force")
    assert sorted(map(tuple, spark.table(view.sql).collect())) == before, "nothing refreshed"
    (result,) = inspection.refresh_mviews(env, [str(view)], "force")
    assert result.refresh_type == "FAST" and matches(spark, view, sql)


def test_a_table_option_spark_refuses_names_the_option_and_leaves_nothing(spark: Any) -> None:
    """A `partition_by` naming no output, a `format-version` Iceberg has not, and a
    `location_root` that cannot be created failed with Spark's or Java's own words
    (`Couldn't find column kk in: root |-- ...`, `Unhandled error ... For input string:
    "3x"`, a stack trace), none naming the option (helper-38)."""
    s = "bad_table_options"
    spark.sql(f"CREATE SCHEMA {s}")
    spark.sql(f"CREATE TABLE {s}.src (k BIGINT NOT NULL, x INT) USING iceberg")
    spark.sql(f"INSERT INTO {s}.src VALUES (1, 1)")
    env = env_for(spark, f"{s}_registry")
    upstream = (Upstream(TableName(s, "src"), "source.p.shop.src"),)
    sql = f"SELECT k, x FROM {s}.src"
    before = tables(spark, s)
    for table, said in [
        (
            refresh.TableSpec("partitioned by (kk)"),
            f"The partition_by (or clustered_by) of {s}.v names kk, which is not a column "
            "its query outputs. Fix:",
        ),
        (
            refresh.TableSpec(properties={"format-version": "3x"}),
            f"The tblproperties of {s}.v give format-version '3x', which Iceberg does not "
            "take. Fix: '2'",
        ),
        (
            refresh.TableSpec("location '/proc/no_such_folder/v'"),
            f"The storage table of {s}.v cannot be written at file:/proc/no_such_folder/",
        ),
    ]:
        with pytest.raises(FastRefreshError) as info:
            refresh.refresh_view(
                env, view=TableName(s, "v"), sql=sql, method="force", exists=False,
                upstream=upstream, table=table,
            )  # fmt: skip
        assert said in str(info.value), info.value
        said_only(str(info.value))
        assert tables(spark, s) == before, "nothing is left"
    # Another property's bad number is not put down to format-version.
    with pytest.raises(Exception) as raised:
        refresh.refresh_view(
            env, view=TableName(s, "v"), sql=sql, method="force", exists=False,
            upstream=upstream, table=refresh.TableSpec(properties={
                "format-version": "2", "write.target-file-size-bytes": "128MB",
            }),
        )  # fmt: skip
    assert "format-version" not in str(raised.value) and "128MB" in str(raised.value)
    assert tables(spark, s) == before, "nothing is left"


def test_a_failed_full_refresh_leaves_the_registry_showing_the_view_as_it_is(
    spark: Any,
) -> None:
    """A --full-refresh that failed left the view as it was, yet the registry showed it
    UNUSABLE ("must be completely refreshed"), and the next plain run was FAST and right
    (helper-38). A failed rebuild the user asked for shows the view's own staleness, or
    NEEDS_COMPILE when its definition changed (as the same failure without the flag
    does); a fast refresh that could not go on still shows UNUSABLE."""
    s = "bad_failed_full_refresh"
    env = keyed_master_with_log(spark, s, rows=10, groups=2)
    view = TableName(s, "v")
    sql = f"SELECT k, IF(x > 100, CAST(raise_error('x too big') AS INT), x) AS x FROM {s}.m"
    refresh_and_check(spark, env, view, sql, exists=False, expect="COMPLETE")
    registry.publish(env)

    def fails(query: str, *, full_refresh: bool) -> str:
        with pytest.raises(Exception, match=r"x too big|does not run"):
            refresh.refresh_view(
                env, view=view, sql=query, method="force", exists=True,
                full_refresh=full_refresh,
            )  # fmt: skip
        registry.publish(env)
        (row,) = registry.select(env, "mviews", f"mview = '{view}'")
        return str(row["staleness"])

    spark.sql(f"INSERT INTO {s}.m VALUES (100, 0, 500)")  # the query now raises
    assert fails(sql, full_refresh=True) == "STALE"
    spark.sql(f"DELETE FROM {s}.m WHERE k = 100")
    broken = f"SELECT k, xx FROM {s}.m"
    assert fails(broken, full_refresh=False) == "NEEDS_COMPILE"
    assert fails(broken, full_refresh=True) == "NEEDS_COMPILE"
    spark.sql(f"UPDATE {s}.m SET x = 5 WHERE k = 1")
    refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")


def test_a_key_named_twice_and_a_log_on_the_registry_are_refused(spark: Any) -> None:
    """`key: [id, id]` failed with Spark's `[COLUMN_ALREADY_EXISTS]` as the log's table
    was created; a log on the registry's own table was created, and captured every
    publish (helper-38). Both are refused, naming the fix; nothing is created."""
    s = "bad_key_twice"
    env = keyed_master_with_log(spark, s, rows=4, groups=2)
    mlog.drop_mview_log(env, f"{s}.m")
    with pytest.raises(
        FastRefreshError, match=rf"The key of a log on {s}\.m names k more than once"
    ):
        mlog.create_mview_log(env, f"{s}.m", key=["k", "K"])
    registry.publish(env)  # the registry's table exists
    with pytest.raises(FastRefreshError, match=r"is dbt-fastrefresh's own table .*Fix: name a"):
        mlog.create_mview_log(env, f"{s}_registry.registry")
    assert "mlog__m" not in tables(spark, s)
    assert "mlog__registry" not in tables(spark, f"{s}_registry")


def test_an_output_of_a_type_iceberg_has_not_names_the_column(spark: Any) -> None:
    """A bare NULL output (VOID) or an INTERVAL failed with Iceberg's bare "Not a supported
    type: void" (a Java UnsupportedOperationException). The error names the view, the
    columns and the fix, and the log its first build created is gone again."""
    s = "bad_unstorable_outputs"
    spark.sql(f"CREATE SCHEMA {s}")
    spark.sql(f"CREATE TABLE {s}.src (k BIGINT NOT NULL, t TIMESTAMP) USING iceberg")
    spark.sql(f"INSERT INTO {s}.src VALUES (1, TIMESTAMP'2026-01-02 03:04:05')")
    env = env_for(spark, f"{s}_registry")
    upstream = (Upstream(TableName(s, "src"), "source.p.shop.src"),)
    before = tables(spark, s)
    for sql, named in [
        (f"SELECT k, NULL AS n FROM {s}.src", "n (void)"),
        (f"SELECT k, count(*) AS c, NULL AS z FROM {s}.src GROUP BY k", "z (void)"),
        (f"SELECT k, INTERVAL 1 DAY AS d FROM {s}.src", "d (interval day)"),
        (
            f"SELECT k, t - TIMESTAMP'2026-01-01 00:00:00' AS d FROM {s}.src",
            "d (interval day to second)",
        ),
    ]:
        message = _first_build_fails(env, TableName(s, "v"), sql, upstream)
        assert f"The query of {s}.v outputs {named}, a type an Iceberg table" in message
        assert "Fix: give a bare NULL its type" in message, message
        assert tables(spark, s) == before
