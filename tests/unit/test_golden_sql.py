"""Golden SQL: the statements the planner and capture generate, pinned without Spark.

Each case feeds a view's query and its masters' log metadata (or a capture's commits) to
the pure SQL builders and compares the statement with ``tests/unit/golden/<case>.sql``,
both normalized by sqlglot (parsed and pretty-printed, so whitespace does not count but
every clause does). What these statements compute is checked elsewhere, against Spark:
the consistency oracle (``tests/functional/test_oracle.py``, whose views these cases
reuse) runs them and compares every view with its query recomputed. These files pin them,
so that a refactoring of the builders is provably behaviour-neutral: it leaves every file
unchanged.

A deliberate change of a statement: run with ``FASTREFRESH_UPDATE_GOLDEN=1`` to rewrite
the files, then read their diff and commit it with the change.

The log flavour (timestamp or commit SCN) does not reach a delta statement: a refresh
reads whole captures by ``capture__`` either way (``mlog.consumers.Setup.range_predicate``),
so the delta cases run once; the capture cases run for both flavours.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlglot

from dbt.adapters.fastrefresh.iceberg.changes import (
    Bounds,
    DataFile,
    SnapshotChanges,
    reads_of,
)
from dbt.adapters.fastrefresh.iceberg.columns import AtSnapshot, Column
from dbt.adapters.fastrefresh.iceberg.tables import CaptureReads, RowSource, SnapshotInfo
from dbt.adapters.fastrefresh.ivm import sqlgen
from dbt.adapters.fastrefresh.ivm.analysis import ViewPlan, analyze
from dbt.adapters.fastrefresh.mlog.capture_sql import capture_statement
from dbt.adapters.fastrefresh.protocol.state import Flavour, LogConfig
from dbt.adapters.fastrefresh.sqltext import TableName

GOLDEN = Path(__file__).with_name("golden")
UPDATE = os.environ.get("FASTREFRESH_UPDATE_GOLDEN") == "1"

# The oracle's masters: m1 keyed with a full log, m2 key-less, m3 keyed with a key-only log.
S = "g"
M1, M2, M3 = TableName(S, "m1"), TableName(S, "m2"), TableName(S, "m3")
COLUMNS = {
    M1: [Column("k", "bigint"), Column("g", "string"), Column("x", "int"),
         Column("y", "decimal(10,2)")],
    M2: [Column("g", "string"), Column("x", "int")],
    M3: [Column("k", "bigint"), Column("g", "string"), Column("x", "int")],
}  # fmt: skip
KEYS = {M1: ["k"], M3: ["k"]}
LOGS = {
    M1: ("k",),  # the log holds every column
    M2: (),  # key-less: every column, no key
    M3: ("k",),  # key-only: the key alone
}
PINS = {M1: 21, M2: 22, M3: 23}
OLD_PINS = {M1: 11, M2: 12, M3: 13}
LOG_PINS = {M1: 31, M2: 32, M3: 33}  # the log snapshots the refresh's setup left


def log_source(master: TableName) -> sqlgen.LogSource:
    names = tuple(c.name for c in COLUMNS[master])
    logged = ("k",) if master == M3 else names
    return sqlgen.LogSource(
        TableName(S, f"mlog__{master.table}"), "capture__ > 4 AND capture__ <= 7",
        LOGS[master], names, logged, LOG_PINS[master],
    )  # fmt: skip


def source(plan: ViewPlan, master: TableName) -> sqlgen.Source:
    """What a refresh reads a master's changes from (``refresh.RefreshRun`` decides alike):
    its log, or for a single-table view reading columns the log lacks, the master's rows of
    the changed keys by time travel."""
    log = log_source(master)
    if plan.shape == "join" or set(plan.columns_read_of(master)) <= set(log.logged):
        return log
    return sqlgen.MasterSource(log, master, OLD_PINS[master], PINS[master])


def types_of(plan: ViewPlan) -> dict[str, str]:
    """The view's column types (what its table holds): counts BIGINT, hidden sums
    DECIMAL(20,2) (the sum of a DECIMAL(10,2), averaged as in ``AVG_TYPES``), the rest
    DOUBLE; enough for the casts the statements make."""

    def kind(column: str) -> str:
        if column == "__fr_having":
            return "BOOLEAN"
        if "count" in column or "cnt" in column:
            return "BIGINT"
        return "decimal(20,2)" if column.startswith("__fr_sum_") else "DOUBLE"

    return {c: kind(c) for c in plan.view_columns}


# name -> (query, the masters whose changes the delta applies). {s}: the schema.
VIEWS = {
    "projection_keyed": ("SELECT k, g, x FROM {s}.m1 WHERE x > 0", (M1,)),
    "projection_hidden_key": ("SELECT g, y FROM {s}.m1 WHERE g <> 'c'", (M1,)),
    "projection_keyless": ("SELECT g, x FROM {s}.m2 WHERE x IS NULL OR x < 3", (M2,)),
    # A key-only log: the changed keys' rows read from the master by time travel.
    "projection_key_only_log": ("SELECT k, x FROM {s}.m3 WHERE x > 0", (M3,)),
    "aggregate_signed": (
        "SELECT g, count(*) AS c, sum(x) AS sx, avg(y) AS ay, count(x) AS cx FROM {s}.m1 "
        "GROUP BY g",
        (M1,),
    ),
    "aggregate_minmax": (
        "SELECT g, min(x) AS mn, max(y) AS mx, count(DISTINCT x) AS cd FROM {s}.m1 GROUP BY g",
        (M1,),
    ),
    "aggregate_global": (
        "SELECT count(*) AS c, sum(y) AS sy FROM {s}.m1 WHERE x IS NOT NULL",
        (M1,),
    ),
    "aggregate_expression": (
        "SELECT upper(g) AS ug, sum(x) * 2 AS s2, sum(y) / count(*) AS r FROM {s}.m1 "
        "GROUP BY upper(g)",
        (M1,),
    ),
    "distinct": ("SELECT DISTINCT g FROM {s}.m1", (M1,)),
    "aggregate_keyless": ("SELECT g, count(*) AS c, sum(x) AS sx FROM {s}.m2 GROUP BY g", (M2,)),
    "aggregate_key_only_log": (
        "SELECT g, count(*) AS c, sum(x) AS sx FROM {s}.m3 GROUP BY g",
        (M3,),
    ),
    "join_on_group": (
        "SELECT a.k, a.x, b.k AS bk, b.x AS bx FROM {s}.m1 a JOIN {s}.m3 b ON a.g = b.g "
        "WHERE a.x > 0 OR b.x IS NULL",
        (M1, M3),
    ),
    "join_one_side_changed": (
        "SELECT a.k, a.x, b.k AS bk, b.x AS bx FROM {s}.m1 a JOIN {s}.m3 b ON a.g = b.g",
        (M3,),
    ),
    # One input changed, its log holding what the view reads: its images, and the keys
    # its range added checked against the view (render.KeyGuard).
    "join_images_one_side_changed": (
        "SELECT a.k, a.x, b.k AS bk, b.x AS bx FROM {s}.m1 a JOIN {s}.m3 b ON a.g = b.g",
        (M1,),
    ),
    "join_hidden_keys": ("SELECT a.g, b.x FROM {s}.m1 a JOIN {s}.m3 b USING (k)", (M1, M3)),
    "join_aggregate": (
        "SELECT b.g, count(*) AS c, sum(a.x) AS sx, avg(a.y) AS ay FROM {s}.m1 a "
        "JOIN {s}.m3 b ON a.k = b.k GROUP BY b.g",
        (M1, M3),
    ),
    "join_aggregate_minmax": (
        "SELECT a.g, max(b.x) AS mx, count(*) AS c FROM {s}.m1 a JOIN {s}.m3 b ON a.g = b.g "
        "GROUP BY a.g",
        (M1, M3),
    ),
    "join_self": ("SELECT a.k, b.k AS k2, a.y FROM {s}.m1 a, {s}.m1 b WHERE a.x = b.x + 1", (M1,)),
    # HAVING: a hidden boolean output per group, maintained as the outputs are.
    "aggregate_having": (
        "SELECT g, count(*) AS c, sum(x) AS sx FROM {s}.m1 GROUP BY g HAVING count(*) > 1 "
        "AND sum(y) IS NOT NULL",
        (M1,),
    ),
    "aggregate_having_minmax": (
        "SELECT g, max(x) AS mx FROM {s}.m1 GROUP BY g HAVING max(x) > 2 OR count(*) = 1",
        (M1,),
    ),
    "join_aggregate_having": (
        "SELECT b.g, count(*) AS c FROM {s}.m1 a JOIN {s}.m3 b ON a.k = b.k GROUP BY b.g "
        "HAVING avg(a.y) > 1",
        (M1, M3),
    ),
    "outer_left": (
        "SELECT a.k, a.x, b.k AS bk, b.x AS bx FROM {s}.m1 a LEFT JOIN {s}.m3 b ON a.g = b.g",
        (M1, M3),
    ),
    "outer_right_one_side": (
        "SELECT a.k, b.k AS bk, b.g FROM {s}.m1 a RIGHT JOIN {s}.m3 b ON a.k = b.k AND a.x > 0",
        (M1,),
    ),
    "outer_full": (
        "SELECT a.k, a.g, b.k AS bk, b.x AS bx FROM {s}.m1 a FULL OUTER JOIN {s}.m3 b ON a.g = b.g",
        (M1, M3),
    ),
    "join_keyless_aggregate": (
        "SELECT a.g, count(*) AS n, sum(b.x) AS sx FROM {s}.m2 a JOIN {s}.m1 b ON a.g = b.g "
        "GROUP BY a.g",
        (M1, M2),
    ),
    "join_keyless_bag": (
        "SELECT a.g, a.x, b.k FROM {s}.m2 a JOIN {s}.m1 b ON a.g = b.g WHERE b.x IS NOT NULL",
        (M1, M2),
    ),
    "outer_aggregate_dimension": (
        "SELECT b.g, count(*) AS n, sum(a.x) AS sx, count(b.k) AS nb FROM {s}.m1 a "
        "LEFT JOIN {s}.m3 b ON a.k = b.k GROUP BY b.g",
        (M1, M3),
    ),
    "outer_aggregate_preserved": (
        "SELECT a.g, count(b.k) AS matches, max(b.x) AS mx FROM {s}.m1 a LEFT JOIN {s}.m3 b "
        "ON a.g = b.g GROUP BY a.g HAVING count(*) > 1",
        (M3,),
    ),
    "outer_aggregate_full_global": (
        "SELECT count(a.k) AS na, count(b.k) AS nb, count(*) AS n FROM {s}.m1 a "
        "FULL JOIN {s}.m3 b ON a.g = b.g",
        (M1,),
    ),
    "aggregate_filter": (
        "SELECT g, sum(x) FILTER (WHERE x > 1) AS sx, count(*) FILTER (WHERE y IS NULL) AS ny "
        "FROM {s}.m1 GROUP BY g",
        (M1,),
    ),
    # Window functions: the latest row per key (a key-only log: images by time travel),
    # a running sum over the whole query, ranks over a key-less log.
    "window_latest_row": (
        "SELECT * FROM (SELECT k, g, x, row_number() OVER (PARTITION BY g ORDER BY x DESC, k) "
        "AS rn FROM {s}.m3) r WHERE rn = 1",
        (M3,),
    ),
    "window_running_sum": (
        "SELECT k, x, sum(x) OVER (PARTITION BY g ORDER BY k) AS running FROM {s}.m1",
        (M1,),
    ),
    "window_rank_keyless": (
        "SELECT g, x FROM (SELECT g, x, dense_rank() OVER (PARTITION BY g ORDER BY x) AS r "
        "FROM {s}.m2) q WHERE r <= 2",
        (M2,),
    ),
    # UNION ALL: projections of the three logs' masters (the key-only one by time travel),
    # an aggregate with HAVING beside a join of a master in two branches, a window beside
    # a global aggregate.
    "union_projections": (
        "SELECT k, g, x, 'm1' AS src FROM {s}.m1 WHERE x > 0 UNION ALL SELECT NULL, g, x, 'm2' "
        "FROM {s}.m2 UNION ALL SELECT k, g, x, 'm3' FROM {s}.m3 WHERE g IS NOT NULL",
        (M1, M2, M3),
    ),
    "union_agg_join": (
        "SELECT g, count(*) AS n, sum(x) AS sx FROM {s}.m1 GROUP BY g HAVING count(*) > 1 "
        "UNION ALL SELECT a.g, a.k, b.x FROM {s}.m1 a JOIN {s}.m3 b ON a.k = b.k",
        (M1,),
    ),
    "union_window_global": (
        "SELECT g, x FROM (SELECT g, x, row_number() OVER (PARTITION BY g ORDER BY x DESC, k) "
        "AS rn FROM {s}.m1) r WHERE rn = 1 UNION ALL SELECT 'total', sum(x) FROM {s}.m2",
        (M1, M2),
    ),
    # Subquery filters: the outer table's changes alone, a subquery's table's (key-less
    # and key-only logs), both at once, and a table filtered by itself.
    "semi_outer_changed": (
        "SELECT k, g FROM {s}.m1 a WHERE x > 0 AND EXISTS (SELECT 1 FROM {s}.m3 b "
        "WHERE b.g = a.g AND b.x > 5)",
        (M1,),
    ),
    "semi_inner_changed": (
        "SELECT k, g FROM {s}.m1 a WHERE g IN (SELECT g FROM {s}.m2 WHERE x IS NOT NULL)",
        (M2,),
    ),
    "semi_anti_both_changed": (
        "SELECT g, x FROM {s}.m1 a WHERE NOT EXISTS (SELECT 1 FROM {s}.m3 b WHERE b.g = a.g)",
        (M1, M3),
    ),
    "semi_self": (
        "SELECT k FROM {s}.m1 a WHERE EXISTS (SELECT 1 FROM {s}.m1 c WHERE c.k = a.x)",
        (M1,),
    ),
}
# Shapes a small copy-on-write view takes its delta for as one statement replacing it.
OVERWRITE = (
    "projection_keyed", "projection_key_only_log", "projection_keyless", "semi_outer_changed",
    "aggregate_signed", "aggregate_minmax",
    "join_aggregate", "join_on_group", "join_hidden_keys", "join_images_one_side_changed",
    "outer_left", "outer_full",
    "outer_aggregate_full_global", "window_latest_row", "union_projections",
)  # fmt: skip
AVG_TYPES = {"m1.y": "decimal(14,6)", "a.y": "decimal(14,6)"}


def normalized(sql: str) -> str:
    return sqlglot.transpile(sql, read="spark", write="spark", pretty=True)[0] + "\n"


def check(name: str, sql: str) -> None:
    path = GOLDEN / f"{name}.sql"
    got = normalized(sql)
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(got)
    assert path.exists(), f"no golden file {path}: run with FASTREFRESH_UPDATE_GOLDEN=1"
    assert got == path.read_text(), f"{name}: the statement differs from {path}"


def plan_of(name: str) -> ViewPlan:
    plan = analyze(VIEWS[name][0].format(s=S), COLUMNS, KEYS)  # type: ignore[arg-type]
    assert plan.supported, plan.reason
    return plan


def delta(name: str, overwrite: bool = False) -> str:
    plan = plan_of(name)
    sources = {m: source(plan, m) for m in VIEWS[name][1]}
    target = sqlgen.Target(TableName(S, name), types_of(plan), AVG_TYPES, overwrite=overwrite)
    return sqlgen.delta_statement(plan, target, sources, pins=PINS, old_pins=OLD_PINS)


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_the_delta_statement_of_each_shape(name: str) -> None:
    check(f"delta_{name}", delta(name))


@pytest.mark.parametrize("name", OVERWRITE)
def test_the_overwrite_form_of_a_small_view(name: str) -> None:
    check(f"overwrite_{name}", delta(name, overwrite=True))


def test_a_full_join_of_identifier_keys_computes_no_null_key_closure() -> None:
    """Keys that are Iceberg identifier fields are never NULL: the closure of the rows a
    NULL key reaches (planned again at each of its references) is left out."""
    plan = plan_of("outer_full")
    sources = {m: source(plan, m) for m in VIEWS["outer_full"][1]}
    target = sqlgen.Target(
        TableName(S, "outer_full"), types_of(plan), AVG_TYPES, required_keys=frozenset({M1, M3})
    )
    sql = sqlgen.delta_statement(plan, target, sources, pins=PINS, old_pins=OLD_PINS)
    check("delta_outer_full_required_keys", sql)
    assert "__fr_nullrows" not in sql and "__fr_nullrows" in delta("outer_full")
    # One side's key may be NULL: the closure stays.
    one = sqlgen.Target(TableName(S, "outer_full"), types_of(plan), required_keys=frozenset({M1}))
    assert "__fr_nullrows" in sqlgen.delta_statement(
        plan, one, sources, pins=PINS, old_pins=OLD_PINS
    )


def test_the_null_key_probe_of_a_full_join() -> None:
    """The one query that lets a FULL join's delta leave the closure out (its value 0):
    the data files' NULL counts of each key not required, at the pinned snapshot, and the
    log range's NULL keys of each master with changes. None where nothing is asked."""
    plan = plan_of("outer_full")
    sources = {M1: source(plan, M1)}  # m3 has no changes: its pinned rows alone
    check("probe_outer_full", sqlgen.null_key_probe(plan, sources, PINS, frozenset()) or "")
    only = sqlgen.null_key_probe(plan, sources, PINS, frozenset({M1}))
    assert only is not None and "m1" not in only and "`m3`.`files` VERSION AS OF 23" in only
    assert sqlgen.null_key_probe(plan, sources, PINS, frozenset({M1, M3})) is None
    # Images from the master by time travel: its NULL counts at the view's earlier
    # snapshot too, and its log range's keys.
    by_master = {M3: sqlgen.MasterSource(log_source(M3), M3, OLD_PINS[M3], PINS[M3])}
    both = sqlgen.null_key_probe(plan, by_master, PINS, frozenset({M1})) or ""
    assert "`m3`.`files` VERSION AS OF 23" in both and "`m3`.`files` VERSION AS OF 13" in both
    assert "`mlog__m3` VERSION AS OF 33" in both
    assert sqlgen.null_key_probe(plan_of("outer_left"), sources, PINS, frozenset()) is None


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_the_complete_refresh_select_of_each_shape(name: str) -> None:
    check(f"complete_{name}", sqlgen.complete_select(plan_of(name), PINS))


# -- capture ----------------------------------------------------------------------------

T0 = dt.datetime(2026, 1, 1, 12, 30)
KV = [Column("k", "bigint"), Column("v", "int"), Column("w", "string")]


def log_config(flavour: Flavour, key: tuple[str, ...], logged: tuple[str, ...]) -> LogConfig:
    return LogConfig(
        TableName(S, "t"), TableName(S, "mlog__t"), flavour, key, logged, ("k", "v", "w"),
        not key, T0, "incarnation",
    )  # fmt: skip


def snapshot(sid: int, parent: int, operation: str, files: int) -> SnapshotInfo:
    return SnapshotInfo(sid, parent, operation, T0, {"total-data-files": str(files)})


def bounds(lo: int, hi: int) -> tuple[Bounds, ...]:
    return (Bounds("k", "bigint", str(lo), str(hi), False, False),)


# Three commits of the SQL path: a copy-on-write update (file a rewritten as b), a
# merge-on-read delete (position deletes into b), an append (file c).
CHANGES = [
    SnapshotChanges(
        snapshot(7, 6, "overwrite", 4), 0,
        added=[DataFile("b", bounds(1, 50))], removed=[DataFile("a", bounds(1, 50))],
    ),
    SnapshotChanges(
        snapshot(8, 7, "delete", 4), 1,
        deleted_from=[DataFile("b", bounds(1, 50))], delete_files=["d1"],
    ),
    SnapshotChanges(snapshot(9, 8, "append", 5), 2, added=[DataFile("c", bounds(51, 60))]),
]  # fmt: skip
APPENDS = CaptureReads(
    ((0, snapshot(7, 6, "append", 2)),), (RowSource("SELECT k, v, w FROM appended", {0: 1}),)
)
LOG_KINDS: dict[str, Callable[[Flavour], LogConfig]] = {
    "keyed": lambda f: log_config(f, ("k",), ("v", "w")),
    "keyed_some_columns": lambda f: log_config(f, ("k",), ("v",)),
    "key_only": lambda f: log_config(f, ("k",), ()),
    "keyless": lambda f: log_config(f, (), ("k", "v", "w")),
}


@pytest.mark.parametrize("flavour", list(Flavour), ids=lambda f: f.value)
@pytest.mark.parametrize("kind", sorted(LOG_KINDS))
def test_the_capture_statement_of_each_log_kind(kind: str, flavour: Flavour) -> None:
    config = LOG_KINDS[kind](flavour)
    reads = reads_of(config.master, KV, CHANGES)
    check(f"capture_{kind}_{flavour.value}", capture_statement(config, KV, reads, 41))


def test_a_capture_without_rewrites_pairs_by_key_at_once() -> None:
    # The merge-on-read delete and the append of CHANGES: no whole file removed.
    config = LOG_KINDS["keyed"](Flavour.COMMIT_SCN)
    reads = reads_of(config.master, KV, CHANGES[1:])
    check("capture_keyed_merge_on_read", capture_statement(config, KV, reads, 41))


@pytest.mark.parametrize("flavour", list(Flavour), ids=lambda f: f.value)
def test_a_capture_inside_a_refresh_is_stamped_and_appends_need_no_netting(
    flavour: Flavour,
) -> None:
    config = LOG_KINDS["keyed"](flavour)
    check(
        f"capture_stamped_appends_{flavour.value}",
        capture_statement(config, KV, APPENDS, 0, stamp=T0),
    )


def test_a_capture_reads_columns_its_first_snapshot_lacks_as_null() -> None:
    # Snapshot 6 (the log's first) predates w; 7, read for the delete of snapshot 8, has it.
    reads = reads_of(TableName(S, "t"), KV, CHANGES, absent={6: AtSnapshot(frozenset({"w"}))})
    texts = [source.sql for source in reads.sources]
    null_w = "CAST(NULL AS string) AS `w`"
    at_6 = [t for t in texts if "VERSION AS OF 6 " in t]
    assert at_6 and all(null_w in t for t in at_6)
    others = [t for t in texts if "VERSION AS OF 6 " not in t]
    assert others and not any("CAST(NULL" in t for t in others)
    assert [s.sql for s in reads_of(TableName(S, "t"), KV, CHANGES).sources] == [
        t.replace(null_w, "`w`") for t in texts
    ]
    # A column renamed since snapshot 6 is read there by its old name, and its bounds
    # (under the new one) prune nothing there: Spark would not resolve the new name.
    renamed = reads_of(TableName(S, "t"), KV, CHANGES, absent={6: AtSnapshot(renamed={"k": "k0"})})
    at_6 = [r.sql for r in renamed.sources if "VERSION AS OF 6 " in r.sql]
    assert at_6 and all(t.startswith("SELECT `k0` AS `k`, `v`, `w` FROM") for t in at_6)
    assert all("`k` BETWEEN" not in t and t.endswith("AND TRUE") for t in at_6), at_6
    others = [r.sql for r in renamed.sources if "VERSION AS OF 6 " not in r.sql]
    assert others and all("`k` BETWEEN" in t for t in others if "VERSION AS OF" in t)


def test_a_complete_refresh_reads_a_master_older_than_some_columns_with_them_as_null() -> None:
    # m3 at snapshot 23 predates x.
    fill = sqlgen.filled_read(M3, 23, COLUMNS[M3], AtSnapshot(frozenset({"x"})))
    assert fill == f"SELECT `k`, `g`, CAST(NULL AS int) AS `x` FROM {M3.sql} VERSION AS OF 23"
    got = sqlgen.complete_select(plan_of("join_hidden_keys"), PINS, {M3: fill})
    assert (
        "FROM g.m1 VERSION AS OF 21 AS a JOIN (SELECT `k`, `g`, CAST(NULL AS INT) AS `x` FROM "
        "`g`.`m3` VERSION AS OF 23) AS b ON a.k = b.k"
    ) in got
    plain = sqlgen.complete_select(plan_of("join_hidden_keys"), PINS)
    assert "g.m3 VERSION AS OF 23 AS b" in plain and "CAST(NULL" not in plain
    # A self-join reads the master through the fill under each of its aliases.
    selfjoin = sqlgen.complete_select(plan_of("join_self"), PINS, {M1: "SELECT 1 AS k"})
    assert "FROM (SELECT 1 AS k) AS a CROSS JOIN (SELECT 1 AS k) AS b WHERE" in selfjoin
