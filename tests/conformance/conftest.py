"""Isolation between the conformance classes, which share one embedded Spark session.

dbt-tests-adapter assumes each class starts from a fresh connection. On a server
connection (thrift, http, odbc) the temporary views dbt-spark leaves behind (e.g.
``<model>__dbt_tmp`` of an incremental run) die with the connection; the embedded
session lives as long as the test process, so one class would see another's temporary
views (``SHOW TABLE EXTENDED`` lists them in every schema). Every class here starts and
ends without temporary views. That the leak itself breaks ``dbt docs generate`` within one
process is asserted separately, in ``test_session_state.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conformance.session_state import drop_temporary_views


@pytest.fixture(scope="class", autouse=True)
def no_temporary_views_between_classes(spark) -> Iterator[None]:  # type: ignore[no-untyped-def]
    drop_temporary_views(spark)
    yield
    drop_temporary_views(spark)
