"""The master-site behaviour the seed traces show, step for step, on real Iceberg tables.

Views appear here by their refreshes at the master site (setup → wrap-up), which is all
the master site of Oracle ever sees of them: registration, stamps, purges.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
from typing import Any

import pytest

from dbt.adapters.fastrefresh import admin, capture, logs, logsite
from dbt.adapters.fastrefresh.clock import utcnow
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.executor import SparkExecutor
from dbt.adapters.fastrefresh.registry import Registry
from dbt.adapters.fastrefresh.sqltext import TableName

UNMARKED = dt.datetime(4000, 1, 1)
_n = itertools.count()


class Site:
    """One schema with a registry: the master site of a seed scenario."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.schema = f"seed_{next(_n)}"
        self.x = SparkExecutor(spark)
        self.registry = Registry(self.x, f"{self.schema}_registry")
        spark.sql(f"CREATE SCHEMA {self.schema}")

    def sql(self, text: str) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self.spark.sql(text).collect()]

    def t(self, name: str) -> TableName:
        return TableName(self.schema, name)

    def refresh(self, master: str, view: str) -> logsite.Setup:
        """A view's refresh as the master site sees it (fast or complete alike)."""
        done = logsite.setup(self.x, self.registry, self.t(master), self.t(view), utcnow)
        logsite.wrap_up(self.x, self.registry, done)
        return done

    def log(self, master: str) -> Any:
        return self.registry.log_for_master(self.t(master))

    def users(self, master: str) -> dict[str, Any]:
        return {u.mview.table: u for u in self.registry.log_users(self.log(master).log_table)}

    def stamps(self, master: str, columns: str = "id") -> list[tuple[Any, ...]]:
        return self.sql(
            f"SELECT {columns}, snaptime__, dmltype__ FROM {self.schema}.mlog__{master} ORDER BY sequence__"
        )


@pytest.fixture
def site(spark: Any) -> Site:
    return Site(spark)


def test_seed_000_one_log_three_views_stamps_and_purge(site: Site) -> None:
    """Seed 000: mv_t_id, mv_t_name, mv_t_id_name on one log of t(id, name, num)."""
    site.sql(f"CREATE TABLE {site.schema}.t (id INT, name STRING, num INT) USING iceberg")
    # `with rowid ... including new values` on a table without a key: a key-less log.
    logs.create_mview_log(site.x, site.registry, f"{site.schema}.t", None, False, [], utcnow)
    for view in ("mv_t_id", "mv_t_name", "mv_t_id_name"):
        site.refresh("t", view)  # created (complete refresh) before the DML
    for row in ("1, 'a', 2", "1, 'b', 3", "2, 'a', 5", "3, 'b', 7"):
        site.sql(f"INSERT INTO {site.schema}.t VALUES ({row})")
    site.sql(f"UPDATE {site.schema}.t SET name = 'c' WHERE id = 3")
    site.sql(f"DELETE FROM {site.schema}.t WHERE id = 2")
    capture.capture(site.x, site.registry, site.t("t"), utcnow)
    assert site.stamps("t", "id, name") == [
        (1, "a", UNMARKED, "I"),
        (1, "b", UNMARKED, "I"),
        (2, "a", UNMARKED, "I"),
        (3, "b", UNMARKED, "I"),
        (3, "b", UNMARKED, "D"),  # Oracle logs U/O and U/N on a rowid log; key-less here:
        (3, "c", UNMARKED, "I"),  # an update is the delete of the old image + the new one
        (2, "a", UNMARKED, "D"),
    ]
    t1 = site.refresh("t", "mv_t_id").now
    assert {s for *_, s, _ in site.stamps("t", "id, name")} == {t1}, "first refresher stamps all"
    assert len(site.stamps("t")) == 7, "nothing purged: two views have not refreshed"

    site.sql(f"INSERT INTO {site.schema}.t VALUES (4, 'd', 10)")
    capture.capture(site.x, site.registry, site.t("t"), utcnow)
    assert site.stamps("t")[-1][1:] == (UNMARKED, "I")
    t2 = site.refresh("t", "mv_t_id_name").now
    assert t2 > t1
    stamps = [s for _, s, _ in site.stamps("t")]
    assert stamps == [t1] * 7 + [t2], "only the new row gets the new time"

    t3 = site.refresh("t", "mv_t_id").now
    assert [s for _, s, _ in site.stamps("t")] == [t1] * 7 + [t2], (
        "a later refresher never restamps"
    )
    assert site.users("t")["mv_t_id"].last_refresh == t3

    site.sql(f"INSERT INTO {site.schema}.t VALUES (5, 'e', 2)")
    t4 = site.refresh("t", "mv_t_name").now
    # mv_t_name consumed everything; min(last refresh) = t2, so rows stamped <= t2 go.
    assert site.stamps("t", "id, name") == [(5, "e", t4, "I")]
    assert site.log("t").last_purge_rows == 8


def test_seed_001_three_views_oldest_youngest_and_purge(site: Site) -> None:
    """Seed 001 section 2.1.1: EMP with a primary-key log and three snapshots."""
    site.sql(f"CREATE TABLE {site.schema}.emp (empno INT NOT NULL, sal INT) USING iceberg")
    site.sql(f"ALTER TABLE {site.schema}.emp SET IDENTIFIER FIELDS empno")
    site.sql(f"INSERT INTO {site.schema}.emp VALUES (1, 100), (2, 200)")
    logs.create_mview_log(site.x, site.registry, f"{site.schema}.emp", None, False, None, utcnow)
    created = site.log("emp")
    assert created.oldest == created.youngest == created.created, "1. log creation sets both"

    r1 = site.refresh("emp", "emp_snap").now
    assert (site.log("emp").oldest, site.log("emp").youngest) == (r1, r1), "2.1 first view: both"
    r2 = site.refresh("emp", "emp_snap1").now
    r3 = site.refresh("emp", "emp_snap2").now
    assert (site.log("emp").oldest, site.log("emp").youngest) == (r1, r3), "3.1 youngest only"
    assert {k: u.last_refresh for k, u in site.users("emp").items()} == {
        "emp_snap": r1, "emp_snap1": r2, "emp_snap2": r3,
    }, "3.2 one SLOG$ row per view, at its creation"  # fmt: skip

    site.sql(f"UPDATE {site.schema}.emp SET sal = sal + 1 WHERE empno = 1")
    site.sql(f"INSERT INTO {site.schema}.emp VALUES (3, 300)")
    capture.capture(site.x, site.registry, site.t("emp"), utcnow)
    assert [s for _, s, _ in site.stamps("emp", "empno")] == [UNMARKED] * 3, "4.2 4000-01-01"

    t5 = site.refresh("emp", "emp_snap1").now  # 5. first refresh stamps
    assert [s for _, s, _ in site.stamps("emp", "empno")] == [t5] * 3
    assert site.log("emp").oldest == r1, "emp_snap is still the oldest"
    assert len(site.stamps("emp", "empno")) == 3, "not purged: two views behind"

    t6 = site.refresh("emp", "emp_snap").now  # 6. second view: no restamp, no purge
    assert [s for _, s, _ in site.stamps("emp", "empno")] == [t5] * 3
    assert site.log("emp").oldest == r3, "oldest moves to the least recently refreshed"

    site.refresh("emp", "emp_snap2")  # 7. last view: min(SLOG$) = t5 >= every stamp
    assert site.stamps("emp", "empno") == []
    log = site.log("emp")
    assert log.oldest == t5 and log.last_purge_rows == 3
    assert t6 > t5


def test_seed_003_last_purge_date_and_two_sites(site: Site) -> None:
    """Seed 003: two sites; LAST_PURGE_DATE moves on every refresh; purge when both did."""
    site.sql(
        f"CREATE TABLE {site.schema}.t (object_id INT NOT NULL, data_object_id INT) USING iceberg"
    )
    site.sql(f"ALTER TABLE {site.schema}.t SET IDENTIFIER FIELDS object_id")
    site.sql(f"INSERT INTO {site.schema}.t VALUES (2300, 5), (2301, 6)")
    logs.create_mview_log(site.x, site.registry, f"{site.schema}.t", [], False, None, utcnow)
    site.refresh("t", "t_rep_db2")
    site.refresh("t", "t_rep_db3")
    site.sql(f"UPDATE {site.schema}.t SET data_object_id = 0 WHERE object_id = 2300")
    capture.capture(site.x, site.registry, site.t("t"), utcnow)
    rows = site.sql(
        f"SELECT object_id, snaptime__, dmltype__, old_new__, hex(change_vector__) FROM {site.schema}.mlog__t"
    )
    assert rows == [(2300, UNMARKED, "U", "U", "04")], "primary-key log: one U/U row, column 2"

    first = site.refresh("t", "t_rep_db2").now
    assert site.sql(f"SELECT snaptime__ FROM {site.schema}.mlog__t") == [(first,)]
    log = site.log("t")
    assert log.last_purge_time == first and log.last_purge_rows == 0, "purge ran, nothing went"
    second = site.refresh("t", "t_rep_db3").now
    assert site.sql(f"SELECT * FROM {site.schema}.mlog__t") == []
    log = site.log("t")
    assert (log.oldest, log.youngest, log.last_purge_time) == (first, second, second)


def test_seed_004_dropped_and_recreated_log_is_younger(site: Site) -> None:
    """Seed 004: ORA-23413 without a log, ORA-12034 after it is recreated."""
    site.sql(f"CREATE TABLE {site.schema}.t_mv (pid INT NOT NULL, pname STRING) USING iceberg")
    site.sql(f"ALTER TABLE {site.schema}.t_mv SET IDENTIFIER FIELDS pid")
    logs.create_mview_log(site.x, site.registry, f"{site.schema}.t_mv", None, False, None, utcnow)
    site.refresh("t_mv", "mv_1")
    site.sql(f"INSERT INTO {site.schema}.t_mv VALUES (21, 'shsnc')")
    capture.capture(site.x, site.registry, site.t("t_mv"), utcnow)
    assert site.stamps("t_mv", "pid")[0][1] == UNMARKED
    created_mv2 = site.refresh("t_mv", "mv_2").now  # creating mv_2 stamps the pending row
    assert site.stamps("t_mv", "pid")[0][1] == created_mv2
    site.refresh("t_mv", "mv_1")
    site.refresh("t_mv", "mv_2")
    assert site.stamps("t_mv", "pid") == [], "both refreshed: the log is empty"

    last_refresh = site.users("t_mv")["mv_1"].last_refresh
    logs.drop_mview_log(site.x, site.registry, f"{site.schema}.t_mv")
    with pytest.raises(
        FastRefreshError, match=r"has no materialized view log \(Oracle: ORA-23413\)"
    ):
        logsite.setup(site.x, site.registry, site.t("t_mv"), site.t("mv_1"), utcnow)
    logs.create_mview_log(site.x, site.registry, f"{site.schema}.t_mv", None, False, None, utcnow)
    done = logsite.setup(
        site.x,
        site.registry,
        site.t("t_mv"),
        site.t("mv_1"),
        utcnow,
        mview_last_refresh=last_refresh,
    )
    assert done.problem is not None
    assert "younger than the view's last refresh" in done.problem and "ORA-12034" in done.problem


def test_purge_log_mview_from_log_and_unregister(site: Site) -> None:
    """DBMS_MVIEW.PURGE_LOG / PURGE_MVIEW_FROM_LOG / UNREGISTER_MVIEW (seed 001 2.1.3)."""
    site.sql(f"CREATE TABLE {site.schema}.c (id INT NOT NULL, v INT) USING iceberg")
    site.sql(f"ALTER TABLE {site.schema}.c SET IDENTIFIER FIELDS id")
    master = f"{site.schema}.c"
    logs.create_mview_log(site.x, site.registry, master, None, False, None, utcnow)
    for view in ("old", "mid", "new"):
        site.refresh("c", view)
    site.sql(f"INSERT INTO {master} VALUES (1, 1)")
    site.refresh("c", "new")  # stamps row 1 at t_new
    site.sql(f"INSERT INTO {master} VALUES (2, 2)")
    mid_time = site.refresh("c", "mid").now  # stamps row 2; mid consumed rows 1 and 2
    assert len(site.stamps("c")) == 2

    message = admin.purge_log(site.x, site.registry, master, 1, "delete", utcnow)
    # Rows needed only by the least recently refreshed view ("old") go: those stamped up to
    # the next view's ("new") last refresh. Row 2 stays: "new" has not consumed it.
    assert "deleted 1 row(s)" in message and "needing a complete refresh: " in message
    assert message.endswith(f"{site.schema}.old")
    assert site.stamps("c") == [(2, mid_time, "I")]
    problem = logsite.usability_problem(site.log("c"), site.users("c")["old"], None)
    assert problem and "purge_log" in problem
    assert logsite.usability_problem(site.log("c"), site.users("c")["mid"], None) is None

    site.sql(f"INSERT INTO {master} VALUES (3, 3)")
    site.refresh("c", "new")
    message = admin.purge_mview_from_log(site.x, site.registry, f"{site.schema}.mid", None, utcnow)
    assert "released" in message
    assert "mid" not in site.users("c")
    with pytest.raises(FastRefreshError, match="not registered"):
        admin.purge_mview_from_log(site.x, site.registry, f"{site.schema}.mid", None, utcnow)

    site.registry.insert(
        "mviews",
        [
            {
                "mview": f"{site.schema}.new",
                "query_hash": "h",
                "refresh_method": "force",
                "masters": [master],
                "staleness": "FRESH",
            }
        ],
    )
    message = admin.unregister_mview(site.registry, f"{site.schema}.new")
    assert "unregistered" in message and "remain" in message
    assert site.registry.mview(site.t("new")) is None
    assert "new" in site.users("c"), "unregister keeps the log claims (Oracle)"
    with pytest.raises(FastRefreshError, match="not a registered materialized view"):
        admin.unregister_mview(site.registry, f"{site.schema}.new")


def test_log_errors_name_the_cause_and_the_fix(site: Site) -> None:
    site.sql(f"CREATE TABLE {site.schema}.p (id INT) USING parquet")
    site.sql(f"CREATE TABLE {site.schema}.i (id INT, m MAP<STRING, INT>) USING iceberg")
    site.sql(f"CREATE TABLE {site.schema}.k (id INT, v INT) USING iceberg")
    cases = [
        (f"{site.schema}.missing", None, None, "does not exist"),
        (f"{site.schema}.p", None, None, "is a 'parquet' table"),
        (f"{site.schema}.i", None, None, "MAP column"),
        (f"{site.schema}.k", None, ["nope"], "Key column"),
        (f"{site.schema}.k", ["nope"], ["id"], "not columns of"),
        ("not a name!", None, None, "is not a table name"),
    ]
    for master, columns, key, message in cases:
        with pytest.raises(FastRefreshError, match=f"(?s){re.escape(message)}.*Fix: "):
            logs.create_mview_log(site.x, site.registry, master, columns, False, key, utcnow)
    logs.create_mview_log(site.x, site.registry, f"{site.schema}.k", None, True, ["id"], utcnow)
    with pytest.raises(FastRefreshError, match=r"(?s)already has a materialized view log.*Fix: "):
        logs.create_mview_log(site.x, site.registry, f"{site.schema}.k", None, False, None, utcnow)
    assert site.log("k").flavour == "COMMIT_SCN"
    columns = [r[0] for r in site.sql(f"DESCRIBE TABLE {site.schema}.mlog__k")]
    assert "snaptime__" not in columns, "commit-SCN logs carry no snaptime (seed 002)"
    with pytest.raises(FastRefreshError, match="ORA-23413"):
        logs.drop_mview_log(site.x, site.registry, f"{site.schema}.p")


def test_lost_master_history_makes_the_log_younger(site: Site) -> None:
    """Master dropped and recreated, or its snapshots expired: never a silent gap."""
    master = f"{site.schema}.h"
    site.sql(f"CREATE TABLE {master} (id INT NOT NULL, v INT) USING iceberg")
    site.sql(f"ALTER TABLE {master} SET IDENTIFIER FIELDS id")
    site.sql(f"INSERT INTO {master} VALUES (1, 1)")
    logs.create_mview_log(site.x, site.registry, master, None, False, None, utcnow)
    seen = site.refresh("h", "v").now

    site.sql(f"DROP TABLE {master}")
    site.sql(f"CREATE TABLE {master} (id INT NOT NULL, v INT) USING iceberg")
    site.sql(f"INSERT INTO {master} VALUES (2, 2)")
    result = capture.capture(site.x, site.registry, site.t("h"), utcnow)
    assert result.gap and "not an ancestor" in result.gap
    log = site.log("h")
    assert log.younger_than > seen and "history lost" in (log.younger_reason or "")
    problem = logsite.setup(site.x, site.registry, site.t("h"), site.t("v"), utcnow).problem
    assert problem and "younger than the view's last refresh" in problem

    site.refresh("h", "v")  # a complete refresh registers again from the new history
    for value in (3, 4):
        site.sql(f"INSERT INTO {master} VALUES ({value}, {value})")
    site.sql(
        f"CALL spark_catalog.system.expire_snapshots(table => '{master}', "
        "older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)"
    )
    result = capture.capture(site.x, site.registry, site.t("h"), utcnow)
    assert result.gap and "expired" in result.gap
