"""The benchmark's report: a Markdown summary and PNG plots from ``bench.csv``.

Run on its own to redraw from an existing CSV:
``.venv/bin/python benchmarks/report.py benchmarks/results/full``.
"""

from __future__ import annotations

import csv
import datetime as dt
import re
import statistics
import sys
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

PHASES = ("analyze", "capture", "setup", "apply", "wrap_up")


def _load(folder: Path) -> list[dict[str, Any]]:
    with (folder / "bench.csv").open() as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for k in ("rows", "changes", "views", "wrong_rows", "log_rows"):
            r[k] = int(r[k]) if r.get(k) not in (None, "") else None
        for k in ("fraction", "seconds", "hooks", "wall", "dml", "refresh_total", *PHASES):
            r[k] = float(r[k]) if r.get(k) not in (None, "") else None
    return rows


def _median(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def _group(rows: list[dict[str, Any]], *keys: str) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    out: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        out[tuple(r[k] for k in keys)].append(r)
    return out


def _s(v: float | None) -> str:
    return "" if v is None else f"{v:.2f}"


def _x(a: float | None, b: float | None, digits: int = 1) -> str:
    return "" if not a or not b else f"{a / b:.{digits}f}x"


def _method(rows: list[dict[str, Any]], method: str, field: str = "seconds") -> float | None:
    return _median(r[field] for r in rows if r["method"] == method)


def _wrong(rows: list[dict[str, Any]]) -> str:
    wrong = [r["wrong_rows"] for r in rows if r["method"] == "incremental"]
    return str(max(wrong)) if wrong else ""


def _changes(g: list[dict[str, Any]]) -> str:
    return f"{int(_median(r['changes'] for r in g) or 0):,}"


def _incremental(g: list[dict[str, Any]]) -> str:
    seconds = _method(g, "incremental")
    return "" if seconds is None else f"{_s(seconds)} ({_wrong(g)})"  # none for the shapes


def _versus(g: list[dict[str, Any]], *, floor_ratio: bool = True) -> str:
    """The complete, dbt table, dbt incremental and floor cells, then dbt table / fast (and
    fast / floor), shared by the sweeps' tables."""
    fast, table, floor = _method(g, "fast"), _method(g, "table"), _method(g, "floor")
    cells = [_s(_method(g, "complete")), _s(table), _incremental(g), _s(floor), _x(table, fast)]
    return " | ".join(cells + ([_x(fast, floor)] if floor_ratio else []))


def _fixed(g: list[dict[str, Any]]) -> float | None:
    """The fast refresh's fixed part: dbt's model time less capture and the delta + MERGE."""
    fast, capture, apply = (_method(g, "fast", f) for f in ("seconds", "capture", "apply"))
    if fast is None or capture is None or apply is None:
        return None
    return fast - capture - apply


VERSUS = "complete | dbt table | dbt incremental (wrong rows) | floor | table / fast"


def fraction_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| log flavour | scenario | changed | changes | master DML | fast | of which capture "
        f"| of which apply | fixed part | {VERSUS} | fast / floor | apply / floor |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    data = [r for r in rows if r["sweep"] == "fraction"]
    for (flavour, scenario, fraction), g in sorted(
        _group(data, "flavour", "scenario", "fraction").items()
    ):
        apply, floor = _method(g, "fast", "apply"), _method(g, "floor")
        lines.append(
            f"| {flavour} | {scenario} ({g[0]['views']} view{'s' if g[0]['views'] > 1 else ''}) "
            f"| {fraction:.2%} | {_changes(g)} | {_s(_method(g, 'fast', 'dml'))} "
            f"| {_s(_method(g, 'fast'))} | {_s(_method(g, 'fast', 'capture'))} | {_s(apply)} "
            f"| {_s(_fixed(g))} | {_versus(g)} | {_x(apply, floor)} |"
        )
    return lines if data else []


def nochange_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| log flavour | scenario | fast (no changes) | per view | run hooks | dbt run wall "
        "| complete | dbt table | dbt table run hooks | dbt table run wall |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    data = [r for r in rows if r["sweep"] == "nochange"]
    for (flavour, scenario), g in sorted(_group(data, "flavour", "scenario").items()):
        fast = _method(g, "fast")
        per_view = None if fast is None else fast / g[0]["views"]
        lines.append(
            f"| {flavour} | {scenario} ({g[0]['views']} view{'s' if g[0]['views'] > 1 else ''}) "
            f"| {_s(fast)} | {_s(per_view)} | {_s(_method(g, 'fast', 'hooks'))} "
            f"| {_s(_method(g, 'fast', 'wall'))} | {_s(_method(g, 'complete'))} "
            f"| {_s(_method(g, 'table'))} | {_s(_method(g, 'table', 'hooks'))} "
            f"| {_s(_method(g, 'table', 'wall'))} |"
        )
    return lines if data else []


def size_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| layout | write mode | locality | master rows | rounds | changes | master DML | fast "
        f"| of which capture | fast without capture | {VERSUS} | table / floor |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    data = [r for r in rows if r["sweep"] == "size"]
    for (layout, mode, locality, size), g in sorted(
        _group(data, "layout", "mode", "locality", "rows").items()
    ):
        fast, capture = _method(g, "fast"), _method(g, "fast", "capture")
        without = None if fast is None or capture is None else fast - capture
        lines.append(
            f"| {layout} | {mode} | {locality} | {size:,} "
            f"| {len({r['repeat'] for r in g})} | {_changes(g)} "
            f"| {_s(_method(g, 'fast', 'dml'))} | {_s(fast)} | {_s(capture)} "
            f"| {_s(without)} | {_versus(g, floor_ratio=False)} "
            f"| {_x(_method(g, 'table'), _method(g, 'floor'))} |"
        )
    return lines if data else []


def dimension_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        f"| scenario | customers changed | changes | log rows read | fast | {VERSUS} "
        "| fast / floor |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    data = [r for r in rows if r["sweep"] == "dimension"]
    for (scenario, fraction), g in sorted(_group(data, "scenario", "fraction").items()):
        log_rows = _method(g, "fast", "log_rows")
        lines.append(
            f"| {scenario} | {fraction:.2%} | {_changes(g)} "
            f"| {'' if log_rows is None else f'{int(log_rows):,}'} | {_s(_method(g, 'fast'))} "
            f"| {_versus(g)} |"
        )
    return lines if data else []


def view_mode_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        f"| view | view write mode | changed | changes | fast | of which apply | {VERSUS} "
        "| fast / floor |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    data = [r for r in rows if r["sweep"] == "view_mode"]
    for (scenario, fraction), g in sorted(_group(data, "scenario", "fraction").items()):
        mode = "merge-on-read" if scenario.endswith("_mor") else "copy-on-write"
        lines.append(
            f"| {scenario.removesuffix('_mor')} | {mode} "
            f"| {fraction:.2%} | {_changes(g)} | {_s(_method(g, 'fast'))} "
            f"| {_s(_method(g, 'fast', 'apply'))} | {_versus(g)} |"
        )
    return lines if data else []


def growth_table(rows: list[dict[str, Any]]) -> list[str]:
    """How fast refresh (without capture) and capture grow from the smallest to the
    largest master each write mode and locality was measured on, at the same fraction of
    changed rows (so the change count grows with the master)."""
    data = [
        r for r in rows if r["sweep"] == "size" and r["method"] == "fast" and r["layout"] == "files"
    ]  # fmt: skip
    if not data:
        return []
    lines = [
        "| write mode | locality | masters (rows) | fast without capture growth | capture growth |",
        "|---|---|---|---:|---:|",
    ]
    for (mode, locality), g in sorted(_group(data, "mode", "locality").items()):
        sizes = sorted({r["rows"] for r in g})
        if len(sizes) < 2:
            continue
        small, large = sizes[0], sizes[-1]

        def at(size: int, field: str, g: list[dict[str, Any]] = g) -> float | None:
            return _median(
                (r["seconds"] - (r["capture"] or 0.0)) if field == "without" else r[field]
                for r in g
                if r["rows"] == size
            )

        lines.append(
            f"| {mode} | {locality} | {small:,} → {large:,} "
            f"| {_x(at(large, 'without'), at(small, 'without'), 2)} "
            f"| {_x(at(large, 'capture'), at(small, 'capture'), 2)} |"
        )
    return lines


def phase_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| sweep | scenario | changed | dbt model time | refresh (adapter) | "
        + " | ".join(PHASES)
        + " |",
        "|---|---|---:|---:|---:|" + "---:|" * len(PHASES),
    ]
    data = [
        r
        for r in rows
        if r["method"] == "fast" and r["flavour"] == "timestamp" and r["mode"] == "copy-on-write"
        and r["locality"] in ("recent", "")  # "": the dimension sweep
        and r.get("layout", "files") in ("files", "")
    ]  # fmt: skip
    for (sweep, scenario, size, fraction), g in sorted(
        _group(data, "sweep", "scenario", "rows", "fraction").items()
    ):
        changed = (
            f"{int(_median(r['changes'] for r in g) or 0):,} customers"
            if sweep == "dimension"
            else f"{fraction:.2%} of {size:,}"
        )
        lines.append(
            f"| {sweep} | {scenario} | {changed} | {_s(_median(r['seconds'] for r in g))} "
            f"| {_s(_median(r['refresh_total'] for r in g))} | "
            + " | ".join(_s(_median(r[p] for r in g)) for p in PHASES)
            + " |"
        )
    return lines if data else []


def _verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("met" if ok else "NOT met")


def done_when(rows: list[dict[str, Any]]) -> list[str]:
    """Issue 21's targets, each with the figures of this run that decide it."""
    out: list[str] = []
    nochange = [r for r in rows if r["sweep"] == "nochange" and r["method"] == "fast"]
    if nochange:
        per_view = max(r["seconds"] / r["views"] for r in nochange)
        hooks = [r["hooks"] for r in nochange if r.get("hooks") is not None]
        out.append(
            f"- A FAST refresh with no changes, per view, at most 0.3 s: worst "
            f"{per_view:.2f} s — {_verdict(per_view <= 0.3)}"
            + (
                f" (besides, once per dbt run, the run's hooks: {min(hooks):.2f}-"
                f"{max(hooks):.2f} s)."
                if hooks
                else "."
            )
        )
    fraction = [r for r in rows if r["sweep"] == "fraction" and abs(r["fraction"] - 0.01) < 1e-9]
    for (flavour, scenario), g in sorted(_group(fraction, "flavour", "scenario").items()):
        if scenario not in ("aggregate", "projection", "join"):
            continue
        fixed, apply, floor = _fixed(g), _method(g, "fast", "apply"), _method(g, "floor")
        if fixed is None or apply is None or not floor:
            continue
        out.append(
            f"- {scenario} at 1% changes ({flavour} log): fixed part {fixed:.2f} s (target "
            f"0.25 s) — {_verdict(fixed <= 0.25)}; delta + MERGE {apply:.2f} s = "
            f"{apply / floor:.2f}x the floor's {floor:.2f} s (target 1.5x) — "
            f"{_verdict(apply <= 1.5 * floor)}."
        )
    shared = [r for r in rows if r["sweep"] == "fraction" and r["scenario"] == "shared"]
    for (flavour, fraction_value), g in sorted(_group(shared, "flavour", "fraction").items()):
        fast, floor = _method(g, "fast"), _method(g, "floor")
        capture = _method(g, "fast", "capture")
        if fast is None or floor is None or capture is None:
            continue
        bound = 1.5 * floor + capture
        out.append(
            f"- Ten views on one log, {fraction_value:.2%} changes ({flavour} log): {fast:.2f} s "
            f"against 1.5 x {floor:.2f} s of floors + {capture:.2f} s capture = {bound:.2f} s — "
            f"{_verdict(fast <= bound)}."
        )
    size = [r for r in rows if r["sweep"] == "size"]
    for (layout, mode, locality, n), g in sorted(
        _group(size, "layout", "mode", "locality", "rows").items()
    ):
        capture, dml = _method(g, "fast", "capture"), _method(g, "fast", "dml")
        fast, table = _method(g, "fast"), _method(g, "table")
        changes = _changes(g)
        parts = []
        if capture is not None and mode == "merge-on-read" and locality == "recent":
            parts.append(f"capture {capture:.2f} s (target 0.5 s at 10,000 changes)")
        elif capture is not None and dml is not None and mode == "copy-on-write":
            parts.append(f"capture {capture:.2f} s vs the master's DML {dml:.2f} s — "
                         f"{_verdict(capture <= dml)}")  # fmt: skip
        if fast and table:
            target = 1.0 if n < 10_000_000 else (2.0 if n < 100_000_000 else 10.0)
            parts.append(
                f"dbt table / fast = {table / fast:.1f}x (target {target:g}x) — "
                f"{_verdict(table / fast >= target)}"
            )
        out.append(
            f"- {n:,} rows, {changes} changes, {mode}, {locality}, {layout}: "
            + "; ".join(parts)
            + "."
        )
    return out


def _log_axes(ax: Any, xlabel: str, title: str) -> None:
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("seconds")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)


def _save(plt: Any, fig: Any, folder: Path, name: str) -> str:
    fig.tight_layout()
    fig.savefig(folder / name, dpi=110)
    plt.close(fig)
    return name


def plots(folder: Path, rows: list[dict[str, Any]]) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    styles = {"fast": "o-", "complete": "s-", "table": "D-", "incremental": "^-", "floor": "v--"}
    data = [r for r in rows if r["sweep"] == "fraction"]
    scenarios = sorted({r["scenario"] for r in data})
    if data:
        fig, axes = plt.subplots(1, len(scenarios), figsize=(5 * len(scenarios), 4), squeeze=False)
        for ax, scenario in zip(axes[0], scenarios, strict=True):
            for flavour, dash in (("timestamp", ""), ("commit_scn", ":")):
                for method, style in styles.items():
                    pts = sorted(
                        (f, _method(g, method))
                        for (f,), g in _group(
                            [
                                r
                                for r in data
                                if r["scenario"] == scenario and r["flavour"] == flavour
                            ],
                            "fraction",
                        ).items()
                    )
                    if pts and (flavour == "timestamp" or method == "fast"):
                        label = method if flavour == "timestamp" else "fast (commit-SCN log)"
                        ax.plot([p[0] * 100 for p in pts], [p[1] for p in pts],
                                marker=style[0], linestyle=dash or style[1:], label=label)  # fmt: skip
            _log_axes(
                ax, "changed rows (% of master)", f"{scenario}, {data[0]['rows']:,}-row master"
            )
        written.append(_save(plt, fig, folder, "refresh_vs_fraction.png"))
    data = [r for r in rows if r["sweep"] == "size"]
    if data:
        combos = sorted({(r["mode"], r["locality"]) for r in data})
        fig, axes = plt.subplots(1, len(combos), figsize=(4.5 * len(combos), 4), squeeze=False)
        for ax, (mode, locality) in zip(axes[0], combos, strict=True):
            g = [r for r in data if r["mode"] == mode and r["locality"] == locality]
            sizes = sorted({r["rows"] for r in g})
            for method, style in styles.items():
                ax.plot(sizes, [_method([r for r in g if r["rows"] == s], method) for s in sizes],
                        style, label=method)  # fmt: skip
            ax.plot(sizes, [_method([r for r in g if r["rows"] == s], "fast", "capture") for s in sizes],
                    "x:", label="fast: capture part")  # fmt: skip
            _log_axes(
                ax, "master rows", f"aggregate, {g[0]['changes']:,} changes\n{mode}, {locality}"
            )
        written.append(_save(plt, fig, folder, "refresh_vs_size.png"))
    data = [r for r in rows if r["sweep"] == "dimension"]
    if data:
        scenarios = sorted({r["scenario"] for r in data})
        fig, axes = plt.subplots(1, len(scenarios), figsize=(5 * len(scenarios), 4), squeeze=False)
        for ax, scenario in zip(axes[0], scenarios, strict=True):
            by_fraction = _group([r for r in data if r["scenario"] == scenario], "fraction")
            fractions = sorted(f for (f,) in by_fraction)
            for method, style in styles.items():
                ax.plot([f * 100 for f in fractions],
                        [_method(by_fraction[(f,)], method) for f in fractions],
                        style, label=method)  # fmt: skip
            _log_axes(ax, "customers changed (%)", f"{scenario}, dimension changes")
        written.append(_save(plt, fig, folder, "refresh_vs_dimension.png"))
    return written


def _section(title: str, preface: str, table: list[str]) -> list[str]:
    """A titled table with its preface, or nothing when the table has no rows."""
    if not table:
        return []
    return [
        *([f"## {title}", ""] if title else []),
        *([preface, ""] if preface else []),
        *table,
        "",
    ]


def write(
    folder: Path, machine: str, minutes: float | None = None, when: str | None = None
) -> None:
    """The folder's README.md and plots from its bench.csv; ``when`` (the run's date)
    defaults to today."""
    rows = _load(folder)
    images = plots(folder, rows)
    when = when or dt.date.today().isoformat()
    lines = [
        f"# Benchmark results ({when})",
        "",
        f"Machine: {machine}.",
        "",
        "Seconds are medians over repeats: dbt's per-model execution time for fast, "
        "complete, the dbt table and dbt incremental; the MERGE's wall time for the floor. A "
        "scenario's time is the sum over its views. `run hooks`: what one `dbt run` spends "
        "in its hooks besides its models (the package's on-run-end hook publishes the "
        "registry: one commit per run, not per view); `dbt run wall`: the whole in-process "
        "invocation, dbt's own start-up included. `master DML`: the round's statements on "
        "the master (its own commits). `fixed part`: the fast refresh's model time less "
        "capture and the delta + MERGE (`apply`). `wrong rows` is how many rows the dbt "
        "incremental model differs from its query by after the round (fast, complete and the "
        "table are checked and must be 0). Generated by `benchmarks/bench.py`"
        + (f" in {minutes:.0f} minutes." if minutes is not None else "."),
        "",
        "Workload (`benchmarks/workload.py`): an `orders` fact (key `order_id`, written in key "
        "order; layout `files`: 250,000 rows per data file, `loaded`: as plain INSERTs leave "
        "it, a file per writing task with Iceberg's default 512 MB target; skewed "
        "`customer_id` and `product_id`; `amount` NULL for 2% of rows, `discount` for 70%) "
        "with customers and products dimensions. A change batch is 40% measure updates, 10% "
        "group-key updates, 25% deletes and 25% inserts in three commits (MERGE, DELETE, "
        "INSERT); `recent` changes pick rows among the newest, `scattered` ones uniformly. "
        "Scenarios: `aggregate` (revenue per customer: COUNT, SUM, AVG), `projection` (open "
        "orders: a filter and six columns), `join` (open orders with their customer's "
        "region: orders joined with customers, whose log holds only the key), "
        "`join_aggregate` (orders, revenue and average per region over the same join), "
        "`shared` (ten rollups and filters on the one log, refreshed one after another). The "
        "fraction and size sweeps change only `orders`; the dimension sweep changes only "
        "`customers` (a fraction of them move to another region, one UPDATE), and every "
        "order of a changed customer is joined again. The view write mode sweep stores the "
        "`projection` and `join` views merge-on-read too (`projection_mor`, `join_mor`). Every "
        "round also checks each fast, complete and table view against its query.",
        "",
        *_section("Targets (issue 21)", "", done_when(rows)),
        *_section(
            "Refresh time vs change fraction",
            "`of which apply`: the fast refresh's delta computed from the log and applied "
            "by its write; `apply / floor` compares that phase with the bare MERGE of the "
            "precomputed delta; `fast / floor` compares the whole refresh.",
            fraction_table(rows),
        ),
        *_section(
            "Refresh with no change since the last",
            "The fast refresh reads the masters' current snapshots and the views' and logs' "
            "state and writes nothing.",
            nochange_table(rows),
        ),
        *_section(
            "Refresh time vs master size (0.1% changes)",
            "`rounds`: the rounds of changes measured, one after another on the same "
            "master (each figure is their median; ratios are of the medians). "
            "`table / floor` bounds `table / fast`: a fast refresh applies its delta "
            "with a write at least as costly as the floor's, so no fast refresh of that view "
            "can beat the dbt table by more than this, whatever its capture and fixed cost.",
            size_table(rows),
        ),
        *_section("", "Growth from the smallest to the largest master:", growth_table(rows)),
        *_section(
            "Refresh time vs dimension changes (orders unchanged)",
            "The dbt incremental model selects changed orders by their `updated_at`; it "
            "cannot see a customer's change, so it changes nothing: its wrong rows are the "
            "changed customers' orders (or their regions' totals) twice over, the stale row "
            "it keeps and the right row it lacks.",
            dimension_table(rows),
        ),
        *_section(
            "Refresh time by the view's write mode",
            "The projection and join views (most of the master's rows each), stored "
            "copy-on-write (the default) and merge-on-read (`tblproperties` "
            "`write.merge.mode`, `write.update.mode`, `write.delete.mode`), with the floor, "
            "the dbt table and the dbt incremental model in the same mode (commit-SCN log; "
            "each round's capture runs first, untimed, so no view pays it). A merge-on-read "
            "MERGE writes delete files instead of rewriting each data file a changed row is "
            "in; readers merge them until the view is compacted or rebuilt.",
            view_mode_table(rows),
        ),
        *_section(
            "Fast refresh phases (seconds, timestamp log, copy-on-write, recent changes, 250,000-row files)",
            "analyze: the masters', logs' and view's state read, the query analyzed (cached "
            "per process); capture: the master's new commits into the log; setup: the "
            "refresh time, marking; apply: the delta computed and written with the view's "
            "new state; wrap_up: registration, purge (asynchronous by default).",
            phase_table(rows),
        ),
        *(f"![{name}]({name})" for name in images),
        "",
    ]
    (folder / "README.md").write_text("\n".join(lines))


if __name__ == "__main__":
    # Rewrite a results folder's README.md from its bench.csv (after a change to this
    # report), keeping the run's date, machine and duration from the README it replaces.
    target = Path(sys.argv[1])
    existing = (target / "README.md").read_text() if (target / "README.md").exists() else ""
    machine_line = re.search(r"^Machine: (.*)\.$", existing, re.M)
    date = re.search(r"^# Benchmark results \((\d{4}-\d{2}-\d{2})\)$", existing, re.M)
    took = re.search(r"Generated by `benchmarks/bench.py` in (\d+) minutes\.", existing)
    write(
        target,
        machine_line.group(1) if machine_line else "unknown",
        float(took.group(1)) if took else None,
        date.group(1) if date else None,
    )
