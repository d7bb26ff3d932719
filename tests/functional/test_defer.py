"""`dbt run --defer --state`: a developer's model over a model deferred to production.

The compiled query reads production's relation, so the developer's view reads
production's storage table: it never creates a log there (it rebuilds, saying that table
has no log), and where production has one it registers on it and refreshes fast from
it, like any view on a shared log.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.functional.dbt_project import FastRefreshProject, op, run_and_capture

A = "{{ config(materialized='fast_refresh') }} select id, v from defer_raw.raw"
B = (
    "{{ config(materialized='fast_refresh') }} "
    "select id, sum(v) as s from {{ ref('a') }} group by id"
)


class TestDeferredUpstream(FastRefreshProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"a.sql": A, "b.sql": B}

    @pytest.fixture(scope="class")
    def profiles_config_update(
        self, dbt_profile_target: dict[str, Any], unique_schema: str
    ) -> dict[str, Any]:
        prod = self.project_target(dbt_profile_target, unique_schema)
        dev = {**dbt_profile_target, "schema": f"{unique_schema}_dev",
               "registry_schema": f"{unique_schema}_devreg"}  # fmt: skip
        return {"test": {"outputs": {"default": prod, "dev": dev}, "target": "default"}}

    def test_a_deferred_upstream_is_read_in_production_and_never_written(self, ready: Any) -> None:
        project, s = ready, ready.test_schema
        project.run_sql("create schema if not exists defer_raw")
        project.run_sql("create table defer_raw.raw (id int not null, v int) using iceberg")
        project.run_sql("alter table defer_raw.raw set identifier fields id")
        project.run_sql("insert into defer_raw.raw values (1, 1), (2, 2)")
        op("create_mview_log", master="defer_raw.raw")

        def tables(schema: str) -> set[str]:
            return {r[1] for r in project.run_sql(f"show tables in {schema}", fetch="all")}

        def dev_b() -> str:
            ok, out = run_and_capture(
                ["run", "--target", "dev", "--defer", "--state", str(state), "-s", "b"]
            )
            assert ok, out
            expected = project.run_sql(
                "select id, sum(v) from defer_raw.raw group by id order by id", fetch="all"
            )
            got = project.run_sql(f"select id, s from {s}_dev.b order by id", fetch="all")
            assert [tuple(r) for r in got] == [tuple(r) for r in expected]
            return out

        # Production runs `a` alone: nothing reads it there, so it has no log.
        ok, out = run_and_capture(["run", "--write-json", "-s", "a"])  # its manifest is the state
        assert ok, out
        state = Path(project.project_root) / "prod_state"
        state.mkdir()
        shutil.copy(Path(project.project_root) / "target" / "manifest.json", state)
        project.run_sql(f"create schema if not exists {s}_dev")
        out = dev_b()
        assert (
            f"COMPLETE refresh of {s}_dev.b: first build; it cannot refresh fast: the master "
            f"table {s}.a__fr_data has no materialized view log" in out
        ), out
        assert "mlog__a__fr_data" not in tables(s), "a dev run created a log in production"
        assert "b" not in tables(s)

        # Production's own `b` gives `a` its log; the developer's view then registers on
        # it (once rebuilt: the log is younger than its build) and refreshes fast from it.
        ok, out = run_and_capture(["run"])
        assert ok, out
        assert "mlog__a__fr_data" in tables(s)
        project.run_sql("insert into defer_raw.raw values (3, 3)")
        assert run_and_capture(["run"])[0]
        assert f"COMPLETE refresh of {s}_dev.b: the materialized view log" in dev_b()
        project.run_sql("update defer_raw.raw set v = 10 where id = 1")
        assert run_and_capture(["run"])[0]
        assert f"FAST refresh of {s}_dev.b: 2 log row(s)" in dev_b()
        users = project.run_sql(f"select log_table, mview from {s}_devreg.mview_log_users",
                                fetch="all")  # fmt: skip
        assert (f"{s}.mlog__a__fr_data", f"{s}_dev.b") in [tuple(r) for r in users], users
