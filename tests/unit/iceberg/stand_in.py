"""What a scripted stand-in for an ``Executor`` needs beyond its statements."""

from __future__ import annotations

import contextlib


class NoSession:
    """The ``Executor`` methods about this process's Spark session, as on a server: no
    session settings to change or read."""

    def small(
        self, rows: int | None, *, one_partition: bool = False
    ) -> contextlib.AbstractContextManager[bool]:
        return contextlib.nullcontext(False)

    def shuffle_partitions(self) -> int | None:
        return None

    def time_zone(self) -> str:
        return "UTC"  # a server's answer to SET spark.sql.session.timeZone
