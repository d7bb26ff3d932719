"""A process killed at any write of the protocol loses and duplicates nothing.

The phases run in processes of their own on one state folder (an embedded metastore admits
one JVM at a time): the preparation and the phase killed after it in one, the recovery in a
fresh one. The fault is injected with DBT_FASTREFRESH_FAULT, which `os._exit`s at the
named point — no cleanup, no finally blocks, as a kill would. Every point sits right after
a commit: on the Java path the protocol's state went with that commit (its snapshot
summary), on the SQL path it follows as a table property, so the point falls between the
two. After the crash, the next refresh (``force``) must bring the view back to its query,
with the reason the crash calls for, and the refresh after it must be FAST and exact.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.jvm import short_lived_env

WORKER = Path(__file__).with_name("crash_worker.py")


def run(state: Path, path: str, phase: str, fault: str | None = None) -> tuple[int, dict[str, Any]]:
    env = short_lived_env()
    env.pop("DBT_FASTREFRESH_FAULT", None)
    if fault:
        env["DBT_FASTREFRESH_FAULT"] = fault
    result = subprocess.run(
        [sys.executable, str(WORKER), str(state), path, phase],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode not in (0, 99):
        raise AssertionError(result.stdout[-3000:] + result.stderr[-3000:])
    return result.returncode, json.loads(lines[-1]) if lines else {}


# The log's rows after recovery: each change exactly once, in order.
CAPTURED = [
    [1, 10, "I", "N", 1],
    [2, 20, "I", "N", 2],
    [2, 20, "U", "O", 3],
    [2, 21, "U", "N", 4],
]
# (phase, fault point, what the recovering refresh must be on each path)
POINTS = [
    ("capture", "capture.after_log_append", {"java": "FAST", "sql": "FAST"}),
    ("mark", "setup.after_mark", {"java": "FAST", "sql": "FAST"}),
    ("refresh", "capture.after_log_append", {"java": "FAST", "sql": "FAST"}),
    ("refresh", "apply.after_merge", {"java": "FAST", "sql": "COMPLETE"}),
    ("refresh", "purge.after_delete", {"java": "FAST", "sql": "FAST"}),
]


# Each case starts two JVMs (about 1 minute on 2 busy cores): the default suite kills
# one point for real; test_fault_matrix.py stops every point, on both paths, in one JVM.
DEFAULT_KILLS = {("capture", "java")}
CASES = [
    pytest.param(
        phase, fault, expect, path, id=f"{phase}-{fault}-{path}",
        marks=() if (phase, path) in DEFAULT_KILLS or (f"{phase}-{fault}", path) in DEFAULT_KILLS
        else pytest.mark.slow,
    )
    for phase, fault, expect in POINTS for path in ("java", "sql")
]  # fmt: skip


@pytest.mark.parametrize(("phase", "fault", "expect", "path"), CASES)
def test_a_refresh_killed_at_a_write_recovers(
    tmp_path: Path, path: str, phase: str, fault: str, expect: dict[str, str]
) -> None:
    code, _ = run(tmp_path, path, f"prepare,{phase}", fault=fault)
    assert code == 99, f"the process died at {fault}"
    code, seen = run(tmp_path, path, "recover")
    assert code == 0
    first, second = seen["first"], seen["second"]
    assert first["matches"] and second["matches"], seen
    assert first["refresh"] == expect[path], seen
    if expect[path] == "COMPLETE":
        assert "did not finish" in first["reason"], seen
    assert second["refresh"] == "FAST", seen
    if phase != "mark":
        # What the log still holds (purges took what the view consumed) is each change
        # once, in order: the end of what was captured, never a row twice.
        kept = seen["log_after_recovery"]
        assert kept == CAPTURED[len(CAPTURED) - len(kept) :], seen


@pytest.mark.parametrize(
    ("path", "fault"),
    [
        pytest.param("sql", "apply.after_rebuild", marks=pytest.mark.slow),
        pytest.param("java", "register.before", marks=pytest.mark.slow),
        pytest.param("java", "apply.after_rebuild", marks=pytest.mark.slow),
        pytest.param("sql", "register.before", marks=pytest.mark.slow),
    ],
)
def test_a_first_build_killed_before_registering_rebuilds_once(
    tmp_path: Path, path: str, fault: str
) -> None:
    """A join view's first build dies after writing the view, before its claims on the two
    logs are written (or, on the SQL path, before its state is): it is not registered, so
    the next refresh rebuilds it, saying so, and the one after is fast."""
    code, _ = run(tmp_path, path, "join_prepare,join_refresh", fault=fault)
    assert code == 99
    code, seen = run(tmp_path, path, "join_recover")
    assert code == 0
    first, second = seen["first"], seen["second"]
    assert first["matches"] and second["matches"], seen
    assert first["refresh"] == "COMPLETE" and "not registered" in first["reason"], seen
    assert second["refresh"] == "FAST", seen
