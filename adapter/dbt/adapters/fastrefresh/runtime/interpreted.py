"""Small statements without generated code, on the SparkSession of this process.

Spark compiles each new statement's operators to Java classes (Janino) before it runs
them, and a ``dbt run`` in a new process compiles every refresh's statements anew. On
small inputs the compiling costs more than it saves: the quickstart's ``open_orders``
FAST refresh (12 log rows, a 10,000-row master) compiled 23 classes in 0.34 s of a
1.3 s statement. At most ``SMALL_ROWS`` rows of input, a refresh runs its statements
with ``CODEGEN_OFF`` (the same plans, interpreted: the same rows) and pays none of it.
On a warm JVM (2 cores, a literal changed per run so that each run compiles) an
aggregate, a window and an anti join broke even near 50,000 rows; over 10,000 rows
interpreted was up to 0.1 s faster, over 1,000,000 rows the aggregate took 2.4-4.1x as
long interpreted. A new process compiles every class, not one stage: the threshold is on
the safe side there (``docs/bookkeeping.md``).

The settings are the session's, and dbt's threads share the session, so another thread's
statement planned while they are off would run interpreted too: a large table model at
a fraction of its speed. ``GATE`` keeps the two apart in this process. Every statement
dbt's connections run (``connections.FastrefreshConnectionManager``) and every one of
``executor.SparkExecutor`` holds ``GATE.statement()``; a refresh turns generated code off
only when no other thread is in a statement, and a statement of another thread that
starts meanwhile waits for the small one to finish (a fraction of a second, by the
threshold). The gate protects speed, not data: interpreted and compiled plans give the
same rows, so a statement it misses (a query whose cursor is fetched after
``add_query`` returned, outside ``execute``) is only slower.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping
from typing import Any

# At most this many rows read (log rows, the view's table, the masters): interpreted.
SMALL_ROWS = 50_000
CODEGEN_OFF: Mapping[str, str] = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}
# A statement whose every shuffle ends in one partition (a merge-on-read capture of few
# changes: its rows paired and numbered in one task) has nothing for adaptive execution
# to coalesce or re-plan, and adaptive execution runs each of its stages as a Spark job
# of its own, planning again between them. Without it the stages run in one job. On the
# benchmark's 10M-row merge-on-read master, 10,000 changes a round in three commits,
# rounds alternating in one process (2026-12-01): captures of 2.27 s against 2.32 s and
# 2.02 s against 2.22 s (medians of 11 and 7), 14 of 18 paired rounds faster.
ADAPTIVE_OFF: Mapping[str, str] = {"spark.sql.adaptive.enabled": "false"}


class Gate:
    """Statements of this process's threads against one thread's interpreted block.

    Any number of threads may be in ``statement()`` at once. ``interpreted()`` opens only
    when no other thread is in one, and until it closes other threads' statements wait;
    its own thread's statements go through. Reentrant per thread.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._depth: dict[int, int] = {}  # thread -> nesting of statement()
        self._owner: int | None = None  # the thread inside interpreted(), if any

    @contextlib.contextmanager
    def statement(self) -> Iterator[None]:
        me = threading.get_ident()
        with self._cond:
            while self._owner is not None and self._owner != me:
                self._cond.wait()
            self._depth[me] = self._depth.get(me, 0) + 1
        try:
            yield
        finally:
            with self._cond:
                if self._depth[me] == 1:
                    del self._depth[me]
                else:
                    self._depth[me] -= 1
                self._cond.notify_all()

    @contextlib.contextmanager
    def interpreted(self) -> Iterator[bool]:
        """Yield True with this thread alone in statements until the block ends; False
        (at once, without waiting) when another thread is in one or holds the gate."""
        me = threading.get_ident()
        with self._cond:
            alone = self._owner is None and all(t == me for t in self._depth)
            if alone:
                self._owner = me
        if not alone:
            yield False
            return
        try:
            yield True
        finally:
            with self._cond:
                self._owner = None
                self._cond.notify_all()


GATE = Gate()


@contextlib.contextmanager
def small_statements(
    spark: Any, rows: int | None, gate: Gate = GATE, *, one_partition: bool = False
) -> Iterator[bool]:
    """The block's statements on ``spark`` without generated code when they read at most
    ``SMALL_ROWS`` rows (``rows``; None: not known), and without adaptive execution when
    every shuffle of theirs ends in one partition (``one_partition``, ``ADAPTIVE_OFF``),
    if no other thread is in a statement; yields whether any setting changed. The
    session's own values come back afterwards (a user's setting included), however the
    block ends."""
    settings = dict(CODEGEN_OFF) if rows is not None and rows <= SMALL_ROWS else {}
    if one_partition:
        settings.update(ADAPTIVE_OFF)
    if spark is None or not settings:
        yield False
        return
    with gate.interpreted() as alone:
        if not alone:
            yield False
            return
        conf = spark.conf
        before = {key: conf.get(key, None) for key in settings}
        try:
            for key, value in settings.items():
                conf.set(key, value)
            yield True
        finally:
            for key, value in before.items():
                if value is None:
                    conf.unset(key)
                else:
                    conf.set(key, value)
