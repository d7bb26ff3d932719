"""Why a view refreshes completely: typed reasons, and the fix for each.

A reason is a code (what kind of cause) and a detail (which object, what exactly). The
code decides everything a program needs: whether the cause is expected (a first build,
``--full-refresh``, ``refresh_method: complete``, ``dbt run --empty`` and the run after it
never fail a ``fast`` refresh), which fix
the error names, the staleness the registry shows. The detail is for people.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from dbt.adapters.fastrefresh.errors import FastRefreshError


class Word(str, enum.Enum):
    """A word of the protocol: compares, prints and is stored as its value."""

    def __str__(self) -> str:
        return str(self.value)


class RefreshType(Word):
    FAST = "FAST"
    COMPLETE = "COMPLETE"


class RefreshMethod(Word):
    """How a view refreshes (the model's ``refresh_method``; Oracle's REFRESH FORCE/FAST/
    COMPLETE, and DBMS_MVIEW.REFRESH's '?', 'f', 'c')."""

    FORCE = "force"  # fast when possible, else complete, saying why
    FAST = "fast"  # fast, or fail naming the cause and the fix
    COMPLETE = "complete"  # always rebuild

    @classmethod
    def parse(cls, value: object, *, where: str, argument: str = "refresh_method") -> RefreshMethod:
        """``value`` as a method (case-insensitive; Oracle's letters too), or an error
        naming ``where`` it was given, as the config or argument ``argument``."""
        text = str(value).strip().lower()
        try:
            return cls({"?": "force", "f": "fast", "c": "complete"}.get(text, text))
        except ValueError:
            fix = "refresh_method='force'" if argument == "refresh_method" else f"{argument}: force"
            raise FastRefreshError(
                f"{where}: {argument} must be 'force', 'fast' or 'complete' (or Oracle's "
                f"'?', 'f', 'c'), got {value!r}. Fix: {fix} (fast when possible, else "
                "complete, saying why)."
            ) from None


class Staleness(Word):
    """Oracle's USER_MVIEWS.STALENESS, as the registry shows it."""

    FRESH = "FRESH"  # up to date with its masters
    STALE = "STALE"  # changes are pending; a fast refresh can apply them
    NEEDS_COMPILE = "NEEDS_COMPILE"  # the definition or a master's columns changed
    UNUSABLE = "UNUSABLE"  # only a complete refresh can bring it back


class ReasonCode(str, enum.Enum):
    METHOD_COMPLETE = "method_complete"
    FULL_REFRESH = "full_refresh"
    FIRST_BUILD = "first_build"
    EMPTY = "empty"
    BUILT_EMPTY = "built_empty"
    NOT_REGISTERED = "not_registered"
    DEFINITION_CHANGED = "definition_changed"
    TIME_ZONE_CHANGED = "time_zone_changed"
    MASTER_COLUMNS_CHANGED = "master_columns_changed"
    UNFINISHED = "unfinished"
    UNSUPPORTED_QUERY = "unsupported_query"
    NO_KEYED_LOG = "no_keyed_log"
    NO_LOG = "no_log"
    LOG_YOUNGER = "log_younger"
    NOT_REGISTERED_ON_LOG = "not_registered_on_log"
    PURGED = "purged"
    SNAPSHOT_UNKNOWN = "snapshot_unknown"
    LOG_LACKS_COLUMNS = "log_lacks_columns"
    LOG_BROKEN = "log_broken"
    HISTORY_GONE = "history_gone"
    RANGE_TOO_LARGE = "range_too_large"
    NON_FINITE_LEFT = "non_finite_left"
    DELTA_RAISED = "delta_raised"
    SUM_OUT_OF_RANGE = "sum_out_of_range"


EXPECTED = frozenset(
    {
        ReasonCode.METHOD_COMPLETE,
        ReasonCode.FULL_REFRESH,
        ReasonCode.FIRST_BUILD,
        ReasonCode.EMPTY,
        ReasonCode.BUILT_EMPTY,
    }
)
# Reasons a refresh had because they were asked for (--full-refresh, method complete), not
# because the view needed them: a failed rebuild of one leaves the view as it was.
REQUESTED = frozenset({ReasonCode.FULL_REFRESH, ReasonCode.METHOD_COMPLETE})
# Codes that make the registry say NEEDS_COMPILE (the definition, a master or the session
# time zone its query reads changed); the others that fail a refresh make it UNUSABLE.
NEEDS_COMPILE = frozenset(
    {
        ReasonCode.DEFINITION_CHANGED,
        ReasonCode.MASTER_COLUMNS_CHANGED,
        ReasonCode.TIME_ZONE_CHANGED,
        ReasonCode.LOG_BROKEN,
    }
)

# A fix's ``{rebuild}`` and ``{force}`` depend on who refreshes the view (``fix_names``):
# a dbt model is rebuilt by `dbt run --full-refresh`, a view refresh_mviews refreshes by its
# method 'complete'.
_REBUILD = "{rebuild}, or {force}"
FIXES: dict[ReasonCode, str] = {
    ReasonCode.NO_LOG: (
        "create it with dbt run-operation fast_refresh.create_mview_log --args "
        "\"{{master: '{master}'}}\", then {rebuild}; a dbt source or model configured "
        "with `mview_log: false` gets no log: remove that setting, or {force}"
    ),
    ReasonCode.NO_KEYED_LOG: (
        "create (or recreate) that table's log with a primary key: dbt run-operation "
        "fast_refresh.create_mview_log --args \"{{master: '<table>', key: ['<key column>']}}\" "
        "(columns: [] logs the key only, which a join needs), then {rebuild}"
    ),
    ReasonCode.UNSUPPORTED_QUERY: (
        "rewrite the query into a supported shape (see docs/fast-refresh.md), or {force}"
    ),
    ReasonCode.LOG_LACKS_COLUMNS: (
        "rewrite the query into a supported shape (see docs/fast-refresh.md), or {force}"
    ),
    ReasonCode.LOG_BROKEN: (
        "drop that log and create it again: dbt run-operation fast_refresh.drop_mview_log "
        "--args \"{{master: '{master}'}}\", then fast_refresh.create_mview_log with the same "
        "args (the views on it then refresh completely once, and fast after)"
    ),
    ReasonCode.TIME_ZONE_CHANGED: (
        "refresh it in the session time zone its rows were computed in (the reason names "
        "it; spark.sql.session.timeZone), or " + _REBUILD + " in this one"
    ),
    ReasonCode.HISTORY_GONE: (
        _REBUILD + "; to refresh fast after the next change, keep the masters' snapshots "
        "longer than the time between refreshes (expire_snapshots older_than)"
    ),
}


@dataclass(frozen=True)
class Reason:
    """Why a view cannot refresh fast now."""

    code: ReasonCode
    detail: str

    @property
    def expected(self) -> bool:
        """A reason that is no failure: the view is meant to be rebuilt."""
        return self.code in EXPECTED

    def fix(self, **names: str) -> str:
        """The fix to name in an error (``names`` fills in the objects it mentions, and
        ``rebuild`` and ``force``: ``fix_names``)."""
        return FIXES.get(self.code, _REBUILD).format(**names)

    def __str__(self) -> str:
        return self.detail


def fix_names(view: str, model: str | None) -> dict[str, str]:
    """How a fix says to rebuild ``view`` once and to let it fall back: for the dbt model
    named ``model`` (the name ``dbt run -s`` selects, which an alias makes differ from the
    view's), by its config; else (``refresh_mviews``) by the method of a refresh."""
    if model:
        return {
            "rebuild": f"run `dbt run --full-refresh -s {model}` once (a complete refresh)",
            "force": "set refresh_method='force'",
        }
    return {
        "rebuild": (
            "refresh it once with method 'complete' (dbt run-operation "
            f"fast_refresh.refresh_mviews --args \"{{names: ['{view}'], method: complete}}\")"
        ),
        "force": "refresh it with method 'force'",
    }
