"""`make demo` keeps working: the quickstart runs end to end in its own process.

It needs its own JVM (its own state folder), so it runs as a subprocess.
"""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO_ROOT


def test_quickstart_demo_runs_end_to_end() -> None:
    demo = REPO_ROOT / "examples" / "quickstart" / "demo.py"
    result = subprocess.run(
        [sys.executable, str(demo)], capture_output=True, text=True, timeout=900, cwd=REPO_ROOT
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    out = result.stdout
    assert "iceberg:        OK" in out
    assert "status_summary" in out
    # 10,000 orders, statuses cycling open/shipped/shipped/delivered.
    assert "open       2500" in out
    assert "Demo finished" in out
