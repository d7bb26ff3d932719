"""The refresh's pure decisions: the order of fallback reasons, the method checked first."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.iceberg.tables import Found, TableMeta
from dbt.adapters.fastrefresh.mlog.ddl import LoadedLog
from dbt.adapters.fastrefresh.protocol.decisions import ReasonCode, RefreshMethod
from dbt.adapters.fastrefresh.protocol.env import Env
from dbt.adapters.fastrefresh.protocol.state import (
    Flavour,
    LogConfig,
    new_log_state,
)
from dbt.adapters.fastrefresh.sqltext import TableName

T0 = dt.datetime(2026, 1, 1)
T1, T2, T3 = (T0 + dt.timedelta(hours=h) for h in (1, 2, 3))
V = TableName("s", "v")


def log(**changes: object) -> LoadedLog:
    config = LogConfig(
        TableName("s", "t"), TableName("s", "mlog__t"), Flavour.TIMESTAMP, ("k",), ("v",),
        ("k", "v"), False, T0, "inc",
    )  # fmt: skip
    state = new_log_state(T0, 1).replace(last_sequence=10, marked_sequence=10, **changes)
    meta = TableMeta(config.log_table, True, "iceberg", (), 5, {})
    return LoadedLog(config, state, meta, Found(state.to_json(), 5, True))


def test_decide_orders_the_fallback_reasons() -> None:
    from dbt.adapters.fastrefresh.engine.refresh import MasterState, ViewRecord, decide
    from dbt.adapters.fastrefresh.iceberg.columns import Column
    from dbt.adapters.fastrefresh.iceberg.tables import SnapshotInfo
    from dbt.adapters.fastrefresh.ivm.analysis import analyze
    from dbt.adapters.fastrefresh.protocol.state import ViewConfig, ViewState

    name = TableName("s", "t")
    columns = (Column("k", "bigint"), Column("v", "int"))
    plan = analyze("select k, v from s.t", {name: list(columns)}, {name: ["k"]})
    masters = [MasterState(TableMeta(name, True, "iceberg", columns, 3, {}), log())]
    config = ViewConfig(plan.sql, plan.query_hash, "h", "projection", (name,), "", T0)
    state = ViewState("force", "FAST", T1, None)
    meta = TableMeta(V, True, "iceberg", (), 42, {})
    view = ViewRecord(meta, config, state, Found("{}", 42, True))

    def code(**kw: object) -> ReasonCode | None:
        args = {"method": RefreshMethod.FAST, "full_refresh": False, "view": view, "plan": plan,
                "masters": masters, "columns_hash": "h", **kw}  # fmt: skip
        reason = decide(**args)  # type: ignore[arg-type]
        return None if reason is None else reason.code

    assert code() is None
    assert code(method=RefreshMethod.COMPLETE) is ReasonCode.METHOD_COMPLETE
    assert code(full_refresh=True) is ReasonCode.FULL_REFRESH
    assert code(view=None) is ReasonCode.FIRST_BUILD
    unregistered = ViewRecord(meta, None, state, view.found)
    assert code(view=unregistered) is ReasonCode.NOT_REGISTERED
    changed = analyze("select k from s.t", {name: list(columns)}, {name: ["k"]})
    assert code(plan=changed) is ReasonCode.DEFINITION_CHANGED
    assert code(columns_hash="other") is ReasonCode.MASTER_COLUMNS_CHANGED
    # The session's time zone is read (and given) only for a query that reads it; a state
    # from before zones were recorded (None) takes the session's.
    zoned = dataclasses.replace(view, state=dataclasses.replace(state, time_zone="UTC"))
    assert code(view=zoned, time_zone="UTC") is None
    assert code(view=zoned, time_zone="Asia/Tokyo") is ReasonCode.TIME_ZONE_CHANGED
    assert code(view=zoned, time_zone=None) is None
    assert code(time_zone="Asia/Tokyo") is None
    assert code(view=zoned, time_zone="Asia/Tokyo", columns_hash="other") is (
        ReasonCode.MASTER_COLUMNS_CHANGED
    )
    written = Found("{}", 41, True, (SnapshotInfo(42, 41, "overwrite", None),))
    assert code(view=ViewRecord(meta, config, state, written)) is ReasonCode.UNFINISHED
    compacted = Found("{}", 41, True, (SnapshotInfo(42, 41, "replace", None),))
    assert code(view=ViewRecord(meta, config, state, compacted)) is None, "compaction is no change"
    no_log = [MasterState(masters[0].meta, None)]
    assert code(masters=no_log) is ReasonCode.NO_LOG
    # dbt run --empty first; the run after it rebuilds the view (before its definition,
    # which --empty changed), as a view whose storage table is gone does, saying so.
    assert code(empty=True, method=RefreshMethod.COMPLETE) is ReasonCode.EMPTY
    empty = ViewRecord(meta, dataclasses.replace(config, built_empty=True), state, view.found)
    assert code(view=empty, plan=changed) is ReasonCode.BUILT_EMPTY
    lost = decide(**{"method": RefreshMethod.FAST, "full_refresh": False, "view": None,
                     "plan": plan, "masters": masters, "columns_hash": "h",
                     "lost": TableName("s", "v__fr_data")})  # type: ignore[arg-type]  # fmt: skip
    assert lost is not None and lost.code is ReasonCode.FIRST_BUILD
    assert str(lost) == "the view's storage table s.v__fr_data is missing (dropped?): built anew"


def test_a_changed_definition_names_an_upstream_that_switched_materialization() -> None:
    """A model's SQL unchanged, its upstream became a fast_refresh model (read from its
    storage table) or stopped being one: the reason says so, not just "changed"."""
    from dbt.adapters.fastrefresh.engine.refresh import _masters_changed

    a, a_data, b, c = (TableName("s", n) for n in ("a", "a__fr_data", "b", "c"))
    assert _masters_changed((a, b), (b, a)) == ""
    assert _masters_changed((a, b), (a_data, b)) == (
        ": s.a became a fast_refresh model (its rows are read from s.a__fr_data)"
    )
    assert _masters_changed((a_data,), (a,)) == ": s.a is no longer a fast_refresh model"
    assert _masters_changed((a, b), (a_data, c)) == (
        ": s.a became a fast_refresh model (its rows are read from s.a__fr_data); "
        "it reads s.c; it no longer reads s.b"
    )


def test_a_lost_history_is_put_down_to_dbt_only_when_dbt_made_the_table_anew() -> None:
    """A log on a seed or a kept ``table`` model lost its history: the reason says dbt
    replaced the table only when the history says the table was made anew, not when its
    log was created again, rolled back or its snapshots expired. A ``table`` model that
    every run replaces is said to be one whatever the cause."""
    from dbt.adapters.fastrefresh.engine.refresh import _Refresh
    from dbt.adapters.fastrefresh.engine.upstream import Upstream
    from dbt.adapters.fastrefresh.iceberg.tables import SnapshotInfo, chain_after
    from dbt.adapters.fastrefresh.protocol.decisions import Reason

    seed, table, kept = (TableName("s", n) for n in ("seed", "t", "kept"))
    refresh = object.__new__(_Refresh)
    refresh.upstream = (
        Upstream(seed, "seed.p.seed", materialized="seed"),
        Upstream(table, "model.p.t", materialized="table"),
        Upstream(kept, "model.p.kept", materialized="table", keeps_table=True),
    )
    old = {1: SnapshotInfo(1, None, "append", T0), 2: SnapshotInfo(2, 1, "append", T1)}
    histories = {
        "dropped": chain_after({5: SnapshotInfo(5, None, "append", T3)}, 5, 2).gap,
        "replaced": chain_after({**old, 5: SnapshotInfo(5, None, "overwrite", T3)}, 5, 2).gap,
        "rolled back": chain_after({**old, 3: SnapshotInfo(3, 1, "append", T2)}, 3, 2).gap,
    }

    def said(master: TableName, why: str | None) -> str:
        reason = Reason(
            ReasonCode.LOG_YOUNGER,
            f"the materialized view log {master.schema}.mlog__{master.table} is younger than "
            f"the view's last refresh ({why}; Oracle: ORA-12034)",
        )
        return refresh._replaced_by_dbt(master, reason).detail

    dbt_seed = "is a dbt seed whose table its last `dbt seed` dropped and created again"
    assert dbt_seed in said(seed, f"history lost: {histories['dropped']}")
    for why in (f"history lost: {histories['rolled back']}", "log created"):
        assert "dbt seed" not in said(seed, why), why
    kept_replaced = "is a dbt `table` model whose table its last run replaced"
    assert kept_replaced in said(kept, f"history lost: {histories['replaced']}")
    assert "dbt `table` model" not in said(kept, f"history lost: {histories['rolled back']}")
    every_run = "is a dbt `table` model, which every run replaces"
    for why in (f"history lost: {histories['replaced']}", "log created"):
        assert every_run in said(table, why), why


def test_an_unknown_refresh_method_is_refused_before_any_statement() -> None:
    from dbt.adapters.fastrefresh.engine.inspection import refresh_mviews

    class NoStatements:
        kind = "sql"

        def __getattr__(self, name: str) -> object:
            raise AssertionError(f"nothing may be read or written: {name}")

    env = Env(NoStatements(), NoStatements(), "reg")  # type: ignore[arg-type]
    with pytest.raises(
        FastRefreshError,
        match=r"refresh_mviews: method must be 'force', 'fast' or 'complete'.*got 'fats'\. Fix: method: force",
    ):
        refresh_mviews(env, ["s.v"], "fats")
    with pytest.raises(FastRefreshError, match=r"refresh_mviews needs the views to refresh"):
        refresh_mviews(env, [], "force")


def test_column_change_names_what_a_new_query_adds_and_removes() -> None:
    from dbt.adapters.fastrefresh.engine.refresh import ViewRecord, column_change
    from dbt.adapters.fastrefresh.iceberg.columns import Column
    from dbt.adapters.fastrefresh.ivm.analysis import analyze

    name = TableName("s", "t")
    master = [Column("k", "bigint"), Column("v", "int"), Column("w", "int")]
    stored = (Column("k", "bigint"), Column("v", "int"), Column("__fr_multiplicity", "bigint"))
    view = ViewRecord(
        TableMeta(V, True, "iceberg", stored, 1, {}), None, None, Found(None, 1, True)
    )

    def change(sql: str) -> str | None:
        return column_change(view, analyze(sql, {name: master}, {name: []}))

    assert change("select k, v from s.t where v > 0") is None
    assert change("select k, v, w from s.t") == "new column(s) w"
    assert change("select k, w from s.t") == "new column(s) w; column(s) v removed"
    assert change("select v, k from s.t") == "columns reordered (v, k)"
    assert change("select k, v from s.t limit 3") is None, "an unplanned query: not known"


def test_a_rebuild_keeps_the_views_history_only_when_its_definition_is_unchanged() -> None:
    import dataclasses

    from dbt.adapters.fastrefresh.engine.refresh import MasterState, ViewRecord, keeps_history
    from dbt.adapters.fastrefresh.iceberg.columns import Column
    from dbt.adapters.fastrefresh.ivm.analysis import analyze
    from dbt.adapters.fastrefresh.protocol.state import ViewConfig, ViewState

    name = TableName("s", "t")
    columns = [Column("k", "bigint"), Column("v", "int")]
    plan = analyze("select k, v from s.t", {name: columns}, {name: ["k"]})
    config = ViewConfig(plan.sql, plan.query_hash, "h", "projection", (name,), "", T0)
    state = ViewState("force", "FAST", T1, None)
    meta = TableMeta(V, True, "iceberg", tuple(columns), 42, {})
    record = ViewRecord(meta, config, state, Found("{}", 42, True))
    masters = [MasterState(TableMeta(name, True, "iceberg", tuple(columns), 3, {}), None)]
    assert keeps_history(record, config, plan, masters)
    for change in (
        {"query_hash": "other"},
        {"master_schema_hash": "other"},
        {"table_options": "comment 'x'"},
        {"table_properties": {"write.merge.mode": "merge-on-read"}},
    ):
        assert not keeps_history(record, dataclasses.replace(config, **change), plan, masters), (
            change
        )
    # A partitioned view too: the rewrite replaces every row whatever the partitions.
    partitioned = dataclasses.replace(config, table_options="partitioned by (v)")
    assert keeps_history(
        dataclasses.replace(record, config=partitioned), partitioned, plan, masters
    )
    # The table's columns changed by hand, no configuration or no state: replace the table.
    renamed = dataclasses.replace(meta, columns=(Column("k", "bigint"), Column("w", "int")))
    assert not keeps_history(dataclasses.replace(record, meta=renamed), config, plan, masters)
    assert not keeps_history(dataclasses.replace(record, config=None), config, plan, masters)
    assert not keeps_history(dataclasses.replace(record, state=None), config, plan, masters)


def test_the_master_schema_hash_covers_the_columns_the_query_reads() -> None:
    """A column added to a master, or changed, that the view does not read leaves its hash
    (the view stays fast); one it reads, or one of the master's identifier fields, changes
    it. A view built before stored the hash of every column, which is still taken."""
    from dbt.adapters.fastrefresh.engine.refresh import (
        MasterState,
        same_master_columns,
        schema_hash,
    )
    from dbt.adapters.fastrefresh.iceberg.columns import Column
    from dbt.adapters.fastrefresh.ivm.analysis import analyze

    name = TableName("s", "t")

    def hashed(sql: str, *columns: Column, key: tuple[str, ...] = ("k",)) -> str:
        masters = [MasterState(TableMeta(name, True, "iceberg", columns, 3, {}, key), None)]
        return schema_hash(masters, analyze(sql, {name: list(columns)}, {name: []}))

    k, v, w = Column("k", "bigint"), Column("v", "int"), Column("w", "int")
    sql = "select v, count(*) as n from s.t group by v"
    base = hashed(sql, k, v)
    assert hashed(sql, k, v, w) == base, "an added column the query does not read"
    assert hashed(sql, k, Column("w", "string"), v) == base
    assert hashed(sql, k, Column("v", "bigint")) != base, "a read column's type"
    assert hashed(sql, Column("k", "int"), v) != base, "an identifier field's type"
    assert hashed(sql, k, v, key=()) != base
    assert hashed("select * from s.t", k, v, w) != hashed("select * from s.t", k, v)
    assert hashed("select v from s.t limit 1", k, v, w) != hashed("select v from s.t limit 1", k, v)

    # Built before: the hash of every column (k, v, w), taken while they are the same.
    def masters(*columns: Column) -> list[MasterState]:
        return [MasterState(TableMeta(name, True, "iceberg", columns, 3, {}, ("k",)), None)]

    legacy = schema_hash(masters(k, v, w))
    assert legacy != base
    assert same_master_columns(legacy, base, masters(k, v, w))
    assert same_master_columns(base, base, masters(k, v, w))
    assert not same_master_columns(legacy, base, masters(k, v, w, Column("u", "int")))
    wider = Column("v", "bigint")
    assert not same_master_columns(base, hashed(sql, k, wider), masters(k, wider))


def test_a_query_reads_the_fast_refresh_views_it_names_from_their_storage() -> None:
    import types

    from dbt.adapters.fastrefresh.engine.refresh import resolve_views
    from dbt.adapters.fastrefresh.iceberg.columns import Column
    from dbt.adapters.fastrefresh.protocol.state import VIEW_CONFIG

    storage = TableName("s", "agg__fr_data")
    columns = (Column("g", "string"), Column("n", "bigint"), Column("__fr_count", "bigint"))
    stored = {storage: TableMeta(storage, True, "iceberg", columns, 7, {VIEW_CONFIG: "{}"})}
    # s.agg is the model's own view (its fingerprint); s.t and s.old are not views of a
    # model, though a storage table is left at s.old's (another materialization rebuilt it).
    views = {TableName("s", "agg"): {"fast_refresh.view-of": "fingerprint"}}
    stored[TableName("s", "old__fr_data")] = stored[storage]

    def view_entries(name: TableName, keys: tuple[str, ...]) -> tuple[bool, dict[str, str]]:
        assert keys == ("fast_refresh.view-of", "fast_refresh.view-order")
        return name in views, views.get(name, {})

    env = types.SimpleNamespace(
        tables=types.SimpleNamespace(
            load=stored.get, view_entries=view_entries, iceberg_table=lambda name: None
        )
    )
    sql = "select a.g, t.x from s.agg a join s.t t on a.g = t.g"
    assert resolve_views(env, sql) == (  # type: ignore[arg-type]
        "SELECT a.g, t.x FROM (SELECT `g`, `n` FROM `s`.`agg__fr_data`) AS a "
        "JOIN s.t AS t ON a.g = t.g"
    )
    # A view in an order of its own (an enforced contract's) is read in that order, as
    # `select *` over it reads it.
    views[TableName("s", "agg")]["fast_refresh.view-order"] = '["n", "g"]'
    assert resolve_views(env, "select * from s.agg") == (  # type: ignore[arg-type]
        "SELECT * FROM (SELECT `n`, `g` FROM `s`.`agg__fr_data`) AS agg"
    )
    assert resolve_views(env, "select x from s.t") == "select x from s.t"  # type: ignore[arg-type]
    assert resolve_views(env, "select g from s.old") == "select g from s.old"  # type: ignore[arg-type]


def test_a_name_the_path_tells_is_an_iceberg_table_is_not_asked_for_as_a_view() -> None:
    """Where the path tells an Iceberg table cheaply (the Java path), resolve_views asks no
    view property of it and hands its fresh read to load_masters; a name it cannot tell
    is asked as before."""
    import types

    from dbt.adapters.fastrefresh.engine.refresh import resolve_views

    t = TableName("s", "t")
    meta = TableMeta(t, True, "iceberg", (), 3, {})
    asked: list[TableName] = []

    def view_entries(name: TableName, keys: tuple[str, ...]) -> tuple[bool, dict[str, str]]:
        asked.append(name)
        return False, {}

    env = types.SimpleNamespace(
        tables=types.SimpleNamespace(
            load=lambda name: None,
            view_entries=view_entries,
            iceberg_table=lambda name: meta if name == t else None,
        )
    )
    read: dict[TableName, TableMeta] = {}
    sql = "select t.x from s.t t join s.u u on t.k = u.k"
    assert resolve_views(env, sql, read) == sql  # type: ignore[arg-type]
    assert asked == [TableName("s", "u")]
    assert read == {t: meta}


def test_qualify_becomes_a_filter_on_a_derived_table() -> None:
    import types

    from dbt.adapters.fastrefresh.engine.refresh import resolve_views

    env = types.SimpleNamespace(
        tables=types.SimpleNamespace(
            load=lambda name: None,
            view_entries=lambda name, keys: (False, {}),
            iceberg_table=lambda name: None,
        )
    )
    sql = "select k, g from s.t qualify row_number() over (partition by g order by k desc) = 1"
    assert resolve_views(env, sql) == (  # type: ignore[arg-type]
        "SELECT k, g FROM (SELECT k, g, ROW_NUMBER() OVER (PARTITION BY g ORDER BY k DESC) "
        "AS _w FROM s.t) AS _t WHERE _w = 1"
    )


def test_a_table_spark_cannot_find_is_named_when_the_query_reads_it() -> None:
    from dbt.adapters.fastrefresh.engine.refresh import _missing_read

    sql = "SELECT a.k FROM s.t a JOIN `s`.`u` b ON a.k = b.k"
    said = (
        "[TABLE_OR_VIEW_NOT_FOUND] The table or view `spark_catalog`.`s`.`u` cannot be found. "
        "Verify the spelling... SQLSTATE: 42P01; line 1 pos 30;\n'Project [...]"
    )
    assert _missing_read(Exception(said), sql) == TableName("s", "u")
    assert _missing_read(Exception(said.replace("`u`", "`other`")), sql) is None
    assert _missing_read(Exception("The table or view t cannot be found"), sql) is None
    assert _missing_read(Exception("another error"), sql) is None


def test_a_rows_error_is_told_from_the_statements_and_the_clusters() -> None:
    from dbt.adapters.fastrefresh.engine.refresh import _row_error

    task = (
        "An error occurred while calling o69.sql.\n: org.apache.spark.SparkException: Job "
        "aborted due to stage failure: Task 1 in stage 38.0 failed 1 times, most recent "
        "failure: Lost task 1.0 (TID 35) (host executor driver): {}\n\tat org.apache..."
    )
    divide = "org.apache.spark.SparkArithmeticException: [DIVIDE_BY_ZERO] Division by zero."
    assert _row_error(task.format(divide)) == "[DIVIDE_BY_ZERO] Division by zero"
    spark4 = "[USER_RAISED_EXCEPTION] negative i SQLSTATE: P0001"
    assert _row_error(task.format(spark4)) == "[USER_RAISED_EXCEPTION] negative i"
    # raise_error / assert_true in Spark 3.5: a plain RuntimeException, the user's words.
    assert _row_error(task.format("java.lang.RuntimeException: 'x > 0' is not true!")) == (
        "raise_error/assert_true said ''x > 0' is not true!'"
    )
    # A subclass class names itself; the cluster's and the statement's errors are no row's.
    assert _row_error(task.format("[CAST_INVALID_INPUT] The value 'a' ...")) is not None
    assert _row_error(task.format("java.io.FileNotFoundException: s3://b/f.parquet")) is None
    assert _row_error(task.format("org.apache.spark.SparkRuntimeException: [MERGE_CARDINALITY_VIOLATION] x")) is None  # fmt: skip
    assert _row_error("[DIVIDE_BY_ZERO] Division by zero. (while constant folding)") is None
    long = _row_error(task.format(divide + " " + "x" * 400))
    assert long is not None and len(long) == 300 and long.endswith("...")


def test_a_copy_on_write_view_takes_one_statement_while_it_has_few_files_or_bytes() -> None:
    import dataclasses

    from dbt.adapters.fastrefresh.engine import refresh as r
    from dbt.adapters.fastrefresh.protocol.state import ViewConfig, ViewState

    config = ViewConfig("select 1", "q", "h", "projection", (), "", T0)
    meta = TableMeta(V, True, "iceberg", (), 42, {})
    small = r.ViewRecord(meta, config, ViewState("force", "FAST", T1, None), Found("{}", 42, True))
    mb = 1 << 20

    def overwrites(files: int | None, size: int | None, cfg: ViewConfig = config) -> bool:
        record = dataclasses.replace(small, config=cfg, data_files=files, data_bytes=size)
        return r.overwrites(record)

    most = r.OVERWRITE_MAX_BYTES
    assert overwrites(r.OVERWRITE_MAX_FILES, 900 * mb), "two files: a MERGE rewrites both"
    assert overwrites(40, most) and not overwrites(40, most + 1)
    assert not overwrites(3, None), "a size not known (an older SQL-path state): by files"
    assert not overwrites(None, 1), "nothing known: a MERGE"
    mor = dataclasses.replace(config, table_properties={"write.merge.mode": "merge-on-read"})
    assert not overwrites(1, 1, mor), "a merge-on-read MERGE rewrites nothing"
