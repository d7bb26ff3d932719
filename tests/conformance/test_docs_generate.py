"""dbt-tests-adapter's ``docs generate`` catalog tests on the embedded default.

The expected catalog is adapter-specific by design (the base classes take it from the
``expected_catalog`` fixture); here it states what dbt-spark's catalog reports:

- types are Spark's schema-tree names (``long``, ``string``, ``timestamp``), read from
  ``SHOW TABLE EXTENDED``; relation types are ``table`` / ``view``; ``database`` is null
  (Spark has two-part names), the owner is the Spark user;
- tables carry the statistics ``SHOW TABLE EXTENDED`` prints (bytes; Iceberg tables also
  rows), views none;
- dbt-spark numbers columns from 0 (``enumerate`` in ``parse_columns_from_information``)
  where the reference catalog, written for Postgres' ``ordinal_position``, counts from 1:
  ``expected_references_catalog`` hard-codes 1..n, so its indexes are shifted by one here.
  (``base_expected_catalog`` accepts any integer.)
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from dbt.tests.adapter.basic import expected_catalog
from dbt.tests.adapter.basic.test_docs_generate import BaseDocsGenerate, BaseDocsGenReferences
from dbt.tests.util import AnyInteger

pytestmark = pytest.mark.conformance

ICEBERG = {"+file_format": "iceberg"}
SPARK_TYPES = {"id_type": "long", "text_type": "string", "time_type": "timestamp"}


def table_stats(rows: bool) -> dict[str, Any]:
    """Statistics dbt-spark reports for a table: ``SHOW TABLE EXTENDED``'s ``Statistics``."""
    stats: dict[str, Any] = {
        "bytes": {
            "id": "bytes",
            "label": "bytes",
            "value": AnyInteger(),
            "include": True,
            "description": None,
        },
    }
    if rows:
        stats["rows"] = {
            "id": "rows",
            "label": "rows",
            "value": AnyInteger(),
            "include": True,
            "description": None,
        }
    stats["has_stats"] = {
        "id": "has_stats",
        "label": "Has Stats?",
        "value": True,
        "include": False,
        "description": "Indicates whether there are statistics for this table",
    }
    return stats


def zero_based_indexes(catalog: dict[str, Any]) -> dict[str, Any]:
    catalog = copy.deepcopy(catalog)
    for section in ("nodes", "sources"):
        for node in catalog[section].values():
            # New column dicts: the reference catalog shares one between seed and source.
            node["columns"] = {
                name: {**column, "index": column["index"] - 1}
                for name, column in node["columns"].items()
            }
    return catalog


def generate_project_config(unique_schema: str, extra: dict[str, Any]) -> dict[str, Any]:
    """``BaseGenerateProject.project_config_update``, plus ``extra``."""
    return {
        "asset-paths": ["assets", "invalid-asset-paths"],
        "vars": {"test_schema": unique_schema, "alternate_schema": unique_schema + "_test"},
        "seeds": {"quote_columns": True, **extra.get("seeds", {})},
        **{key: value for key, value in extra.items() if key != "seeds"},
    }


class SparkCatalogExpectations:
    """Fixtures shared by the docs classes; ``ICEBERG_TABLES`` selects the table format."""

    ICEBERG_TABLES = False

    @pytest.fixture(scope="class")
    def profile_user(self, spark) -> str:  # type: ignore[no-untyped-def]
        # The owner Spark records for the tables it creates.
        return str(spark.sparkContext.sparkUser())

    @pytest.fixture(scope="class")
    def project_config_update(self, unique_schema: str) -> dict[str, Any]:
        extra = {"seeds": ICEBERG, "models": ICEBERG} if self.ICEBERG_TABLES else {}
        return generate_project_config(unique_schema, extra)


class TestDocsGenerate(SparkCatalogExpectations, BaseDocsGenerate):
    @pytest.fixture(scope="class")
    def expected_catalog(self, project, profile_user: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
        return expected_catalog.base_expected_catalog(
            project,
            role=profile_user,
            **SPARK_TYPES,
            view_type="view",
            table_type="table",
            model_stats=expected_catalog.no_stats(),  # both models are views
            seed_stats=table_stats(rows=self.ICEBERG_TABLES),
        )


class TestDocsGenerateIceberg(TestDocsGenerate):
    ICEBERG_TABLES = True


class TestDocsGenReferences(SparkCatalogExpectations, BaseDocsGenReferences):
    @pytest.fixture(scope="class")
    def expected_catalog(self, project, profile_user: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
        return zero_based_indexes(
            expected_catalog.expected_references_catalog(
                project,
                role=profile_user,
                **SPARK_TYPES,
                bigint_type="long",
                view_type="view",
                table_type="table",
                model_stats=table_stats(rows=self.ICEBERG_TABLES),  # ephemeral_summary: table
                seed_stats=table_stats(rows=self.ICEBERG_TABLES),
                view_summary_stats=expected_catalog.no_stats(),
            )
        )


class TestDocsGenReferencesIceberg(TestDocsGenReferences):
    ICEBERG_TABLES = True
