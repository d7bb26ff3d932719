"""The run-operation arguments of create_mview_log as dbt hands them over (YAML or the
command line): lists or comma-separated strings of columns, yes/no flags as strings."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.iceberg.columns import Column
from dbt.adapters.fastrefresh.iceberg.tables import TableMeta
from dbt.adapters.fastrefresh.mlog.ddl import column_list, flag, identifiers_moved, log_differences
from dbt.adapters.fastrefresh.protocol.state import Flavour, LogConfig
from dbt.adapters.fastrefresh.sqltext import TableName


def test_a_column_list_is_a_list_or_one_comma_separated_string() -> None:
    assert column_list(None, "key") is None
    assert column_list([], "columns") == []
    assert column_list(["id", " v "], "columns") == ["id", "v"]
    # `--args "{master: s.t, key: id}"` gives a string: one column, not the letters i, d.
    assert column_list("id", "key") == ["id"]
    assert column_list("a, b,c", "columns") == ["a", "b", "c"]
    assert column_list("", "columns") == []


@pytest.mark.parametrize("bad", [{"a": 1}, 3, ["a", 2]])
def test_a_column_list_of_another_kind_is_refused_naming_the_argument(bad: object) -> None:
    with pytest.raises(FastRefreshError, match=r"create_mview_log key must be a list.*Fix: key="):
        column_list(bad, "key")


def test_a_flag_reads_its_yaml_and_command_line_spellings() -> None:
    assert flag(True, "commit_scn") is True
    assert flag(False, "commit_scn") is False
    # bool('false') is True: the string must be read as the word it is.
    assert flag("false", "commit_scn") is False
    assert flag("False", "commit_scn") is False
    assert flag("no", "if_not_exists") is False
    assert flag("true", "commit_scn") is True
    assert flag("yes", "commit_scn") is True
    assert flag(0, "commit_scn") is False
    assert flag(1, "commit_scn") is True


@pytest.mark.parametrize("bad", ["maybe", 2, None, ["true"]])
def test_a_flag_that_is_neither_is_refused_naming_the_argument(bad: object) -> None:
    with pytest.raises(FastRefreshError, match=r"commit_scn must be true or false.*Fix:"):
        flag(bad, "commit_scn")


def _log(key: tuple[str, ...], logged: tuple[str, ...]) -> tuple[LogConfig, TableMeta]:
    master = TableName("s", "t")
    config = LogConfig(
        master, TableName("s", "mlog__t"), Flavour.TIMESTAMP, key, logged, ("id", "g", "v"),
        not key, dt.datetime(2026, 1, 1), "abc",
    )  # fmt: skip
    columns = (Column("id", "int"), Column("g", "string"), Column("v", "int"))
    return config, TableMeta(master, True, "iceberg", columns, 5, {})


def test_a_nodes_mview_log_is_compared_with_the_log_option_by_option() -> None:
    config, meta = _log(("id",), ("g",))
    # What the node leaves out is not compared; what it gives the log has is no difference.
    assert log_differences(config, meta, {}) == []
    assert log_differences(config, meta, {"key": "ID", "columns": ["g"], "purge": "deferred"}) == []
    assert log_differences(config, meta, {"commit_scn": "false"}) == []
    assert log_differences(
        config, meta, {"key": ["g"], "columns": "g, v", "commit_scn": True, "purge": "synchronous"}
    ) == [
        "key (id), not (g)",
        "columns (g), not (g, v)",  # beside the log's own key
        "commit_scn false, not true",
        "purge 'deferred', not 'synchronous'",
    ]
    assert log_differences(config, meta, {"key": []}) == ["key (id), not (none: key-less)"]
    # A key-less log holds whole rows: its columns are not an option to compare.
    keyless, meta = _log((), ("id", "g", "v"))
    assert log_differences(keyless, meta, {"columns": ["g"]}) == []
    assert log_differences(keyless, meta, {"key": ["id"]}) == ["key (none: key-less), not (id)"]


def test_a_nodes_mview_log_naming_no_column_of_the_master_is_refused() -> None:
    config, meta = _log(("id",), ("g",))
    with pytest.raises(FastRefreshError, match=r"Key column\(s\) nope are not columns of s.t"):
        log_differences(config, meta, {"key": ["nope"]})
    with pytest.raises(FastRefreshError, match=r"purge must be 'deferred' or 'synchronous'"):
        log_differences(config, meta, {"purge": "later"})


def test_a_log_keyed_by_identifier_fields_is_told_when_they_change() -> None:
    config, meta = _log(("id",), ("g", "v"))
    identified = dataclasses.replace(config, key_from_identifiers=True)
    assert (
        identifiers_moved(identified, dataclasses.replace(meta, identifier_fields=("id",))) is None
    )
    dropped = identifiers_moved(identified, meta)  # no identifier fields now
    assert dropped == (
        "the identifier fields of s.t are now (none: key-less), and its log took them as its "
        "key when it was created: (id)"
    )
    changed = dataclasses.replace(meta, identifier_fields=("v", "g"))  # kept sorted
    assert "are now (g, v), and" in str(identifiers_moved(identified, changed))  # table order
    # A nested identifier field is no column of a log: the key the log took is the same.
    nested = dataclasses.replace(meta, identifier_fields=("id", "s.x"))
    assert identifiers_moved(identified, nested) is None
    # A key-less log taken from none follows identifier fields set later.
    keyless = dataclasses.replace(_log((), ("id", "g", "v"))[0], key_from_identifiers=True)
    assert identifiers_moved(keyless, meta) is None
    assert "are now (id), and" in str(
        identifiers_moved(keyless, dataclasses.replace(meta, identifier_fields=("id",)))
    )
    # A key given (or one of a log created before its origin was recorded) is kept.
    assert identifiers_moved(config, meta) is None
