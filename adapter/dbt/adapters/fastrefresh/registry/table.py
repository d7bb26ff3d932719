"""The registry table: one append-only Iceberg table, ``registry``, under the registry views.

Each row is a fact about one object (``kind``: log, log user, view, refresh, capture) at
one time, its body a JSON ``payload`` (``deleted``: the object is gone). ``store.py``
publishes rows and defines the views over them; ``migration.py`` moves a 0.1.0 registry's
rows here.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from collections.abc import Mapping
from typing import Any

from dbt.adapters.fastrefresh import sqltext
from dbt.adapters.fastrefresh.mlog.ddl import METADATA_CLEANUP
from dbt.adapters.fastrefresh.protocol.env import Env
from dbt.adapters.fastrefresh.protocol.state import stamp
from dbt.adapters.fastrefresh.sqltext import TableName, literal

REGISTRY_VERSION = 2
VERSION_PROPERTY = "fast_refresh.registry-version"
TABLE = "registry"
# The registry takes one append per publish; Iceberg's default hash distribution would
# add a shuffle before each write.
TUNING_PROPERTIES = {
    "write.distribution-mode": "none",
    "write.update.distribution-mode": "none",
    "write.delete.distribution-mode": "none",
    "write.merge.distribution-mode": "none",
    **METADATA_CLEANUP,
}
_SEQ = itertools.count(1)


def table(env: Env) -> TableName:
    return TableName(env.registry, TABLE)


def create_table(env: Env) -> None:
    """The registry table, if missing (its views are created by ``ensure``)."""
    properties = {
        VERSION_PROPERTY: str(REGISTRY_VERSION), "format-version": "2", **TUNING_PROPERTIES,
    }  # fmt: skip
    env.sql.execute(
        f"CREATE TABLE IF NOT EXISTS {table(env).sql} (kind STRING, name STRING, "
        "recorded TIMESTAMP_NTZ, seq BIGINT, deleted BOOLEAN, payload STRING) USING "
        f"iceberg TBLPROPERTIES ({sqltext.properties(properties)})"
    )


def values_row(
    kind: str, name: str, payload: Mapping[str, Any] | None, recorded: dt.datetime
) -> str:
    """One VALUES row of the registry table (``payload`` None: the object is gone)."""
    body = "NULL" if payload is None else literal(json.dumps(payload, default=_json_value))
    return (
        f"({literal(kind)}, {literal(name)}, {sqltext.timestamp(recorded)}, {next(_SEQ)}L, "
        f"{'TRUE' if payload is None else 'FALSE'}, {body})"
    )


def _json_value(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return stamp(value)
    if isinstance(value, TableName):
        return str(value)
    raise TypeError(f"cannot publish {type(value).__name__}")
