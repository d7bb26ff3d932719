"""Shared fixtures: one embedded Spark JVM per test process, dbt driven in-process.

The session is started once with exactly the settings a `type: fastrefresh` profile
produces (``embedded.start_session``); every dbt invocation (``dbtRunner``, through
dbt-tests-adapter's ``run_dbt``) then reuses it instead of starting a JVM per command.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from dbt.adapters.fastrefresh.protocol import upkeep
from dbt.adapters.fastrefresh.runtime.interpreted import CODEGEN_OFF

# Hypothesis fails an example slower than 200 ms by default: on a 2-core machine running
# Spark in the other worker, a pure test's example can take that long with nothing wrong.
settings.register_profile("fastrefresh", deadline=None)
settings.load_profile("fastrefresh")

pytest_plugins = ["dbt.tests.fixtures.project"]

REPO_ROOT = Path(__file__).resolve().parents[1]
RANDOM_START = upkeep.start  # tests/functional/test_upkeep.py puts it back


@pytest.fixture(scope="session", autouse=True)
def upkeep_counts_from_zero() -> Iterator[None]:
    """A process starts counting its commits to each of our tables at a random point of
    the upkeep cycle (``upkeep.start``), so that short processes expire them too. Tests
    count statements and commits: in this process every count starts at zero, and an
    expiry or a compaction comes only after a full cycle. test_upkeep.py checks the
    random start itself."""
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(upkeep, "start", lambda every: 0)
        yield


@pytest.fixture(scope="session")
def spark_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.getbasetemp() / "spark-state"


# `make test-cluster` sets this: the same tests then run with their executors in a Spark
# standalone cluster (a master and two workers, separate JVMs) instead of the driver's JVM.
ON_CLUSTER = os.environ.get("FASTREFRESH_TEST_CLUSTER") == "standalone"


# Spark settings for the tests' data: a few rows per table, through thousands of small
# statements. Spark compiles each statement's operators to Java classes before it runs
# them (Janino; about 13 ms a class in the demo's refreshes); on rows this few, compiling
# is much of a statement's time. These settings run the same operators interpreted;
# Spark's own test suites run queries both ways (`SQLConf.CODEGEN_FACTORY_MODE`) and hold
# them to the same results. Operators, partitions and files written stay the product's
# (adaptive execution stays on: turned off, it writes a view in four files rather than
# one, and the refresh then takes another path). The cluster suite (`make test-cluster`,
# in CI), the demo, the benchmarks and every subprocess the tests start (crash and
# concurrency workers) run with generated code, and so does a test using
# `product_settings` below. Measured on 2 cores, interleaved runs: the oracle's
# deterministic test (`java-1`) alone, 124.0-125.1 s with generated code, 105.1-106.3 s
# without. The same settings the product turns on around a refresh's small statements
# (`runtime/interpreted.py`); here, for the whole session.
SMALL_DATA = dict(CODEGEN_OFF)


@pytest.fixture(scope="session")
def profile_parameters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The profile's ``server_side_parameters``: ``SMALL_DATA`` for the embedded default
    and a shared catalog; on a standalone cluster, what points the session at it, with the
    product's own settings."""
    if not ON_CLUSTER:
        yield dict(SMALL_DATA)
        return
    from tests.standalone import StandaloneCluster

    cluster = StandaloneCluster(tmp_path_factory.getbasetemp() / "standalone").start()
    try:
        yield cluster.session_parameters()
    finally:
        cluster.stop()


# `make test-shared` sets this: the session catalog is then an Iceberg JDBC catalog on a
# PostgreSQL server the tests start (runtime/catalog.py), as several dbt processes share it.
ON_SHARED_CATALOG = os.environ.get("FASTREFRESH_TEST_CATALOG") == "jdbc"


@pytest.fixture(scope="session")
def shared_catalog_profile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The profile's ``catalog`` on a PostgreSQL server of this test process (empty: the
    embedded default's own catalog)."""
    if not ON_SHARED_CATALOG:
        yield {}
        return
    from tests.postgres import PostgresServer

    server = PostgresServer().start()
    try:
        yield {
            "uri": server.create_database("iceberg"),
            "user": server.user,
            "warehouse": str(tmp_path_factory.getbasetemp() / "shared-warehouse"),
        }
    finally:
        server.stop()


@pytest.fixture(scope="session")
def spark(  # type: ignore[no-untyped-def]
    spark_state_dir: Path,
    profile_parameters: dict[str, str],
    shared_catalog_profile: dict[str, str],
):
    from dbt.adapters.fastrefresh.runtime.catalog import SharedCatalog
    from dbt.adapters.fastrefresh.runtime.embedded import start_session

    catalog = SharedCatalog.parse(shared_catalog_profile) if shared_catalog_profile else None
    session = start_session(spark_state_dir, profile_parameters, catalog)
    yield session
    if ON_CLUSTER or catalog is not None:
        session.stop()


@pytest.fixture
def product_settings(spark, profile_parameters: dict[str, str]):  # type: ignore[no-untyped-def]
    """The product's own Spark settings for one test (generated code: Spark's default,
    which the embedded default keeps), where the test counts what they produce; the
    suite's ``SMALL_DATA`` again after it."""
    changed = {key: value for key, value in SMALL_DATA.items() if key in profile_parameters}
    for key in changed:
        spark.conf.unset(key)  # back to Spark's default, not the session's start value
    yield spark
    for key, value in changed.items():
        spark.conf.set(key, value)


@pytest.fixture(scope="class")
def dbt_profile_target(
    spark: Any,
    spark_state_dir: Path,
    profile_parameters: dict[str, str],
    shared_catalog_profile: dict[str, str],
) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """The profile of every functional test: the embedded default (or the standalone
    cluster, under `make test-cluster`; the shared catalog, under `make test-shared`),
    shared state folder."""
    profile: dict[str, object] = {"type": "fastrefresh", "threads": 1}
    if shared_catalog_profile:
        profile["catalog"] = dict(shared_catalog_profile)
    else:
        profile["state_dir"] = str(spark_state_dir)
    profile["server_side_parameters"] = dict(profile_parameters)
    return profile


# The default suite's longest tests, in seconds as measured in a `make test` run on 2 cores
# (2026-12-04, 936 s), run first under xdist. With `--dist worksteal` each worker takes its
# half of the collection from the front, and one that runs out steals from the back of the
# other's queue, so the suite ends on short tests. In collection order, the last long
# tests ran one after another on one worker while the other had nothing left: 136 s idle
# in a 1,295 s run; sorted, 52 s idle in 1,262 s (2026-11-28). A key is a test's id, a class or a
# module (the tests of a class share its dbt project, test_demo.py's share one run of the
# demo, and a stable sort keeps them together); a stale figure changes only the order,
# never what runs.
LONGEST_FIRST = {
    "tests/functional/test_thrift_server.py": 170,  # make test-cluster's
    "tests/functional/test_oracle.py::test_views_equal_their_queries_after_every_refresh[scn-sql-sync]": 167,
    "tests/functional/test_dag.py::TestDagRefreshesFast": 116,
    "tests/functional/test_oracle.py::test_views_equal_their_queries_after_every_refresh[ts-java-deferred]": 73,
    "tests/functional/test_join_null_keys.py::test_a_null_key_in_an_outer_join_is_told_from_a_missing_row": 60,
    "tests/functional/test_oracle.py::test_every_change_kind_reaches_every_view[java-2]": 54,
    "tests/functional/test_join_null_keys.py::test_full_joins_over_nullable_keys_follow_random_changes": 48,
    "tests/functional/test_oracle.py::test_every_change_kind_reaches_every_view[java-0]": 50,
    "tests/functional/test_demo.py": 49,
    "tests/functional/test_oracle.py::test_every_change_kind_reaches_every_view[java-1]": 41,
    "tests/functional/test_fault_matrix.py::test_every_fault_point_recovers[sql-commit_scn-join]": 39,
    "tests/functional/test_crash_safety.py::test_a_refresh_killed_at_a_write_recovers[capture-capture.after_log_append-java]": 36,
    "tests/functional/test_commit_files.py::test_a_capture_reads_at_each_commit_where_that_reads_less": 31,
    "tests/functional/test_master_site_seeds.py::test_seed_001_three_views_oldest_youngest_and_purge[java]": 32,
    "tests/functional/test_embedded_session.py::test_a_second_process_loads_the_classes_the_first_archived": 31,
    "tests/functional/test_query_shape_edges.py::test_filtered_outer_join_sides_and_group_by_all_equal_their_queries": 29,
    "tests/functional/test_fault_matrix.py::test_every_fault_point_recovers[java-timestamp-aggregate]": 26,
    "tests/functional/test_exact_values.py::test_a_negative_zero_keeps_its_sign_from_the_log_to_the_views": 26,
    "tests/functional/test_added_columns.py::test_a_log_made_for_a_dbt_node_is_made_again_when_its_master_gains_columns[sql]": 24,
    "tests/functional/test_upkeep.py::test_processes_that_each_commit_less_than_a_cycle_still_expire_and_compact": 24,
    "tests/functional/test_materialization.py::TestFallbacksAndErrors": 22,
    "tests/functional/test_materialization.py::TestNonFiniteSumThroughDbt": 21,
    "tests/functional/test_session_time_zone.py": 20,
    "tests/functional/test_raising_rows.py": 20,
    "tests/functional/test_switching_materializations.py::TestSwitchingMaterializations": 18,
    "tests/functional/test_materialization.py::TestThreadsFour": 18,
    "tests/functional/test_master_site_seeds.py::test_the_purges_of_a_round_of_refreshes_read_each_view_once[sql]": 18,
    "tests/functional/test_fuzzed_shapes.py::test_constant_outputs_and_groups_equal_their_queries": 18,
    "tests/functional/test_upkeep.py::test_own_tables_keep_few_snapshots_and_refreshes_stay_right": 17,
}  # fmt: skip


def expected_seconds(nodeid: str) -> int:
    """A test's entry in ``LONGEST_FIRST`` (its own, its class's or its module's), else 0."""
    for key, seconds in LONGEST_FIRST.items():
        if nodeid == key or nodeid.startswith((f"{key}::", f"{key}[")):
            return seconds
    return 0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Only in an xdist worker (the workers' collections are what the scheduler deals out):
    # a single process (`XDIST=`) keeps the collection's order.
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: -expected_seconds(item.nodeid))
