"""A dbt test project with the fast_refresh package installed, and run-operation helpers."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from dbt.tests.util import (
    capture_stdout_logs,
    run_dbt,
    run_dbt_and_capture,
    stop_capture_stdout_logs,
)
from dbt_common.events.base_types import EventMsg

from tests.conftest import REPO_ROOT


def fr(sql: str, **config: Any) -> str:
    """A fast_refresh model's file: ``sql`` under its ``config(materialized='fast_refresh',
    **config)``."""
    options = ", ".join(f"{k}={v!r}" for k, v in {"materialized": "fast_refresh", **config}.items())
    return f"{{{{ config({options}) }}}}\n{sql}"


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


def run_and_capture(args: list[str]) -> tuple[bool, str]:
    """Run a dbt command once: whether it succeeded (dbt's own verdict, from its
    CommandCompleted event) and what it printed."""
    verdicts: list[bool] = []

    def listen(event: EventMsg) -> None:
        if event.info.name == "CommandCompleted":
            verdicts.append(bool(event.data.success))

    buffer = StringIO()
    capture_stdout_logs(buffer)
    try:
        run_dbt(args, expect_pass=None, callbacks=[listen])  # type: ignore[arg-type]
    finally:
        stop_capture_stdout_logs()
    return bool(verdicts) and verdicts[-1], buffer.getvalue()


class FastRefreshProject:
    """A dbt project with the package installed and its own registry schema."""

    @pytest.fixture(scope="class")
    def packages(self) -> dict[str, object]:
        return {"packages": [{"local": str(REPO_ROOT)}]}

    @staticmethod
    def project_target(dbt_profile_target: dict[str, Any], unique_schema: str) -> dict[str, Any]:
        """The profile's target in the class's schema, with a registry schema of its own."""
        return {
            **dbt_profile_target,
            "schema": unique_schema,
            "registry_schema": f"{unique_schema}_reg",
        }

    @pytest.fixture(scope="class")
    def profiles_config_update(
        self, dbt_profile_target: dict[str, Any], unique_schema: str
    ) -> dict[str, Any]:
        target = self.project_target(dbt_profile_target, unique_schema)
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
