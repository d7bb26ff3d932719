"""Columns added to a master before its next commit (`ALTER TABLE ... ADD COLUMN`).

An `ADD COLUMN` makes no snapshot, and Iceberg reads a snapshot with the schema it was
committed under. So a refresh pinning the master's current snapshot read it without the
new column, and a view whose query names that column (or `*`) failed to build until
the master's next commit: `UNRESOLVED_COLUMN`. A log created after the `ADD COLUMN`
starts from that snapshot, and its first capture on the SQL path failed the same way
(for good: the commit stayed in its range). Both now read the column as NULL there, as
Iceberg reads it in every data file written before it.
"""

from __future__ import annotations

from typing import Any

import pytest

from dbt.adapters.fastrefresh.engine import refresh
from dbt.adapters.fastrefresh.engine.inspection import staleness_of
from dbt.adapters.fastrefresh.engine.refresh import load_view
from dbt.adapters.fastrefresh.engine.upstream import Upstream
from dbt.adapters.fastrefresh.mlog import capture
from dbt.adapters.fastrefresh.mlog import ddl as mlog
from dbt.adapters.fastrefresh.protocol.decisions import ReasonCode, Staleness
from dbt.adapters.fastrefresh.sqltext import TableName, storage_of
from tests.functional.sites import env_for, matches, refresh_and_check


@pytest.mark.parametrize("path", ["java", "sql"])
def test_columns_added_before_the_masters_next_commit_are_read_as_null(
    spark: Any, path: str
) -> None:
    s = f"added_columns_{path}"
    sql = spark.sql
    sql(f"CREATE SCHEMA {s}")
    mor = ", ".join(f"'write.{o}.mode'='merge-on-read'" for o in ("update", "delete", "merge"))
    sql(f"CREATE TABLE {s}.m (k BIGINT NOT NULL, g STRING, x INT) USING iceberg")
    sql(f"ALTER TABLE {s}.m SET IDENTIFIER FIELDS k")
    sql(f"CREATE TABLE {s}.d (g STRING NOT NULL, r STRING) USING iceberg TBLPROPERTIES ({mor})")
    sql(f"ALTER TABLE {s}.d SET IDENTIFIER FIELDS g")
    sql(f"INSERT INTO {s}.m VALUES (1, 'a', 1), (2, 'b', NULL), (3, 'a', 7)")
    sql(f"INSERT INTO {s}.d VALUES ('a', 'north'), ('b', 'south')")
    env = env_for(spark, f"{s}_registry", path)
    mlog.create_mview_log(env, f"{s}.m")
    star, total = TableName(s, "star"), TableName(s, "total")
    star_sql = f"SELECT * FROM {s}.m"
    total_sql = f"SELECT g, sum(x) AS sx FROM {s}.m GROUP BY g"
    refresh_and_check(spark, env, star, star_sql, exists=False, expect="COMPLETE")
    refresh_and_check(spark, env, total, total_sql, exists=False, expect="COMPLETE")

    sql(f"UPDATE {s}.m SET x = 5 WHERE k = 2")
    sql(f"ALTER TABLE {s}.m ADD COLUMN y INT")
    sql(f"ALTER TABLE {s}.d ADD COLUMN z INT")
    # The registry's staleness: the view of `*` needs compiling; the other is stale (the
    # UPDATE is committed, not captured yet: it was FRESH "as far as capture has seen").
    stale = {v: staleness_of(env, load_view(env, v)) for v in (star, total)}  # type: ignore[arg-type]
    assert stale[star][0] is Staleness.NEEDS_COMPILE, stale
    assert stale[total] == (
        Staleness.STALE, f"{s}.m has commits its log has not captured yet"
    ), stale  # fmt: skip
    # The view of `*` now has y, read as NULL at the snapshot its rebuild pins.
    result = refresh_and_check(spark, env, star, star_sql, exists=True, expect="COMPLETE")
    assert result.reason is not None and "new column(s) y" in result.reason.detail
    # The view of g and x reads neither new column: it stays fast.
    refresh_and_check(spark, env, total, total_sql, exists=True, expect="FAST")

    # A log created after the ADD COLUMN starts from the snapshot without z: its first
    # capture reads the rows a commit removed there.
    mlog.create_mview_log(env, f"{s}.d", columns=[])
    join = TableName(s, "joined")
    join_sql = f"SELECT m.k, m.x, d.r, d.z FROM {s}.m m JOIN {s}.d d ON m.g = d.g"
    refresh_and_check(spark, env, join, join_sql, exists=False, expect="COMPLETE")
    sql(f"UPDATE {s}.d SET z = 7 WHERE g = 'a'")
    assert "1 log row(s)" in capture.capture(env, TableName(s, "d")).message()
    # Built from d's snapshot without z, the join view would read it there again for the
    # rows d's update changed: it is rebuilt once, from the newer snapshot.
    result = refresh_and_check(spark, env, join, join_sql, exists=True, expect="COMPLETE")
    assert result.reason is not None
    assert result.reason.code is ReasonCode.MASTER_COLUMNS_CHANGED
    assert f"last built from a snapshot of {s}.d older than its newest column" in str(result.reason)
    assert sorted(sql(f"SELECT k, z FROM {join.sql}").collect()) == [(1, 7), (2, None), (3, 7)]
    # From then on, fast (the view of x alone read none of the new columns: fast at once).
    sql(f"UPDATE {s}.d SET z = 8, r = 'east' WHERE g = 'b'")
    sql(f"DELETE FROM {s}.m WHERE k = 3")
    sql(f"UPDATE {s}.m SET y = 4 WHERE k = 1")
    refresh_and_check(spark, env, join, join_sql, exists=True, expect="FAST")
    refresh_and_check(spark, env, total, total_sql, exists=True, expect="FAST")
    # The view of `*` reads y, which m's log (created before it) does not hold.
    result = refresh_and_check(spark, env, star, star_sql, exists=True, expect="COMPLETE")
    assert result.reason is not None and result.reason.code is ReasonCode.LOG_BROKEN


@pytest.mark.parametrize("path", ["java", "sql"])
def test_a_log_made_for_a_dbt_node_is_made_again_when_its_master_gains_columns(
    spark: Any, path: str
) -> None:
    """An upstream model given a column its downstream model then reads: the log the
    materialization created on the upstream table records the columns it had, and the
    downstream view rebuilt on every run (`log_broken`) until the user recreated it."""
    s = f"added_upstream_{path}"
    spark.sql(f"CREATE SCHEMA {s}")
    spark.sql(f"CREATE TABLE {s}.raw (id INT NOT NULL, v INT, w INT, u INT) USING iceberg")
    spark.sql(f"ALTER TABLE {s}.raw SET IDENTIFIER FIELDS id")
    spark.sql(f"INSERT INTO {s}.raw VALUES (1, 1, 10, 100), (2, 2, 20, 200)")
    env = env_for(spark, f"{s}_registry", path)
    mlog.create_mview_log(env, f"{s}.raw")
    up, down = TableName(s, "up"), TableName(s, "down")
    from_raw = (Upstream(TableName(s, "raw"), "source.p.raw.raw"),)
    from_up = (Upstream(storage_of(up), "model.p.up"),)

    def run(up_sql: str, down_sql: str, exists: bool = True) -> list[str]:
        said = []
        for view, sql, ups in ((up, up_sql, from_raw), (down, down_sql, from_up)):
            result = refresh.refresh_view(
                env, view=view, sql=sql, method="force", exists=exists, upstream=ups
            )
            assert matches(spark, view, sql), f"{view} differs from {sql}"
            said += [result.message(), *result.logs_created]
        return said

    narrow = (f"SELECT id, v FROM {s}.raw", f"SELECT id, v FROM {s}.up")
    wide = (f"SELECT id, v, w FROM {s}.raw", f"SELECT id, v, w FROM {s}.up WHERE w > 0")
    said = run(*narrow, exists=False)
    assert f"created materialized view log {s}.mlog__up__fr_data" in said[-1], said
    spark.sql(f"UPDATE {s}.raw SET v = 5 WHERE id = 1")
    assert run(*narrow) == [
        f"FAST refresh of {up}: 2 log row(s)",
        f"FAST refresh of {down}: 2 log row(s)",
    ]
    # Both models read w now: the upstream's table gained it, and so does its log.
    said = run(*wide)
    assert said[0].startswith(f"COMPLETE refresh of {up}: the view's definition changed")
    assert f"again: {s}.up__fr_data gained column(s) w since its log was created" in said[-1]
    fast = [f"FAST refresh of {up}: 2 log row(s)", f"FAST refresh of {down}: 2 log row(s)"]
    for _ in range(2):
        spark.sql(f"UPDATE {s}.raw SET w = w + 1 WHERE id = 2")
        assert run(*wide) == fast
    # A column that no model reads: the log stays as it was, and the models fast.
    spark.sql(f"ALTER TABLE {s}.raw ADD COLUMN q INT")
    spark.sql(f"UPDATE {s}.raw SET w = w + 1, q = 3 WHERE id = 1")
    assert run(*wide) == fast
    # Until the upstream model reads it: then the log is created again.
    said = run(f"SELECT id, v, w, q FROM {s}.raw", wide[1])
    assert f"again: {s}.raw gained column(s) q since its log was created" in said[1], said
    spark.sql(f"UPDATE {s}.raw SET w = w + 1, q = 4 WHERE id = 2")
    assert run(f"SELECT id, v, w, q FROM {s}.raw", wide[1]) == fast
    # The upstream model renames an output: its rebuilt table no longer has the column
    # its log records, and that log recorded nothing: the downstream model rebuilt on
    # every run, --full-refresh or not. The log is created again.
    renamed = (f"SELECT id, v AS v2, w FROM {s}.raw", f"SELECT id, v2 FROM {s}.up WHERE w > 0")
    said = run(*renamed)
    assert (
        f"again: column(s) v of {s}.up__fr_data were dropped or renamed since its log "
        f"{s}.mlog__up__fr_data was created" in said[-1]
    ), said
    for _ in range(2):
        spark.sql(f"UPDATE {s}.raw SET v = v + 1 WHERE id = 2")
        assert run(*renamed) == fast


@pytest.mark.parametrize("path", ["java", "sql"])
def test_columns_renamed_or_added_again_before_the_masters_next_commit(
    spark: Any, path: str
) -> None:
    """A `RENAME COLUMN`, and a `DROP COLUMN` then `ADD COLUMN` of the same name, make no
    snapshot either. At the snapshot a rebuild pins, the renamed column has its old name
    (it read as NULL, as if added) and the one added again its old values (the query
    reads NULL). They are told apart by Iceberg's field ids: the Java path reads them
    from Iceberg's API, the SQL path from the table's metadata file when names alone are
    ambiguous (a column gone, another new), which a rename makes."""
    s = f"renamed_columns_{path}"
    sql = spark.sql
    sql(f"CREATE SCHEMA {s}")
    sql(f"CREATE TABLE {s}.m (k BIGINT NOT NULL, g STRING, x INT, y INT) USING iceberg")
    sql(f"ALTER TABLE {s}.m SET IDENTIFIER FIELDS k")
    sql(f"INSERT INTO {s}.m VALUES (1, 'a', 1, 10), (2, 'b', 2, 20), (3, 'a', 3, 30)")
    env = env_for(spark, f"{s}_registry", path)
    mlog.create_mview_log(env, f"{s}.m")
    view = TableName(s, "v")
    refresh_and_check(
        spark, env, view, f"SELECT g, sum(x) AS sx, sum(y) AS sy FROM {s}.m GROUP BY g",
        exists=False, expect="COMPLETE",
    )  # fmt: skip

    sql(f"ALTER TABLE {s}.m RENAME COLUMN x TO x2")
    sql(f"ALTER TABLE {s}.m DROP COLUMN y")
    sql(f"ALTER TABLE {s}.m ADD COLUMN y INT")
    assert sql(f"SELECT sum(x2), count(y) FROM {s}.m").first() == (6, 0)
    view_sql = f"SELECT g, sum(x2) AS sx, sum(y) AS sy, count(*) AS n FROM {s}.m GROUP BY g"
    # Rebuilt from the snapshot before the ALTERs, reading x2 as x and y as NULL.
    refresh_and_check(spark, env, view, view_sql, exists=True, expect="COMPLETE")
    assert sorted(sql(f"SELECT g, sx, sy FROM {view.sql}").collect()) == [
        ("a", 4, None), ("b", 2, None),
    ]  # fmt: skip
    # The log, created with x, cannot record the master now (test_bad_input.py). Created
    # again before the master's next commit, the log starts from that snapshot,
    # where its first capture reads the rows the next commit rewrites by the old names.
    mlog.drop_mview_log(env, f"{s}.m")
    mlog.create_mview_log(env, f"{s}.m")
    refresh_and_check(spark, env, view, view_sql, exists=True, expect="COMPLETE")
    sql(f"UPDATE {s}.m SET x2 = x2 + 100, y = 7 WHERE k = 1")
    sql(f"DELETE FROM {s}.m WHERE k = 2")
    assert "3 log row(s)" in capture.capture(env, TableName(s, "m")).message()
    log = sorted(sql(f"SELECT k, x2, y, old_new__ FROM {s}.mlog__m").collect())
    assert log == [(1, 1, None, "O"), (1, 101, 7, "N"), (2, 2, None, "O")], log
    # Built from the snapshot with the old names, the view is rebuilt once from the newer
    # one (its fast refresh would read the master there); then fast.
    result = refresh_and_check(spark, env, view, view_sql, exists=True, expect="COMPLETE")
    assert result.reason is not None
    assert result.reason.code is ReasonCode.MASTER_COLUMNS_CHANGED, result.reason
    sql(f"UPDATE {s}.m SET y = 8 WHERE k = 3")
    sql(f"INSERT INTO {s}.m VALUES (4, 'b', 4, 40)")
    refresh_and_check(spark, env, view, view_sql, exists=True, expect="FAST")
