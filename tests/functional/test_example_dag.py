"""`make demo-dag`: the example shop's dbt DAG refreshes FAST for 20 rounds of random DML.

Slow (about 10 minutes on 2 cores): the default suite covers the same path with
tests/functional/test_dag.py. The script checks every model against its query after each
round and exits non-zero when one differs or does not refresh FAST; this test reads its
report.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

MODELS = (
    "stg_customers", "stg_order_items", "stg_orders", "stg_products", "int_order_lines",
    "mart_customer_open_orders", "mart_category_daily", "mart_country_revenue",
    "mart_big_countries",
)  # fmt: skip


@pytest.mark.slow
def test_twenty_rounds_every_model_fast_and_equal_to_its_query() -> None:
    script = REPO_ROOT / "examples" / "shop_dag" / "dag.py"
    run = subprocess.run(
        [sys.executable, str(script), "--rounds", "20"],
        capture_output=True, text=True, timeout=3600, cwd=REPO_ROOT,
    )  # fmt: skip
    report = run.stdout[-8000:] + run.stderr[-4000:]
    assert run.returncode == 0, report
    rounds = re.findall(r"^round +(\d+): .*; (\d+)/(\d+) FAST .*; (.*)$", run.stdout, re.M)
    assert [int(r[0]) for r in rounds] == list(range(1, 21)), report
    assert all(r[1] == r[2] == str(len(MODELS)) for r in rounds), report
    assert all(r[3] == "every view equals its query" for r in rounds), report
    for name in MODELS:
        assert re.search(rf"^  \d +{name} +\d+\.\d+ +\d+\.\d+$", run.stdout, re.M), report
