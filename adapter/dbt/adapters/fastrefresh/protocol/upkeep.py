"""Upkeep of dbt-fastrefresh's own tables: their old snapshots are expired as they go.

The logs take commits from capture, marking and purges, and the registry one per publish.
Iceberg keeps every snapshot until it is expired: left alone, each commit adds about a
kilobyte to the table's metadata file, which the next commit reads and writes whole, plus
a manifest list and the files a purge replaced, which stay on disk.

So each of those tables counts the commits this process makes to it, and every ``EVERY``
commits expires its snapshots older than ``MIN_AGE``, always keeping the last
``KEEP_LAST`` — and so the newest snapshot, whose summary holds a log's state. A process
starts each table's count at a random point of the cycle (``start``): a scheduled
``dbt run`` is a process of its own that makes a few commits to a log, never ``EVERY``,
and counting from zero it never expired anything. So, a process making ``n`` commits to
a table expires it with probability ``n / EVERY``, and the table is expired once per
``EVERY`` commits on average, however they are spread over processes, with no state kept
for it and no statement spent to find out. Nothing of
dbt-fastrefresh reads its own tables at an old snapshot, with one exception: a refresh's
delta statement reads its logs at the snapshots its setup read or wrote (a purge meanwhile
then takes no row from it), and a purge may replace those snapshots' files meanwhile. A
log is therefore not expired while a refresh of this process is between its setup and the
end of its delta (``reading``); the expiry waits for the next commit after. Another
process's expiry keeps the last ``KEEP_LAST`` snapshots and those younger than
``MIN_AGE``: a read of an expired one fails loudly, it never reads a row short. The views
(the users' tables) and the masters keep their history: expiring those is the owner's
decision (see docs/fast-refresh.md).

The expiry runs under the table's lock, which every writer of the table holds. It is
housekeeping: when it fails, the refresh that triggered it goes on, with a warning naming
the cause and the fix.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import random
from collections.abc import Iterable, Iterator

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.fastrefresh.runtime.executor import Executor
from dbt.adapters.fastrefresh.runtime.process import Runtime
from dbt.adapters.fastrefresh.sqltext import TableName, expire_sql, instant

logger = AdapterLogger("fastrefresh")

EVERY = 100  # commits of this process to one table between two expiries
KEEP_LAST = 10  # snapshots every expiry keeps, however old
MIN_AGE = dt.timedelta(hours=1)  # snapshots younger than this are kept


_random = random.Random()


def start(every: int) -> int:
    """The commits a process counts a table at before its first: a random point of the
    cycle of ``every`` (see the module's docstring)."""
    return _random.randrange(every)


def due(runtime: Runtime, table: TableName) -> bool:
    """Count one commit to ``table``; true on every ``EVERY``-th (the counter restarts),
    or on the first commit after that one while a refresh was reading the table. The
    count starts at ``start``."""
    key = str(table)
    with runtime.holding(["upkeep"]):
        count = (runtime.commits[key] if key in runtime.commits else start(EVERY)) + 1
        if count >= EVERY and not runtime.reading.get(key):
            runtime.commits[key] = 0
            return True
        runtime.commits[key] = min(count, EVERY)
        return False


@contextlib.contextmanager
def reading(runtime: Runtime, tables: Iterable[TableName]) -> Iterator[None]:
    """Keep ``tables`` from being expired by this process while a statement reads them."""
    keys = [str(t) for t in tables]
    with runtime.holding(["upkeep"]):
        for key in keys:
            runtime.reading[key] = runtime.reading.get(key, 0) + 1
    try:
        yield
    finally:
        with runtime.holding(["upkeep"]):
            for key in keys:
                left = runtime.reading[key] - 1
                if left:
                    runtime.reading[key] = left
                else:
                    del runtime.reading[key]


def committed(x: Executor, runtime: Runtime, now: dt.datetime, table: TableName) -> None:
    """Note a commit to ``table`` (caller holds its lock); expire its old snapshots when due
    (``now``: naive UTC)."""
    if due(runtime, table):
        expire(x, table, now - MIN_AGE, KEEP_LAST)


def expire(x: Executor, table: TableName, older_than: dt.datetime, keep_last: int) -> bool:
    """Expire ``table``'s snapshots older than ``older_than`` but the last ``keep_last``.
    Returns whether any could go; a failure is logged, not raised (caller holds the lock).

    The snapshots are counted first: the procedure costs a second or more even when it
    has nothing to expire, the count a few hundredths."""
    try:
        total, old = x.query(
            f"SELECT count(*), count_if(committed_at < {instant(older_than)}) "
            f"FROM {table.metadata('snapshots')}"
        )[0]
        if not old or int(total) <= keep_last:
            return False
        x.execute(expire_sql(table, older_than, keep_last))
    except Exception as exc:  # housekeeping must never fail the refresh that ran it
        logger.warning(
            f"dbt-fastrefresh could not expire old snapshots of {table}: {exc}. The refresh "
            "is not affected; the table's metadata keeps growing until an expiry succeeds. "
            f"Fix: run CALL system.expire_snapshots(table => '{table}') by hand, and check "
            "that the warehouse is writable."
        )
        return False
    return True
