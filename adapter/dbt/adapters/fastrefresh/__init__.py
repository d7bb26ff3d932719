"""dbt-fastrefresh: Oracle-style fast-refresh materialized views for dbt on Spark."""

from dbt.adapters.base import AdapterPlugin

from dbt.adapters.fastrefresh.connections import (
    FastrefreshConnectionManager,
    FastrefreshCredentials,
)
from dbt.adapters.fastrefresh.impl import FastrefreshAdapter
from dbt.include import fastrefresh

Plugin = AdapterPlugin(
    adapter=FastrefreshAdapter,  # type: ignore[arg-type]
    credentials=FastrefreshCredentials,
    include_path=fastrefresh.PACKAGE_PATH,
    dependencies=["spark"],
)

__all__ = ["FastrefreshAdapter", "FastrefreshConnectionManager", "FastrefreshCredentials", "Plugin"]
