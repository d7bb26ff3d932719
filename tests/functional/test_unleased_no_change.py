"""On a shared catalog a refresh takes its view's lease (``runtime/leases.py``): two
commits to the leases table, taken and given back (about 0.5 s through a server). A
refresh that finds nothing to apply writes nothing and needs none: it is decided without
the lease, every write refused (``engine/refresh._unchanged``). One that has something to
write still takes it, and waits for another process holding it; one that writes its logs
takes their leases with the view's, in one swap (``_Refresh._leases``)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from dbt.adapters.fastrefresh.engine import refresh
from dbt.adapters.fastrefresh.engine.upstream import Upstream
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.mlog import ddl as mlog
from dbt.adapters.fastrefresh.protocol.env import Env
from dbt.adapters.fastrefresh.runtime import faults
from dbt.adapters.fastrefresh.runtime.leases import Leases, Me
from dbt.adapters.fastrefresh.runtime.process import Runtime
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.functional.sites import matches


def _built_view(
    spark: Any, schema: str, path: str = "sql", **options: Any
) -> tuple[Env, TableName, str]:
    """Schema ``schema`` with a keyed master ``m`` (40 rows) and its log, on a shared
    catalog (``path``: the metadata path; ``options``: the environment's), and a view
    ``v`` of a grouped query over it, built (a complete refresh)."""
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(f"CREATE TABLE {schema}.m (k BIGINT NOT NULL, g INT, x INT) USING iceberg")
    spark.sql(f"ALTER TABLE {schema}.m SET IDENTIFIER FIELDS k")
    spark.sql(f"INSERT INTO {schema}.m SELECT id, CAST(id % 5 AS INT), 1 FROM range(40)")
    env = Env.for_spark(spark, f"{schema}_registry", java=path == "java", shared=True)
    env = dataclasses.replace(env, **options)
    mlog.create_mview_log(env, f"{schema}.m")
    view = TableName(schema, "v")
    sql = f"SELECT g, count(*) AS n, sum(x) AS sx FROM {schema}.m GROUP BY g"
    built = refresh.refresh_view(env, view=view, sql=sql, method="force", exists=False)
    assert built.refresh_type == "COMPLETE"
    return env, view, sql


@pytest.mark.parametrize("path", ["java", "sql"])
def test_a_refresh_with_nothing_to_apply_takes_no_lease_and_waits_for_none(
    spark: Any, path: str
) -> None:
    schema = f"unleased_{path}"
    env, view, sql = _built_view(spark, schema, path, lease_wait_seconds=1.0)
    leases = env.runtime.leases

    def run() -> refresh.RefreshResult:
        return refresh.refresh_view(env, view=view, sql=sql, method="force")

    taken = leases.taken
    journal = env.runtime.journal(env.registry)
    runs = len(journal.refreshes)
    unchanged = run()
    assert (unchanged.refresh_type, unchanged.noop) == ("FAST", True)
    assert leases.taken == taken
    # Journaled once, as the refresh it was (the registry's refresh_runs shows it).
    assert [(r.refresh_type, r.status) for r in journal.refreshes[runs:]] == [("FAST", "SUCCESS")]

    # Another process holds the view's lease: a refresh with nothing to apply does not
    # wait for it; one with a change waits, then fails naming the holder, having written
    # nothing; once the lease is given back, it applies the change.
    other = Runtime()
    other.leases = Leases(Me(host="another-machine"))
    holder = dataclasses.replace(env, runtime=other)
    try:
        with holder.holding([f"view:{view}"], purpose="a test holding it"):
            assert run().noop
            spark.sql(f"UPDATE {schema}.m SET x = 5 WHERE k = 3")
            with pytest.raises(FastRefreshError, match=r"leased by .*another-machine"):
                run()
            assert not matches(spark, view, sql)
    finally:
        other.leases.stop()
    after = run()
    assert (after.refresh_type, after.noop, after.log_rows) == ("FAST", False, 2)
    assert leases.taken > taken
    assert matches(spark, view, sql)


@pytest.mark.parametrize("path", ["java", "sql"])
def test_a_refresh_takes_its_logs_leases_with_its_views_and_gives_them_back_before_its_write(
    spark: Any, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each lease taken or given back is a commit to the leases table: a refresh that
    writes its masters' logs (their creation, a capture) takes their leases with the
    view's in one swap, not one by one around each write; it gives them back once it
    has done so, before the view's write, so another process's capture never waits for
    that. A registration after a complete refresh takes the logs' leases in one swap."""
    schema = f"one_swap_{path}"
    spark.sql(f"CREATE SCHEMA {schema}")
    for name in ("m", "d"):
        spark.sql(f"CREATE TABLE {schema}.{name} (k BIGINT NOT NULL, x INT) USING iceberg")
        spark.sql(f"INSERT INTO {schema}.{name} SELECT id, 1 FROM range(20)")
    env = Env.for_spark(spark, f"{schema}_registry", java=path == "java", shared=True)
    # This test's own leases, renewed every 20 minutes: no renewal swaps meanwhile.
    env = dataclasses.replace(env, runtime=Runtime(), lease_seconds=3600.0)
    view, other = TableName(schema, "v"), TableName(schema, "w")
    sql = f"SELECT m.k, m.x, d.x AS dx FROM {schema}.m m JOIN {schema}.d d ON m.k = d.k"
    nodes = [Upstream(relation=TableName(schema, n), node=f"model.p.{n}") for n in ("m", "d")]
    store = env.leases
    assert store is not None
    # What this process holds when a view's write has committed.
    at_write: list[set[str]] = []
    point = faults.point

    def noting(name: str) -> None:
        if name.startswith("apply."):
            at_write.append(set(env.runtime.leases.held()))
        point(name)

    monkeypatch.setattr(faults, "point", noting)

    def swaps(action: Any) -> int:
        before = store.swaps
        action()
        return store.swaps - before

    def run(name: TableName, **options: Any) -> None:
        refresh.refresh_view(env, view=name, sql=sql, method="force", upstream=nodes, **options)

    # A first build creating both masters' logs: the view's and the logs' leases taken in
    # one swap, the logs' given back (a swap) before the rebuild; its registration on both
    # logs, one swap each way; the view's given back. It made ten, one by one.
    assert swaps(lambda: run(view, exists=False)) == 5
    assert env.runtime.leases.held() == {}
    # A first build on those logs: the view's lease, the registration, the view's back.
    assert swaps(lambda: run(other, exists=False)) == 4
    # A refresh capturing both masters' commits: three, where it made six.
    spark.sql(f"UPDATE {schema}.m SET x = 2 WHERE k < 3")
    spark.sql(f"UPDATE {schema}.d SET x = 3 WHERE k > 15")
    assert swaps(lambda: run(view)) == 3
    assert matches(spark, view, sql)
    # Another view on the logs, now captured: only its own lease.
    taken = env.runtime.leases.taken
    assert swaps(lambda: run(other)) == 2
    assert env.runtime.leases.taken == taken + 1
    assert matches(spark, other, sql)
    assert at_write == [{f"view:{v}"} for v in (view, other, view, other)]


def test_a_refresh_with_something_to_write_reads_its_masters_as_the_probe_left_them(
    spark: Any,
) -> None:
    """The lease-free probe of a refresh that will write (here, it has a commit to
    capture) has read the view's masters and their logs when it stops; the refresh under
    the lease starts from that read (about five statements a master through a server),
    and the setup reads only the log again, once, under its lease. SQL path, where each
    read is statements."""
    schema = "probe_read_once"
    env, view, sql = _built_view(spark, schema)
    spark.sql(f"UPDATE {schema}.m SET x = 5 WHERE k = 3")
    statements = env.sql.statements  # type: ignore[attr-defined]
    before = len(statements)
    result = refresh.refresh_view(env, view=view, sql=sql, method="force")
    assert (result.refresh_type, result.log_rows) == ("FAST", 2)
    ran = statements[before:]
    # The master once, by the probe (three times before: the refresh's second read, and
    # the setup's under the log's lease). The setup holds the log's lease (taken with the
    # view's), so it reads the log once, under the lock, which decides; no process
    # captured meanwhile, so it captures from the master as the probe read it.
    assert ran.count(f"DESCRIBE TABLE EXTENDED `{schema}`.`m`") == 1, ran
    assert ran.count(f"REFRESH TABLE `{schema}`.`m`") == 1, ran
    assert ran.count(f"REFRESH TABLE `{schema}`.`mlog__m`") == 2, ran  # three before
    assert matches(spark, view, sql)


def test_a_refresh_with_nothing_to_capture_reads_its_log_again_only_behind_its_view(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refresh reads its log with its master, then its view's state. The log as read
    serves that state, and is not read again, unless another process captured and
    refreshed the view between the two reads: then the view is past the log as read, and
    taken for ahead of it the view would rebuild (the log looks rolled back). SQL path,
    a shared catalog: the log's second read is two statements there."""
    schema = "log_read_once"
    env, view, sql = _built_view(spark, schema)
    statements = env.sql.statements  # type: ignore[attr-defined]
    log_reads = f"REFRESH TABLE `{schema}`.`mlog__m`"
    before = len(statements)
    unchanged = refresh.refresh_view(env, view=view, sql=sql, method="force")
    assert unchanged.noop and statements[before:].count(log_reads) == 1, statements[before:]

    # Between the refresh's read of its log and of its view, another process captures a
    # commit and refreshes the view (here, this process, whose refresh the test holds).
    original, interleaved = refresh.load_masters, list[tuple[int, int]]()

    def read_then_another_process(*args: Any, **kwargs: Any) -> Any:
        loaded = original(*args, **kwargs)
        if not interleaved:
            start = len(statements)
            spark.sql(f"UPDATE {schema}.m SET x = 7 WHERE k = 4")
            monkeypatch.setattr(refresh, "load_masters", original)
            refresh.refresh_view(env, view=view, sql=sql, method="force")
            interleaved.append((start, len(statements)))
        return loaded

    monkeypatch.setattr(refresh, "load_masters", read_then_another_process)
    before = len(statements)
    raced = refresh.refresh_view(env, view=view, sql=sql, method="force")
    assert interleaved
    ((start, end),) = interleaved
    own = statements[before:start] + statements[end:]
    # Past the log as first read, the view is not taken for ahead of its log (a rebuild,
    # the log looking rolled back): the log is read again after the view's state, and
    # the refresh finds nothing to apply.
    assert (raced.refresh_type, raced.noop, raced.reason) == ("FAST", True, None)
    view_read = max(
        i for i, x in enumerate(own) if x == f"SHOW TBLPROPERTIES `{schema}`.`v__fr_data`"
    )
    assert log_reads in own[view_read:], own
    assert matches(spark, view, sql)
