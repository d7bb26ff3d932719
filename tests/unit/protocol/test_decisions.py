"""Reasons and their fixes; the protocol's words."""

from __future__ import annotations

import json

import pytest

from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.protocol.decisions import (
    ReasonCode,
    RefreshMethod,
    RefreshType,
    Staleness,
)


def test_every_reason_code_renders_a_fix_naming_its_objects() -> None:
    """Each code's fix is a format string: it must render (a stray brace is a crash in the
    error path) and keep no placeholder unfilled."""
    from dbt.adapters.fastrefresh.protocol.decisions import Reason, fix_names

    for names in (fix_names("db.v", "orders_v"), fix_names("db.v", None)):
        for code in ReasonCode:
            fix = Reason(code, "detail").fix(master="db.t", **names)
            assert fix and not [p for p in ("{master}", "{rebuild}", "{force}") if p in fix], code
        no_log = Reason(ReasonCode.NO_LOG, "d").fix(master="db.t", **names)
        assert "{master: 'db.t'}" in no_log
        keyed = Reason(ReasonCode.NO_KEYED_LOG, "d").fix(master="db.t", **names)
        assert "{master: '<table>', key: ['<key column>']}" in keyed


def test_a_fix_names_the_dbt_model_or_the_method_of_refresh_mviews() -> None:
    """A dbt model's fix selects the model by its name (an alias makes the view's name
    differ); a view refresh_mviews refreshes is rebuilt by its method 'complete'."""
    from dbt.adapters.fastrefresh.protocol.decisions import Reason, fix_names

    gone = Reason(ReasonCode.HISTORY_GONE, "d")
    assert gone.fix(**fix_names("db.orders_v", "orders")).startswith(
        "run `dbt run --full-refresh -s orders` once (a complete refresh), or set "
        "refresh_method='force'; "
    )
    assert gone.fix(**fix_names("db.orders_v", None)).startswith(
        "refresh it once with method 'complete' (dbt run-operation fast_refresh.refresh_mviews "
        "--args \"{names: ['db.orders_v'], method: complete}\"), or refresh it with method "
        "'force'; "
    )
    unsupported = Reason(ReasonCode.UNSUPPORTED_QUERY, "d")
    assert unsupported.fix(**fix_names("db.v", None)).endswith("or refresh it with method 'force'")


def test_a_refresh_method_is_parsed_once_with_oracles_letters() -> None:
    parse = RefreshMethod.parse
    assert [parse(v, where="m") for v in ("force", " FAST ", "Complete", "?", "f", "c")] == [
        RefreshMethod.FORCE, RefreshMethod.FAST, RefreshMethod.COMPLETE,
        RefreshMethod.FORCE, RefreshMethod.FAST, RefreshMethod.COMPLETE,
    ]  # fmt: skip
    with pytest.raises(FastRefreshError, match=r"Model s\.v: refresh_method must be .*got 3\. Fix"):
        parse(3, where="Model s.v")


def test_protocol_words_print_and_are_stored_as_their_values() -> None:
    for word in (RefreshType.FAST, Staleness.NEEDS_COMPILE, RefreshMethod.FORCE):
        assert str(word) == f"{word}" == word.value
        assert json.loads(json.dumps({"w": word})) == {"w": word.value}
    assert RefreshType.COMPLETE == "COMPLETE" and Staleness("STALE") is Staleness.STALE
