"""Settings for the functional tests' dbt invocations."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="package", autouse=True)
def no_json_artifacts() -> Iterator[None]:
    """dbt writes ``manifest.json`` (640 KB here, most of it dbt's and dbt-spark's macros)
    after every parse and ``run_results.json`` after every command: 0.13 s of an invocation's
    1.3 s on average, 8% of test_materialization.py's time (measured 2026-12-07). Nothing
    here reads them but ``dbt retry`` and ``--state``, whose tests ask for them
    (``--write-json``); the conformance tests, which dbt wrote to read them, keep the default.
    """
    with pytest.MonkeyPatch.context() as patched:
        patched.setenv("DBT_WRITE_JSON", "false")
        yield
