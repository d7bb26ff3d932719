"""Plain dbt on the embedded default: debug, run, test, seed, show."""

from __future__ import annotations

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

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
