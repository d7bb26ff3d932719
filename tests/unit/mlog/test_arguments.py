"""The run-operation arguments of create_mview_log as dbt hands them over (YAML or the
command line): lists or comma-separated strings of columns, yes/no flags as strings."""

from __future__ import annotations

import pytest

from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.mlog.ddl import column_list, flag


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
