"""Session state the embedded default keeps across dbt invocations in one process.

Found by the conformance suite (see ``conftest.py``): dbt-spark's SQL incremental
materialization leaves the temporary view ``<model>__dbt_tmp`` in the session, and the
embedded session outlives the dbt invocation. ``SHOW TABLE EXTENDED`` lists temporary views
(with no schema) in every schema, which crashed a later ``dbt docs generate`` in the same
process. The adapter now leaves schema-less entries out of a schema's relations; this is
the regression test. It leaves the temporary view and runs ``dbt docs generate`` within one
test, so the isolation fixture of ``conftest.py`` (which drops temporary views between test
classes) cannot hide it.
"""

from __future__ import annotations

import pytest
from dbt.tests.util import run_dbt

from tests.conformance.session_state import drop_temporary_views

pytestmark = pytest.mark.conformance

INCREMENTAL = "{{ config(materialized='incremental') }} select 1 as id"


class TestTemporaryViewsOfOneInvocationBreakTheNext:
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"inc.sql": INCREMENTAL}

    def test_docs_generate_after_incremental_run(self, project, spark) -> None:  # type: ignore[no-untyped-def]
        try:
            run_dbt(["run"])
            run_dbt(["run"])  # the incremental run creates inc__dbt_tmp
            catalog = run_dbt(["docs", "generate", "--no-compile"])
            assert len(catalog.nodes) == 1
        finally:
            drop_temporary_views(spark)
