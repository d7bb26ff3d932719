"""The fingerprint a reused view model is compared by (``engine/dbt_views.py``)."""

from __future__ import annotations

import pytest

from dbt.adapters.fastrefresh.engine import dbt_views

CREATE = "create or replace view `s`.`v` comment 'x' as select 1 as one"


def test_the_same_statement_has_the_same_fingerprint_whatever_its_surrounding_blanks() -> None:
    assert dbt_views.definition_fingerprint(CREATE) == dbt_views.definition_fingerprint(
        f"\n  {CREATE}\n"
    )


@pytest.mark.parametrize(
    "other",
    [
        CREATE.replace("select 1", "select 2"),  # the query
        CREATE.replace("`v`", "`w`"),  # the name
        CREATE.replace("'x'", "'y'"),  # the comment
    ],
)
def test_any_change_to_the_statement_changes_it(other: str) -> None:
    assert dbt_views.definition_fingerprint(other) != dbt_views.definition_fingerprint(CREATE)


def test_another_release_has_another_fingerprint(monkeypatch: pytest.MonkeyPatch) -> None:
    ours = dbt_views.definition_fingerprint(CREATE)
    monkeypatch.setattr(dbt_views, "version", "99.0.0")
    assert dbt_views.definition_fingerprint(CREATE) != ours
