"""The fast_refresh dbt package installs the dbt way and its macros are found."""

from __future__ import annotations

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.conftest import REPO_ROOT


class TestPackageInstallsFromPackagesYml:
    @pytest.fixture(scope="class")
    def packages(self) -> dict[str, object]:
        return {"packages": [{"local": str(REPO_ROOT)}]}

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"m.sql": "{{ config(materialized='table', file_format='iceberg') }} select 1 as id"}

    def test_deps_then_a_package_macro_runs(self, project) -> None:  # type: ignore[no-untyped-def]
        run_dbt(["deps"])
        run_dbt(["run"])
        _, output = run_dbt_and_capture(["run-operation", "fast_refresh.doctor"])
        assert "adapter:        fastrefresh" in output
        assert "spark version:  3.5" in output
        assert "org.apache.iceberg.spark.SparkSessionCatalog" in output
        assert "local files:    dbt.fastrefresh.NioLocalFileSystem" in output
        assert "iceberg:        OK" in output
