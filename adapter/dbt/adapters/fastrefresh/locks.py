"""Process-wide locks that serialize dbt-fastrefresh's writes to shared tables.

The embedded catalog does no commit locking: two threads committing to one Iceberg table
can silently lose a commit. Every write to a log or a registry table therefore runs under
that table's lock. dbt runs models in threads of one process, so an in-process lock is
the right scope (the embedded Derby metastore admits one process anyway). When several
locks are needed they are taken in name order, so threads never deadlock.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Iterator

_GUARD = threading.Lock()
_LOCKS: dict[str, threading.RLock] = {}


def _lock(name: str) -> threading.RLock:
    with _GUARD:
        lock = _LOCKS.get(name)
        if lock is None:
            lock = _LOCKS[name] = threading.RLock()
        return lock


@contextlib.contextmanager
def holding(names: Iterable[str]) -> Iterator[None]:
    """Hold the locks of all ``names`` (taken in sorted order, released in reverse)."""
    ordered = sorted(set(names))
    with contextlib.ExitStack() as stack:
        for name in ordered:
            stack.enter_context(_lock(name))
        yield
