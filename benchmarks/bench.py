"""The benchmark harness: fast refresh vs complete refresh vs a dbt table vs dbt incremental
vs the floor.

One process, the embedded default (in-process Spark + Iceberg), dbt invoked in-process.
Each round changes the master (``workload.apply_changes``, its statements timed: ``dml``),
then refreshes every view of the chosen scenarios five ways, in this order:

1. ``fast``: the view as a ``fast_refresh`` model (``refresh_method='force'``), ``dbt run``;
   it pays the round's capture of the master's new commits;
2. ``complete``: the same view as a ``fast_refresh`` model with ``refresh_method='complete'``;
3. ``table``: the same query as a plain dbt ``table`` model (Iceberg): what a user runs
   today instead of a fast_refresh model;
4. ``incremental``: the model as users write it today with dbt-spark's ``merge`` strategy,
   the fair best version: an ``updated_at`` watermark selects the changed rows and, for an
   aggregate, the groups they touch are recomputed. It cannot see deletes or the group an
   updated row left, so its result is checked and its wrong rows are reported;
5. ``floor``: a bare ``MERGE`` of the view's already-computed net change into a copy of the
   view with the fast view's table properties (the delta is computed untimed): no refresh
   can apply a change for less.

Times are dbt's own per-model execution time (``fast``, ``complete``, ``incremental``) and
the MERGE's wall time (``floor``). The fast refresh's phases come from the registry's
``refresh_runs``. After each round every fast and complete view is checked against its
query recomputed, and a wrong result stops the run.

Sweeps: change fraction at a fixed master size (all scenarios, both log flavours), then
a round with no change at all (``nochange``); master size at 0.1% changes (the aggregate
scenario, both write modes, both localities, masters laid out in 250,000-row files and as
plain INSERTs leave them; ``--large`` adds a 100M-row master); dimension changes (a
fraction of the customers change region; the two join scenarios, timestamp log); and the
view's write mode (the projection and join views stored copy-on-write and merge-on-read,
commit-SCN log, capture run first). ``--quick`` shrinks them, and leaves out the shared
scenario, to finish in a few minutes. ``benchmarks/micro.py`` measures single operations.

Usage: .venv/bin/python benchmarks/bench.py [--quick] [--large] [--out DIR] [--sweeps LIST]
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import datetime as dt
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import report  # noqa: E402
import workload  # noqa: E402
from workload import CUSTOMERS, ORDERS, SCHEMA, View  # noqa: E402

REPO = HERE.parent
REGISTRY = "bench_registry"
METHODS = ("fast", "complete", "table", "incremental", "floor")
DBT_METHODS = ("fast", "complete", "table", "incremental")
# The fraction sweep runs every scenario; the size sweep the aggregate (size_sweep).
FRACTION_SCENARIOS = ("aggregate", "projection", "join", "join_aggregate", "shared")
FIELDS = [
    "sweep", "rows", "mode", "locality", "layout", "flavour", "fraction", "changes",
    "scenario", "views", "method", "repeat", "seconds", "hooks", "wall", "dml", "wrong_rows",
    "refresh_types",
    "log_rows", "analyze", "capture", "setup", "apply", "wrap_up", "refresh_total",
]  # fmt: skip


@dataclass(frozen=True)
class Plan:
    fraction_rows: int
    fractions: tuple[float, ...]
    sizes: tuple[int, ...]
    size_fraction: float
    repeats: int
    # Rounds of each point of the size sweep with recent changes (``large`` masters: one),
    # whose single rounds moved by up to 0.5 s from run to run at 10M rows.
    size_repeats: int = 1
    modes: tuple[str, ...] = tuple(workload.WRITE_MODES)
    localities: tuple[str, ...] = ("recent", "scattered")
    layouts: tuple[str, ...] = workload.LAYOUTS
    large: tuple[int, ...] = ()  # masters of the size sweep measured with recent changes only
    flavours: tuple[str, ...] = ("timestamp", "commit_scn")
    scenarios: tuple[str, ...] = FRACTION_SCENARIOS  # of the fraction sweep
    dimension_fractions: tuple[float, ...] = (0.001, 0.01, 0.1)  # of the customers
    view_mode_fractions: tuple[float, ...] = (0.001, 0.01, 0.1)


FULL = Plan(
    1_000_000, (0.0001, 0.001, 0.01, 0.1), (1_000_000, 10_000_000), 0.001, 1, size_repeats=3
)
LARGE_ROWS = 100_000_000
# Quick: small masters, 1% changes, copy-on-write, and no ten-view shared scenario (its
# rounds were half of the quick run's time).
QUICK = Plan(
    100_000, (0.01,), (100_000, 300_000), 0.01, 1, modes=("copy-on-write",),
    scenarios=tuple(s for s in FRACTION_SCENARIOS if s != "shared"), layouts=("files",),
    dimension_fractions=(0.01,), view_mode_fractions=(0.01,),
)  # fmt: skip
# The scenarios a dimension change reaches (the others read only orders).
DIMENSION_SCENARIOS = ("join", "join_aggregate")
# The row-level views in both view write modes (workload.MERGE_ON_READ_VIEWS).
VIEW_MODE_SCENARIOS = ("projection", "projection_mor", "join", "join_mor")
SWEEPS = ("fraction", "size", "dimension", "view_mode")
NOCHANGE_METHODS = ("fast", "complete", "table")


# -- the dbt project ------------------------------------------------------------------------


def incremental_sql(view: View) -> str:
    """The view as a dbt-spark incremental model, the best way users write it today."""
    sql = view.sql
    watermark = "(SELECT max(_max_updated_at) FROM {{ this }})"
    if " JOIN " in sql:  # orders o joined with a dimension, which is read whole
        select, rest = sql.split(" FROM ", 1)
        body, _, group = rest.partition(" GROUP BY ")
        glue = " AND " if " WHERE " in body else " WHERE "
        if not group:  # new and changed orders, joined again
            return (
                f"{select}, o.updated_at AS _max_updated_at FROM {body}"
                f"{{% if is_incremental() %}}{glue}o.updated_at > {watermark}{{% endif %}}"
            )
        # the groups that new and changed orders fall in, recomputed
        changed = f"({group}) IN (SELECT {group} FROM {body}{glue}o.updated_at > {watermark})"
        return (
            f"{select}, max(o.updated_at) AS _max_updated_at FROM {body}"
            f"{{% if is_incremental() %}}{glue}{changed}{{% endif %}} GROUP BY {group}"
        )
    is_aggregate = " GROUP BY " in sql or "count(" in sql.split(" FROM ")[0]
    select, rest = sql.split(f" FROM {ORDERS}", 1)
    if is_aggregate:
        select += ", max(updated_at) AS _max_updated_at"
        keys = ", ".join(view.key)
        changed = f"({keys}) IN (SELECT {keys} FROM {ORDERS} WHERE updated_at > {watermark})"
    else:
        select += ", updated_at AS _max_updated_at"
        changed = f"updated_at > {watermark}"
    where, _, group = rest.partition(" GROUP BY ")
    glue = " AND " if "WHERE" in where else " WHERE "
    body = f"{select} FROM {ORDERS}{where}{{% if is_incremental() %}}{glue}{changed}{{% endif %}}"
    return body + (f" GROUP BY {group}" if group else "")


def _properties(v: View) -> dict[str, str]:
    """The fast_refresh models' ``tblproperties`` for the view's write mode (none: the
    adapter's defaults for an unpartitioned view)."""
    if v.view_mode == "copy-on-write":
        return {}
    return {**workload.WRITE_MODES[v.view_mode], "write.merge.distribution-mode": "none"}


def _table_properties(v: View) -> dict[str, str]:
    """The properties the fast view's table ends up with, given to the floor's copy and
    the dbt incremental model too, so that all three MERGE into alike tables: without
    ``write.merge.distribution-mode=none`` (the adapter's default for an unpartitioned
    view) Iceberg shuffles the rows before every MERGE's write."""
    return {**_properties(v), "write.merge.distribution-mode": "none"}


def write_project(root: Path, state: Path, views: list[View]) -> Path:
    project = root / "bench_project"
    models = project / "models"
    models.mkdir(parents=True)
    (project / "dbt_project.yml").write_text(
        "name: bench\nversion: '1.0'\nconfig-version: 2\nprofile: bench\n"
    )
    (project / "profiles.yml").write_text(
        "bench:\n  target: dev\n  outputs:\n    dev:\n      type: fastrefresh\n"
        f"      schema: {SCHEMA}\n      state_dir: {state}\n      registry_schema: {REGISTRY}\n"
    )
    (project / "packages.yml").write_text(f"packages:\n  - local: {REPO}\n")
    for v in views:
        tags = f"'{v.scenario}'"
        props = _properties(v)
        extra = f", tblproperties={props!r}" if props else ""
        same_table = f", tblproperties={_table_properties(v)!r}"
        (models / f"{v.name}__fast.sql").write_text(
            f"{{{{ config(materialized='fast_refresh', tags=['fast', {tags}]{extra}) }}}}\n"
            f"{v.sql}\n"
        )
        (models / f"{v.name}__complete.sql").write_text(
            "{{ config(materialized='fast_refresh', refresh_method='complete', "
            f"tags=['complete', {tags}]{extra}) }}}}\n{v.sql}\n"
        )
        (models / f"{v.name}__table.sql").write_text(
            "{{ config(materialized='table', file_format='iceberg', "
            f"tags=['table', {tags}]{same_table}) }}}}\n{v.sql}\n"
        )
        if not v.incremental:
            continue
        if v.key:
            keys = ", ".join(f"'{k}'" for k in v.key)
            config = (
                "materialized='incremental', incremental_strategy='merge', "
                f"file_format='iceberg', unique_key=[{keys}]"
            )
            sql = incremental_sql(v)
        else:  # a global aggregate has no key to merge on: users rebuild it
            config, sql = "materialized='table', file_format='iceberg'", v.sql
        (models / f"{v.name}__incremental.sql").write_text(
            f"{{{{ config({config}, tags=['incremental', {tags}]{same_table}) }}}}\n{sql}\n"
        )
    return project


class Dbt:
    def __init__(self, project: Path) -> None:
        from dbt.cli.main import dbtRunner

        self.runner = dbtRunner()
        self.flags = ["--project-dir", str(project), "--profiles-dir", str(project)]
        self.invoke(["deps"])

    def invoke(self, args: list[str]) -> Any:
        result = self.runner.invoke([*args, *self.flags, "--quiet"])
        if not result.success:
            raise RuntimeError(f"dbt {' '.join(args)} failed: {result.exception or result.result}")
        return result.result

    def run(self, select: str, full_refresh: bool = False) -> Invocation:
        """Per model: dbt's execution time and its result message; the run's hooks apart."""
        args = ["run", "-s", select] + (["--full-refresh"] if full_refresh else [])
        started = time.perf_counter()
        results = self.invoke(args).results
        out = Invocation(wall=time.perf_counter() - started)
        for r in results:
            if r.node.resource_type == "operation":  # on-run-start / on-run-end
                out.hooks += float(r.execution_time)
            else:
                out.models[r.node.name] = (float(r.execution_time), str(r.message or ""))
        return out


@dataclass
class Invocation:
    """One ``dbt run``: each model's execution time and message (dbt's per-model time),
    the time of the run's hooks (the package's registry publish at the end), and the
    invocation's wall time (dbt's parsing and start-up included)."""

    wall: float
    hooks: float = 0.0
    models: dict[str, tuple[float, str]] = dataclasses.field(default_factory=dict)


# -- one round ---------------------------------------------------------------------------


def _columns(spark: Any, table: str) -> list[str]:
    return [
        c
        for c in spark.table(table).columns
        if not c.startswith("__fr_") and c != "_max_updated_at"
    ]


def wrong_rows(spark: Any, table: str, truth: str) -> int:
    cols = ", ".join(f"`{c}`" for c in _columns(spark, truth))
    row = spark.sql(
        f"SELECT (SELECT count(*) FROM (SELECT {cols} FROM {table} EXCEPT ALL SELECT {cols} "
        f"FROM {truth})) + (SELECT count(*) FROM (SELECT {cols} FROM {truth} EXCEPT ALL "
        f"SELECT {cols} FROM {table}))"
    ).collect()[0][0]
    return int(row)


def floor_init(spark: Any, view: View) -> None:
    """The floor's copy of the view, with the fast view's table properties."""
    props = ", ".join(f"'{k}'='{v}'" for k, v in _table_properties(view).items())
    spark.sql(
        f"CREATE OR REPLACE TABLE {SCHEMA}.floor__{view.name} USING iceberg "
        + (f"TBLPROPERTIES ({props}) " if props else "")
        + f"AS {view.sql}"
    )


def floor_round(spark: Any, view: View) -> float:
    """Recompute the truth and the net change (untimed), then time the bare MERGE."""
    truth, floor, delta = (f"{SCHEMA}.{p}__{view.name}" for p in ("truth", "floor", "delta"))
    spark.sql(f"CREATE OR REPLACE TABLE {truth} USING iceberg AS {view.sql}")
    cols = _columns(spark, truth)
    on = " AND ".join(f"t.`{k}` <=> d.`{k}`" for k in view.key) or "TRUE"
    anti = " AND ".join(f"o.`{k}` <=> n.`{k}`" for k in view.key) or "TRUE"
    listed = ", ".join(f"`{c}`" for c in cols)
    spark.sql(
        f"CREATE OR REPLACE TABLE {delta} USING iceberg AS "
        f"SELECT 'U' AS op__, {listed} FROM (SELECT {listed} FROM {truth} EXCEPT "
        f"SELECT {listed} FROM {floor}) UNION ALL SELECT 'D' AS op__, "
        f"{', '.join(f'o.`{c}`' for c in cols)} FROM {floor} o LEFT ANTI JOIN {truth} n ON {anti}"
    )
    sets = ", ".join(f"`{c}` = d.`{c}`" for c in cols)
    started = time.perf_counter()
    spark.sql(
        f"MERGE INTO {floor} t USING {delta} d ON {on} "
        f"WHEN MATCHED AND d.op__ = 'D' THEN DELETE WHEN MATCHED THEN UPDATE SET {sets} "
        f"WHEN NOT MATCHED AND d.op__ = 'U' THEN INSERT ({listed}) "
        f"VALUES ({', '.join(f'd.`{c}`' for c in cols)})"
    ).collect()
    return time.perf_counter() - started


def phases_since(spark: Any, since: dt.datetime) -> dict[str, dict[str, Any]]:
    rows = spark.sql(
        f"SELECT mview, phase_seconds, log_rows_read, refresh_type FROM {REGISTRY}.refresh_runs "
        f"WHERE started >= TIMESTAMP_NTZ'{since:%Y-%m-%d %H:%M:%S.%f}' AND status = 'SUCCESS'"
    ).collect()
    return {
        str(r[0]).split(".")[-1]: {"phases": dict(r[1] or {}), "log_rows": r[2], "type": r[3]}
        for r in rows
    }


def truth(spark: Any, view: View) -> None:
    """The view's query recomputed (untimed), for the round's checks."""
    spark.sql(f"CREATE OR REPLACE TABLE {SCHEMA}.truth__{view.name} USING iceberg AS {view.sql}")


def run_round(
    spark: Any,
    dbt: Dbt,
    views: list[View],
    context: dict[str, Any],
    repeat: int,
    methods: tuple[str, ...] = DBT_METHODS,
    floor: bool = True,
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for scenario in sorted({v.scenario for v in views}):
        group = [v for v in views if v.scenario == scenario]
        base = {**context, "scenario": scenario, "views": len(group), "repeat": repeat}
        results: dict[str, dict[str, Any]] = {}
        # The shapes' scenarios have no dbt incremental version (View.incremental).
        chosen = tuple(m for m in methods if m != "incremental" or group[0].incremental)
        for method in chosen:
            since = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
            run = dbt.run(f"tag:{method},tag:{scenario}")
            row: dict[str, Any] = {
                "method": method,
                "seconds": sum(t for t, _ in run.models.values()),
                "hooks": run.hooks,
                "wall": run.wall,
            }
            if method in ("fast", "complete"):
                runs_since = phases_since(spark, since)
                runs = [runs_since[f"{v.name}__{method}"] for v in group]
                row["refresh_types"] = "/".join(sorted({r["type"] for r in runs}))
                row["log_rows"] = sum(r["log_rows"] or 0 for r in runs)
                for phase in ("analyze", "capture", "setup", "apply", "wrap_up"):
                    row[phase] = sum(r["phases"].get(phase, 0.0) for r in runs)
                row["refresh_total"] = sum(r["phases"].get("total", 0.0) for r in runs)
            results[method] = row
        if floor:
            results["floor"] = {
                "method": "floor", "seconds": sum(floor_round(spark, v) for v in group),
                "wrong_rows": 0,
            }  # fmt: skip
        else:
            for v in group:
                truth(spark, v)
        for method in chosen:
            wrong = sum(
                wrong_rows(spark, f"{SCHEMA}.{v.name}__{method}", f"{SCHEMA}.truth__{v.name}")
                for v in group
            )
            results[method]["wrong_rows"] = wrong
            if wrong and method != "incremental":
                raise AssertionError(
                    f"{method} refresh of {scenario} differs from its query by {wrong} row(s)"
                )
        if results["fast"]["refresh_types"] != "FAST":  # force chose complete (engine/refresh.py)
            print(f"  note: {scenario} under force refreshed {results['fast']['refresh_types']}")
        for row in results.values():
            out.append({**base, **row})
            print(
                f"  {scenario:10} {row['method']:11} {row['seconds']:8.2f}s"
                + (f"  wrong={row['wrong_rows']}" if row.get("wrong_rows") else ""),
                flush=True,
            )
    return out


# -- sweeps -------------------------------------------------------------------------------


def create_log(spark: Any, flavour: str) -> None:
    from dbt.adapters.fastrefresh.mlog import ddl as mlog
    from dbt.adapters.fastrefresh.protocol.env import Env
    from dbt.adapters.fastrefresh.sqltext import TableName

    env = Env.for_spark(spark, REGISTRY)
    for master in (ORDERS, CUSTOMERS):
        if mlog.load_log(env, TableName.parse(master)) is not None:
            mlog.drop_mview_log(env, master)
    commit_scn = flavour == "commit_scn"
    mlog.create_mview_log(env, ORDERS, commit_scn=commit_scn)
    # The join scenario's dimension: a key-only log (a join reads only the changed keys).
    mlog.create_mview_log(env, CUSTOMERS, columns=[], commit_scn=commit_scn, key=["customer_id"])
    from dbt.adapters.fastrefresh.registry import store as registry

    registry.publish(env)


def setup_round(
    spark: Any, dbt: Dbt, rows: int, mode: str, flavour: str, views: list[View],
    layout: str = "files",
) -> None:  # fmt: skip
    workload.build_master(spark, rows, mode, layout=layout)
    create_log(spark, flavour)
    scenarios = sorted({v.scenario for v in views})
    dbt.run(" ".join(f"tag:{s}" for s in scenarios), full_refresh=True)
    for v in views:
        floor_init(spark, v)


_warmed: set[str] = set()


def warm_up(
    spark: Any, dbt: Dbt, views: list[View], rows: int, mode: str = "copy-on-write"
) -> None:
    """One untimed round, the first time a sweep calls it in this process for a master
    of write ``mode``: the JVM compiles the statements' code paths once, so the first
    recorded point is not slower for it than the others (whichever sweeps ``--sweeps``
    runs). Capture from a merge-on-read master runs statements of its own (delete files'
    positions), so each mode is warmed."""
    if mode in _warmed:
        return
    _warmed.add(mode)
    print(" warm-up round (not recorded)", flush=True)
    workload.apply_changes(spark, max(1, rows // 1000), "recent", 11, 99, rows)
    run_round(spark, dbt, views, {}, 0)


def recent_round(
    spark: Any,
    dbt: Dbt,
    views: list[View],
    sweep: str,
    flavour: str,
    rows: int,
    fraction: float,
    seed: int,
    change_round: int,
    repeat: int,
    capture_first: bool = False,
) -> list[dict[str, Any]]:
    """Change ``fraction`` of the copy-on-write master's newest rows (``seed`` and
    ``change_round`` pick them), then ``run_round``; ``capture_first``: capture the
    changes untimed (``capture_changes``) before it."""
    count = max(1, round(rows * fraction))
    batch = workload.apply_changes(spark, count, "recent", seed, change_round, rows)
    if capture_first:
        dbt.invoke(["run-operation", "fast_refresh.capture_changes"])
    print(f" {fraction:.2%} = {batch.rows:,} changes (DML {batch.seconds:.2f}s)", flush=True)
    context = {
        "sweep": sweep, "rows": rows, "mode": "copy-on-write", "locality": "recent",
        "layout": "files", "flavour": flavour, "fraction": fraction, "changes": batch.rows,
        "dml": batch.seconds,
    }  # fmt: skip
    return run_round(spark, dbt, views, context, repeat)


def fraction_sweep(spark: Any, dbt: Dbt, plan: Plan, rows_out: list[dict[str, Any]]) -> None:
    views = workload.views(list(plan.scenarios))
    rows = plan.fraction_rows
    for flavour in plan.flavours:
        print(f"fraction sweep: {rows:,} rows, copy-on-write, {flavour} log", flush=True)
        setup_round(spark, dbt, rows, "copy-on-write", flavour, views)
        warm_up(spark, dbt, views, rows)
        for round_no, fraction in enumerate(plan.fractions, start=1):
            for repeat in range(plan.repeats):
                rows_out.extend(
                    recent_round(spark, dbt, views, "fraction", flavour, rows, fraction, 11,
                                 100 * round_no + repeat, repeat)
                )  # fmt: skip
        print(" no change since the last refresh", flush=True)
        context = {
            "sweep": "nochange", "rows": rows, "mode": "copy-on-write", "locality": "",
            "layout": "files", "flavour": flavour, "fraction": 0.0, "changes": 0, "dml": 0.0,
        }  # fmt: skip
        for repeat in range(max(2, plan.repeats)):
            rows_out.extend(
                run_round(spark, dbt, views, context, repeat, NOCHANGE_METHODS, floor=False)
            )


def size_sweep(spark: Any, dbt: Dbt, plan: Plan, rows_out: list[dict[str, Any]]) -> None:
    """The aggregate view at ``plan.size_fraction`` changes, by master size, write mode,
    locality and layout (scattered changes on 250,000-row files only: a scattered change
    of a master laid out as loaded rewrites the same few huge files as a recent one).
    Recent changes of the masters up to ``plan.sizes`` run ``plan.size_repeats`` rounds."""
    views = workload.views(["aggregate"])
    for layout in plan.layouts:
        for rows in (*plan.sizes, *plan.large):
            for mode in plan.modes:
                localities = [
                    loc for loc in plan.localities
                    if loc == "recent" or (layout == "files" and rows not in plan.large)
                ]  # fmt: skip
                print(f"size sweep: {rows:,} rows, {mode}, {layout}, timestamp log", flush=True)
                setup_round(spark, dbt, rows, mode, "timestamp", views, layout)
                warm_up(spark, dbt, views, rows, mode)
                count = max(1, round(rows * plan.size_fraction))
                for li, locality in enumerate(localities):
                    recent = locality == "recent" and rows not in plan.large
                    for repeat in range(plan.size_repeats if recent else plan.repeats):
                        batch = workload.apply_changes(
                            spark, count, locality, 13, 100 * li + repeat, rows
                        )
                        print(
                            f" {locality}: {batch.rows:,} changes (DML {batch.seconds:.2f}s)",
                            flush=True,
                        )
                        context = {
                            "sweep": "size", "rows": rows, "mode": mode, "locality": locality,
                            "layout": layout, "flavour": "timestamp",
                            "fraction": batch.rows / rows, "changes": batch.rows,
                            "dml": batch.seconds,
                        }  # fmt: skip
                        rows_out.extend(run_round(spark, dbt, views, context, repeat))


def dimension_sweep(spark: Any, dbt: Dbt, plan: Plan, rows_out: list[dict[str, Any]]) -> None:
    """Customers change region; the join views join their orders again."""
    views = workload.views(list(DIMENSION_SCENARIOS))
    rows = plan.fraction_rows
    customers, _ = workload.dimension_sizes(rows)
    print(f"dimension sweep: {rows:,} orders, {customers:,} customers, timestamp log", flush=True)
    setup_round(spark, dbt, rows, "copy-on-write", "timestamp", views)
    warm_up(spark, dbt, views, rows)
    for round_no, fraction in enumerate(plan.dimension_fractions, start=1):
        for repeat in range(plan.repeats):
            count = workload.apply_dimension_changes(
                spark, max(1, round(customers * fraction)), 17, 100 * round_no + repeat
            )
            print(f" {fraction:.2%} of customers = {count:,} changes", flush=True)
            context = {
                "sweep": "dimension", "rows": rows, "mode": "copy-on-write", "locality": "",
                "layout": "files", "flavour": "timestamp", "fraction": fraction,
                "changes": count,
            }  # fmt: skip
            rows_out.extend(run_round(spark, dbt, views, context, repeat))


def view_mode_sweep(spark: Any, dbt: Dbt, plan: Plan, rows_out: list[dict[str, Any]]) -> None:
    """The projection and join views stored copy-on-write and merge-on-read, side by side.

    Each round's capture runs first, untimed (``capture_changes``), and the log is a
    commit-SCN one (nothing to mark), so no view pays for the others: the modes compare
    on the same work."""
    views = workload.views(list(VIEW_MODE_SCENARIOS))
    rows = plan.fraction_rows
    print(f"view write mode sweep: {rows:,} rows, copy-on-write master, commit_scn log", flush=True)
    setup_round(spark, dbt, rows, "copy-on-write", "commit_scn", views)
    warm_up(spark, dbt, views, rows)
    for round_no, fraction in enumerate(plan.view_mode_fractions, start=1):
        for repeat in range(plan.repeats):
            rows_out.extend(
                recent_round(spark, dbt, views, "view_mode", "commit_scn", rows, fraction, 19,
                             100 * round_no + repeat, repeat, capture_first=True)
            )  # fmt: skip


def spread(values: Sequence[float], digits: int) -> str:
    """A report's table cells ``median | min | max`` of ``values``, ``digits`` decimals."""
    return " | ".join(
        f"{v:.{digits}f}" for v in (statistics.median(values), min(values), max(values))
    )


def machine() -> str:
    cpus = os.cpu_count()
    memory = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        memory = f", {kb / 1024 / 1024:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = " (" + line.split(":", 1)[1].strip() + ")"
                break
    except OSError:
        pass
    import pyspark

    return (
        f"{platform.machine()}{model}, {cpus} cores{memory}; Python "
        f"{platform.python_version()}, PySpark {pyspark.__version__}, embedded Spark "
        "local[*] with Iceberg 1.10, driver memory 4g"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a few minutes")
    parser.add_argument(
        "--large", action="store_true",
        help=f"add a {LARGE_ROWS:,}-row master to the size sweep (about 40 minutes more)",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, default=None, help="results folder")
    parser.add_argument(
        "--sweeps", default=",".join(SWEEPS), help=f"comma-separated: {', '.join(SWEEPS)}",
    )  # fmt: skip
    parser.add_argument(
        "--scenarios", default=None,
        help="comma-separated scenarios of the fraction sweep (default: the plan's; "
        f"the shapes: {', '.join(workload.SHAPE_SCENARIOS)})",
    )  # fmt: skip
    args = parser.parse_args()
    sweeps = args.sweeps.split(",")
    unknown = sorted(set(sweeps) - set(SWEEPS))
    if unknown:
        parser.error(f"unknown sweep(s) {', '.join(unknown)}; choose from {', '.join(SWEEPS)}")
    plan = QUICK if args.quick else FULL
    if args.large:
        plan = dataclasses.replace(plan, large=(LARGE_ROWS,))
    if args.scenarios:
        plan = dataclasses.replace(plan, scenarios=tuple(args.scenarios.split(",")))
    out = args.out or HERE / "results" / ("quick" if args.quick else "full")

    from dbt.adapters.fastrefresh.runtime.embedded import start_session

    state = HERE / ".state"
    shutil.rmtree(state, ignore_errors=True)
    spark = start_session(state)
    spark.sparkContext.setLogLevel("ERROR")
    started = time.perf_counter()
    rows_out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        scenarios = sorted({*FRACTION_SCENARIOS, *VIEW_MODE_SCENARIOS, *plan.scenarios})
        project = write_project(Path(tmp), state, workload.views(scenarios))
        dbt = Dbt(project)
        if "fraction" in sweeps:
            fraction_sweep(spark, dbt, plan, rows_out)
        if "size" in sweeps:
            size_sweep(spark, dbt, plan, rows_out)
        if "dimension" in sweeps:
            dimension_sweep(spark, dbt, plan, rows_out)
        if "view_mode" in sweeps:
            view_mode_sweep(spark, dbt, plan, rows_out)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "bench.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        for row in rows_out:
            writer.writerow({k: row.get(k, "") for k in FIELDS})
    minutes = (time.perf_counter() - started) / 60
    report.write(out, machine(), minutes)
    print(f"results in {out} ({minutes:.1f} min)")


if __name__ == "__main__":
    main()
