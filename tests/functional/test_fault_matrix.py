"""The fault matrix, in one JVM: every write point, on both paths, both log flavours (with
their purge modes), and views of every family: an aggregate over a keyed master, one over a
key-less master (a bag with duplicate rows), an inner join, an outer join, a UNION ALL of a
keyed and a key-less branch, and the latest row per group (a window).

At each point the protocol is stopped by ``faults.Crash`` (a ``BaseException``: no handler
of the protocol sees it, as with a kill), and everything the process held in memory is
dropped: the next "process" gets a fresh ``Runtime`` (no locks, chosen times, journal or
plans) and a fresh ``Env``. It must then bring the view back to its query, with the
refresh type the crash calls for, and the refresh after that must be FAST and exact; no
master change may appear twice in a log. Real kills (``os._exit`` in a separate process)
of a few points are in test_crash_safety.py.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest

from dbt.adapters.fastrefresh.engine import refresh
from dbt.adapters.fastrefresh.mlog import capture
from dbt.adapters.fastrefresh.mlog import ddl as mlog
from dbt.adapters.fastrefresh.protocol.env import Env
from dbt.adapters.fastrefresh.registry import store as registry
from dbt.adapters.fastrefresh.runtime import faults
from dbt.adapters.fastrefresh.runtime.process import Runtime
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.functional.sites import matches

SHAPES = {
    "aggregate": "SELECT g, count(*) AS n, sum(x) AS sx FROM {s}.m GROUP BY g",
    "keyless": "SELECT g, count(*) AS n, sum(x) AS sx FROM {s}.b GROUP BY g",
    "join": "SELECT m.k, m.x, d.name FROM {s}.m m JOIN {s}.d d ON m.g = d.g",
    "outer": "SELECT d.g, d.name, m.k, m.x FROM {s}.d d LEFT JOIN {s}.m m ON m.g = d.g AND m.x > 2",
    "union": "SELECT g, x FROM {s}.m WHERE x > 2 UNION ALL SELECT g, x FROM {s}.b",
    "window": (
        "SELECT k, g, x FROM (SELECT k, g, x, row_number() OVER (PARTITION BY g ORDER BY k DESC)"
        " AS rn FROM {s}.m) WHERE rn = 1"
    ),
}
MASTERS = ("m", "d", "b")
FLAVOURS = {"timestamp": (False, "deferred"), "commit_scn": (True, "synchronous")}
# What the first refresh after a crash at each point is, per path. On the Java path every
# state goes with its commit; on the SQL path it follows as a property, so a view changed
# past its recorded state is rebuilt. (The rebuilds here are of a registered view: its
# claims on the logs stand; a first build killed before them is in test_crash_safety.py.)
EXPECT = {
    "setup.after_new_epoch": {},  # a log rolled back: test_master_site_seeds.py
    "capture.after_log_append": {"java": "FAST", "sql": "FAST"},
    "setup.after_mark": {"java": "FAST", "sql": "FAST"},
    "apply.after_merge": {"java": "FAST", "sql": "COMPLETE"},
    "apply.after_rebuild": {"java": "FAST", "sql": "COMPLETE"},
    "register.before": {"java": "FAST", "sql": "FAST"},
    "log.after_drop": {},  # a log created again on a dbt node: test_edited_by_hand.py
    "purge.after_announce": {},  # the admin purges' alone: test_master_site_seeds.py
    "purge.after_delete": {"java": "FAST", "sql": "FAST"},
    "publish.before": {"java": "FAST", "sql": "FAST"},
}
assert set(EXPECT) == set(faults.POINTS), "every fault point is in the matrix"

ALL = list(itertools.product(("java", "sql"), FLAVOURS, SHAPES))
# The default suite covers each path and flavour once, on the two commonest shapes (about 2
# minutes each); the slow-marked test covers the other 22 cells (2 x 2 x 6 in all).
DEFAULT = [("java", "timestamp", "aggregate"), ("sql", "commit_scn", "join")]


class World:
    def __init__(self, spark: Any, path: str, flavour: str, shape: str) -> None:
        self.spark, self.path = spark, path
        self.s = f"fm_{path}_{flavour}_{shape}"
        self.commit_scn, self.purge = FLAVOURS[flavour]
        self.view = TableName(self.s, "v")
        self.sql = SHAPES[shape].format(s=self.s)
        # The master whose rows the mark point's invocation captures: one the view reads
        # (a refresh marks only its own masters' logs).
        self.marked = "m" if re.search(r"\{s\}\.m\b", SHAPES[shape]) else "b"
        self.next_key = 1000
        self.restart()

    def restart(self) -> None:
        """A new process: nothing held in memory survives."""
        env = Env.for_spark(self.spark, f"{self.s}_registry", java=self.path == "java")
        self.env = Env(env.sql, env.tables, env.registry, runtime=Runtime())

    def setup(self) -> None:
        q = self.spark.sql
        q(f"CREATE SCHEMA {self.s}")
        q(f"CREATE TABLE {self.s}.m (k BIGINT NOT NULL, g INT, x INT) USING iceberg")
        q(f"ALTER TABLE {self.s}.m SET IDENTIFIER FIELDS k")
        q(f"INSERT INTO {self.s}.m SELECT id, CAST(id % 5 AS INT), 1 FROM range(40)")
        q(f"CREATE TABLE {self.s}.d (g INT NOT NULL, name STRING) USING iceberg")
        q(f"ALTER TABLE {self.s}.d SET IDENTIFIER FIELDS g")
        q(f"INSERT INTO {self.s}.d SELECT CAST(id AS INT), concat('n', id) FROM range(5)")
        # A key-less master (no identifier fields), with duplicate rows.
        q(f"CREATE TABLE {self.s}.b (g INT, x INT) USING iceberg")
        q(f"INSERT INTO {self.s}.b SELECT CAST(id % 4 AS INT), CAST(id % 3 AS INT) FROM range(30)")
        for master in MASTERS:
            mlog.create_mview_log(
                self.env, f"{self.s}.{master}", commit_scn=self.commit_scn, purge=self.purge
            )
        self.refresh("force", exists=False)
        registry.publish(self.env)

    def change(self, round_: int) -> None:
        q, s = self.spark.sql, self.s
        q(f"UPDATE {s}.m SET x = x + 1, g = (g + 1) % 5 WHERE k % 7 = {round_ % 7}")
        q(f"INSERT INTO {s}.m VALUES ({self.next_key}, {round_ % 5}, {round_})")
        self.next_key += 1
        if round_ % 2:
            q(f"UPDATE {s}.d SET name = concat(name, 'x') WHERE g = {round_ % 5}")
        q(f"INSERT INTO {s}.b VALUES ({round_ % 4}, 1), ({round_ % 4}, 1)")
        q(f"DELETE FROM {s}.b WHERE x = {round_ % 3} AND g = {(round_ + 1) % 4}")

    def refresh(self, method: str, exists: bool = True) -> refresh.RefreshResult:
        return refresh.refresh_view(
            self.env, view=self.view, sql=self.sql, method=method, exists=exists
        )

    def invocation(self, point: str) -> None:
        """One dbt invocation that reaches ``point``: capture outside a refresh first
        (for the mark), a complete refresh (for the rebuild's points), and the publish
        at its end (the deferred purge, the registry)."""
        if point == "setup.after_mark":
            capture.capture(self.env, TableName(self.s, self.marked))
            row = f"{self.next_key}, 1, 1" if self.marked == "m" else "1, 1"
            self.spark.sql(f"INSERT INTO {self.s}.{self.marked} VALUES ({row})")
            self.next_key += 1
        rebuild = point in ("apply.after_rebuild", "register.before")
        self.refresh("complete" if rebuild else "force")
        registry.publish(self.env)

    def no_change_twice(self) -> None:
        """Each master commit's image of a key is in the log at most once."""
        for master, key in (("m", "k"), ("d", "g")):
            twice = self.spark.sql(
                f"SELECT xid__, {key}, old_new__, count(*) FROM {self.s}.mlog__{master} "
                f"GROUP BY 1, 2, 3 HAVING count(*) > 1"
            ).collect()
            assert twice == [], f"changes logged twice in mlog__{master}: {twice}"


def run_matrix(spark: Any, path: str, flavour: str, shape: str) -> None:
    world = World(spark, path, flavour, shape)
    world.setup()
    for round_, point in enumerate(faults.POINTS):
        if (point == "setup.after_mark" and world.commit_scn) or not EXPECT[point]:
            continue  # commit-SCN logs are not marked; a refresh's purge dooms no view
        world.change(round_)
        with pytest.raises(faults.Crash), faults.crash_at(point):
            world.invocation(point)
        world.restart()
        first = world.refresh("force")
        assert first.refresh_type == EXPECT[point][path], (point, str(first.reason))
        assert matches(spark, world.view, world.sql), f"after a crash at {point}"
        world.change(round_ + 100)
        second = world.refresh("fast")
        assert second.refresh_type == "FAST", (point, str(second.reason))
        assert matches(spark, world.view, world.sql), f"the refresh after recovering {point}"
        registry.publish(world.env)
        world.no_change_twice()


@pytest.mark.parametrize(("path", "flavour", "shape"), DEFAULT, ids=["-".join(c) for c in DEFAULT])
def test_every_fault_point_recovers(spark: Any, path: str, flavour: str, shape: str) -> None:
    run_matrix(spark, path, flavour, shape)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("path", "flavour", "shape"),
    [c for c in ALL if c not in DEFAULT],
    ids=["-".join(c) for c in ALL if c not in DEFAULT],
)
def test_every_fault_point_recovers_everywhere(
    spark: Any, path: str, flavour: str, shape: str
) -> None:
    run_matrix(spark, path, flavour, shape)
