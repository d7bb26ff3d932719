"""The last refresh the registry shows of a view: one refresh's type and time."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

from dbt.adapters.fastrefresh.protocol.decisions import RefreshType
from dbt.adapters.fastrefresh.registry.store import last_refresh

T0 = dt.datetime(2026, 12, 6, 22, 48, 11)
COMPLETE_WROTE = SimpleNamespace(
    last_refresh_type=RefreshType.COMPLETE, last_refresh_time=T0 + dt.timedelta(seconds=0.6)
)


def _run(kind: str, started: dt.datetime, status: str = "SUCCESS") -> SimpleNamespace:
    return SimpleNamespace(refresh_type=kind, started=started, status=status)


def test_a_refresh_that_wrote_the_state_is_timed_as_the_state_records_it() -> None:
    # The refresh that built the view started before the time its state records.
    assert last_refresh(COMPLETE_WROTE, _run("COMPLETE", T0)) == (
        "COMPLETE",
        T0 + dt.timedelta(seconds=0.6),
    )
    assert last_refresh(COMPLETE_WROTE) == ("COMPLETE", T0 + dt.timedelta(seconds=0.6))


def test_a_later_refresh_that_wrote_nothing_gives_its_type_with_its_time() -> None:
    later = T0 + dt.timedelta(seconds=13)
    assert last_refresh(COMPLETE_WROTE, _run("FAST", later)) == ("FAST", later)
    # One that failed is no refresh of the view.
    assert last_refresh(COMPLETE_WROTE, _run("FAST", later, "FAILED")) == (
        "COMPLETE", T0 + dt.timedelta(seconds=0.6),
    )  # fmt: skip


def test_what_the_registry_showed_later_than_the_state_stays() -> None:
    later = T0 + dt.timedelta(seconds=13)
    assert last_refresh(COMPLETE_WROTE, published=("FAST", later)) == ("FAST", later)
    # A refresh that wrote the state after it (a rebuild by another process) wins.
    assert last_refresh(COMPLETE_WROTE, published=("FAST", T0)) == (
        "COMPLETE", T0 + dt.timedelta(seconds=0.6),
    )  # fmt: skip
