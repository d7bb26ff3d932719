"""The fast_refresh materialization through real dbt: the seed traces, fallbacks, tests.

Staleness note (seed 000): Oracle shows NEEDS_COMPILE for a view whose master had DML
since its refresh, until ALTER MATERIALIZED VIEW ... COMPILE recomputes it as STALE.
dbt-fastrefresh computes staleness whenever it is read, so those steps show STALE (changes
pending); NEEDS_COMPILE is kept for a changed definition or master schema.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from dbt.tests.util import rm_file, run_dbt, run_dbt_and_capture, write_file

from tests.functional.dbt_project import FastRefreshProject as BaseProject
from tests.functional.dbt_project import op, op_failing

UNMARKED = dt.datetime(4000, 1, 1)


def model(sql: str, **config: Any) -> str:
    options = ", ".join(f"{k}={v!r}" for k, v in {"materialized": "fast_refresh", **config}.items())
    return f"{{{{ config({options}) }}}}\n{sql}"


class FastRefreshProject(BaseProject):
    """The shared project, plus what these tests read back: staleness and refresh runs."""

    def staleness(self, project: Any) -> dict[str, str]:
        rows = self.rows(
            project, f"select mview, staleness from {project.test_schema}.fast_refresh_mviews"
        )
        return {m.split(".")[1]: s for m, s in rows}

    def runs(self, project: Any) -> list[tuple[Any, ...]]:
        reg = f"{project.test_schema}_reg"
        return self.rows(
            project,
            f"select mview, refresh_type, reason, status from {reg}.refresh_runs order by started",
        )


SEED_000_MODELS = {
    "mv_t_id.sql": model("select id, count(*) as cnt from {{ target.schema }}.t group by id"),
    "mv_t_name.sql": model("select name, count(*) as cnt from {{ target.schema }}.t group by name"),
    "mv_t_id_name.sql": model(
        "select id, name, count(*) as cnt from {{ target.schema }}.t group by id, name"
    ),
    "schema.yml": """
version: 2
models:
  - name: mv_t_id
    data_tests: [fast_refresh.equals_query]
  - name: mv_t_name
    data_tests: [fast_refresh.equals_query]
  - name: mv_t_id_name
    data_tests: [fast_refresh.equals_query]
""",
}


class TestSeed000ThroughDbt(FastRefreshProject):
    """Seed 000 step for step: stamps, restamping, purge, staleness."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return SEED_000_MODELS

    def log(self, project: Any) -> list[tuple[Any, ...]]:
        return self.rows(
            project,
            f"select id, name, snaptime__, dmltype__ from {project.test_schema}.mlog__t order by sequence__",
        )

    def test_trace(self, ready: Any) -> None:
        project, s = ready, ready.test_schema
        project.run_sql(f"create table {s}.t (id int, name string, num int) using iceberg")
        # `with rowid ... including new values` on a key-less table: a key-less log.
        op("create_mview_log", master=f"{s}.t", key=[])
        results = run_dbt(["run"])
        assert {r.node.name for r in results if r.node.resource_type == "model" and "COMPLETE" in r.message} == {
            "mv_t_id", "mv_t_name", "mv_t_id_name",
        }  # fmt: skip
        for row in ("1, 'a', 2", "1, 'b', 3", "2, 'a', 5", "3, 'b', 7"):
            project.run_sql(f"insert into {s}.t values ({row})")
        project.run_sql(f"update {s}.t set name = 'c' where id = 3")
        project.run_sql(f"delete from {s}.t where id = 2")
        op("capture_changes", master=f"{s}.t")
        log = self.log(project)
        assert len(log) == 7 and {r[2] for r in log} == {UNMARKED}
        assert self.staleness(project) == {
            "mv_t_id": "STALE",
            "mv_t_name": "STALE",
            "mv_t_id_name": "STALE",
        }

        run_dbt(["run", "-s", "mv_t_id"])
        t1 = {r[2] for r in self.log(project)}
        assert len(t1) == 1 and UNMARKED not in t1, "the first refresher stamps every row"
        assert len(self.log(project)) == 7, "not purged: two views have not refreshed"
        assert self.staleness(project) == {
            "mv_t_id": "FRESH",
            "mv_t_name": "STALE",
            "mv_t_id_name": "STALE",
        }

        project.run_sql(f"insert into {s}.t values (4, 'd', 10)")
        op("capture_changes", master=f"{s}.t")
        assert self.log(project)[-1][2:] == (UNMARKED, "I")
        assert self.staleness(project)["mv_t_id"] == "STALE"

        run_dbt(["run", "-s", "mv_t_id_name"])
        stamps = [r[2] for r in self.log(project)]
        assert stamps[:7] == [next(iter(t1))] * 7 and stamps[7] > stamps[0], (
            "only the new row gets T2"
        )
        run_dbt(["run", "-s", "mv_t_id"])
        assert [r[2] for r in self.log(project)] == stamps, "a later refresher never restamps"
        assert self.staleness(project) == {
            "mv_t_id": "FRESH",
            "mv_t_name": "STALE",
            "mv_t_id_name": "FRESH",
        }

        project.run_sql(f"insert into {s}.t values (5, 'e', 2)")
        run_dbt(["run", "-s", "mv_t_name"])
        log = self.log(project)
        assert [(r[0], r[1], r[3]) for r in log] == [(5, "e", "I")], "only the id=5 row is left"
        assert self.staleness(project) == {
            "mv_t_id": "STALE",
            "mv_t_name": "FRESH",
            "mv_t_id_name": "STALE",
        }
        fast = [r for r in self.runs(project) if r[1] == "FAST"]
        assert [r[0].split(".")[1] for r in fast] == [
            "mv_t_id",
            "mv_t_id_name",
            "mv_t_id",
            "mv_t_name",
        ]
        run_dbt(["run"])
        run_dbt(["test"])  # fast_refresh.equals_query on all three

        # equals_query fails on a view that differs from its query, and returns each
        # differing row as many times as one side has it more often: a count changed
        # (its old row missing, the new one extra) and a row stored four times (the second
        # INSERT copies both rows the first left).
        data = f"{s}.mv_t_id__fr_data"
        project.run_sql(f"update {data} set cnt = cnt + 1 where id = 1")
        project.run_sql(f"insert into {data} select * from {data} where id = 3")
        project.run_sql(f"insert into {data} select * from {data} where id = 3")
        results = run_dbt(["test", "-s", "mv_t_id"], expect_pass=False)
        results = [r for r in results if r.node.resource_type == "test"]
        assert [(r.status, r.failures) for r in results] == [("fail", 5)]
        sides = self.rows(
            project,
            "select side, id, cnt from (" + str(results[0].node.compiled_code) + ") f "
            "order by side, id",
        )
        assert sides == [("extra", 1, 3)] + [("extra", 3, 1)] * 3 + [("missing", 1, 2)]


class TestFallbacksAndErrors(FastRefreshProject):
    """Seed 004 and the fallback rules: force falls back saying why; fast fails with the fix."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "mv_force.sql": model("select pid, pname from {{ target.schema }}.t_mv"),
            "mv_fast.sql": model(
                "select pid, pname from {{ target.schema }}.t_mv", refresh_method="fast"
            ),
            "mv_window.sql": model(
                "select pid, row_number() over (order by pid) as rn from {{ target.schema }}.t_mv",
                refresh_method="fast",
            ),
            "mv_window_force.sql": model(
                "select pid, row_number() over (order by pid) as rn from {{ target.schema }}.t_mv"
            ),
            "mv_bad_method.sql": model(
                "select pid from {{ target.schema }}.t_mv", refresh_method="fastest"
            ),
            "mv_bad_format.sql": model(
                "select pid from {{ target.schema }}.t_mv",
                file_format="delta",
                pre_hook="create table {{ target.schema }}.hook_ran (x int) using iceberg",
            ),
            "mv_bad_props.sql": model(
                "select pid from {{ target.schema }}.t_mv",
                tblproperties={"fast_refresh.view-state": "{}"},
            ),
            "mv_typo.sql": model(
                "select pid, row_number() over (order by pid) as rn from {{ target.schema }}.t_mv",
                refresh_methd="fast",
            ),
            "schema.yml": "version: 2\nmodels:\n  - name: mv_force\n    data_tests: [fast_refresh.equals_query, fast_refresh.is_fresh]\n",
        }

    def test_seed_004_and_fallbacks(self, ready: Any) -> None:
        project, s = ready, ready.test_schema
        project.run_sql(f"create table {s}.t_mv (pid int not null, pname string) using iceberg")
        project.run_sql(f"alter table {s}.t_mv set identifier fields pid")
        project.run_sql(f"insert into {s}.t_mv values (1, 'snc1'), (2, 'snc2')")
        op("create_mview_log", master=f"{s}.t_mv")
        # First builds are complete refreshes, under refresh_method 'fast' too.
        _, out = run_dbt_and_capture(["run", "-s", "mv_force", "mv_fast", "mv_window_force"])
        assert out.count("COMPLETE refresh") >= 3 and "first build" in out
        # But under 'fast' a query that can never refresh fast is refused at its first
        # build, as Oracle's CREATE MATERIALIZED VIEW ... REFRESH FAST is (it built, and
        # failed the next run); nothing is left of it.
        for _ in range(2):
            _, out = run_dbt_and_capture(["run", "-s", "mv_window"], expect_pass=False)
            assert "Fast refresh of" in out and "window function" in out, out
            assert "Fix: rewrite the query" in out and "refresh_method='force'" in out, out
            assert not project.run_sql(
                f"show tables in {s} like 'mv_window|mv_window__fr_data'", fetch="all"
            )
        # A master without a log likewise (ORA-23413), its fix naming the master, and the
        # model by the name `dbt run -s` selects (its alias names the view).
        project.run_sql(f"create table {s}.t_nolog (pid int not null) using iceberg")
        write_file(
            model("select pid from {{ target.schema }}.t_nolog", refresh_method="fast",
                  alias="nolog_v"),
            project.project_root, "models", "mv_nolog.sql",
        )  # fmt: skip
        _, out = run_dbt_and_capture(["run", "-s", "mv_nolog"], expect_pass=False)
        assert f"Fast refresh of {s}.nolog_v is not possible" in out, out
        assert f"the master table {s}.t_nolog has no materialized view log" in out, out
        assert f"create_mview_log --args \"{{master: '{s}.t_nolog'}}\"" in out, out
        assert "then run `dbt run --full-refresh -s mv_nolog` once" in out, out
        assert "mview_log: false" in out and "or set refresh_method='force'" in out, out
        assert not project.run_sql(f"show tables in {s} like 'mv_nolog*|nolog_v*'", fetch="all")
        # A query over a table that does not exist names it and the fix, without Spark's
        # plan (its error printed the whole plan, internal properties included).
        write_file(model("select pid from {{ target.schema }}.t_missing"),
                   project.project_root, "models", "mv_missing.sql")  # fmt: skip
        _, out = run_dbt_and_capture(["run", "-s", "mv_missing"], expect_pass=False)
        assert (
            f"The query of {s}.mv_missing reads {s}.t_missing, which does not exist. Fix: "
            "create it, or correct the name" in out
        ), out
        assert "TABLE_OR_VIEW_NOT_FOUND" not in out and "fast_refresh.view" not in out, out
        rm_file(project.project_root, "models", "mv_missing.sql")
        rm_file(project.project_root, "models", "mv_nolog.sql")
        # A user's own table on a new model's storage table's name is refused and kept
        # (a first build replaced it, rows and all, "not registered").
        project.run_sql(f"create table {s}.mv_taken__fr_data (precious string) using iceberg")
        project.run_sql(f"insert into {s}.mv_taken__fr_data values ('keep me')")
        write_file(model("select pid from {{ target.schema }}.t_mv"),
                   project.project_root, "models", "mv_taken.sql")  # fmt: skip
        _, out = run_dbt_and_capture(["run", "-s", "mv_taken"], expect_pass=False)
        assert (
            f"A table {s}.mv_taken__fr_data exists but is not the storage table of a "
            f"fast_refresh view (the name is taken)" in out
        ), out
        assert f"Fix: rename or drop {s}.mv_taken__fr_data" in out, out
        assert self.rows(project, f"select * from {s}.mv_taken__fr_data") == [("keep me",)]
        assert not project.run_sql(f"show views in {s} like 'mv_taken'", fetch="all")
        project.run_sql(f"drop table {s}.mv_taken__fr_data")
        _, out = run_dbt_and_capture(["run", "-s", "mv_taken"])
        assert f"COMPLETE refresh of {s}.mv_taken: first build" in out, out
        rm_file(project.project_root, "models", "mv_taken.sql")
        # A bad refresh_method fails the model, naming it, the value and the fix; no table.
        _, out = run_dbt_and_capture(["run", "-s", "mv_bad_method"], expect_pass=False)
        assert "mv_bad_method: refresh_method must be 'force', 'fast' or 'complete'" in out
        assert "got 'fastest'. Fix: refresh_method='force'" in out
        assert not project.run_sql(f"show tables in {s} like 'mv_bad_method'", fetch="all")
        # The whole config is validated once, before the pre-hooks run.
        _, out = run_dbt_and_capture(["run", "-s", "mv_bad_format"], expect_pass=False)
        assert "mv_bad_format: a fast_refresh view is stored as an Iceberg table" in out
        assert "file_format is 'delta'. Fix: remove file_format" in out
        assert not project.run_sql(f"show tables in {s} like 'hook_ran'", fetch="all")
        _, out = run_dbt_and_capture(["run", "-s", "mv_bad_props"], expect_pass=False)
        assert "tblproperties sets 'fast_refresh.view-state'" in out and "Fix: remove it" in out
        assert not project.run_sql(f"show tables in {s} like 'mv_bad_props'", fetch="all")
        # A misspelt config (dbt keeps it as the user's own) was ignored: this model, meant
        # to fail as not fast-refreshable, was built under force.
        _, out = run_dbt_and_capture(["run", "-s", "mv_typo"], expect_pass=False)
        assert f"Model {s}.mv_typo: config 'refresh_methd' is not one dbt" in out, out
        assert "Fix: write refresh_method" in out, out
        assert not project.run_sql(f"show tables in {s} like 'mv_typo*'", fetch="all")

        project.run_sql(f"insert into {s}.t_mv values (21, 'shsnc')")
        _, out = run_dbt_and_capture(["run", "-s", "mv_force", "mv_fast", "mv_window_force"])
        assert "FAST refresh of" in out and "COMPLETE refresh" in out and "window function" in out
        run_dbt(["test", "-s", "mv_force"])

        # Seed 004: drop the log (ORA-23413), recreate it (ORA-12034).
        op("drop_mview_log", master=f"{s}.t_mv")
        _, out = run_dbt_and_capture(["run", "-s", "mv_fast"], expect_pass=False)
        assert "has no materialized view log" in out and "create_mview_log" in out
        _, out = run_dbt_and_capture(["run", "-s", "mv_force"])
        assert "COMPLETE refresh" in out and "has no materialized view log" in out
        op("create_mview_log", master=f"{s}.t_mv")
        _, out = run_dbt_and_capture(["run", "-s", "mv_fast"], expect_pass=False)
        assert "younger than the view's last refresh" in out and "ORA-12034" in out
        assert "Fix: run `dbt run --full-refresh -s mv_fast` once (a complete refresh)" in out
        # refresh_mviews names its own method as the fix (the view may be no dbt model).
        out = op_failing("refresh_mviews", names=f"{s}.mv_fast", method="f")
        assert "younger than the view's last refresh" in out, out
        assert (
            "Fix: refresh it once with method 'complete' (dbt run-operation "
            f"fast_refresh.refresh_mviews --args \"{{names: ['{s}.mv_fast'], method: complete}}\"), "
            "or refresh it with method 'force'" in out
        ), out
        _, out = run_dbt_and_capture(["run", "-s", "mv_force"])
        assert "COMPLETE refresh" in out and "younger than the view's last refresh" in out
        _, out = run_dbt_and_capture(["run", "-s", "mv_fast", "--full-refresh"])
        assert "COMPLETE refresh" in out and "--full-refresh" in out
        project.run_sql(f"update {s}.t_mv set pname = 'x' where pid = 1")
        _, out = run_dbt_and_capture(["run", "-s", "mv_fast", "mv_force"])
        assert out.count("FAST refresh of") == 2

        # A refresh that died after changing the view: the view's snapshot moved.
        project.run_sql(f"insert into {s}.mv_force__fr_data values (99, 'tampered')")
        _, out = run_dbt_and_capture(["run", "-s", "mv_force"])
        assert "did not finish" in out
        run_dbt(["test", "-s", "mv_force"])

        # A changed definition.
        write_file(model("select pid, upper(pname) as pname from {{ target.schema }}.t_mv"),
                   project.project_root, "models", "mv_force.sql")  # fmt: skip
        _, out = run_dbt_and_capture(["run", "-s", "mv_force"])
        assert "definition changed" in out
        run_dbt(["test", "-s", "mv_force"])
        project.run_sql(f"insert into {s}.t_mv values (30, 'later')")
        results = run_dbt(["test", "-s", "mv_force"], expect_pass=False)
        failed = [r for r in results if r.status == "fail"]
        assert [r.node.name for r in failed] == ["fast_refresh_is_fresh_mv_force_"], "stale now"

        explained = op("explain_mview", mview=f"{s}.mv_force")
        # A view of one file takes its delta as one statement replacing it (refresh.overwrites).
        assert "REFRESH_FAST: yes" in explained and "REPLACE WHERE TRUE" in explained
        # The statement the refresh runs: it writes and reads the storage table (the
        # statement shown named the view, which holds no hidden columns).
        storage = f"INSERT INTO `{s}`.`mv_force__fr_data` REPLACE WHERE TRUE"
        assert storage in explained, explained
        assert f"`{s}`.`mv_force` t" not in explained, explained
        refreshed = op("refresh_mviews", names=f"{s}.mv_force", method="f")
        assert "FAST refresh of" in refreshed
        # An unregistered view's storage table keeps its Spark view over it: it is the
        # model's, rebuilt (not refused as another's table).
        assert "unregistered" in op("unregister_mview", mview=f"{s}.mv_force")
        _, out = run_dbt_and_capture(["run", "-s", "mv_force"])
        assert f"COMPLETE refresh of {s}.mv_force: the view is not registered" in out, out

        # The storage table dropped by hand: the next run builds the view anew, saying so
        # (it said "first build"), under refresh_method 'fast' too.
        project.run_sql(f"drop table {s}.mv_fast__fr_data")
        _, out = run_dbt_and_capture(["run", "-s", "mv_fast"])
        assert (
            f"COMPLETE refresh of {s}.mv_fast: the view's storage table "
            f"{s}.mv_fast__fr_data is missing (dropped?): built anew" in out
        ), out
        assert sorted(self.rows(project, f"select pid, pname from {s}.mv_fast")) == sorted(
            self.rows(project, f"select pid, pname from {s}.t_mv")
        )


THREAD_MODELS = {
    f"v{i}.sql": model(sql)
    for i, sql in enumerate(
        [
            "select k, v from {{ target.schema }}.m where v > 0",
            "select g, count(*) as c, sum(v) as s from {{ target.schema }}.m group by g",
            "select g, max(v) as mx from {{ target.schema }}.m group by g",
            "select count(*) as c, sum(v) as s from {{ target.schema }}.m",
            "select distinct g from {{ target.schema }}.m",
            "select g, v from {{ target.schema }}.m where g <> 'b'",
        ]
    )
}
THREAD_MODELS["schema.yml"] = "version: 2\nmodels:\n" + "".join(
    f"  - name: v{i}\n    data_tests: [fast_refresh.equals_query]\n" for i in range(6)
)


class TestThreadsFour(FastRefreshProject):
    """dbt --threads 4, six views on one log: the oracle holds, no commit is lost."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return THREAD_MODELS

    def test_parallel_refreshes(self, ready: Any) -> None:
        project, s = ready, ready.test_schema
        project.run_sql(f"create table {s}.m (k bigint not null, g string, v int) using iceberg")
        project.run_sql(f"alter table {s}.m set identifier fields k")
        project.run_sql(
            f"insert into {s}.m select id, element_at(array('a','b','c'), cast(id % 3 as int) + 1), cast(id % 7 as int) from range(1, 200) r(id)"
        )
        op("create_mview_log", master=f"{s}.m")
        run_dbt(["run", "--threads", "4"])
        for round_ in range(3):
            project.run_sql(f"update {s}.m set v = v + {round_ + 1} where k % 5 = {round_}")
            project.run_sql(f"delete from {s}.m where k % 11 = {round_}")
            project.run_sql(
                f"insert into {s}.m values ({1000 + round_}, 'b', 3), ({2000 + round_}, null, null)"
            )
            results = run_dbt(["run", "--threads", "4"])
            views = [
                r
                for r in results
                if r.node.resource_type == "model" and r.node.name.startswith("v")
            ]
            assert len(views) == 6 and all(r.message.startswith("FAST") for r in views), [
                r.message for r in views
            ]
            run_dbt(["test", "--threads", "4"])
        reg = f"{s}_reg"
        users = self.rows(project, f"select mview, last_refresh from {reg}.mview_log_users")
        assert len(users) == 6, "every registration survived the parallel writes"
        assert self.rows(project, f"select count(*) from {s}.mlog__m") == [(0,)], (
            "all consumed and purged"
        )
        stamps = self.rows(
            project, f"select count(*), count(distinct refresh_type) from {reg}.refresh_runs"
        )
        assert stamps == [(6 * 4, 2)], "each view: one COMPLETE build, then three FAST runs"


JOIN_MODELS = {
    "mv_join.sql": model(
        "select o.oid, o.amount, c.region from {{ target.schema }}.orders o "
        "join {{ target.schema }}.customers c on o.cid = c.cid where o.amount > 0",
        refresh_method="fast",
    ),
    "mv_outer.sql": model(
        "select o.oid, c.region from {{ target.schema }}.orders o "
        "left join {{ target.schema }}.customers c on o.cid = c.cid"
    ),
    "schema.yml": "version: 2\nmodels:\n  - name: mv_join\n"
    "    data_tests: [fast_refresh.equals_query, fast_refresh.is_fresh]\n"
    "  - name: mv_outer\n    data_tests: [fast_refresh.equals_query]\n",
}


class TestJoinThroughDbt(FastRefreshProject):
    """A join view refreshes fast from changes to either master; so does an outer join,
    once the log it needs exists."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return JOIN_MODELS

    def test_join_refreshes_fast(self, ready: Any) -> None:
        project, s = ready, ready.test_schema
        project.run_sql(
            f"create table {s}.orders (oid bigint not null, cid int, amount int) using iceberg"
        )
        project.run_sql(
            f"create table {s}.customers (cid int not null, region string) using iceberg"
        )
        project.run_sql(
            f"insert into {s}.orders select id, cast(id % 4 as int), cast(id % 5 as int) from range(40) r(id)"
        )
        project.run_sql(f"insert into {s}.customers values (0, 'north'), (1, 'south'), (2, 'east')")
        op("create_mview_log", master=f"{s}.orders", key=["oid"])
        # The fast-only join over a master without a log is refused at its first build
        # (it was built, and failed at the next run); the outer join, under force, builds.
        _, out = run_dbt_and_capture(["run"], expect_pass=False)
        assert f"{s}.mv_outer: first build" in out, out
        assert "customers has no materialized view log" in out, out
        assert "fast_refresh.create_mview_log" in out, out
        assert not project.run_sql(
            f"show tables in {s} like 'mv_join|mv_join__fr_data'", fetch="all"
        )
        op("create_mview_log", master=f"{s}.customers", key=["cid"], columns=[])
        _, out = run_dbt_and_capture(["run", "-s", "mv_join"])
        assert f"{s}.mv_join: first build" in out, out
        project.run_sql(f"update {s}.orders set amount = amount + 1 where oid % 3 = 0")
        project.run_sql(f"update {s}.customers set region = 'west' where cid = 1")
        project.run_sql(f"insert into {s}.customers values (3, 'new')")  # joins orders 3, 7, ...
        project.run_sql(f"delete from {s}.customers where cid = 2")
        project.run_sql(f"update {s}.orders set oid = 100 where oid = 5")  # a key update
        _, out = run_dbt_and_capture(["run"])
        assert "FAST refresh of" in out and "mv_join" in out, out
        # The outer join was built before the customers' log existed: it rebuilds once.
        assert f"COMPLETE refresh of {s}.mv_outer" in out, out
        project.run_sql(f"update {s}.customers set region = null where cid = 0")
        project.run_sql(f"insert into {s}.orders values (200, 9, 1)")  # matches no customer
        project.run_sql(f"insert into {s}.customers values (9, 'late')")  # now it does
        _, out = run_dbt_and_capture(["run"])
        assert f"FAST refresh of {s}.mv_outer" in out, out
        assert f"FAST refresh of {s}.mv_join" in out, out
        run_dbt(["test"])
        explained = op("explain_mview", mview=f"{s}.mv_join")
        # A view of one file: its delta replaces it whole (refresh.overwrites).
        assert "inner join of" in explained and "REPLACE WHERE TRUE" in explained
        assert "REFRESH_FAST: yes" in explained


class TestTableConfigs(FastRefreshProject):
    """partition_by and tblproperties work as dbt-spark users expect, also after refreshes."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "by_status.sql": model(
                "select status, count(*) as n from {{ target.schema }}.o group by status",
                partition_by=["status"],
                tblproperties={"team": "analytics", "write.merge.mode": "merge-on-read"},
            ),
            # Without tblproperties: format v2, and a shuffle-free MERGE when unpartitioned.
            "plain.sql": model("select id, status from {{ target.schema }}.o"),
            "parted.sql": model(
                "select id, status from {{ target.schema }}.o", partition_by=["status"]
            ),
        }

    def test_partitioning_and_properties(self, ready: Any) -> None:
        project, s = ready, ready.test_schema
        project.run_sql(f"create table {s}.o (id bigint not null, status string) using iceberg")
        project.run_sql(f"alter table {s}.o set identifier fields id")
        project.run_sql(f"insert into {s}.o values (1, 'open'), (2, 'shipped')")
        op("create_mview_log", master=f"{s}.o")
        run_dbt(["run", "-s", "by_status", "plain", "parted"])
        project.run_sql(f"insert into {s}.o values (3, 'open')")
        _, out = run_dbt_and_capture(["run", "-s", "by_status", "plain", "parted"])
        assert out.count("FAST refresh of") == 3
        # The model's table options and properties are its storage table's.
        props = dict(self.rows(project, f"show tblproperties {s}.by_status__fr_data"))
        assert props["team"] == "analytics" and props["write.merge.mode"] == "merge-on-read"
        assert "write.merge.distribution-mode" not in props, "the user's properties only"
        plain = dict(self.rows(project, f"show tblproperties {s}.plain__fr_data"))
        assert plain["format-version"] == "2"
        assert plain["write.merge.distribution-mode"] == "none"
        parted = dict(self.rows(project, f"show tblproperties {s}.parted__fr_data"))
        assert parted["format-version"] == "2"
        assert "write.merge.distribution-mode" not in parted, "partitioned: Iceberg's default"
        assert self.rows(project, f"select id, status from {s}.parted order by id") == [
            (1, "open"), (2, "shipped"), (3, "open"),
        ]  # fmt: skip
        described = self.rows(project, f"describe table {s}.by_status__fr_data")
        partition_rows = [
            r[0] for r in described[described.index(("# Partition Information", "", "")) :]
        ]
        assert "status" in partition_rows
        assert self.rows(project, f"select status, n from {s}.by_status order by status") == [
            ("open", 2), ("shipped", 1),
        ]  # fmt: skip
        # Changed options wait for a complete refresh, as on dbt's incremental models, and
        # each fast refresh until then warns, naming them and the fix (--warn-error fails
        # it); a changed description (the table's COMMENT, carried by the view) does not.
        write_file(
            model("select id, status from {{ target.schema }}.o", partition_by=["status"],
                  tblproperties={"team": "ops"}),
            project.project_root, "models", "plain.sql",
        )  # fmt: skip
        write_file(
            "version: 2\nmodels:\n  - name: parted\n    description: rows by status\n"
            "    config:\n      persist_docs: {relation: true}\n",
            project.project_root, "models", "schema.yml",
        )  # fmt: skip
        project.run_sql(f"insert into {s}.o values (4, 'open')")
        _, out = run_dbt_and_capture(["run", "-s", "plain", "parted"])
        assert out.count("FAST refresh of") == 2, out
        assert (
            "the model's table options (none -> partitioned by (status)) and tblproperties "
            f"changed since its table {s}.plain__fr_data was built" in out
        ), out
        assert "Fix: run `dbt run --full-refresh -s plain` to rebuild the table" in out, out
        assert "parted__fr_data was built" not in out, out
        project.run_sql(f"insert into {s}.o values (5, 'shipped')")
        _, out = run_dbt_and_capture(["--warn-error", "run", "-s", "plain"], expect_pass=False)
        assert "changed since its table" in out, out
        _, out = run_dbt_and_capture(["run", "--full-refresh", "-s", "plain"])
        assert dict(self.rows(project, f"show tblproperties {s}.plain__fr_data"))["team"] == "ops"
        project.run_sql(f"insert into {s}.o values (6, 'open')")
        _, out = run_dbt_and_capture(["run", "-s", "plain"])
        assert "FAST refresh of" in out and "changed since its table" not in out, out


class TestNonFiniteSumThroughDbt(FastRefreshProject):
    """A NaN leaving a floating-point SUM (``test_exact_values.py``), through dbt: the
    adapter's statement error reaches the refresh, which rebuilds under force and fails
    with the fix under fast."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        sql = "select g, sum(d) as sd, count(*) as n from {{ target.schema }}.t_nf group by g"
        return {
            "mv_sum_force.sql": model(sql),
            "mv_sum_fast.sql": model(sql, refresh_method="fast"),
            # A table that is no dbt node gets no log: a view on no log.
            "mv_nolog.sql": model(
                "select count(*) as n from {{ target.schema }}.t_plain",
                refresh_method="complete",
            ),
            "schema.yml": "version: 2\nmodels:\n  - name: mv_sum_force\n    data_tests: [fast_refresh.equals_query]\n",
        }

    def test_a_nan_leaving_rebuilds_under_force_and_fails_under_fast(self, ready: Any) -> None:
        project, s = ready, ready.test_schema
        project.run_sql(
            f"create table {s}.t_nf (k bigint not null, g string, d double) using iceberg"
        )
        project.run_sql(f"alter table {s}.t_nf set identifier fields k")
        project.run_sql(f"insert into {s}.t_nf values (1, 'a', 1.5), (2, 'b', 2.0)")
        op("create_mview_log", master=f"{s}.t_nf")
        project.run_sql(f"create table {s}.t_plain (k int) using iceberg")
        project.run_sql(f"insert into {s}.t_plain values (1), (2)")
        run_dbt(["run"])
        project.run_sql(f"insert into {s}.t_nf values (3, 'a', double('NaN'))")
        _, out = run_dbt_and_capture(["run"])
        assert out.count("FAST refresh of") == 2
        project.run_sql(f"delete from {s}.t_nf where k = 3")
        _, out = run_dbt_and_capture(["run", "-s", "mv_sum_force"])
        assert "COMPLETE refresh" in out and "NaN or an infinity left" in out
        _, out = run_dbt_and_capture(["run", "-s", "mv_sum_fast"], expect_pass=False)
        assert "Fast refresh of" in out and "NaN or an infinity left" in out and "Fix:" in out
        # Only a complete refresh brings it back, and the registry says so.
        assert self.staleness(project)["mv_sum_fast"] == "UNUSABLE"
        run_dbt(["test", "-s", "mv_sum_force"])
        _, out = run_dbt_and_capture(["run", "-s", "mv_sum_fast", "--full-refresh"])
        assert "COMPLETE refresh" in out and self.staleness(project)["mv_sum_fast"] == "FRESH"
        assert self.rows(project, f"select g, sd, n from {s}.mv_sum_force order by g") == [
            ("a", 1.5, 1), ("b", 2.0, 1),
        ]  # fmt: skip
        # A view on no log was UNUSABLE in the `fast_refresh_mviews` model, FRESH in the
        # registry's `mviews`; a view whose log was dropped is UNUSABLE in both.
        registry = dict(self.rows(project, f"select mview, staleness from {s}_reg.mviews"))
        assert registry[f"{s}.mv_nolog"] == "FRESH"
        assert self.staleness(project)["mv_nolog"] == "FRESH"
        assert self.staleness(project)["mv_sum_force"] == "FRESH"
        op("drop_mview_log", master=f"{s}.t_nf")
        assert self.staleness(project)["mv_sum_force"] == "UNUSABLE"
        registry = dict(self.rows(project, f"select mview, staleness from {s}_reg.mviews"))
        assert registry[f"{s}.mv_sum_force"] == "UNUSABLE"
        # Its next run rebuilds it, on no log now (t_nf is no dbt node): FRESH again.
        _, out = run_dbt_and_capture(["run", "-s", "mv_sum_force"])
        assert "COMPLETE refresh" in out and "has no materialized view log" in out, out
        assert self.staleness(project)["mv_sum_force"] == "FRESH"
