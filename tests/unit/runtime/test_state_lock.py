"""The embedded state folder is one process's at a time: a second process gets a clear
error at once naming the holder, or waits for it when asked (issue 25)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from dbt.adapters.fastrefresh.runtime import embedded

HOLD = """
import sys, time
from pathlib import Path
from dbt.adapters.fastrefresh.runtime.embedded import hold_state_dir
hold_state_dir(Path(sys.argv[1]))
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


def _holder(state: Path, seconds: float) -> subprocess.Popen[str]:
    state.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(state), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_process_is_refused_at_once_naming_the_holder(tmp_path: Path) -> None:
    state = tmp_path / "state"
    proc = _holder(state, 30)
    try:
        started = time.monotonic()
        with pytest.raises(embedded.EmbeddedSparkError) as refused:
            embedded.hold_state_dir(state, wait=0)
        assert time.monotonic() - started < 5
        message = str(refused.value)
        assert f"process {proc.pid}" in message and str(state) in message
        assert embedded.WAIT_ENV in message and "Fix:" in message
    finally:
        proc.kill()
        proc.wait()
    # The holder died without a word: its lock went with it.
    embedded.hold_state_dir(state, wait=0)
    assert state in embedded._held


def test_a_second_process_waits_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "state"
    proc = _holder(state, 1.5)
    monkeypatch.setenv(embedded.WAIT_ENV, "30")
    started = time.monotonic()
    embedded.hold_state_dir(state)
    assert 0.5 < time.monotonic() - started < 30
    assert proc.wait() == 0


def test_a_malformed_wait_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(embedded.WAIT_ENV, "ten minutes")
    with pytest.raises(embedded.EmbeddedSparkError, match=embedded.WAIT_ENV):
        embedded.hold_state_dir(tmp_path)
