"""The soak (``make test-soak``): two runs of 1,000 DML batches and their refreshes across a dozen views
of every family on three logs (keyed with a full log, key-less, keyed with a key-only log),
with captures, manual purges (``purge_log``), deferred purges at the end of invocations,
``unregister_mview`` and ``purge_mview_from_log`` interleaved, in one long random walk.

After every refresh the view must equal its query recomputed, and be FAST unless something
called for a complete refresh (first build, unregistered, released from its logs, rows it
needed purged), in which case the reason must say which. Every ``CHECKPOINT`` batches (and
at the end) every view refreshes and the invocation ends: each log must then be empty,
since no registered view still needs any of its rows. The figures go to the test's output.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from typing import Any

import pytest

from dbt.adapters.fastrefresh import admin
from dbt.adapters.fastrefresh.engine import refresh
from dbt.adapters.fastrefresh.mlog import capture
from dbt.adapters.fastrefresh.protocol.decisions import ReasonCode
from dbt.adapters.fastrefresh.registry import store as registry
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.functional.sites import matches
from tests.functional.test_oracle import GROUPS, KEYS, MASTERS, VIEWS, World

pytestmark = pytest.mark.soak

SOAK_VIEWS = (
    "proj_keyed", "agg_signed", "proj_keyless", "agg_keyless", "agg_key_only_log", "join_agg",
    "join_keyless_bag", "outer_left", "outer_agg_dimension", "window_latest", "semi_exists",
    "union_agg_join",
)  # fmt: skip
BATCHES = int(os.environ.get("FASTREFRESH_SOAK_BATCHES", "1000"))
CHECKPOINT = 250
OPS = ["insert", "insert", "update", "update", "update_key", "delete", "merge"]


class Soak:
    def __init__(self, spark: Any, commit_scn: bool, path: str, purge: str, seed: int) -> None:
        self.world = World(spark, commit_scn, path, purge, views=SOAK_VIEWS)
        self.spark, self.env, self.s = spark, self.world.env, self.world.s
        self.rng = random.Random(seed)
        # A view -> the reasons its next refresh may give for being complete.
        self.complete: dict[str, set[ReasonCode]] = {}
        self.figures: Counter[str] = Counter(views=len(SOAK_VIEWS))
        self.divergent: list[str] = []

    def batch(self) -> None:
        rng = self.rng
        for _ in range(rng.randint(1, 3)):
            self.world.dml(
                rng.choice(MASTERS), rng.choice(OPS), rng.choice(KEYS), rng.choice(KEYS),
                rng.choice(GROUPS), rng.choice([None, *range(-2, 7)]),
            )  # fmt: skip
        self.figures["batches"] += 1

    def refresh(self, view: str) -> None:
        query = VIEWS[view][0].format(s=self.s)
        result = refresh.refresh_view(
            self.env, view=TableName(self.s, view), sql=query, method="force", exists=True
        )
        self.figures["refreshes"] += 1
        self.figures[result.refresh_type] += 1
        allowed = self.complete.pop(view, set())
        if allowed:
            code = result.reason.code if result.reason else None
            assert result.refresh_type == "COMPLETE" and code in allowed, (view, result.reason)
        else:
            assert result.refresh_type == "FAST", f"{view}: {result.reason}"
        if not matches(self.spark, TableName(self.s, view), query):
            self.divergent.append(f"{view} after refresh {self.figures['refreshes']}")

    def expect_complete(self, view: str, code: ReasonCode) -> None:
        self.complete.setdefault(view, set()).add(code)

    def upkeep(self) -> None:
        """One of the operations users and schedulers interleave with refreshes."""
        rng, s = self.rng, self.s
        op = rng.choice(
            ["capture", "capture", "publish", "publish", "purge", "unregister", "release"]
        )
        self.figures[op] += 1
        if op == "capture":
            capture.capture(self.env, TableName(s, rng.choice(MASTERS)))
        elif op == "publish":
            registry.publish(self.env)
        elif op == "purge":
            message = admin.purge_log(self.env, f"{s}.{rng.choice(MASTERS)}", 1, "delete")
            marker = "now needing a complete refresh: "
            if marker in message:
                for doomed in message.split(marker, 1)[1].split(", "):
                    self.expect_complete(TableName.parse(doomed).table, ReasonCode.PURGED)
        elif op == "unregister" and rng.random() < 0.5:
            view = rng.choice(SOAK_VIEWS)
            if ReasonCode.NOT_REGISTERED not in self.complete.get(view, set()):
                admin.unregister_mview(self.env, f"{s}.{view}")
                self.expect_complete(view, ReasonCode.NOT_REGISTERED)
        elif op == "release" and rng.random() < 0.5:
            view = rng.choice(SOAK_VIEWS)
            if not self.complete.get(view):
                admin.purge_mview_from_log(self.env, f"{s}.{view}")
                self.expect_complete(view, ReasonCode.NOT_REGISTERED_ON_LOG)

    def checkpoint(self) -> None:
        """Every view catches up and the invocation ends: no log keeps a row."""
        for view in SOAK_VIEWS:
            self.refresh(view)
        registry.publish(self.env)
        for master in MASTERS:
            left = self.spark.sql(f"SELECT count(*) FROM {self.s}.mlog__{master}").first()[0]
            assert left == 0, f"mlog__{master} keeps {left} row(s) no view needs"
        self.figures["checkpoints"] += 1
        # Progress for long runs (pytest -s shows it as it goes).
        print(
            f"soak {self.s}: {dict(self.figures)}; divergences: {len(self.divergent)}", flush=True
        )

    def run(self, batches: int) -> None:
        while self.figures["batches"] < batches:
            self.batch()
            for view in self.rng.sample(SOAK_VIEWS, self.rng.choice([0, 1, 1, 2, 3])):
                self.refresh(view)
            if self.rng.random() < 0.3:
                self.upkeep()
            if self.figures["batches"] % CHECKPOINT == 0:
                self.checkpoint()
        self.checkpoint()


@pytest.mark.parametrize(
    ("commit_scn", "path", "purge"),
    [(False, "java", "deferred"), (True, "sql", "synchronous")],
    ids=["ts-java-deferred", "scn-sql-sync"],
)
def test_soak(spark: Any, commit_scn: bool, path: str, purge: str) -> None:
    soak = Soak(spark, commit_scn, path, purge, seed=25)
    soak.run(BATCHES)
    print(
        f"soak {commit_scn=} {path=} {purge=}: {dict(soak.figures)}; divergences: {len(soak.divergent)}"
    )
    assert soak.divergent == [], soak.divergent
