"""Shared fixtures: one embedded Spark JVM per test process, dbt driven in-process.

The session is started once with exactly the settings a `type: fastrefresh` profile
produces (``embedded.start_session``); every dbt invocation (``dbtRunner``, through
dbt-tests-adapter's ``run_dbt``) then reuses it instead of starting a JVM per command.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["dbt.tests.fixtures.project"]

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def spark_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.getbasetemp() / "spark-state"


@pytest.fixture(scope="session")
def spark(spark_state_dir: Path):  # type: ignore[no-untyped-def]
    from dbt.adapters.fastrefresh.runtime.embedded import start_session

    session = start_session(spark_state_dir)
    yield session


@pytest.fixture(scope="class")
def dbt_profile_target(spark, spark_state_dir: Path) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """The profile of every functional test: the embedded default, shared state folder."""
    return {"type": "fastrefresh", "threads": 1, "state_dir": str(spark_state_dir)}
