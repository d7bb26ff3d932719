"""The dbt-fastrefresh adapter: dbt-spark, plus the fast-refresh Python layer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dbt.adapters.spark.impl import SparkAdapter

from dbt.adapters.fastrefresh.connections import FastrefreshConnectionManager

if TYPE_CHECKING:
    from typing import TypeAlias


class FastrefreshAdapter(SparkAdapter):
    """dbt-spark's adapter; every dbt-spark feature keeps working unchanged."""

    ConnectionManager: TypeAlias = FastrefreshConnectionManager  # type: ignore[assignment]

    @classmethod
    def type(cls) -> str:
        return "fastrefresh"
