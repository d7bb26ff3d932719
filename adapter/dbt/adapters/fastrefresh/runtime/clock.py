"""Time for stamps: naive UTC with microseconds (stamps are TIMESTAMP_NTZ)."""

from __future__ import annotations

import datetime as dt


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
