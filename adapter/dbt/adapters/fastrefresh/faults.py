"""Fault points for the crash tests: die at a named write of the protocol.

``DBT_FASTREFRESH_FAULT=<point>`` makes the process exit at once (``os._exit``: no cleanup,
no finally blocks, as a kill would) when it reaches that point. Every write of the
protocol that is not atomic with the one before it has a point between them.
"""

from __future__ import annotations

import os

VARIABLE = "DBT_FASTREFRESH_FAULT"


def point(name: str) -> None:
    """Die here when ``DBT_FASTREFRESH_FAULT`` names this point."""
    if os.environ.get(VARIABLE) == name:
        os._exit(99)
