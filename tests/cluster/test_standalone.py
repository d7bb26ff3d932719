"""The session of `make test-cluster` really is on a Spark standalone cluster: a master and
two workers, each its own JVM, run the executors that scan and write the Iceberg files,
while the driver (and its metastore) stays in the test process. The oracle, the seed traces
and the dbt materialization tests then run on this session (see the Makefile)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.conftest import ON_CLUSTER
from tests.functional.sites import keyed_master_with_log, refresh_and_check

pytestmark = pytest.mark.cluster


def executor_pids(spark: Any) -> set[int]:
    """The processes that ran the tasks of one job (one task per executor core and more)."""
    rdd = spark.sparkContext.parallelize(range(8), 8)
    return set(rdd.map(lambda _: os.getpid()).distinct().collect())


def test_the_session_runs_on_the_standalone_cluster(spark: Any) -> None:
    assert ON_CLUSTER, (
        "run this suite with `make test-cluster` (FASTREFRESH_TEST_CLUSTER=standalone)"
    )
    master = spark.sparkContext.master
    assert master.startswith("spark://127.0.0.1:"), master
    pids = executor_pids(spark)
    # Two executors, one per worker, none of them the driver's process (PySpark's workers
    # are forked from each executor's Python daemon, so their pids differ from the driver's).
    assert os.getpid() not in pids
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
    assert executors == 2, f"{executors} executors registered, expected one per worker"


def test_a_fast_refresh_writes_through_the_executors(spark: Any) -> None:
    """A keyed master with its log, an aggregate view built, the master changed, the view
    refreshed FAST: the capture's and the MERGE's files are written by the executors."""
    env = keyed_master_with_log(spark, "cl_basic", rows=2000, groups=7)
    sql = "SELECT g, count(*) AS n, sum(x) AS sx FROM cl_basic.m GROUP BY g"
    from dbt.adapters.fastrefresh.sqltext import TableName

    view = TableName("cl_basic", "v")
    refresh_and_check(spark, env, view, sql, exists=False, expect="COMPLETE")
    spark.sql("UPDATE cl_basic.m SET x = x + 2, g = (g + 1) % 7 WHERE k % 11 = 0")
    spark.sql("DELETE FROM cl_basic.m WHERE k % 13 = 0")
    spark.sql("INSERT INTO cl_basic.m SELECT id, 3, 5 FROM range(5000, 5100)")
    refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")
