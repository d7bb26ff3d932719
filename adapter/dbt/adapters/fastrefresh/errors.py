"""Errors of dbt-fastrefresh: each names the object, the cause and the fix."""

from __future__ import annotations

from dbt_common.exceptions import DbtRuntimeError


class FastRefreshError(DbtRuntimeError):
    """A user-facing failure. The message says what, why, and how to fix it."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
