"""Several dbt processes on one shared catalog (an Iceberg JDBC catalog on a PostgreSQL
server the tests start), each its own Spark JVM, as on several machines.

- Two processes run ``dbt run`` over and over, on views that share both logs (one view
  in both selections), while a third writes the masters: afterwards every view equals its
  query, no refresh failed or fell back to a complete one, every master commit was
  captured exactly once (the log's sequences contiguous, none twice), the stamps on the
  timestamp log only grew, every consumed row was purged, and no lease is left.
- A process that dies holding a lease: its lease shows in the registry, and another
  process takes it over (at once on the holder's machine, once it expires elsewhere).

``make test-shared`` runs them (CI does); ``FASTREFRESH_SHARED_SEED`` replays a run.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import yaml  # type: ignore[import-untyped]  # PyYAML has no type hints

from tests.conftest import REPO_ROOT
from tests.jvm import short_lived_env
from tests.postgres import PostgresServer

pytestmark = pytest.mark.shared

TEMPLATE = Path(__file__).parent / "project"
LEASE_SECONDS = 30  # renewed every 10 s; four JVMs share two cores here
TIMEOUT = 1500


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    """The shared project, its profile on a new PostgreSQL-backed catalog."""
    server = PostgresServer().start()
    try:
        dest = tmp_path / "project"
        shutil.copytree(TEMPLATE, dest)
        (dest / "packages.yml").write_text(f"packages:\n  - local: {REPO_ROOT}\n")
        output = {
            "type": "fastrefresh",
            "schema": "shared_shop",
            "threads": 2,
            "catalog": {
                "uri": server.create_database("iceberg"),
                "user": server.user,
                "warehouse": str(tmp_path / "warehouse"),
                "lease_seconds": LEASE_SECONDS,
            },
            # Four JVMs share two cores: one task slot and a small heap each.
            "server_side_parameters": {"spark.master": "local[1]", "spark.driver.memory": "1g"},
        }
        profiles = {"shared_shop": {"target": "dev", "outputs": {"dev": output}}}
        (dest / "profiles.yml").write_text(yaml.safe_dump(profiles))
        yield dest
    finally:
        server.stop()


def spawn(role: str, project: Path, *args: str) -> subprocess.Popen[str]:
    log = (project / f"{role}-{time.time_ns()}.log").open("w")
    return subprocess.Popen(
        [sys.executable, "-m", "tests.shared.worker", role, str(project), *args],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=log, text=True, env=short_lived_env(),
    )  # fmt: skip


def finish(process: subprocess.Popen[str], timeout: float = TIMEOUT) -> dict[str, Any]:
    """The worker's JSON report; fails with its output when it failed."""
    out, _ = process.communicate(timeout=timeout)
    reports = [line[7:] for line in out.splitlines() if line.startswith("REPORT ")]
    role = cast("list[str]", process.args)[3]  # spawn's argument list
    assert process.returncode == 0 and reports, f"worker {role} failed:\n{out[-6000:]}"
    return dict(json.loads(reports[-1]))


def test_two_refreshing_processes_and_a_writer_share_the_logs(project: Path) -> None:
    seed = int(os.environ.get("FASTREFRESH_SHARED_SEED") or random.randrange(10_000))
    print(f"seed {seed} (FASTREFRESH_SHARED_SEED={seed} replays it)")
    setup = finish(spawn("setup", project))
    assert setup == {"deps": True, "run": True}, setup

    stop = project / "stop-writing"
    writer = spawn("write", project, "--until", str(stop), "--seed", str(seed))
    first = spawn(
        "refresh", project, "--runs", "4", "--threads", "2",
        "--select", "customer_totals order_regions",
    )  # fmt: skip
    second = spawn(
        "refresh", project, "--runs", "4", "--select", "open_orders region_revenue order_regions"
    )
    reports = {name: finish(p) for name, p in (("a", first), ("b", second))}
    stop.touch()  # the writer wrote all along the refreshes
    reports["w"] = finish(writer)
    assert reports["a"]["failed_runs"] == [] and reports["b"]["failed_runs"] == [], reports
    assert reports["w"]["rounds"] >= 10, reports
    # The two processes really ran at once, each under leases: some run of one overlapped
    # some run of the other, and every refresh took its view's lease at least, but one
    # that found nothing to apply (it writes nothing, and takes none).
    assert any(
        a0 < b1 and b0 < a1 for a0, a1 in reports["a"]["spans"] for b0, b1 in reports["b"]["spans"]
    ), reports
    for name, views in (("a", 2), ("b", 3)):
        report = reports[name]
        assert report["leases_taken"] + report["unchanged"] >= 4 * views, reports
    waits = reports["a"]["leases_waited_for"] + reports["b"]["leases_waited_for"]
    print(f"leases taken: {reports['a']['leases_taken']} + {reports['b']['leases_taken']}, "
          f"of which found held by the other process first: {waits}")  # fmt: skip

    check = finish(spawn("check", project))
    assert check["final_run"], check
    assert check["differs"] == [], f"views differ from their queries (seed {seed}): {check}"
    assert check["failed"] == [] and check["complete_after_first"] == [], check
    # The first build, then 4 runs of 2 or 3 models in each process, and the last run.
    assert check["refreshes"] == 4 + 4 * 2 + 4 * 3 + 4, check
    for name, log in check["logs"].items():
        assert log["gaps_or_overlaps"] == [], f"{name}: a change captured twice or lost: {log}"
        assert log["captured_rows"] > 0, log
        assert log["captured_through_master"], f"{name}: a master commit was not captured: {log}"
        assert log["youngest_never_decreases"] and log["stamps_strictly_increase"], log
        assert log["rows_left"] == 0, f"{name}: every view consumed every row, none purged: {log}"
    orders = check["logs"]["orders"]
    assert orders["captures"] > 4 and orders["stamped_captures"] > 4, check["logs"]
    assert check["leases_left"] == [], check


def _wait_for_line(process: subprocess.Popen[str], text: str, timeout: float = 600) -> None:
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if text in line:
            return
        if not line and process.poll() is not None:
            break
    raise AssertionError(f"worker never said {text!r} (exit {process.poll()})")


@pytest.mark.parametrize("machine", ["this", "another"])
def test_a_dead_holders_lease_shows_and_is_taken_over(project: Path, machine: str) -> None:
    """The holder is killed (SIGKILL: no cleanup) while it holds the orders log's lease
    and the refresh that comes next needs it. A holder of this machine is seen to be gone
    and its lease (an hour long) taken over at once; a holder of another machine cannot be
    seen, so its lease is taken over once it expires (it was renewed until the kill)."""
    assert finish(spawn("setup", project)) == {"deps": True, "run": True}
    # Some DML, so that the refresh has something to capture (a write needs the lease).
    assert finish(spawn("write", project, "--rounds", "1"))["statements"] >= 1
    ttl = 3600 if machine == "this" else 45
    holder = spawn(
        "hold", project, "--name", "log:shared_shop_raw.mlog__orders", "--ttl", str(ttl),
        "--host", "" if machine == "this" else "another-machine",
    )  # fmt: skip
    try:
        _wait_for_line(holder, "HELD")
        shown = finish(spawn("leases", project))
        assert [(r["kind"], r["object"], r["purpose"], r["expired"]) for r in shown["leases"]] == [
            ("log", "shared_shop_raw.mlog__orders", "a test holding it", False)
        ], shown
        assert shown["leases"][0]["pid"] == holder.pid
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    refreshed = finish(spawn("refresh", project, "--runs", "1", "--select", "customer_totals"))
    assert refreshed["failed_runs"] == [], refreshed
    [note] = refreshed["taken_over"]
    assert f"process {holder.pid}" in note, note
    assert ("is gone" if machine == "this" else "expired at") in note, note
    check = finish(spawn("check", project))
    assert check["differs"] == [] and check["failed"] == [], check
    assert check["leases_left"] == [], check
