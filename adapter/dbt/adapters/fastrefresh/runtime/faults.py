"""Fault points for the crash tests: die at a named write of the protocol.

``DBT_FASTREFRESH_FAULT=<point>`` makes the process exit at once (``os._exit``: no cleanup,
no finally blocks, as a kill would) when it reaches that point. Inside a process,
``crash_at(point)`` raises ``Crash`` there instead (a ``BaseException``, so no handler of
the protocol swallows it), for tests that run the whole fault matrix in one JVM. Every
write of the protocol that is not atomic with the one before it has a point between them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

VARIABLE = "DBT_FASTREFRESH_FAULT"
# Every point, in the order a refresh reaches them (the crash tests cover each).
POINTS = (
    "setup.after_new_epoch",  # a log found rolled back put in a new epoch (before capture)
    "capture.after_log_append",  # a capture's append to the log (before its state, SQL path)
    "setup.after_mark",  # the mark of rows captured outside a refresh
    "apply.after_merge",  # the view's MERGE (before its state, SQL path)
    "apply.after_rebuild",  # the view's complete rebuild (before its state, SQL path)
    "register.before",  # after a rebuild, before its claims on its logs
    "log.after_drop",  # a log dropped to be created again (re-keyed, or new columns)
    "purge.after_announce",  # an admin purge's state, before deleting rows a view needs (SQL)
    "purge.after_delete",  # a purge's delete (before its state, SQL path)
    "publish.before",  # the registry append at the end of an invocation
)

_armed: str | None = None


class Crash(BaseException):
    """Raised at the armed fault point by ``crash_at``."""


@contextlib.contextmanager
def crash_at(name: str) -> Iterator[None]:
    """Raise ``Crash`` when the protocol reaches point ``name`` inside this block."""
    global _armed
    if name not in POINTS:
        raise ValueError(f"unknown fault point {name!r}; known: {', '.join(POINTS)}")
    _armed = name
    try:
        yield
    finally:
        _armed = None


def point(name: str) -> None:
    """Die here when ``DBT_FASTREFRESH_FAULT`` names this point (raise ``Crash`` when
    ``crash_at`` armed it)."""
    if _armed == name:
        raise Crash(name)
    if os.environ.get(VARIABLE) == name:
        os._exit(99)
