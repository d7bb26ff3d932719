"""The master-site behaviour the seed traces show, step for step, on real Iceberg tables.

Each view of a seed is a real fast_refresh view (``SELECT *`` of its master); what the
traces show is what the master site sees of its refreshes: registration, stamps, purges,
and the dictionary's OLDEST / YOUNGEST / LAST_PURGE_DATE (``registry.describe_log``). Logs
purge synchronously here, as Oracle does by default.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import re
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from dbt.adapters.fastrefresh import admin
from dbt.adapters.fastrefresh.engine import refresh
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.mlog import capture, consumers
from dbt.adapters.fastrefresh.mlog import ddl as mlog
from dbt.adapters.fastrefresh.mlog.consumers import read_view_state
from dbt.adapters.fastrefresh.protocol.decisions import ReasonCode
from dbt.adapters.fastrefresh.registry import store as registry
from dbt.adapters.fastrefresh.runtime import faults
from dbt.adapters.fastrefresh.runtime.process import Runtime
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.functional.sites import PATHS, SHARED, env_for, matches

UNMARKED = dt.datetime(4000, 1, 1)
_n = itertools.count()


class Site:
    """One schema with a registry: the master site of a seed scenario."""

    def __init__(self, spark: Any, path: str) -> None:
        self.spark = spark
        self.schema = f"seed_{next(_n)}_{path}"
        self.env = env_for(spark, f"{self.schema}_registry", path)
        self.built: set[str] = set()
        spark.sql(f"CREATE SCHEMA {self.schema}")

    def sql(self, text: str) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self.spark.sql(text).collect()]

    def t(self, name: str) -> TableName:
        return TableName(self.schema, name)

    def create_log(self, master: str, **options: Any) -> str:
        return mlog.create_mview_log(
            self.env, f"{self.schema}.{master}", purge="synchronous", **options
        )

    def refresh(self, master: str, view: str, method: str = "force") -> dt.datetime:
        """Refresh the view ``SELECT * FROM master``; returns its refresh time on the log
        (the time it stamped rows with, when it was their first refresher)."""
        sql = f"SELECT * FROM {self.schema}.{master}"
        result = refresh.refresh_view(
            self.env, view=self.t(view), sql=sql, method=method, exists=view in self.built
        )
        self.built.add(view)
        assert matches(self.spark, self.t(view), sql), f"{view} differs from its query"
        self.last = result
        state = read_view_state(self.env, self.t(view))
        assert state is not None
        return state.positions[str(self.t(f"mlog__{master}"))].last_refresh

    def log(self, master: str) -> Any:
        """The log's dictionary row as the registry shows it (Oracle's MLOG$)."""
        loaded = mlog.load_log(self.env, self.t(master))
        assert loaded is not None
        return _Row(registry.describe_log(self.env, loaded).row)

    def users(self, master: str) -> dict[str, Any]:
        loaded = mlog.load_log(self.env, self.t(master))
        assert loaded is not None
        described = registry.describe_log(self.env, loaded)
        return {TableName.parse(u["mview"]).table: _Row(u) for u in described.users}

    def stamps(self, master: str, columns: str = "id") -> list[tuple[Any, ...]]:
        return self.sql(
            f"SELECT {columns}, snaptime__, dmltype__ FROM {self.schema}.mlog__{master} ORDER BY sequence__"
        )


class _Row:
    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)


@pytest.fixture(params=PATHS)
def site(spark: Any, request: pytest.FixtureRequest) -> Site:
    return Site(spark, request.param)


def test_seed_000_one_log_three_views_stamps_and_purge(site: Site) -> None:
    """Seed 000: mv_t_id, mv_t_name, mv_t_id_name on one log of t(id, name, num)."""
    site.sql(f"CREATE TABLE {site.schema}.t (id INT, name STRING, num INT) USING iceberg")
    # `with rowid ... including new values` on a table without a key: a key-less log.
    site.create_log("t", key=[])
    for view in ("mv_t_id", "mv_t_name", "mv_t_id_name"):
        site.refresh("t", view)  # created (complete refresh) before the DML
    for row in ("1, 'a', 2", "1, 'b', 3", "2, 'a', 5", "3, 'b', 7"):
        site.sql(f"INSERT INTO {site.schema}.t VALUES ({row})")
    site.sql(f"UPDATE {site.schema}.t SET name = 'c' WHERE id = 3")
    site.sql(f"DELETE FROM {site.schema}.t WHERE id = 2")
    capture.capture(site.env, site.t("t"))
    assert site.stamps("t", "id, name") == [
        (1, "a", UNMARKED, "I"),
        (1, "b", UNMARKED, "I"),
        (2, "a", UNMARKED, "I"),
        (3, "b", UNMARKED, "I"),
        (3, "b", UNMARKED, "D"),  # Oracle logs U/O and U/N on a rowid log; key-less here:
        (3, "c", UNMARKED, "I"),  # an update is the delete of the old image + the new one
        (2, "a", UNMARKED, "D"),
    ]
    t1 = site.refresh("t", "mv_t_id")
    assert {s for *_, s, _ in site.stamps("t", "id, name")} == {t1}, "first refresher stamps all"
    assert len(site.stamps("t")) == 7, "nothing purged: two views have not refreshed"

    site.sql(f"INSERT INTO {site.schema}.t VALUES (4, 'd', 10)")
    capture.capture(site.env, site.t("t"))
    assert site.stamps("t")[-1][1:] == (UNMARKED, "I")
    t2 = site.refresh("t", "mv_t_id_name")
    assert t2 > t1
    stamps = [s for _, s, _ in site.stamps("t")]
    assert stamps == [t1] * 7 + [t2], "only the new row gets the new time"

    t3 = site.refresh("t", "mv_t_id")
    assert [s for _, s, _ in site.stamps("t")] == [t1] * 7 + [t2], (
        "a later refresher never restamps"
    )
    assert site.users("t")["mv_t_id"].last_refresh == t3

    site.sql(f"INSERT INTO {site.schema}.t VALUES (5, 'e', 2)")
    t4 = site.refresh("t", "mv_t_name")
    # mv_t_name consumed everything; min(last refresh) = t2, so rows stamped <= t2 go.
    assert site.stamps("t", "id, name") == [(5, "e", t4, "I")]
    assert site.log("t").last_purge_rows == 8


def test_seed_001_three_views_oldest_youngest_and_purge(site: Site) -> None:
    """Seed 001 section 2.1.1: EMP with a primary-key log and three snapshots."""
    site.sql(f"CREATE TABLE {site.schema}.emp (empno INT NOT NULL, sal INT) USING iceberg")
    site.sql(f"ALTER TABLE {site.schema}.emp SET IDENTIFIER FIELDS empno")
    site.sql(f"INSERT INTO {site.schema}.emp VALUES (1, 100), (2, 200)")
    site.create_log("emp")
    created = site.log("emp")
    assert created.oldest == created.youngest == created.created, "1. log creation sets both"

    r1 = site.refresh("emp", "emp_snap")
    assert (site.log("emp").oldest, site.log("emp").youngest) == (r1, r1), "2.1 first view: both"
    r2 = site.refresh("emp", "emp_snap1")
    r3 = site.refresh("emp", "emp_snap2")
    assert (site.log("emp").oldest, site.log("emp").youngest) == (r1, r3), "3.1 youngest only"
    assert {k: u.last_refresh for k, u in site.users("emp").items()} == {
        "emp_snap": r1, "emp_snap1": r2, "emp_snap2": r3,
    }, "3.2 one SLOG$ row per view, at its creation"  # fmt: skip

    site.sql(f"UPDATE {site.schema}.emp SET sal = sal + 1 WHERE empno = 1")
    site.sql(f"INSERT INTO {site.schema}.emp VALUES (3, 300)")
    capture.capture(site.env, site.t("emp"))
    assert [s for _, s, _ in site.stamps("emp", "empno")] == [UNMARKED] * 3, "4.2 4000-01-01"

    t5 = site.refresh("emp", "emp_snap1")  # 5. first refresh stamps
    assert [s for _, s, _ in site.stamps("emp", "empno")] == [t5] * 3
    assert site.log("emp").oldest == r1, "emp_snap is still the oldest"
    assert len(site.stamps("emp", "empno")) == 3, "not purged: two views behind"

    t6 = site.refresh("emp", "emp_snap")  # 6. second view: no restamp, no purge
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
    site.create_log("t", columns=[])
    site.refresh("t", "t_rep_db2")
    site.refresh("t", "t_rep_db3")
    site.sql(f"UPDATE {site.schema}.t SET data_object_id = 0 WHERE object_id = 2300")
    capture.capture(site.env, site.t("t"))
    rows = site.sql(
        f"SELECT object_id, snaptime__, dmltype__, old_new__, hex(change_vector__) FROM {site.schema}.mlog__t"
    )
    assert rows == [(2300, UNMARKED, "U", "U", "04")], "primary-key log: one U/U row, column 2"

    first = site.refresh("t", "t_rep_db2")
    assert site.sql(f"SELECT snaptime__ FROM {site.schema}.mlog__t") == [(first,)]
    log = site.log("t")
    assert log.last_purge_time == first and log.last_purge_rows == 0, "purge ran, nothing went"
    second = site.refresh("t", "t_rep_db3")
    assert site.sql(f"SELECT * FROM {site.schema}.mlog__t") == []
    log = site.log("t")
    assert (log.oldest, log.youngest, log.last_purge_time) == (first, second, second)


def views_on_one_log(site: Site, views: Sequence[str]) -> None:
    """A keyed table ``t`` with one row and a log, and ``views`` built on it in order."""
    site.sql(f"CREATE TABLE {site.schema}.t (id INT NOT NULL, v INT) USING iceberg")
    site.sql(f"ALTER TABLE {site.schema}.t SET IDENTIFIER FIELDS id")
    site.sql(f"INSERT INTO {site.schema}.t VALUES (1, 1)")
    site.create_log("t")
    for view in views:
        site.refresh("t", view)


def count_position_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The views whose position on a log purges read from now on, in order (a list the
    caller may clear)."""
    read: list[str] = []
    real = consumers.read_position

    def counted(env: Any, view: TableName, log_table: TableName) -> Any:
        read.append(view.table)
        return real(env, view, log_table)

    monkeypatch.setattr(consumers, "read_position", counted)
    return read


def test_a_purge_stops_reading_views_at_one_that_holds_every_row(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A synchronous purge reads the views' positions one at a time and stops at the first
    view that has consumed nothing since the last purge: nothing can go then. Four views
    on one log; the purge after each refresh counts its reads of a view's position."""
    views_on_one_log(site, ("v0", "v1", "v2", "v3"))
    site.sql(f"INSERT INTO {site.schema}.t VALUES (2, 2), (3, 3)")
    capture.capture(site.env, site.t("t"))
    read = count_position_reads(monkeypatch)
    reads = []
    for view in ("v0", "v2", "v1", "v3"):
        read.clear()
        site.refresh("t", view)
        reads.append(list(read))
        if view != "v3":
            assert len(site.stamps("t")) == 2, f"after {view}: a view still needs both rows"
    # v0 (it held the log back at the last build's purge, so it is read first) has the
    # rows; v3, the latest registered, has not (stop). v2 and v1: v3 first (stop). v3:
    # all have the rows, all read: v3, the views not read since the last purge (latest
    # registered first), then v0, read already.
    assert reads == [["v0", "v3"], ["v3"], ["v3"], ["v3", "v2", "v1", "v0"]]
    assert site.stamps("t") == [], "every view refreshed: the log is empty"
    assert site.log("t").last_purge_rows == 2


def test_the_purges_of_a_round_of_refreshes_read_each_view_once(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A view a purge read as having consumed rows since the last purge is read last by
    the purges after it, until rows go: a round of synchronous refreshes of n views on one
    log reads at most 2n - 2 positions before its last purge, which reads all n. Before,
    each purge read again every view refreshed before it (quadratic: 2 + 3 + ... reads).
    Six views; two rounds, refreshed in the order they registered and then in reverse."""
    views = [f"v{i}" for i in range(6)]
    views_on_one_log(site, views)
    read = count_position_reads(monkeypatch)
    for round_no, order in enumerate((views, views[::-1]), start=2):
        site.sql(f"INSERT INTO {site.schema}.t VALUES ({round_no}, {round_no})")
        reads = []
        for view in order:
            read.clear()
            site.refresh("t", view)
            reads.append(list(read))
        assert sorted(reads[-1]) == views, "the last purge reads every view"
        before_last = [v for r in reads[:-1] for v in r]
        assert len(before_last) <= 2 * len(views) - 2, reads
        assert site.stamps("t") == [], "every view refreshed: the log is empty"


def test_seed_004_dropped_and_recreated_log_is_younger(site: Site) -> None:
    """Seed 004: ORA-23413 without a log, ORA-12034 after it is recreated."""
    site.sql(f"CREATE TABLE {site.schema}.t_mv (pid INT NOT NULL, pname STRING) USING iceberg")
    site.sql(f"ALTER TABLE {site.schema}.t_mv SET IDENTIFIER FIELDS pid")
    site.create_log("t_mv")
    site.refresh("t_mv", "mv_1")
    site.sql(f"INSERT INTO {site.schema}.t_mv VALUES (21, 'shsnc')")
    capture.capture(site.env, site.t("t_mv"))
    assert site.stamps("t_mv", "pid")[0][1] == UNMARKED
    created_mv2 = site.refresh("t_mv", "mv_2")  # creating mv_2 stamps the pending row
    assert site.stamps("t_mv", "pid")[0][1] == created_mv2
    site.refresh("t_mv", "mv_1")
    site.refresh("t_mv", "mv_2")
    assert site.stamps("t_mv", "pid") == [], "both refreshed: the log is empty"

    mlog.drop_mview_log(site.env, f"{site.schema}.t_mv")
    with pytest.raises(
        FastRefreshError, match=r"has no materialized view log \(Oracle: ORA-23413\)"
    ):
        site.refresh("t_mv", "mv_1", method="fast")
    site.create_log("t_mv")
    with pytest.raises(FastRefreshError, match=r"younger than the view's last refresh.*ORA-12034"):
        site.refresh("t_mv", "mv_1", method="fast")
    site.refresh("t_mv", "mv_1")
    assert site.last.reason is not None and site.last.reason.code is ReasonCode.LOG_YOUNGER


def test_purge_log_mview_from_log_and_unregister(site: Site) -> None:
    """DBMS_MVIEW.PURGE_LOG / PURGE_MVIEW_FROM_LOG / UNREGISTER_MVIEW (seed 001 2.1.3)."""
    site.sql(f"CREATE TABLE {site.schema}.c (id INT NOT NULL, v INT) USING iceberg")
    site.sql(f"ALTER TABLE {site.schema}.c SET IDENTIFIER FIELDS id")
    master = f"{site.schema}.c"
    site.create_log("c")
    for view in ("old", "mid", "new"):
        site.refresh("c", view)
    site.sql(f"INSERT INTO {master} VALUES (1, 1)")
    site.refresh("c", "new")  # stamps row 1 at t_new
    site.sql(f"INSERT INTO {master} VALUES (2, 2)")
    mid_time = site.refresh("c", "mid")  # stamps row 2; mid consumed rows 1 and 2
    assert len(site.stamps("c")) == 2

    message = admin.purge_log(site.env, master, 1, "delete")
    # Rows needed only by the least recently refreshed view ("old") go: those up to the
    # next view's ("new") place. Row 2 stays: "new" has not consumed it.
    assert "deleted 1 row(s)" in message and "needing a complete refresh: " in message
    assert message.endswith(f"{site.schema}.old")
    assert site.stamps("c") == [(2, mid_time, "I")]
    with pytest.raises(FastRefreshError, match=r"rows the view still needed were purged"):
        site.refresh("c", "old", method="fast")
    site.refresh("c", "mid", method="fast")  # not doomed: still fast

    site.sql(f"INSERT INTO {master} VALUES (3, 3)")
    site.refresh("c", "new")
    message = admin.purge_mview_from_log(site.env, f"{site.schema}.mid")
    assert "released" in message
    assert "mid" not in site.users("c")
    with pytest.raises(FastRefreshError, match="not registered"):
        admin.purge_mview_from_log(site.env, f"{site.schema}.mid")

    statements = site.env.sql.statements  # type: ignore[attr-defined]
    before = len(statements)
    message = admin.unregister_mview(site.env, f"{site.schema}.new")
    assert "unregistered" in message and "remain" in message
    # It reads the view's configuration and state, not its columns (the SQL path's
    # statements; the Java path reads through Iceberg's API).
    assert not [x for x in statements[before:] if x.startswith("DESCRIBE")], statements[before:]
    assert "new" in site.users("c"), "unregister keeps the log claims (Oracle)"
    with pytest.raises(FastRefreshError, match="not a registered materialized view"):
        admin.unregister_mview(site.env, f"{site.schema}.new")
    # The end of the dbt invocation releases the claims the unregistered view left.
    (released,) = admin.release_orphans(site.env)
    assert f"released {site.schema}.new from the log of" in released, released
    assert "is no longer a fast_refresh view's (unregistered, or replaced" in released, released
    assert "new" not in site.users("c")
    site.refresh("c", "new")
    assert site.last.reason is not None and site.last.reason.code is ReasonCode.NOT_REGISTERED


def keyed_table(site: Site, master: str) -> str:
    """A table ``(id INT NOT NULL, v INT)`` keyed by ``id``; its full name."""
    name = f"{site.schema}.{master}"
    site.sql(f"CREATE TABLE {name} (id INT NOT NULL, v INT) USING iceberg")
    site.sql(f"ALTER TABLE {name} SET IDENTIFIER FIELDS id")
    return name


def keyed_master(site: Site, master: str, rows: str = "(1, 1)") -> str:
    """A keyed table holding ``rows``, with its log; its full name."""
    name = keyed_table(site, master)
    site.sql(f"INSERT INTO {name} VALUES {rows}")
    site.create_log(master)
    return name


def keyed_master_with_views(site: Site, master: str, views: tuple[str, ...]) -> str:
    """A master keyed by ``id`` with its log and ``views`` built on it, then two rows
    inserted (not yet captured); the master's full name."""
    name = keyed_table(site, master)
    site.create_log(master)
    for view in views:
        site.refresh(master, view)
    site.sql(f"INSERT INTO {name} VALUES (1, 1), (2, 2)")
    return name


def test_purge_log_during_a_refresh_takes_nothing_from_it(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``purge_log`` may run while a view refreshes (another thread or dbt process): past
    the refresh's setup, before its delta reads the log. It deletes the rows that view
    still needs and dooms it; the refresh then commits its new place over that mark, so
    it must have read those rows: it reads the log as its setup left it. The view holds
    them, and its next refresh stays fast."""
    master = keyed_master_with_views(site, "d", ("early", "late"))
    site.sql(f"UPDATE {master} SET v = 20 WHERE id = 2")
    site.refresh("d", "early")  # captures; "late" still needs the rows
    assert len(site.stamps("d")) == 4  # an update logs its old and new images

    messages: list[str] = []
    original = refresh.setup

    def setup_then_purge(env: Any, *args: Any, **kwargs: Any) -> consumers.Setup:
        done = original(env, *args, **kwargs)
        if done.mview == site.t("late") and not messages:
            messages.append(admin.purge_log(site.env, master, 1, "delete"))
        return done

    monkeypatch.setattr(refresh, "setup", setup_then_purge)
    site.refresh("d", "late", method="fast")  # matches its query (Site.refresh checks)
    assert messages and messages[0].endswith(f"needing a complete refresh: {site.schema}.late")
    assert "deleted 4 row(s)" in messages[0]
    assert site.stamps("d") == []
    monkeypatch.undo()

    site.sql(f"INSERT INTO {master} VALUES (3, 3)")
    site.refresh("d", "late", method="fast")  # it consumed every purged row: still fast
    site.refresh("d", "early", method="fast")


# Where an admin purge can be killed: the SQL path records its state before the delete and
# again after it; the Java path writes it with the delete, so only the point after the
# delete is reached there. The default suite kills the SQL path's three cases that broke
# before the state went first; the slow marker runs the rest.
ADMIN_KILLS = [
    ("sql", "purge_log", "purge.after_announce"),
    ("sql", "purge_log", "purge.after_delete"),
    ("sql", "purge_mview_from_log", "purge.after_delete"),
    pytest.param("sql", "purge_mview_from_log", "purge.after_announce", marks=pytest.mark.slow),
    pytest.param("java", "purge_log", "purge.after_delete", marks=pytest.mark.slow),
    pytest.param("java", "purge_mview_from_log", "purge.after_delete", marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("path", "operation", "point"), ADMIN_KILLS)
def test_an_admin_purge_killed_midway_still_tells_the_view(
    spark: Any, path: str, operation: str, point: str
) -> None:
    """``purge_log`` and ``purge_mview_from_log`` delete rows a view has not consumed and
    tell it so in the log's state (purged past it; its claim dropped). Killed between its
    writes, the view must still learn that its rows are gone: its next refresh is
    complete and equals its query, and the rows left behind go with a later purge."""
    site = Site(spark, path)
    master = keyed_master_with_views(site, "c", ("old", "new"))
    site.refresh("c", "new")  # captures; "old" still needs both rows
    with pytest.raises(faults.Crash), faults.crash_at(point):
        if operation == "purge_log":
            admin.purge_log(site.env, master, 1, "delete")
        else:
            admin.purge_mview_from_log(site.env, f"{site.schema}.old")
    # A new process: nothing the killed one held in memory survives.
    site.env = dataclasses.replace(site.env, runtime=Runtime())
    site.refresh("c", "old")  # equals its query (Site.refresh checks)
    assert site.last.refresh_type == "COMPLETE", str(site.last.reason)
    site.sql(f"INSERT INTO {master} VALUES (3, 3)")
    for view in ("old", "new"):
        site.refresh("c", view, method="fast")
    # Every row both views consumed is gone, those the killed purge left behind included.
    consumers.purge(site.env, site.t("c"))
    assert site.stamps("c") == []


def test_log_errors_name_the_cause_and_the_fix(site: Site) -> None:
    site.sql(f"CREATE TABLE {site.schema}.p (id INT) USING parquet")
    site.sql(f"CREATE TABLE {site.schema}.i (id INT, m MAP<STRING, INT>) USING iceberg")
    site.sql(f"CREATE TABLE {site.schema}.k (id INT, v INT) USING iceberg")
    cases = [
        (f"{site.schema}.missing", None, None, "does not exist"),
        # A shared catalog is Iceberg's alone: every table it creates is an Iceberg table.
        *([] if SHARED else [(f"{site.schema}.p", None, None, "is a 'parquet' table")]),
        (f"{site.schema}.i", None, None, "MAP column"),
        (f"{site.schema}.k", None, ["nope"], "Key column"),
        (f"{site.schema}.k", ["nope"], ["id"], "not columns of"),
        ("not a name!", None, None, "is not a table name"),
    ]
    for master, columns, key, message in cases:
        with pytest.raises(FastRefreshError, match=f"(?s){re.escape(message)}.*Fix: "):
            mlog.create_mview_log(site.env, master, columns=columns, key=key)
    with pytest.raises(FastRefreshError, match=r"(?s)purge must be .*Fix: "):
        mlog.create_mview_log(site.env, f"{site.schema}.k", key=["id"], purge="sometimes")
    mlog.create_mview_log(site.env, f"{site.schema}.k", commit_scn=True, key=["id"])
    with pytest.raises(FastRefreshError, match=r"(?s)already has a materialized view log.*Fix: "):
        mlog.create_mview_log(site.env, f"{site.schema}.k")
    # IF NOT EXISTS keeps the log as it is, whatever options it is given, and says how
    # it differs from the log they would create (it said nothing of them).
    kept = mlog.create_mview_log(site.env, f"{site.schema}.k", key=[], if_not_exists=True)
    assert "already exists: kept as it is" in kept, kept
    assert "it has key (id), not (none: key-less). Fix: " in kept and "drop_mview_log" in kept
    # commit_scn and purge at their defaults are options not given (the macro passes
    # them all): the documented hook, create_mview_log(master, if_not_exists=true), on a
    # commit-SCN log says nothing of them.
    same = mlog.create_mview_log(site.env, f"{site.schema}.k", if_not_exists=True)
    assert same.endswith("already exists: kept"), same
    same = mlog.create_mview_log(
        site.env, f"{site.schema}.k", commit_scn=True, key=["id"], if_not_exists=True
    )
    assert same.endswith("already exists: kept"), same
    said = mlog.create_mview_log(
        site.env, f"{site.schema}.k", purge="synchronous", if_not_exists=True
    )
    assert "it has purge 'deferred', not 'synchronous'" in said, said
    # Options the master no longer fits do not fail a hook that keeps the log.
    said = mlog.create_mview_log(site.env, f"{site.schema}.k", key=["gone"], if_not_exists=True)
    assert "kept as it is; its options could not be compared" in said, said
    assert site.log("k").flavour == "COMMIT_SCN"
    columns = [r[0] for r in site.sql(f"DESCRIBE TABLE {site.schema}.mlog__k")]
    assert "snaptime__" not in columns, "commit-SCN logs carry no snaptime (seed 002)"
    # Dropping the log of an Iceberg master that has none: ORA-23413, nothing to drop.
    with pytest.raises(FastRefreshError, match=r"(?s)ORA-23413.*nothing to drop.*Fix: "):
        mlog.drop_mview_log(site.env, f"{site.schema}.i")
    if not SHARED:
        # A master that could never have a log says what it is, as the create does.
        with pytest.raises(FastRefreshError, match=r"(?s)is a 'parquet' table.*Fix: "):
            mlog.drop_mview_log(site.env, f"{site.schema}.p")


def test_a_state_written_after_a_dead_capture_does_not_hide_its_rows(site: Site) -> None:
    """A capture that died between its append and its state (SQL path) leaves rows past
    the recorded state. A purge, or a view's registration, that records the log's state
    before the next capture must remove them first: recorded over them, the state would
    anchor past them, and the next capture would append the same commits again."""
    master = keyed_master(site, "d")
    site.refresh("d", "v")
    for value in (2, 3):
        site.sql(f"INSERT INTO {master} VALUES ({value}, {value})")
        with pytest.raises(faults.Crash), faults.crash_at("capture.after_log_append"):
            capture.capture(site.env, site.t("d"))
        # The synchronous wrap-up's purge records its time even when nothing goes; then
        # a second view registers on the log.
        consumers.purge(site.env, site.t("d"), record_empty=True)
        site.refresh("d", f"w{value}")
    # Each master commit is in the log once (the first view has consumed neither).
    rows = site.sql(f"SELECT id, count(*) FROM {site.schema}.mlog__d GROUP BY id ORDER BY id")
    assert rows == [(2, 1), (3, 1)]
    site.refresh("d", "v", method="fast")


def test_a_column_added_after_the_log_is_never_missed(site: Site) -> None:
    """Capture compares the columns the master had when its log was created: an update of
    a column added since is not logged. A view reading that column refreshes completely,
    naming the log to recreate, until the log is recreated; then it refreshes fast."""
    master = keyed_master(site, "ac", rows="(1, 1), (2, 2)")
    site.refresh("ac", "v")
    site.sql(f"ALTER TABLE {master} ADD COLUMN c INT")
    # (A commit after the new column: a refresh pinned to a snapshot older than it reads
    # that snapshot's schema, without the column; see the changelog.)
    site.sql(f"UPDATE {master} SET c = 4 WHERE id = 1")
    site.refresh("ac", "v")  # SELECT *: the new column, in a complete refresh
    site.sql(f"UPDATE {master} SET c = 5 WHERE id = 1")
    site.refresh("ac", "v")  # checks the view against its query
    reason = site.last.reason
    assert site.last.refresh_type == "COMPLETE" and reason is not None
    assert reason.code is ReasonCode.LOG_BROKEN and "column(s) c" in reason.detail
    with pytest.raises(FastRefreshError, match=r"(?s)column\(s\) c .*create_mview_log"):
        site.refresh("ac", "v", method="fast")
    mlog.drop_mview_log(site.env, master)
    site.create_log("ac")
    site.refresh("ac", "v")
    site.sql(f"UPDATE {master} SET c = 7 WHERE id = 2")
    site.refresh("ac", "v", method="fast")


@pytest.mark.parametrize("killed", [False, True], ids=["", "killed_after_new_epoch"])
def test_a_log_rolled_back_under_its_views_is_younger_than_them(spark: Any, killed: bool) -> None:
    """A log table rolled back (or restored) to an earlier state: the next capture writes
    the same sequences again with other changes, which a view already past them would
    never read. The view is past what the log records: it refreshes completely (Oracle's
    ORA-12034). Java path: its state rolls back with the log's snapshots (the SQL path's
    property names a snapshot no longer on the history, and loading the log fails).

    Only the first view to refresh after the rollback found it: its capture wrote those
    sequences again, and a view also past the rollback point, refreshed after it, read
    them as changes it had not applied (wrong rows, FAST). The first to find it now puts
    the log in a new epoch, and every view on it refreshes completely once. Killed right
    after that commit, before its capture, the next process finds the log in the new
    epoch, and the same holds."""
    site = Site(spark, "java")
    master = keyed_master(site, "rb")
    for view in ("v", "w", "x"):
        site.refresh("rb", view)
    site.sql(f"INSERT INTO {master} VALUES (2, 2)")
    capture.capture(site.env, site.t("rb"))
    back_to = site.sql(
        f"SELECT snapshot_id FROM {site.schema}.mlog__rb.snapshots ORDER BY committed_at DESC"
    )[0][0]
    site.sql(f"UPDATE {master} SET v = 30 WHERE id = 2")
    site.refresh("rb", "w", method="fast")  # w consumes 2 and the update: past back_to
    site.sql(f"INSERT INTO {master} VALUES (3, 3)")
    site.refresh("rb", "v", method="fast")  # v consumes all of it; x is behind back_to
    site.sql(f"CALL spark_catalog.system.rollback_to_snapshot('{site.schema}.mlog__rb', {back_to})")
    site.sql(f"UPDATE {master} SET v = 40 WHERE id = 3")
    if killed:
        with pytest.raises(faults.Crash), faults.crash_at("setup.after_new_epoch"):
            site.refresh("rb", "v")
        site.env = dataclasses.replace(site.env, runtime=Runtime())  # a new process
        # Killed after the new epoch's commit, before the capture: the update is not in
        # the log yet, and the log says why it is younger.
        assert "rolled back or restored" in (site.log("rb").younger_reason or "")
        assert site.sql(f"SELECT count(*) FROM {site.schema}.mlog__rb WHERE v = 40") == [(0,)]
    site.refresh("rb", "v")  # checks the view against its query
    reason = site.last.reason
    assert site.last.refresh_type == "COMPLETE" and reason is not None
    assert reason.code is ReasonCode.LOG_YOUNGER and "rolled back" in reason.detail
    for view in ("w", "x"):  # w past the rollback point, x behind it
        site.refresh("rb", view)
        assert site.last.refresh_type == "COMPLETE", (view, site.last.reason)
        assert "rolled back or restored: " in str(site.last.reason), site.last.reason
    site.sql(f"INSERT INTO {master} VALUES (5, 5)")
    for view in ("v", "w", "x"):
        site.refresh("rb", view, method="fast")


def test_a_view_over_a_broken_log_stays_registered_on_it(site: Site) -> None:
    """A log whose key column was renamed records nothing, and its views rebuild on every
    run. The end of the run then released the view from that log, saying "its query no
    longer reads" the master, which it still reads, and the registry said the view was
    not registered on the log, contradicting the run's own reason. A view keyed by the
    log's key could not be rebuilt at all."""
    master = keyed_master(site, "bk", rows="(1, 1), (2, 2)")
    site.refresh("bk", "v")
    site.sql(f"ALTER TABLE {master} RENAME COLUMN id TO oid")
    site.sql(f"INSERT INTO {master} VALUES (3, 3)")
    # The view's key was the log's (`id`, hidden): planned with it, the rebuild failed
    # with Spark's UNRESOLVED_COLUMN. A log whose key the master lacks keys no plan.
    sql = f"SELECT * FROM {master}"
    result = refresh.refresh_view(site.env, view=site.t("v"), sql=sql, method="force")
    assert matches(site.spark, site.t("v"), sql)
    assert result.refresh_type == "COMPLETE" and result.reason is not None
    assert result.reason.code is ReasonCode.LOG_BROKEN, result.reason
    assert admin.release_orphans(site.env) == []
    assert "v" in site.users("bk")


def test_a_capture_waiting_for_the_log_reads_the_master_after_the_wait(site: Site) -> None:
    """``capture_changes`` waiting for the log's lock while another thread captures a
    newer master commit: read before the wait, the master would be behind the log, and
    the walk from the log's position back would take that for lost history (every view
    on the log rebuilt). Read after it, there is nothing left to capture."""
    master = keyed_master(site, "cw")
    site.refresh("cw", "v")
    results: list[Any] = []
    with site.env.holding([mlog.log_lock(site.t("mlog__cw"))]):
        waiting = threading.Thread(
            target=lambda: results.append(capture.capture(site.env, site.t("cw")))
        )
        waiting.start()
        time.sleep(2)  # it is waiting for the lock (before the fix: master read)
        site.sql(f"INSERT INTO {master} VALUES (2, 2)")
        meta = site.env.tables.load(site.t("cw"), fresh=True)
        assert meta is not None
        capture.capture_locked(site.env, mlog.load_log_for_write(site.env, site.t("cw")), meta)
    waiting.join()
    assert results and results[0].gap is None and results[0].snapshots == 0
    assert "history lost" not in (site.log("cw").younger_reason or "")
    site.refresh("cw", "v", method="fast")


def test_the_refresh_that_finds_the_history_lost_is_not_older_than_the_log(site: Site) -> None:
    """A view's refresh whose capture finds its master's history gone (the table
    replaced: an upstream model's `create or replace`) rebuilds the view in the log's new
    epoch. The epoch started at the capture's clock, a few milliseconds after the refresh
    time the view records, so the registry's `fast_refresh_mviews`, which compares the two
    times, showed the fresh view UNUSABLE until a later refresh wrote its place."""
    master = keyed_master(site, "hr")
    site.refresh("hr", "v")
    site.sql(f"DROP TABLE {master}")
    site.sql(f"CREATE TABLE {master} (id INT NOT NULL, v INT) USING iceberg")
    site.sql(f"INSERT INTO {master} VALUES (2, 2)")
    seen = site.refresh("hr", "v")
    assert site.last.reason is not None and site.last.reason.code is ReasonCode.LOG_YOUNGER
    assert "history lost" in (site.log("hr").younger_reason or "")
    assert site.log("hr").younger_than <= seen
    registry.publish(site.env)
    # The registry model's test (models/registry/fast_refresh_mviews.sql), on what it reads.
    younger = site.sql(
        f"SELECT count(*) FROM {site.schema}_registry.mview_log_users u JOIN "
        f"{site.schema}_registry.mview_logs l ON l.log_table = u.log_table "
        f"WHERE u.mview = '{site.t('v')}' AND l.younger_than > u.last_refresh"
    )
    assert younger == [(0,)]


def test_lost_master_history_makes_the_log_younger(site: Site) -> None:
    """Master dropped and recreated, or its snapshots expired: never a silent gap."""
    master = keyed_master(site, "h")
    seen = site.refresh("h", "v")

    site.sql(f"DROP TABLE {master}")
    site.sql(f"CREATE TABLE {master} (id INT NOT NULL, v INT) USING iceberg")
    site.sql(f"INSERT INTO {master} VALUES (2, 2)")
    result = capture.capture(site.env, site.t("h"))
    assert result.gap and "not an ancestor" in result.gap
    log = site.log("h")
    assert log.younger_than > seen and "history lost" in (log.younger_reason or "")
    with pytest.raises(FastRefreshError, match="younger than the view's last refresh"):
        site.refresh("h", "v", method="fast")

    site.refresh("h", "v")  # a complete refresh registers again from the new history
    assert site.last.reason is not None and site.last.reason.code is ReasonCode.LOG_YOUNGER
    for value in (3, 4):
        site.sql(f"INSERT INTO {master} VALUES ({value}, {value})")
    site.sql(
        f"CALL spark_catalog.system.expire_snapshots(table => '{master}', "
        "older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)"
    )
    result = capture.capture(site.env, site.t("h"))
    assert result.gap and "expired" in result.gap
    site.refresh("h", "v")
    assert site.last.refresh_type == "COMPLETE"
    site.sql(f"INSERT INTO {master} VALUES (5, 5)")
    site.refresh("h", "v", method="fast")

    def expire_all_but_current() -> None:
        site.sql(
            f"CALL spark_catalog.system.expire_snapshots(table => '{master}', "
            "older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)"
        )

    # The snapshot captured through expires and the one commit after it stays: an append
    # is captured as usual (it adds files and reads nothing at its parent) ...
    site.sql(f"INSERT INTO {master} VALUES (6, 6)")
    expire_all_but_current()
    site.refresh("h", "v", method="fast")
    # ... an update, whose old rows are read at its parent, is a gap: never a capture
    # failing on every run, which would fail every refresh of every view on the master.
    site.sql(f"UPDATE {master} SET v = 60 WHERE id = 6")
    expire_all_but_current()
    result = capture.capture(site.env, site.t("h"))
    assert result.gap and "expired" in result.gap and "removed" in result.gap, result.gap
    site.refresh("h", "v")
    assert site.last.refresh_type == "COMPLETE"
    assert site.last.reason is not None and site.last.reason.code is ReasonCode.LOG_YOUNGER
