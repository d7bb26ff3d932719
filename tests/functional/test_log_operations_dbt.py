"""The log run-operations and the registry models, driven through real dbt."""

from __future__ import annotations

from typing import Any

import pytest
from dbt.tests.util import run_dbt, write_file

from tests.functional.dbt_project import FastRefreshProject, op, op_failing, run_and_capture


class TestLogOperationsThroughDbt(FastRefreshProject):
    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        # The package's own data tests on its registry models are off unless a project
        # turns them on (its dbt_project.yml); this one does.
        return {"data_tests": {"fast_refresh": {"+enabled": True}}}

    def test_seed_004_log_contents_and_registry(self, ready: Any) -> None:
        project = ready
        schema = project.test_schema
        master = f"{schema}.t_ty"
        project.run_sql(f"create table {master} (pid int not null, pname string) using iceberg")
        project.run_sql(f"alter table {master} set identifier fields pid")
        # Seed 004's default log: primary key only.
        output = op("create_mview_log", master=master, columns=[])
        assert f"created materialized view log {schema}.mlog__t_ty" in output
        output = op_failing("create_mview_log", master=master)
        assert "already has a materialized view log" in output and "if_not_exists" in output
        output = op("create_mview_log", master=master, if_not_exists=True)
        assert (
            f"materialized view log {schema}.mlog__t_ty on {master} already exists: kept" in output
        )
        project.run_sql(f"insert into {master} values (1, 'ty')")
        project.run_sql(f"insert into {master} values (2, 'snc')")
        project.run_sql(f"update {master} set pname = 'shsnc' where pid = 2")
        project.run_sql(f"update {master} set pid = 3 where pid = 1")
        assert "4 commit(s)" in op("capture_changes", master=master)
        # An empty name is a name given wrong, not "every log" (it captured them all).
        output = op_failing("capture_changes", master="")
        assert "'' is not a table name dbt-fastrefresh can use. Fix: pass" in output, output
        rows = project.run_sql(
            f"select pid, cast(snaptime__ as string), dmltype__, old_new__, hex(change_vector__) "
            f"from {schema}.mlog__t_ty order by sequence__",
            fetch="all",
        )
        assert [tuple(r) for r in rows] == [
            (1, "4000-01-01 00:00:00", "I", "N", "FE"),
            (2, "4000-01-01 00:00:00", "I", "N", "FE"),
            (2, "4000-01-01 00:00:00", "U", "U", "04"),
            (1, "4000-01-01 00:00:00", "D", "O", "00"),
            # Oracle logs the insert half of a key update with FF. An Iceberg v2 commit
            # does not link the old and new row, so the insert half reads as a plain insert.
            (3, "4000-01-01 00:00:00", "I", "N", "FE"),
        ]
        registry = f"{schema}_reg"
        log = project.run_sql(
            f"select flavour, key_columns, logged_columns, last_sequence from {registry}.mview_logs",
            fetch="one",
        )
        assert tuple(log) == ("TIMESTAMP", ["pid"], [], 5)

        # The registry models build and read the registry.
        results = run_dbt(["run", "--select", "fast_refresh"])
        assert len([r for r in results if r.node.resource_type == "model"]) == 5
        leases = project.run_sql(f"select * from {schema}.fast_refresh_leases", fetch="all")
        assert leases == [], "the embedded default takes no lease"
        logs_view = project.run_sql(
            f"select master, last_sequence, registered_views from {schema}.fast_refresh_logs",
            fetch="all",
        )
        assert [tuple(r) for r in logs_view] == [(master, 5, 0)]
        results = run_dbt(["test", "--select", "fast_refresh"])
        tests = [r for r in results if r.node.resource_type == "test"]
        assert sorted(r.node.name for r in tests) == [
            "accepted_values_fast_refresh_mviews_staleness__FRESH__STALE__NEEDS_COMPILE__UNUSABLE",
            "not_null_fast_refresh_leases_object",
            "not_null_fast_refresh_mviews_mview",
            "unique_fast_refresh_leases_object",
            "unique_fast_refresh_mviews_mview",
        ]
        assert {r.status for r in tests} == {"pass"}

        assert "dropped materialized view log" in op("drop_mview_log", master=master)
        output = op_failing("capture_changes", master=master)
        assert "has no materialized view log (Oracle: ORA-23413). Fix: " in output

    def test_the_registry_models_show_each_views_last_refresh_and_what_it_needs(
        self, ready: Any
    ) -> None:
        """`fast_refresh_mviews` showed the type of the last refresh that wrote the view's
        state beside the time of a later fast refresh that had nothing to apply (and wrote
        nothing), and a later run of another model on the log took the time back to the
        earlier refresh's. After `purge_log` took rows a view had not consumed,
        `fast_refresh_log_backlog` counted them as pending and said the view needed no
        complete refresh."""
        project, s = ready, ready.test_schema
        project.run_sql(f"create table {s}.m (id int not null, k int, v int) using iceberg")
        project.run_sql(f"alter table {s}.m set identifier fields id")
        project.run_sql(f"insert into {s}.m values (1, 1, 10), (2, 1, 20), (3, 2, 30)")
        op("create_mview_log", master=f"{s}.m")
        for name, sql in [
            ("totals", f"select k, count(*) as n, sum(v) as sv from {s}.m group by k"),
            ("big", f"select id, v from {s}.m where v > 0"),
        ]:
            write_file(
                f"{{{{ config(materialized='fast_refresh') }}}}\n{sql}",
                project.project_root, "models", f"{name}.sql",
            )  # fmt: skip
        run_dbt(["run", "--select", "totals", "big"])
        run_dbt(["run", "--select", "totals", "big"])  # nothing to apply: FAST, no write
        runs = self.rows(
            project,
            f"select refresh_type, started from {s}_reg.refresh_runs "
            f"where mview = '{s}.totals' order by started",
        )
        assert [r[0] for r in runs] == ["COMPLETE", "FAST"], runs

        def last(view: str) -> tuple[Any, ...]:
            return self.rows(
                project,
                f"select last_refresh_type, last_refresh_time from {s}.fast_refresh_mviews "
                f"where mview = '{s}.{view}'",
            )[0]

        run_dbt(["run", "--select", "fast_refresh"])
        assert last("totals") == runs[-1], runs
        project.run_sql(f"insert into {s}.m values (4, 3, 40)")
        run_dbt(["run", "--select", "big"])  # totals is described again, not refreshed
        run_dbt(["run", "--select", "fast_refresh"])
        assert last("totals") == runs[-1], runs
        op("purge_log", master=f"{s}.m", num=1)  # the least recently refreshed: totals
        run_dbt(["run", "--select", "fast_refresh"])
        backlog = self.rows(
            project,
            f"select mview, pending_log_rows, needs_complete_refresh "
            f"from {s}.fast_refresh_log_backlog order by mview",
        )
        assert backlog == [(f"{s}.big", 0, False), (f"{s}.totals", 0, True)], backlog
        views = self.rows(
            project,
            f"select mview, staleness, pending_log_rows from {s}.fast_refresh_mviews "
            "order by mview",
        )
        assert views == [(f"{s}.big", "FRESH", 0), (f"{s}.totals", "UNUSABLE", 0)], views

    def test_capture_of_every_log_goes_past_a_log_whose_master_is_gone(self, ready: Any) -> None:
        """A scheduled `capture_changes` of every log stopped at the first log whose master
        was renamed, and the logs after it were not captured."""
        project = ready
        s = project.test_schema
        for name in ("aa_gone", "zz_kept"):
            project.run_sql(f"create table {s}.{name} (id int not null, v int) using iceberg")
            project.run_sql(f"alter table {s}.{name} set identifier fields id")
            op("create_mview_log", master=f"{s}.{name}")
            project.run_sql(f"insert into {s}.{name} values (1, 1)")
        project.run_sql(f"alter table {s}.aa_gone rename to {s}.aa_renamed")
        output = op_failing("capture_changes")
        assert "Capture failed for 1 of " in output and f"{s}.mlog__aa_gone" in output, output
        assert "drop_mview_log" in output, output
        kept = project.run_sql(f"select count(*) from {s}.mlog__zz_kept", fetch="one")[0]
        assert kept == 1, "the healthy log was captured"
        op("drop_mview_log", master=f"{s}.aa_gone")
        assert "Capture failed" not in op("capture_changes")

    def test_a_hook_runs_an_operation_and_renders_no_sql(self, ready: Any) -> None:
        schema = ready.test_schema
        ready.run_sql(f"create table {schema}.hooked (id int not null) using iceberg")
        write_file(
            "{{ config(materialized='table', file_format='iceberg', pre_hook=\"{{ "
            f"fast_refresh.create_mview_log('{schema}.hooked', key=['id'], if_not_exists=true) "
            "}}\") }} select 1 as id",
            ready.project_root, "models", "uses_hook.sql",
        )  # fmt: skip
        # As docs/logs-and-capture.md writes it: the hook runs on every run.
        run_dbt(["run", "--select", "uses_hook"])
        run_dbt(["run", "--select", "uses_hook"])
        rows = ready.run_sql(
            f"select log_table from {schema}_reg.mview_logs where master = '{schema}.hooked'",
            fetch="all",
        )
        assert [tuple(r) for r in rows] == [(f"{schema}.mlog__hooked",)]

    def test_a_log_created_on_a_fast_refresh_model_is_keyed_as_dbt_run_keys_it(
        self, ready: Any
    ) -> None:
        """create_mview_log on a fast_refresh model without `key` keys its log by the
        view's key, as the log `dbt run` creates for a model over it. It was key-less (the
        storage table has no identifier fields), and a join over the model then could
        not refresh fast."""
        project, schema = ready, ready.test_schema
        base = f"{schema}.accounts"
        project.run_sql(
            f"create table {base} (id int not null, region string, v int) using iceberg"
        )
        project.run_sql(f"alter table {base} set identifier fields id")
        project.run_sql(f"insert into {base} values (1, 'n', 10), (2, 's', 20)")
        op("create_mview_log", master=base)
        models = {
            "accounts_v": f"select id, region, v from {base}",
            "accounts_by_region": f"select region, sum(v) as v, count(*) as n from {base} group by region",
        }
        for name, sql in models.items():
            write_file(
                "{{ config(materialized='fast_refresh') }} " + sql,
                project.project_root, "models", f"{name}.sql",
            )  # fmt: skip
        ok, out = run_and_capture(["run", "-s", *models])
        assert ok, out
        for name in models:
            assert "created materialized view log" in op(
                "create_mview_log", master=f"{schema}.{name}"
            )
        rows = project.run_sql(
            f"select master, key_columns from {schema}_reg.mview_logs "
            f"where master like '{schema}.accounts%' order by master",
            fetch="all",
        )
        # The keyed projection's log is keyed by its key; the aggregate's is key-less, as
        # its group values may be NULL.
        assert [tuple(r) for r in rows] == [
            (base, ["id"]),
            (f"{schema}.accounts_by_region__fr_data", []),
            (f"{schema}.accounts_v__fr_data", ["id"]),
        ]

    def test_a_log_unlike_its_nodes_mview_log_is_kept_with_a_warning(self, ready: Any) -> None:
        project, schema = ready, ready.test_schema
        master = f"{schema}.events"
        project.run_sql(f"create table {master} (id int not null, v int) using iceberg")
        project.run_sql(f"insert into {master} values (1, 10), (2, 20)")
        op("create_mview_log", master=master, key=["id"])

        def source(mview_log: str) -> None:
            write_file(
                "version: 2\nsources:\n  - name: raw\n    schema: \"{{ target.schema }}\"\n"
                f"    tables:\n      - name: events\n        meta:\n          mview_log: {mview_log}\n",
                project.project_root, "models", "events_source.yml",
            )  # fmt: skip

        write_file(
            "{{ config(materialized='fast_refresh') }} select id, v from {{ source('raw', 'events') }}",
            project.project_root, "models", "events_v.sql",
        )  # fmt: skip
        source("{key: [v], purge: synchronous, commit_scn: true}")
        ok, out = run_and_capture(["run", "-s", "events_v"])
        assert ok, out
        assert (
            f"the materialized view log on {master} differs from the mview_log of "
            "source.test.raw.events: it has key (id), not (v); commit_scn false, not true; "
            "purge 'deferred', not 'synchronous'. The log is kept as it was created" in out
        ), out
        assert f"fast_refresh.drop_mview_log --args '{{master: {master}}}'" in out, out
        # The log is the one created above: the view refreshes fast from it.
        project.run_sql(f"update {master} set v = 11 where id = 1")
        source("{key: [id], purge: deferred}")
        ok, out = run_and_capture(["run", "-s", "events_v"])
        assert ok and f"FAST refresh of {schema}.events_v" in out, out
        assert "differs from the mview_log" not in out, out
        assert sorted(self.rows(project, f"select id, v from {schema}.events_v")) == [
            (1, 11), (2, 20)
        ]  # fmt: skip
