"""Plain dbt on the embedded default: debug, run, test, seed, show."""

from __future__ import annotations

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.functional.dbt_project import FastRefreshProject

SEED = "id,name\n1,a\n2,b\n3,c\n"
MODELS = {
    "base.sql": "{{ config(materialized='table', file_format='iceberg') }}"
    " select * from {{ ref('people') }}",
    "filtered.sql": "{{ config(materialized='view') }}"
    " select * from {{ ref('base') }} where id > 1",
    "schema.yml": """
version: 2
models:
  - name: filtered
    columns:
      - name: id
        data_tests: [unique, not_null]
""",
}


class TestDbtBasicsOnTheEmbeddedDefault:
    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"people.csv": SEED}

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return MODELS

    def test_debug_seed_run_test_show(self, project) -> None:  # type: ignore[no-untyped-def]
        _, debug = run_dbt_and_capture(["debug"])
        assert "OK connection ok" in debug and "All checks passed!" in debug
        assert len(run_dbt(["seed"])) == 1
        assert len(run_dbt(["run"])) == 2
        assert len(run_dbt(["test"])) == 2
        rows = project.run_sql(
            f"select id, name from {project.test_schema}.filtered order by id", fetch="all"
        )
        assert [tuple(r) for r in rows] == [(2, "b"), (3, "c")]


class TestReadOnlyCommandsCreateNoRegistry(FastRefreshProject):
    """`dbt debug`, `dbt compile`, `dbt docs generate` and `dbt show` write nothing: the
    package's on-run-start hook created the registry's schema and tables from compile,
    docs generate and show too, which fails under credentials that may only read."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "mv.sql": "{{ config(materialized='fast_refresh') }} select 1 as id",
        }

    def test_debug_compile_docs_generate_and_show(self, project) -> None:  # type: ignore[no-untyped-def]
        run_dbt(["deps"])
        registry = f"{project.test_schema}_reg"
        commands = (["debug"], ["compile"], ["docs", "generate"], ["show", "--inline", "select 1"])
        for command in commands:
            run_dbt(command)
            assert not project.run_sql(f"show schemas like '{registry}'", fetch="all"), command
        run_dbt(["run"])
        assert project.run_sql(f"show schemas like '{registry}'", fetch="all")
