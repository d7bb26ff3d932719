"""A process killed between capture's writes, after marking, or between a refresh's setup
and its wrap-up loses and duplicates nothing.

Each phase runs in its own process on one state folder (an embedded metastore admits one
JVM at a time); the fault is injected with DBT_FASTREFRESH_FAULT, which `os._exit`s at the
named point — no cleanup, no finally blocks, as a kill would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

WORKER = Path(__file__).with_name("crash_worker.py")


def run(state: Path, phase: str, fault: str | None = None) -> tuple[int, dict[str, Any]]:
    env = dict(os.environ)
    env.pop("DBT_FASTREFRESH_FAULT", None)
    if fault:
        env["DBT_FASTREFRESH_FAULT"] = fault
    result = subprocess.run(
        [sys.executable, str(WORKER), str(state), phase],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode not in (0, 99):
        raise AssertionError(result.stdout[-3000:] + result.stderr[-3000:])
    return result.returncode, json.loads(lines[-1]) if lines else {}


def test_capture_killed_between_log_append_and_registry(tmp_path: Path) -> None:
    assert run(tmp_path, "prepare")[0] == 0
    code, _ = run(tmp_path, "capture", fault="capture.after_log_append")
    assert code == 99, "the process died at the fault point"
    code, seen = run(tmp_path, "recover")
    assert code == 0
    # The dead capture had appended its rows but not recorded them...
    assert seen["registry_last_sequence"] == 0 and seen["rows_beyond_registry"] == 4
    # ...and the next capture replaced them: each change exactly once, in order.
    assert seen["log"] == [
        [1, 10, "I", "N", 1],
        [2, 20, "I", "N", 2],
        [2, 20, "U", "O", 3],
        [2, 21, "U", "N", 4],
    ]


def test_setup_killed_after_marking_keeps_stamps_increasing(tmp_path: Path) -> None:
    assert run(tmp_path, "prepare")[0] == 0
    code, _ = run(tmp_path, "mark", fault="setup.after_mark")
    assert code == 99
    code, seen = run(tmp_path, "recover_mark")
    assert code == 0
    # Rows were stamped by the dead setup but its time was never recorded as youngest;
    # the next refresh time must still be strictly later than that stamp.
    assert seen["max_stamp"] != "None" and seen["youngest"] < seen["max_stamp"]
    assert seen["setup_now"] > seen["max_stamp"]
    assert [r[0] for r in seen["log"]] == [1, 2, 2, 2, 3], "no change lost or duplicated"


def test_refresh_that_died_after_setup_leaves_leftovers_recaptured_once(tmp_path: Path) -> None:
    assert run(tmp_path, "prepare")[0] == 0
    code, seen = run(tmp_path, "setup")
    assert code == 0
    # The setup appended its rows stamped with its time, but left the registry write to
    # a wrap-up that never came: to every later process, those rows are leftovers.
    assert seen["registry_last_sequence"] == 0 and seen["rows_beyond_registry"] == 4
    assert seen["max_stamp"] != "None"
    code, seen = run(tmp_path, "recover_mark")
    assert code == 0
    assert seen["setup_now"] > seen["max_stamp"], "the next refresh time is later"
    assert seen["log"] == [
        [1, 10, "I", "N", 1],
        [2, 20, "I", "N", 2],
        [2, 20, "U", "O", 3],
        [2, 21, "U", "N", 4],
    ], "each change exactly once"


def test_join_refresh_killed_between_registering_and_purging_both_logs(tmp_path: Path) -> None:
    # The wrap-up of a view over two logs records the view on both (one commit), then
    # purges each and writes both logs' rows (one commit): the crash falls between.
    assert run(tmp_path, "join_prepare")[0] == 0
    code, _ = run(tmp_path, "join_refresh", fault="wrap_up.after_register")
    assert code == 99, "the process died at the fault point"
    code, seen = run(tmp_path, "join_recover")
    assert code == 0
    # The view changed but its refresh was never recorded: the next one rebuilds it,
    # saying why, and the one after is fast again; both leave the view equal to its query.
    assert seen["refresh"] == "COMPLETE", seen
    assert "previous refresh of the view did not finish" in seen["reason"], seen
    assert seen["second"] == "FAST", seen
    assert seen["matches"] and seen["rows"] == 3, seen
