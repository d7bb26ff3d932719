"""The consistency oracle: after every refresh, each view equals its query recomputed.

Views of every supported shape share logs on three masters (keyed with a full log,
key-less, keyed with a key-only log that makes refreshes read the master by time travel);
join views (projections and aggregates, signed and recomputed) join the two keyed masters,
and one master with itself.
Random DML hits the masters; views refresh in random order; captures and `purge_log`
happen at random points. After each refresh the view (its user columns, duplicates
counted) must equal its query on the pinned master snapshot — nothing changes the
masters between a refresh and its check, so that is the master as it is. A refresh must
be FAST unless the view was built for the first time or `purge_log` took rows it needed
(then COMPLETE, saying so). Run for both log flavours (snaptime marking, commit SCN),
both ways to the protocol's state (the Java API, SQL only), and both purge modes.

The examples of one test share their tables (a fresh set per example would spend most of
the time building views), so each example continues from the state the previous left.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dbt.adapters.fastrefresh import admin
from dbt.adapters.fastrefresh.engine import refresh
from dbt.adapters.fastrefresh.mlog import capture
from dbt.adapters.fastrefresh.mlog import ddl as mlog
from dbt.adapters.fastrefresh.protocol.decisions import ReasonCode
from dbt.adapters.fastrefresh.registry import store as registry
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.functional.sites import env_for, matches

_n = itertools.count()
KEYS = range(1, 9)
GROUPS = ["a", "b", "c", None]

# name -> (query template, master); {s} is the schema.
VIEWS = {
    "proj_keyed": ("SELECT k, g, x FROM {s}.m1 WHERE x > 0", "m1"),
    "proj_hidden_key": ("SELECT g, y FROM {s}.m1 WHERE g <> 'c'", "m1"),
    "agg_signed": (
        "SELECT g, count(*) AS c, sum(x) AS sx, avg(y) AS ay, count(x) AS cx FROM {s}.m1 GROUP BY g",
        "m1",
    ),
    "agg_minmax": (
        "SELECT g, min(x) AS mn, max(y) AS mx, count(DISTINCT x) AS cd FROM {s}.m1 GROUP BY g",
        "m1",
    ),
    "agg_global": ("SELECT count(*) AS c, sum(y) AS sy FROM {s}.m1 WHERE x IS NOT NULL", "m1"),
    "agg_expr": (
        "SELECT upper(g) AS ug, sum(x) * 2 AS s2, sum(y) / count(*) AS r FROM {s}.m1 GROUP BY upper(g)",
        "m1",
    ),
    "distinct": ("SELECT DISTINCT g FROM {s}.m1", "m1"),
    "proj_keyless": ("SELECT g, x FROM {s}.m2 WHERE x IS NULL OR x < 3", "m2"),
    "agg_keyless": ("SELECT g, count(*) AS c, sum(x) AS sx FROM {s}.m2 GROUP BY g", "m2"),
    "agg_key_only_log": ("SELECT g, count(*) AS c, sum(x) AS sx FROM {s}.m3 GROUP BY g", "m3"),
    # Reads no column, so the key-only log serves it: its one-row updates ('U') must not count.
    "agg_key_only_count": ("SELECT count(*) AS c FROM {s}.m3", "m3"),
    # Joins: many-to-many on a non-key column, hidden keys, a key-only log, a self-join.
    "join_on_group": (
        "SELECT a.k, a.x, b.k AS bk, b.x AS bx FROM {s}.m1 a JOIN {s}.m3 b ON a.g = b.g "
        "WHERE a.x > 0 OR b.x IS NULL",
        "m1,m3",
    ),
    "join_hidden_keys": ("SELECT a.g, b.x FROM {s}.m1 a JOIN {s}.m3 b USING (k)", "m1,m3"),
    "join_agg": (
        "SELECT b.g, count(*) AS c, sum(a.x) AS sx, avg(a.y) AS ay FROM {s}.m1 a "
        "JOIN {s}.m3 b ON a.k = b.k GROUP BY b.g",
        "m1,m3",
    ),
    "join_agg_minmax": (
        "SELECT a.g, max(b.x) AS mx, count(*) AS c FROM {s}.m1 a JOIN {s}.m3 b ON a.g = b.g "
        "GROUP BY a.g",
        "m1,m3",
    ),
    "join_self": ("SELECT a.k, b.k AS k2, a.y FROM {s}.m1 a, {s}.m1 b WHERE a.x = b.x + 1", "m1"),
    # HAVING: groups enter and leave the view as their aggregates cross the condition.
    "agg_having": (
        "SELECT g, count(*) AS c, sum(x) AS sx FROM {s}.m1 GROUP BY g "
        "HAVING count(*) > 1 OR sum(x) IS NULL",
        "m1",
    ),
    "agg_having_minmax": ("SELECT g, max(x) AS mx FROM {s}.m2 GROUP BY g HAVING max(x) > 2", "m2"),
    "join_agg_having": (
        "SELECT b.g, count(*) AS c FROM {s}.m1 a JOIN {s}.m3 b ON a.k = b.k GROUP BY b.g "
        "HAVING sum(a.x) > 3",
        "m1,m3",
    ),
    # FILTER clauses (as CASE arguments), DISTINCT and COUNT(DISTINCT) over joins.
    "agg_filter": (
        "SELECT g, sum(x) FILTER (WHERE x > 1) AS sx, count(*) FILTER (WHERE y IS NULL) AS ny, "
        "avg(y) FILTER (WHERE x IS NOT NULL) AS ay FROM {s}.m1 GROUP BY g",
        "m1",
    ),
    "join_distinct": ("SELECT DISTINCT a.g, b.x FROM {s}.m1 a JOIN {s}.m3 b ON a.k = b.k", "m1,m3"),
    "join_count_distinct": (
        "SELECT b.g, count(DISTINCT a.x) AS n FROM {s}.m1 a JOIN {s}.m3 b ON a.g = b.g GROUP BY b.g",
        "m1,m3",
    ),
    # A join with a key-less master (a bag: each distinct row kept with its count, which
    # the view repeats; m2 holds duplicate rows), and aggregates and DISTINCT over one.
    "join_keyless_agg": (
        "SELECT a.g, count(*) AS n, sum(b.x) AS sx FROM {s}.m2 a JOIN {s}.m1 b ON a.g = b.g "
        "GROUP BY a.g",
        "m1,m2",
    ),
    "join_keyless_bag": (
        "SELECT a.g, a.x, b.k FROM {s}.m2 a JOIN {s}.m1 b ON a.g = b.g WHERE b.x IS NOT NULL",
        "m1,m2",
    ),
    "join_keyless_distinct": (
        "SELECT DISTINCT a.x, b.k FROM {s}.m2 a JOIN {s}.m1 b ON a.x = b.x",
        "m1,m2",
    ),
    # Outer joins: many-to-many on a non-key column (NULLs never match), an extra ON term,
    # both sides preserved; the dimension's log holds only its key (images by time travel).
    "outer_left": (
        "SELECT a.k, a.x, b.k AS bk, b.x AS bx FROM {s}.m1 a LEFT JOIN {s}.m3 b ON a.g = b.g",
        "m1,m3",
    ),
    "outer_right": (
        "SELECT a.k, b.k AS bk, b.g FROM {s}.m1 a RIGHT JOIN {s}.m3 b ON a.k = b.k AND a.x > 0",
        "m1,m3",
    ),
    # A staging CTE's filter read through an intermediate CTE: merged into one level, the
    # filter joins the ON of the LEFT JOIN (the NULL-extended side's rows are filtered).
    "outer_left_nested_cte": (
        "WITH f AS (SELECT * FROM {s}.m3 WHERE x > 1), f2 AS (SELECT k, g, x FROM f) "
        "SELECT a.k, a.x, f2.k AS fk, f2.x AS fx FROM {s}.m1 a LEFT JOIN f2 ON a.g = f2.g",
        "m1,m3",
    ),
    "outer_full": (
        "SELECT a.k, a.g, b.k AS bk, b.x AS bx FROM {s}.m1 a FULL OUTER JOIN {s}.m3 b ON a.g = b.g",
        "m1,m3",
    ),
    # Aggregates over outer joins, recomputed by group: grouped by the non-preserved side
    # (the NULL-extended rows' group), by the preserved side with HAVING, and global over
    # a FULL join.
    "outer_agg_dimension": (
        "SELECT b.g, count(*) AS n, sum(a.x) AS sx, count(b.k) AS nb FROM {s}.m1 a "
        "LEFT JOIN {s}.m3 b ON a.k = b.k GROUP BY b.g",
        "m1,m3",
    ),
    "outer_agg_preserved": (
        "SELECT a.g, count(b.k) AS matches, max(b.x) AS mx FROM {s}.m1 a LEFT JOIN {s}.m3 b "
        "ON a.g = b.g GROUP BY a.g HAVING count(*) > 1",
        "m1,m3",
    ),
    "outer_agg_full_global": (
        "SELECT count(a.k) AS na, count(b.k) AS nb, count(*) AS n FROM {s}.m1 a "
        "FULL JOIN {s}.m3 b ON a.g = b.g",
        "m1,m3",
    ),
    # Window functions, recomputed by partition: the latest row per group (NULL groups
    # too), a running sum over a key-only log, dense ranks over a key-less master.
    "window_latest": (
        "SELECT * FROM (SELECT k, g, x, row_number() OVER (PARTITION BY g ORDER BY x DESC, k) "
        "AS rn FROM {s}.m1) r WHERE rn = 1",
        "m1",
    ),
    "window_running": (
        "SELECT k, x, sum(x) OVER (PARTITION BY g ORDER BY k) AS running FROM {s}.m3",
        "m3",
    ),
    "window_rank_keyless": (
        "SELECT g, x FROM (SELECT g, x, dense_rank() OVER (PARTITION BY g ORDER BY x) AS r "
        "FROM {s}.m2) q WHERE r <= 2",
        "m2",
    ),
    # Subquery filters: EXISTS over a key-only log, NOT EXISTS over a key-less one, IN with
    # a hidden key (NULLs in the correlated columns on both sides).
    "semi_exists": (
        "SELECT k, g, x FROM {s}.m1 a WHERE EXISTS (SELECT 1 FROM {s}.m3 b WHERE b.g = a.g "
        "AND b.x > 2)",
        "m1,m3",
    ),
    "anti_exists": (
        "SELECT k, y FROM {s}.m1 a WHERE NOT EXISTS (SELECT 1 FROM {s}.m2 c WHERE c.g = a.g)",
        "m1,m2",
    ),
    "semi_in": (
        "SELECT g, x FROM {s}.m1 WHERE x IN (SELECT x FROM {s}.m3 WHERE g <> 'c')",
        "m1,m3",
    ),
    # UNION ALL: a keyed projection, a key-less one and one over a key-only log, each
    # labelled; a HAVING aggregate, an inner join and a key-less aggregate with m1 in two
    # branches; the latest row per group beside a global aggregate (NULL groups, NULL sums).
    "union_projections": (
        "SELECT k, g, x, 'm1' AS src FROM {s}.m1 WHERE x > 0 UNION ALL SELECT NULL, g, x, 'm2' "
        "FROM {s}.m2 UNION ALL SELECT k, g, x, 'm3' FROM {s}.m3 WHERE g IS NOT NULL",
        "m1,m2,m3",
    ),
    "union_agg_join": (
        "SELECT g, count(*) AS n, sum(x) AS sx FROM {s}.m1 GROUP BY g HAVING count(*) > 1 "
        "UNION ALL SELECT a.g, a.k, b.x FROM {s}.m1 a JOIN {s}.m3 b ON a.k = b.k "
        "UNION ALL SELECT g, count(*), sum(x) FROM {s}.m2 GROUP BY g",
        "m1,m2,m3",
    ),
    "union_window_global": (
        "SELECT g, x FROM (SELECT g, x, row_number() OVER (PARTITION BY g ORDER BY x DESC, k) "
        "AS rn FROM {s}.m1) r WHERE rn = 1 UNION ALL SELECT 'total', sum(x) FROM {s}.m2",
        "m1,m2",
    ),
}
MASTERS = ("m1", "m2", "m3")


def lit(value: Any) -> str:
    if value is None:
        return "NULL"
    return f"'{value}'" if isinstance(value, str) else str(value)


class World:
    """Masters, logs and views in one schema, driven straight through the Python layer."""

    def __init__(
        self,
        spark: Any,
        commit_scn: bool,
        path: str = "java",
        purge: str = "deferred",
        views: Sequence[str] = tuple(VIEWS),
        check_builds: bool = True,
    ) -> None:
        """``check_builds``: check each view right after its first build (callers that
        refresh and check every view later anyway save that check)."""
        self.spark = spark
        self.views = tuple(views)
        self.s = f"oracle_{next(_n)}_{'scn' if commit_scn else 'ts'}_{path}"
        self.env = env_for(spark, f"{self.s}_registry", path)
        self.doomed: set[str] = set()
        self.built: set[str] = set()
        self.refreshes = 0
        # A column added to each master during the walk (c0), which no view reads.
        self.added = dict.fromkeys(MASTERS, 0)
        sql = spark.sql
        sql(f"CREATE SCHEMA {self.s}")
        cow = "'write.update.mode'='copy-on-write'"
        mor = ", ".join(f"'write.{o}.mode'='merge-on-read'" for o in ("update", "delete", "merge"))
        sql(
            f"CREATE TABLE {self.s}.m1 (k BIGINT NOT NULL, g STRING, x INT, y DECIMAL(10,2)) USING iceberg TBLPROPERTIES ({cow})"
        )
        sql(f"ALTER TABLE {self.s}.m1 SET IDENTIFIER FIELDS k")
        sql(f"CREATE TABLE {self.s}.m2 (g STRING, x INT) USING iceberg TBLPROPERTIES ({mor})")
        sql(
            f"CREATE TABLE {self.s}.m3 (k BIGINT NOT NULL, g STRING, x INT) USING iceberg TBLPROPERTIES ({mor})"
        )
        sql(f"ALTER TABLE {self.s}.m3 SET IDENTIFIER FIELDS k")
        sql(
            f"INSERT INTO {self.s}.m1 VALUES (1, 'a', 1, 1.50), (2, 'b', NULL, 2.25), (3, NULL, 4, NULL)"
        )
        sql(f"INSERT INTO {self.s}.m2 VALUES ('a', 1), ('a', 1), (NULL, NULL)")
        sql(f"INSERT INTO {self.s}.m3 VALUES (1, 'a', 5), (2, 'b', 6)")
        for master, columns, key in (("m1", None, None), ("m2", None, []), ("m3", [], None)):
            mlog.create_mview_log(
                self.env,
                f"{self.s}.{master}",
                columns=columns,
                commit_scn=commit_scn,
                key=key,
                purge=purge,
            )
        for view in self.views:
            self.refresh(view, check=check_builds)

    def keys(self, master: str) -> set[int]:
        return {r[0] for r in self.spark.sql(f"SELECT k FROM {self.s}.{master}").collect()}

    def dml(self, master: str, op: str, a: int, b: int, g: Any, v: Any) -> None:
        t = f"{self.s}.{master}"
        keyed = master != "m2"
        if op == "insert":
            if keyed and a in self.keys(master):
                return
            row = {"m1": f"{a}, {lit(g)}, {lit(v)}, {lit(None if v is None else v / 4)}",
                   "m2": f"{lit(g)}, {lit(v)}", "m3": f"{a}, {lit(g)}, {lit(v)}"}[master]  # fmt: skip
            self.spark.sql(f"INSERT INTO {t} VALUES ({row}{', NULL' * self.added[master]})")
        elif op == "update" and self.added[master] and v == 0:
            # Only a column no view reads (added after the log): no log row, no view change.
            where = f"k % 3 = {a % 3}" if keyed else f"g <=> {lit(g)}"
            self.spark.sql(f"UPDATE {t} SET c{self.added[master] - 1} = {a} WHERE {where}")
        elif op == "update":
            column = "x" if v is None or v % 2 else "g"
            value = lit(v) if column == "x" else lit(g)
            where = f"k % 3 = {a % 3}" if keyed else f"x = {v or 0} OR g = {lit(g)}"
            self.spark.sql(f"UPDATE {t} SET {column} = {value} WHERE {where}")
        elif op == "update_key" and keyed:
            present = sorted(self.keys(master))
            free = [k for k in KEYS if k not in present]
            if a not in present or b in present or a == b:
                # Aimed at a key the master has and moved to one it has not, so that a
                # drawn key update changes a row whenever one can (docs/bookkeeping.md,
                # "The default suite's time": the deterministic rounds below cover them).
                if not present or not free:
                    return
                a, b = present[a % len(present)], free[b % len(free)]
            self.spark.sql(f"UPDATE {t} SET k = {b} WHERE k = {a}")
        elif op == "delete" and keyed:
            lo, hi = min(a, b), max(a, b)
            present = sorted(self.keys(master))
            if present and not any(lo <= k <= hi for k in present):
                # The same range moved onto a key the master has (a delete of nothing
                # changes no view).
                lo = present[a % len(present)]
                hi = lo + abs(b - a)
            self.spark.sql(f"DELETE FROM {t} WHERE k BETWEEN {lo} AND {hi}")
        elif op == "delete":
            self.spark.sql(f"DELETE FROM {t} WHERE g <=> {lit(g)}")
        elif op == "merge" and master == "m1":
            self.spark.sql(
                f"MERGE INTO {t} t USING (SELECT CAST({a} AS BIGINT) AS k, {lit(g)} AS g, "
                f"CAST({lit(v)} AS INT) AS x, CAST(1.25 AS DECIMAL(10,2)) AS y"
                + "".join(f", CAST({a} AS INT) AS c{i}" for i in range(self.added[master]))
                + ") s ON t.k = s.k "
                "WHEN MATCHED AND t.k = 4 THEN DELETE WHEN MATCHED THEN UPDATE SET * "
                "WHEN NOT MATCHED THEN INSERT *"
            )

    def alter(self, master: str) -> None:
        """A column added to ``master``, which no view reads: the views stay fast (the
        master columns they read are unchanged) and the log, created before it, goes on
        capturing the columns it has. At most one per master: with two, the Java walk
        took twice as long (110 s against 58 s)."""
        if self.added[master] < 1:
            self.spark.sql(f"ALTER TABLE {self.s}.{master} ADD COLUMN c{self.added[master]} INT")
            self.added[master] += 1

    def refresh(self, view: str, check: bool = True) -> None:
        """Refresh ``view``, assert its refresh type and (``check``) that it equals its query."""
        query, _ = VIEWS[view]
        name = TableName(self.s, view)
        result = refresh.refresh_view(
            self.env, view=name, sql=query.format(s=self.s), method="force",
            exists=view in self.built,
        )  # fmt: skip
        self.refreshes += 1
        code = result.reason.code if result.reason else None
        if view not in self.built:
            assert result.refresh_type == "COMPLETE" and code is ReasonCode.FIRST_BUILD
        elif view in self.doomed:
            assert result.refresh_type == "COMPLETE", f"{view} lost rows to purge_log"
            assert code is ReasonCode.PURGED, result.reason
        else:
            assert result.refresh_type == "FAST", f"{view}: {result.reason}"
        self.built.add(view)
        self.doomed.discard(view)
        if check:
            self.check(view)

    def check(self, view: str) -> None:
        query, _ = VIEWS[view]
        sql = query.format(s=self.s)
        assert matches(self.spark, TableName(self.s, view), sql), f"{view} differs from {sql}"

    def purge(self, master: str) -> None:
        message = admin.purge_log(self.env, f"{self.s}.{master}", 1, "delete")
        marker = "now needing a complete refresh: "
        if marker in message:
            for doomed in message.split(marker, 1)[1].split(", "):
                self.doomed.add(TableName.parse(doomed).table)


dml_step = st.tuples(
    st.just("dml"), st.sampled_from(MASTERS),
    st.sampled_from(["insert", "insert", "update", "update", "update_key", "delete", "merge"]),
    st.sampled_from(KEYS), st.sampled_from(KEYS), st.sampled_from(GROUPS),
    st.one_of(st.none(), st.integers(-2, 6)),
)  # fmt: skip
step = st.one_of(
    dml_step,
    dml_step,
    st.tuples(st.just("refresh"), st.sampled_from(sorted(VIEWS))),
    st.tuples(st.just("refresh"), st.sampled_from(sorted(VIEWS))),
    st.tuples(st.just("capture"), st.sampled_from(MASTERS)),
    st.tuples(st.just("purge"), st.sampled_from(MASTERS)),
    st.tuples(st.just("publish")),  # the end of a dbt invocation: deferred purges run
    st.tuples(st.just("alter"), st.sampled_from(MASTERS)),  # a column no view reads
)


def run_oracle(world: World, examples: int, max_steps: int = 10) -> None:
    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(steps=st.lists(step, min_size=1, max_size=max_steps))
    def oracle(steps: list[tuple[Any, ...]]) -> None:
        for s in steps:
            if s[0] == "dml":
                world.dml(*s[1:])
            elif s[0] == "refresh":
                world.refresh(s[1])
            elif s[0] == "capture":
                capture.capture(world.env, TableName(world.s, s[1]))
            elif s[0] == "purge" and world.refreshes % 3 == 0:
                world.purge(s[1])
            elif s[0] == "publish":
                registry.publish(world.env)
            elif s[0] == "alter":
                world.alter(s[1])

    oracle()
    # Every view catches up with the end state.
    for view in sorted(VIEWS):
        world.refresh(view)


@pytest.fixture(scope="module", autouse=True)
def small_shuffles(spark: Any) -> None:
    spark.conf.set("spark.sql.shuffle.partitions", "2")


CHANGE_KINDS: list[list[tuple[Any, ...]]] = [
    # Rounds of (master, op, a, b, g, v): each kind of change on each master, three refreshes
    # of every view (a refresh costs about 1 s of small Spark jobs, whatever the delta's
    # size, so the kinds share rounds). Round 1: inserts, and measure updates, one of them
    # of a row inserted in the same round; round 2: group-column updates, key updates, a
    # MERGE that inserts; round 3: that MERGE again (now its DELETE branch), a MERGE that
    # updates, and deletes. Rounds change several masters, so join views see both sides
    # change together.
    [("m1", "insert", 5, 0, "a", 3), ("m2", "insert", 0, 0, "b", 2), ("m3", "insert", 5, 0, "c", 1),
     ("m1", "update", 1, 0, "b", 3), ("m2", "update", 0, 0, "a", 1), ("m3", "update", 2, 0, "z", 3)],
    [("m1", "update", 2, 0, "c", 2), ("m3", "update", 1, 0, "b", 4),
     ("m1", "update_key", 5, 7, None, None), ("m3", "update_key", 5, 8, None, None),
     ("m1", "merge", 4, 0, "a", 5)],
    [("m1", "merge", 4, 0, "a", 5), ("m1", "merge", 1, 0, None, None),
     ("m2", "delete", 0, 0, "a", None), ("m1", "delete", 2, 3, None, None),
     ("m3", "delete", 1, 1, None, None)],
]  # fmt: skip


PARTS = 3  # the views in three worlds, so that parallel workers share them


@pytest.mark.parametrize("part", range(PARTS))
@pytest.mark.parametrize(
    "path",
    ["java", pytest.param("sql", marks=pytest.mark.slow)],  # sql: the oracle below
)
def test_every_change_kind_reaches_every_view(spark: Any, path: str, part: int) -> None:
    """Deterministic coverage: each kind of change, then every view it touches refreshes
    and checks."""
    # Round 1 changes every master, so every view is refreshed and checked after its build.
    assert {change[0] for change in CHANGE_KINDS[0]} == set(MASTERS)
    world = World(
        spark, commit_scn=False, path=path, views=sorted(VIEWS)[part::PARTS], check_builds=False
    )
    for round_no, changes in enumerate(CHANGE_KINDS, start=1):
        for change in changes:
            world.dml(*change)
        # The MERGE on key 4 inserted it in round 2 and took its DELETE branch in round 3.
        assert (4 in world.keys("m1")) == (round_no == 2)
        masters = {change[0] for change in changes}
        for view in world.views:
            if masters & set(VIEWS[view][1].split(",")):
                world.refresh(view)


# The default suite's two runs cover both flavours, both paths and both purge modes.
DEFAULT = [(False, "java", "deferred"), (True, "sql", "synchronous")]
ALL = [
    (scn, path, purge)
    for scn in (False, True) for path in ("java", "sql") for purge in ("deferred", "synchronous")
]  # fmt: skip


@pytest.mark.parametrize(
    ("commit_scn", "path", "purge"), DEFAULT, ids=["ts-java-deferred", "scn-sql-sync"]
)
def test_views_equal_their_queries_after_every_refresh(
    spark: Any, commit_scn: bool, path: str, purge: str
) -> None:
    # 50 examples on the Java path, 25 on the SQL path (its statements cost three times
    # as much), over every view of VIEWS. Examples continue each other's state, so short
    # step lists still add up to one long random walk (one to two hundred steps). The
    # slow-marked runs below take 250 examples each, on both paths.
    # The walk ends refreshing and checking every view: the builds need no check of their own.
    world = World(spark, commit_scn, path, purge, check_builds=False)
    run_oracle(world, examples=50 if path == "java" else 25, max_steps=4)
    # Beyond the last catch-up refresh of every view, the walk itself refreshed, and it
    # added columns to the masters.
    assert world.refreshes >= len(VIEWS) + 10
    assert sum(world.added.values()) >= 2, world.added


@pytest.mark.slow
@pytest.mark.parametrize(("commit_scn", "path", "purge"), ALL)
def test_views_equal_their_queries_after_every_refresh_long(
    spark: Any, commit_scn: bool, path: str, purge: str
) -> None:
    run_oracle(World(spark, commit_scn, path, purge), examples=250)
