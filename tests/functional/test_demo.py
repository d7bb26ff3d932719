"""`make demo` tells the product's story end to end, in its own process.

It needs its own JVM (its own state folder), so it runs as a subprocess. The assertions
follow what the demo prints, section by section: a COMPLETE first build, the captured log
rows, FAST refreshes, the purge, the registry, and views equal to their recomputed query.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter

import pytest

from tests.conftest import REPO_ROOT
from tests.jvm import short_lived_env

VIEWS = ("customer_revenue", "open_orders", "status_summary")
LOG = "shop.mlog__orders"


def split_sections(out: str) -> dict[int, str]:
    """The demo's output by section number (`=== 3. ...` starts section 3)."""
    parts = re.split(r"^=== (\d+)\. ", out, flags=re.MULTILINE)
    return {int(number): text for number, text in zip(parts[1::2], parts[2::2], strict=True)}


def table(text: str, title: str) -> list[dict[str, str]]:
    """The rows of the aligned table printed under the first line starting with `title`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    rule = next(i for i in range(start + 1, len(lines)) if re.fullmatch(r" *-+( +-+)*", lines[i]))
    spans = [m.span() for m in re.finditer(r"-+", lines[rule])]
    names = [lines[rule - 1][a:b].strip() for a, b in spans]
    rows = []
    for line in lines[rule + 1 :]:
        if not line.strip():
            break
        rows.append({name: line[a:b].strip() for name, (a, b) in zip(names, spans, strict=True)})
    return rows


def column(rows: list[dict[str, str]], key: str, *values: str) -> dict[str, tuple[str, ...]]:
    return {row[key]: tuple(row[v] for v in values) for row in rows}


@pytest.fixture(scope="module")
def demo() -> subprocess.CompletedProcess[str]:
    script = REPO_ROOT / "examples" / "quickstart" / "demo.py"
    return subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=REPO_ROOT,
        env=short_lived_env(),
    )


@pytest.fixture(scope="module")
def sections(demo: subprocess.CompletedProcess[str]) -> dict[int, str]:
    found = split_sections(demo.stdout)
    assert sorted(found) == list(range(1, 10)), demo.stdout[-6000:] + demo.stderr[-4000:]
    return found


def test_demo_succeeds(demo: subprocess.CompletedProcess[str]) -> None:
    assert demo.returncode == 0, demo.stdout[-6000:] + demo.stderr[-4000:]


def test_setup_doctor_and_log(sections: dict[int, str]) -> None:
    assert "iceberg:        OK" in sections[1]
    assert "created shop.customers (100 rows) and shop.orders (10000 rows)" in sections[2]
    assert f"created materialized view log {LOG} on shop.orders" in sections[2]


def test_first_build_is_complete(sections: dict[int, str]) -> None:
    runs = column(table(sections[3], "$ dbt run"), "view", "refresh")
    assert runs == {v: (f"COMPLETE refresh of analytics.{v}: first build",) for v in VIEWS}
    # 10,000 orders, statuses cycling open/shipped/shipped/delivered; hidden columns not shown.
    summary = table(sections[3], "analytics.status_summary after the first build")
    assert column(summary, "status", "orders", "revenue") == {
        "delivered": ("2500", "640000.00"),
        "open": ("2500", "632500.00"),
        "shipped": ("5000", "1272500.00"),
    }
    assert not any(name.startswith("__fr_") for name in summary[0])


def test_capture_logs_every_change_unstamped(sections: dict[int, str]) -> None:
    assert "4 commit(s) up to snapshot" in sections[5]
    log = table(sections[5], f"{LOG}:")
    assert len(log) == 12
    assert {row["snaptime__"] for row in log} == {"4000-01-01 00:00:00"}
    kinds = Counter((r["dmltype__"], r["old_new__"], r["change_vector__"]) for r in log)
    assert kinds == {
        ("I", "N", "FE"): 2,  # two inserts
        ("U", "O", "10"): 2,  # amount (4th column) updates: old image...
        ("U", "N", "10"): 2,  # ...and new image
        ("U", "O", "08"): 2,  # status (3rd column) open -> shipped
        ("U", "N", "08"): 2,
        ("D", "O", "00"): 2,  # two deletes
    }


def test_one_fast_refresh_stamps_but_keeps_the_log(sections: dict[int, str]) -> None:
    runs = column(table(sections[6], "$ dbt run --select customer_revenue"), "view", "refresh")
    assert runs == {
        "customer_revenue": ("FAST refresh of analytics.customer_revenue: 12 log row(s)",)
    }
    stamped = table(sections[6], f"{LOG}:")
    assert len(stamped) == 1 and stamped[0]["log_rows"] == "12"
    assert not stamped[0]["snaptime__"].startswith("4000-")
    backlog = column(
        table(sections[6], "analytics.fast_refresh_log_backlog"), "mview", "pending_log_rows"
    )
    assert backlog == {
        "analytics.customer_revenue": ("0",),
        "analytics.open_orders": ("12",),
        "analytics.status_summary": ("12",),
    }


def test_refresh_all_is_fast_and_purges_the_log(sections: dict[int, str]) -> None:
    text = sections[7]
    assert column(table(text, "$ dbt run"), "view", "refresh") == {
        "customer_revenue": ("FAST refresh of analytics.customer_revenue: no changes",),
        "open_orders": ("FAST refresh of analytics.open_orders: 12 log row(s)",),
        "status_summary": ("FAST refresh of analytics.status_summary: 12 log row(s)",),
    }
    assert table(text, f"{LOG}:") == [{"log_rows": "0"}]
    mviews = column(
        table(text, "analytics.fast_refresh_mviews"), "mview", "last_refresh_type", "staleness"
    )
    assert mviews == {f"analytics.{v}": ("FAST", "FRESH") for v in VIEWS}
    runs = [
        (r["mview"].removeprefix("analytics."), r["refresh_type"], r["reason"], r["log_rows_read"])
        for r in table(text, "analytics.fast_refresh_refresh_runs")
    ]
    assert runs == [
        ("customer_revenue", "COMPLETE", "first build", "0"),
        ("open_orders", "COMPLETE", "first build", "0"),
        ("status_summary", "COMPLETE", "first build", "0"),
        ("customer_revenue", "FAST", "", "12"),
        ("customer_revenue", "FAST", "", "0"),
        ("open_orders", "FAST", "", "12"),
        ("status_summary", "FAST", "", "12"),
    ]


def test_views_hold_the_new_data(sections: dict[int, str]) -> None:
    """The values the demo's DML must produce, worked out by hand."""
    text = sections[7]
    revenue = table(text, "analytics.customer_revenue after the fast refreshes")
    assert column(revenue, "customer_id", "orders", "revenue") == {
        "1": ("100", "20325.00"),  # +120.00 +10 -305.00 (order 400 deleted)
        "2": ("100", "22717.50"),  # +35.50 +10 -128.00 (order 179 deleted)
    }
    open_orders = table(text, "analytics.open_orders after the fast refreshes")
    assert column(open_orders, "order_id", "amount") == {"100": ("215.00",), "10001": ("120.00",)}
    summary = table(text, "analytics.status_summary after the fast refreshes")
    assert column(summary, "status", "orders", "revenue") == {
        "delivered": ("2500", "639917.50"),
        "open": ("2498", "631815.00"),
        "shipped": ("5002", "1273010.00"),
    }


def test_every_view_equals_its_query(sections: dict[int, str]) -> None:
    for view in VIEWS:
        assert re.search(rf"^  {view}\s+identical$", sections[8], re.MULTILINE), sections[8]
    assert "DIFFERS" not in sections[8]
    assert re.search(r"Demo finished in \d+\.\ds\.", sections[9])
