"""The log run-operations and the registry models, driven through real dbt."""

from __future__ import annotations

import json
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.conftest import REPO_ROOT


def operation(name: str, **args: Any) -> str:
    _, output = run_dbt_and_capture(
        ["run-operation", f"fast_refresh.{name}", "--args", json.dumps(args)]
    )
    return output


class TestLogOperationsThroughDbt:
    @pytest.fixture(scope="class")
    def packages(self) -> dict[str, object]:
        return {"packages": [{"local": str(REPO_ROOT)}]}

    @pytest.fixture(scope="class")
    def profiles_config_update(
        self, dbt_profile_target: dict[str, Any], unique_schema: str
    ) -> dict[str, Any]:
        target = {
            **dbt_profile_target,
            "schema": unique_schema,
            "registry_schema": f"{unique_schema}_reg",
        }
        return {"test": {"outputs": {"default": target}, "target": "default"}}

    @pytest.fixture(scope="class")
    def installed(self, project: Any) -> Any:
        run_dbt(["deps"])
        # deps runs without an adapter; any later command registers it again.
        assert "registry ready in schema" in operation("ensure_registry")
        return project

    def test_seed_004_log_contents_and_registry(self, installed: Any) -> None:
        project = installed
        schema = project.test_schema
        master = f"{schema}.t_ty"
        project.run_sql(f"create table {master} (pid int not null, pname string) using iceberg")
        project.run_sql(f"alter table {master} set identifier fields pid")
        # Seed 004's default log: primary key only.
        output = operation("create_mview_log", master=master, columns=[])
        assert f"created materialized view log {schema}.mlog__t_ty" in output
        _, output = run_dbt_and_capture(
            [
                "run-operation",
                "fast_refresh.create_mview_log",
                "--args",
                json.dumps({"master": master}),
            ],
            expect_pass=False,
        )
        assert "already has a materialized view log" in output
        project.run_sql(f"insert into {master} values (1, 'ty')")
        project.run_sql(f"insert into {master} values (2, 'snc')")
        project.run_sql(f"update {master} set pname = 'shsnc' where pid = 2")
        project.run_sql(f"update {master} set pid = 3 where pid = 1")
        assert "4 commit(s)" in operation("capture_changes", master=master)
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
        assert len([r for r in results if r.node.resource_type == "model"]) == 4
        logs_view = project.run_sql(
            f"select master, last_sequence, registered_views from {schema}.fast_refresh_logs",
            fetch="all",
        )
        assert [tuple(r) for r in logs_view] == [(master, 5, 0)]
        run_dbt(["test", "--select", "fast_refresh"])

        assert "dropped materialized view log" in operation("drop_mview_log", master=master)
        _, output = run_dbt_and_capture(
            [
                "run-operation",
                "fast_refresh.capture_changes",
                "--args",
                json.dumps({"master": master}),
            ],
            expect_pass=False,
        )
        assert "has no materialized view log (Oracle: ORA-23413)" in output

    def test_a_hook_runs_an_operation_and_renders_no_sql(self, installed: Any) -> None:
        schema = installed.test_schema
        installed.run_sql(f"create table {schema}.hooked (id int not null) using iceberg")
        write_file = __import__("dbt.tests.util", fromlist=["write_file"]).write_file
        write_file(
            "{{ config(materialized='table', file_format='iceberg', pre_hook=\"{{ "
            f"fast_refresh.create_mview_log('{schema}.hooked', key=['id']) "
            "}}\") }} select 1 as id",
            installed.project_root, "models", "uses_hook.sql",
        )  # fmt: skip
        run_dbt(["run", "--select", "uses_hook"])
        rows = installed.run_sql(
            f"select log_table from {schema}_reg.mview_logs where master = '{schema}.hooked'",
            fetch="all",
        )
        assert [tuple(r) for r in rows] == [(f"{schema}.mlog__hooked",)]
