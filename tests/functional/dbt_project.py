"""A dbt test project with the fast_refresh package installed, and run-operation helpers."""

from __future__ import annotations

import json
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.conftest import REPO_ROOT


def op(name: str, **args: Any) -> str:
    """Run `dbt run-operation fast_refresh.<name>` (it must succeed); return its output."""
    _, out = run_dbt_and_capture(
        ["run-operation", f"fast_refresh.{name}", "--args", json.dumps(args)]
    )
    return out


def op_failing(name: str, **args: Any) -> str:
    """Run an operation that must fail; return its output (with the error message)."""
    _, out = run_dbt_and_capture(
        ["run-operation", f"fast_refresh.{name}", "--args", json.dumps(args)],
        expect_pass=False,
    )
    return out


class FastRefreshProject:
    """A dbt project with the package installed and its own registry schema."""

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
    def ready(self, project: Any) -> Any:
        run_dbt(["deps"])
        # deps runs without an adapter; any later command registers it again.
        assert "registry ready in schema" in op("ensure_registry")
        return project

    @staticmethod
    def rows(project: Any, sql: str) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in project.run_sql(sql, fetch="all")]
