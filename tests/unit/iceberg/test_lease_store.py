"""The SQL lease store's swap: which failures of its MERGE mean "another commit came
first" (read again and retry) and which are real errors. The MERGE itself runs on
Iceberg in tests/functional/test_concurrency.py and tests/shared/."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from dbt.adapters.fastrefresh.iceberg.leases import SqlLeaseStore, lost_to_a_racer
from dbt.adapters.fastrefresh.runtime.leases import Lease
from tests.unit.iceberg.stand_in import NoSession

# As py4j printed them in CI (a thread's copy-on-write MERGE racing another thread's).
RUNTIME_FILTER = (
    "An error occurred while calling o79.sql.\n: java.lang.IllegalStateException: Runtime "
    "file filtering is not possible: the table has been concurrently modified. Row-level "
    "operation scan snapshot ID: 6414259323853413960, current table snapshot ID: "
    "5169541497531878079."
)
VALIDATION = (
    "org.apache.iceberg.exceptions.ValidationException: Found conflicting files that can "
    "contain records matching name IN ('log:s.mlog__t')"
)
COMMIT_FAILED = "org.apache.iceberg.exceptions.CommitFailedException: Table metadata refresh"


class Failing(NoSession):
    """An executor whose MERGE fails with ``message``; the table 'exists'."""

    def __init__(self, message: str) -> None:
        self.message = message

    def execute(self, sql: str) -> None:
        if sql.startswith("MERGE"):
            raise RuntimeError(self.message)

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        return []


def lease() -> Lease:
    at = dt.datetime(2026, 1, 1)
    return Lease("log:s.mlog__t", "h:1:x.t", "h", 1, at, at + dt.timedelta(seconds=30), "test")


@pytest.mark.parametrize("message", [RUNTIME_FILTER, VALIDATION, COMMIT_FAILED])
def test_a_merge_that_lost_to_another_commit_is_a_lost_swap(message: str) -> None:
    assert lost_to_a_racer(RuntimeError(message))
    store = SqlLeaseStore(Failing(message), "reg")
    new = {"log:s.mlog__t": lease()}
    assert store.swap({}, ["log:s.mlog__t"], new) is False
    assert store.swaps == 0


def test_any_other_failure_of_the_merge_is_raised() -> None:
    message = "org.apache.spark.sql.AnalysisException: TABLE_OR_VIEW_NOT_FOUND reg.leases"
    assert not lost_to_a_racer(RuntimeError(message))
    store = SqlLeaseStore(Failing(message), "reg")
    with pytest.raises(RuntimeError, match="TABLE_OR_VIEW_NOT_FOUND"):
        store.swap({}, ["log:s.mlog__t"], {"log:s.mlog__t": lease()})
