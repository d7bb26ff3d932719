"""The gate between small interpreted statements and other threads' statements, and the
session settings a small block changes and gives back (pure logic: a settings dict stands
in for the session's; the Spark side is tests/functional/test_small_statements.py)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from dbt.adapters.fastrefresh.engine.refresh import rows_read
from dbt.adapters.fastrefresh.iceberg.tables import TableMeta
from dbt.adapters.fastrefresh.runtime.interpreted import (
    ADAPTIVE_OFF,
    CODEGEN_OFF,
    SMALL_ROWS,
    Gate,
    small_statements,
)
from dbt.adapters.fastrefresh.sqltext import TableName


class Conf:
    """A session's runtime settings: get with a default, set, unset."""

    def __init__(self, values: dict[str, str] | None = None) -> None:
        self.values = dict(values or {})

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def set(self, key: str, value: str) -> None:
        self.values[key] = value

    def unset(self, key: str) -> None:
        self.values.pop(key, None)


class Session:
    def __init__(self, values: dict[str, str] | None = None) -> None:
        self.conf = Conf(values)


def in_thread(target: Any) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def test_a_block_alone_is_interpreted_and_its_own_statements_go_through() -> None:
    gate = Gate()
    with gate.interpreted() as alone:
        assert alone
        with gate.statement(), gate.statement():  # its own thread: no wait, reentrant
            pass
    with gate.statement(), gate.interpreted() as alone:  # inside its own statement too
        assert alone


def test_another_threads_statement_keeps_the_block_compiled() -> None:
    gate = Gate()
    inside, leave = threading.Event(), threading.Event()

    def other() -> None:
        with gate.statement():
            inside.set()
            leave.wait(10)

    thread = in_thread(other)
    assert inside.wait(10)
    with gate.interpreted() as alone:
        assert not alone  # at once, without waiting for the other statement
    leave.set()
    thread.join(10)
    with gate.interpreted() as alone:
        assert alone


def test_other_threads_statements_wait_for_the_block_to_end() -> None:
    gate = Gate()
    started, finished = threading.Event(), threading.Event()

    def other() -> None:
        started.set()
        with gate.statement():
            finished.set()

    with gate.interpreted() as alone:
        assert alone
        thread = in_thread(other)
        assert started.wait(10)
        time.sleep(0.2)
        assert not finished.is_set()  # held back while generated code is off
        with gate.interpreted() as again:  # one block at a time, even in the same thread
            assert not again
    assert finished.wait(10)
    thread.join(10)


def test_one_block_at_a_time() -> None:
    gate = Gate()
    inside, leave = threading.Event(), threading.Event()
    seen: list[bool] = []

    def other() -> None:
        with gate.interpreted() as alone:
            seen.append(alone)
            inside.set()
            leave.wait(10)

    thread = in_thread(other)
    assert inside.wait(10)
    with gate.interpreted() as alone:
        assert not alone
    leave.set()
    thread.join(10)
    assert seen == [True]


def test_a_small_block_turns_generated_code_off_and_gives_the_settings_back() -> None:
    session = Session({"spark.sql.codegen.wholeStage": "true", "other": "x"})
    with small_statements(session, 12, Gate()) as interpreted:
        assert interpreted
        assert {k: session.conf.get(k) for k in CODEGEN_OFF} == dict(CODEGEN_OFF)
    # A value the session had comes back; one it did not have is unset again.
    assert session.conf.values == {"spark.sql.codegen.wholeStage": "true", "other": "x"}


def test_the_settings_come_back_when_the_block_fails() -> None:
    session = Session()
    gate = Gate()
    with pytest.raises(RuntimeError), small_statements(session, 0, gate):
        raise RuntimeError("the statement failed")
    assert session.conf.values == {}
    with gate.interpreted() as alone:  # and the gate is open again
        assert alone


@pytest.mark.parametrize("rows", [None, SMALL_ROWS + 1])
def test_large_or_unknown_inputs_keep_generated_code(rows: int | None) -> None:
    session = Session({"spark.sql.codegen.wholeStage": "true"})
    with small_statements(session, rows, Gate()) as interpreted:
        assert not interpreted
        assert session.conf.values == {"spark.sql.codegen.wholeStage": "true"}


@pytest.mark.parametrize(
    ("rows", "expected"), [(None, ADAPTIVE_OFF), (1, {**CODEGEN_OFF, **ADAPTIVE_OFF})]
)
def test_a_one_partition_block_turns_adaptive_execution_off_and_gives_it_back(
    rows: int | None, expected: dict[str, str]
) -> None:
    """Adaptive execution off whatever the rows (a large capture's shuffles may all end in
    one partition too), with generated code off as well when they are few."""
    session = Session({"spark.sql.adaptive.enabled": "true"})
    with small_statements(session, rows, Gate(), one_partition=True) as changed:
        assert changed
        assert {k: session.conf.get(k) for k in expected} == dict(expected)
        assert session.conf.values.keys() == expected.keys()
    assert session.conf.values == {"spark.sql.adaptive.enabled": "true"}


def test_no_session_in_this_process_keeps_generated_code() -> None:
    with small_statements(None, 1, Gate()) as interpreted:
        assert not interpreted


def test_busy_gate_leaves_the_settings_alone() -> None:
    gate = Gate()
    session = Session()
    inside, leave = threading.Event(), threading.Event()

    def other() -> None:
        with gate.statement():
            inside.set()
            leave.wait(10)

    thread = in_thread(other)
    assert inside.wait(10)
    with small_statements(session, 1, gate) as interpreted:
        assert not interpreted
        assert session.conf.values == {}
    leave.set()
    thread.join(10)


def test_rows_read_adds_the_tables_and_the_log_rows() -> None:
    meta = TableMeta(TableName("s", "t"), True, "iceberg", (), 2, {}, rows=10_000)
    unknown = TableMeta(TableName("s", "u"), False, "parquet", (), None, {})
    assert rows_read([meta, meta], 12) == 20_012
    assert rows_read([meta]) == 10_000
    assert rows_read([meta, unknown], 12) is None  # the SQL path counts no rows
    assert rows_read([None]) is None
