"""The protocol's state: its JSON, and finding the newest one on a table's history."""

from __future__ import annotations

import dataclasses
import datetime as dt

from dbt.adapters.fastrefresh.iceberg.columns import AtSnapshot
from dbt.adapters.fastrefresh.iceberg.tables import (
    SnapshotInfo,
    TableMeta,
    chain_after,
    latest_state,
)
from dbt.adapters.fastrefresh.protocol.state import (
    Claim,
    Flavour,
    LogConfig,
    LogState,
    Position,
    PurgeMode,
    ViewConfig,
    ViewState,
    new_log_state,
)
from dbt.adapters.fastrefresh.sqltext import DEFAULT_REDACTION, TableName

T0 = dt.datetime(2026, 1, 1, 2, 3, 4, 567)
T1 = T0 + dt.timedelta(hours=1)


def test_states_round_trip_through_json() -> None:
    config = LogConfig(
        TableName("s", "t"), TableName("s", "mlog__t"), Flavour.COMMIT_SCN, ("k",), ("v",),
        ("k", "v"), False, T0, "inc", PurgeMode.SYNCHRONOUS,
    )  # fmt: skip
    assert LogConfig.from_json(config.to_json()) == config
    assert "master_field_ids" not in config.to_json()  # a SQL-path log's, as before
    with_ids = dataclasses.replace(config, master_field_ids=(1, 2))
    assert LogConfig.from_json(with_ids.to_json()) == with_ids
    # A log whose first snapshot lacks columns added before it was created (else as before).
    assert "added_after_start" not in config.to_json() and config.absent_at() == {}
    added = dataclasses.replace(config, start_snapshot=7, added_after_start=("v",))
    assert LogConfig.from_json(added.to_json()) == added
    assert added.absent_at() == {7: AtSnapshot(absent=frozenset({"v"}))}
    # ... or has a column under the name it had before a RENAME COLUMN.
    renamed = dataclasses.replace(config, start_snapshot=7, renamed_after_start=(("v", "u"),))
    assert LogConfig.from_json(renamed.to_json()) == renamed
    assert renamed.absent_at() == {7: AtSnapshot(renamed={"v": "u"})}
    # The log table's columns with their types (a log created before they were: none).
    assert "column_types" not in config.to_json()
    typed = dataclasses.replace(config, column_types=(("k", "bigint"), ("v", "decimal(10,2)")))
    assert LogConfig.from_json(typed.to_json()) == typed
    # A key taken from the master's identifier fields (a log created before: a chosen key).
    assert "key_from_identifiers" not in config.to_json()
    assert not LogConfig.from_json(config.to_json()).key_from_identifiers
    identified = dataclasses.replace(config, key_from_identifiers=True)
    assert LogConfig.from_json(identified.to_json()) == identified
    state = new_log_state(T0, 5).replace(
        users={"s.v": Claim(T0, 3, T1)}, last_purge_time=T1, snapshot=9
    )
    assert LogState.from_json(state.to_json()) == state
    assert state.epoch_id(config) == "inc/1"
    view = ViewConfig("select 1", "h", "m", "projection", (TableName("s", "t"),), "", T0,
                      {"k": "v"}, {"x": "decimal(14,6)"})  # fmt: skip
    assert ViewConfig.from_json(view.to_json()) == view
    vstate = ViewState("force", "FAST", T1, None, {"s.mlog__t": Position("inc/1", 4, T1)},
                       {"s.t": 12})  # fmt: skip
    assert ViewState.from_json(vstate.to_json()) == vstate
    assert "filled" not in vstate.to_json()
    filled = vstate.replace(filled=("s.t",))
    assert ViewState.from_json(filled.to_json()) == filled
    assert "data_files" not in vstate.to_json()  # written by the SQL path alone
    assert "data_bytes" not in vstate.to_json()
    counted = vstate.replace(snapshot=7, data_files=3, data_bytes=4096)
    assert ViewState.from_json(counted.to_json()) == counted


def _meta(current: int | None, properties: dict[str, str]) -> TableMeta:
    return TableMeta(TableName("s", "t"), True, "iceberg", (), current, properties)


def _history(*snapshots: SnapshotInfo) -> dict[int, SnapshotInfo]:
    return {s.snapshot_id: s for s in snapshots}


def test_the_newest_state_wins_wherever_it_is_kept() -> None:
    one = SnapshotInfo(1, None, "append", None, {"k": '{"at": 1}'})
    two = SnapshotInfo(2, 1, "append", None, {"k": '{"at": 2}'})
    three = SnapshotInfo(3, 2, "replace", None)
    history = _history(one, two, three)
    # A summary state below compaction commits: found, with what came after.
    found = latest_state(_meta(3, {}), "k", history)
    assert (found.text, found.anchor, found.in_summary) == ('{"at": 2}', 2, True)
    assert [s.snapshot_id for s in found.after] == [3] and not found.changed_after
    # A property naming the current snapshot is current (no history read at all).
    prop = '{"snapshot": 3}'
    assert latest_state(_meta(3, {"k": prop}), "k", {}).text == prop
    # A property naming the snapshot a summary state is at was written after it.
    prop = '{"snapshot": 2}'
    assert latest_state(_meta(3, {"k": prop}), "k", history).text == prop
    # An older property loses to a newer summary state.
    assert latest_state(_meta(3, {"k": '{"snapshot": 1}'}), "k", history).anchor == 2


def test_writes_past_the_state_are_reported() -> None:
    history = _history(SnapshotInfo(1, None, "append", None), SnapshotInfo(2, 1, "overwrite", None))
    found = latest_state(_meta(2, {"k": '{"snapshot": 1}'}), "k", history)
    assert found.anchor == 1 and found.changed_after, "a write after the recorded state"
    # A log created empty keeps its first state in a property that names no snapshot.
    empty = latest_state(_meta(2, {"k": '{"snapshot": null}'}), "k", history)
    assert empty.anchor is None and [s.snapshot_id for s in empty.after] == [2, 1]
    # Nothing anywhere (expired, or never written).
    assert latest_state(_meta(2, {}), "k", {}).text is None


def test_chain_after_finds_the_new_commits_or_the_gap() -> None:
    s = {i: SnapshotInfo(i, i - 1 if i > 1 else None, "append", T0) for i in range(1, 5)}
    assert [x.snapshot_id for x in chain_after(s, 4, 2).snapshots] == [3, 4]
    assert [x.snapshot_id for x in chain_after(s, 4, None).snapshots] == [1, 2, 3, 4]
    assert chain_after(s, 4, 4).snapshots == ()
    assert "not an ancestor" in (chain_after(s, 4, 99).gap or "")
    del s[2]
    assert "expired" in (chain_after(s, 4, 1).gap or "")
    assert "dropped and created again" in (chain_after({}, None, 3).gap or "")


def test_a_gap_says_how_the_history_was_lost() -> None:
    """Snapshot 2 captured; then the table dropped and created (2 gone from its metadata),
    replaced (a new first snapshot, after 2: Iceberg keeps the old ones), rolled back (to
    1, then a commit 3 on it) or its snapshots expired (1 of 1-3-4 gone)."""
    at = {i: T0 + dt.timedelta(minutes=i) for i in range(1, 6)}
    old = {1: SnapshotInfo(1, None, "append", at[1]), 2: SnapshotInfo(2, 1, "append", at[2])}
    dropped = {5: SnapshotInfo(5, None, "append", at[5])}
    replaced = {**old, 5: SnapshotInfo(5, None, "overwrite", at[5])}
    rolled_back = {**old, 3: SnapshotInfo(3, 1, "append", at[3])}
    expired = {3: SnapshotInfo(3, 1, "append", at[3]), 4: SnapshotInfo(4, 3, "append", at[4])}
    gaps = {
        "dropped": chain_after(dropped, 5, 2).gap or "",
        "replaced": chain_after(replaced, 5, 2).gap or "",
        "rolled back": chain_after(rolled_back, 3, 2).gap or "",
        "expired": chain_after(expired, 4, 2).gap or "",
    }
    assert "the table was dropped and created again" in gaps["dropped"]
    assert (
        "replaced (CREATE OR REPLACE TABLE), its history starting again at snapshot 5"
        in (gaps["replaced"])
    )
    assert gaps["rolled back"].endswith("the table was rolled back past it")
    assert "its snapshots were expired" in gaps["expired"]
    # Rolled back to 3 (after 1 expired), past the captured 4: the walk meets 1, gone.
    rolled_past = {**expired, 5: SnapshotInfo(5, 3, "append", at[5])}
    assert chain_after(rolled_past, 5, 4).gap == (
        "snapshot 4, up to which changes were captured, is not an ancestor of the current "
        "snapshot: the table was rolled back past it"
    )
    assert "dropped" not in gaps["replaced"] + gaps["rolled back"] + gaps["expired"]
    assert "replaced" not in gaps["dropped"] + gaps["rolled back"] + gaps["expired"]


def test_an_expired_capture_point_is_a_gap_when_the_next_commit_reads_at_it() -> None:
    """The snapshot captured through is expired, the next commit kept: an append after it
    is captured as usual; a commit that removed rows (read at its parent) is a gap."""
    s = {i: SnapshotInfo(i, i - 1, "append", T0) for i in range(3, 6)}  # 1 and 2 expired
    assert [x.snapshot_id for x in chain_after(s, 5, 2).snapshots] == [3, 4, 5]
    s[3] = SnapshotInfo(3, 2, "replace", T0)
    assert [x.snapshot_id for x in chain_after(s, 5, 2).snapshots] == [3, 4, 5]
    for operation in ("overwrite", "delete"):
        s[3] = SnapshotInfo(3, 2, operation, T0)
        gap = chain_after(s, 5, 2).gap or ""
        assert "snapshot 2" in gap and "expired" in gap and "commit 3" in gap
        # Only the first commit's parent matters: the later ones' parents are kept.
        assert [x.snapshot_id for x in chain_after(s, 5, 3).snapshots] == [4, 5]


def test_a_log_configuration_naming_redacted_words_reads_back_whole() -> None:
    # Spark shows a property matching its redaction patterns as "*********(redacted)"
    # (sqltext.property_json): a configuration naming columns page_url and password_hash.
    config = LogConfig(
        TableName("url_s", "hits"), TableName("url_s", "mlog__hits"), Flavour.TIMESTAMP,
        ("k",), ("page_url", "password_hash"), ("k", "page_url", "password_hash"), False, T0,
        "inc", PurgeMode.DEFERRED,
    )  # fmt: skip
    assert DEFAULT_REDACTION.search(config.to_json()) is None
    assert LogConfig.from_json(config.to_json()) == config
