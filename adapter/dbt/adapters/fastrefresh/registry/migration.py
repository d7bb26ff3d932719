"""Bringing a registry of release 0.1 (registry version 1) to this one, in place.

Version 1 kept the protocol's state in five registry tables that every refresh updated.
This release keeps it on the logs and views themselves (``protocol/state.py``) and publishes the
registry as views over one table. The migration moves every fact across, so that views
keep refreshing fast and no history is lost:

1. each log's row (and its views' rows in ``mview_log_users``) becomes the log's
   configuration and state; rows a dead capture left past the recorded sequence are
   deleted (the next capture takes their commits again), as release 0.1 would have; the
   log gains its ``capture__`` column and partition;
2. each view's row becomes its configuration and state, anchored at the view snapshot
   release 0.1 recorded (a view changed since then rebuilds, as it would have);
3. the refresh and capture history is appended to the new registry table, which then
   records that it holds it (``fast_refresh.migrated-from``);
4. the version 1 tables are dropped.

Each step can run again after a crash: 1 and 2 are recomputed from the version 1 rows
until they are dropped, and 3 is skipped once recorded.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from typing import Any

from dbt.adapters.fastrefresh.protocol.env import Env
from dbt.adapters.fastrefresh.protocol.state import (
    LOG_CONFIG,
    LOG_STATE,
    VIEW_CONFIG,
    VIEW_STATE,
    Claim,
    Flavour,
    LogConfig,
    LogState,
    Position,
    PurgeMode,
    ViewConfig,
    ViewState,
)
from dbt.adapters.fastrefresh.registry.table import create_table, table, values_row
from dbt.adapters.fastrefresh.sqltext import TableName, string

V1_TABLES = ("mview_logs", "mview_log_users", "mviews", "refresh_runs", "capture_runs")
MIGRATED = "fast_refresh.migrated-from"


def is_v1(env: Env) -> bool:
    """Whether the registry schema still holds release 0.1's ``mview_logs`` table."""
    rows = env.sql.query(
        f"SHOW TBLPROPERTIES {TableName(env.registry, 'mview_logs').sql} "
        f"({string('fast_refresh.registry-version')})"
    )
    return bool(rows) and str(rows[0][1]).strip() == "1"


def _rows(env: Env, name: str) -> list[dict[str, Any]]:
    frame = env.sql.query(f"SELECT * FROM {TableName(env.registry, name).sql}")
    columns = [
        str(r[0]) for r in env.sql.query(f"DESCRIBE TABLE {TableName(env.registry, name).sql}")
        if r[0] and not str(r[0]).startswith("#")
    ]  # fmt: skip
    return [dict(zip(columns, row, strict=False)) for row in frame]


def migrate_v1(env: Env) -> None:
    """Migrate the registry schema of ``env`` from version 1 (see the module docstring).
    Caller creates the new registry table and views afterwards."""
    logs = _rows(env, "mview_logs")
    users = _rows(env, "mview_log_users")
    views = _rows(env, "mviews")
    epochs: dict[str, str] = {}
    for row in logs:
        epochs[row["log_table"]] = _migrate_log(
            env, row, [u for u in users if u["log_table"] == row["log_table"]]
        )
    for row in views:
        claims = [u for u in users if u["mview"] == row["mview"] and u["log_table"] in epochs]
        _migrate_view(env, row, {u["log_table"]: (epochs[u["log_table"]], u) for u in claims})
    create_table(env)
    target = table(env)
    marker = env.sql.query(f"SHOW TBLPROPERTIES {target.sql} ({string(MIGRATED)})")
    if not marker or "does not have" in str(marker[0][1]):
        _migrate_history(env)
        env.sql.execute(f"ALTER TABLE {target.sql} SET TBLPROPERTIES ({string(MIGRATED)}='1')")
    for name in V1_TABLES:
        env.sql.execute(f"DROP TABLE IF EXISTS {TableName(env.registry, name).sql}")


def _when(value: Any) -> dt.datetime:
    return value if isinstance(value, dt.datetime) else dt.datetime(1970, 1, 1)


def _migrate_log(env: Env, row: dict[str, Any], users: list[dict[str, Any]]) -> str:
    log_table = TableName.parse(row["log_table"])
    meta = env.tables.load(log_table, fresh=True)
    if meta is None:
        return ""
    old = meta.properties.get(LOG_CONFIG)
    config = LogConfig.from_json(old) if old else LogConfig(
        master=TableName.parse(row["master"]), log_table=log_table,
        flavour=Flavour(row["flavour"]), key_columns=tuple(row["key_columns"] or ()),
        logged_columns=tuple(row["logged_columns"] or ()),
        master_columns=tuple(row["master_columns"] or ()), keyless=bool(row["keyless"]),
        created=_when(row["created"]), incarnation=uuid.uuid4().hex, purge=PurgeMode.DEFERRED,
    )  # fmt: skip
    last = int(row["last_sequence"] or 0)
    env.sql.execute(f"DELETE FROM {log_table.sql} WHERE sequence__ > {last}")  # leftovers
    if "capture__" not in {c.name for c in meta.columns}:
        # This release reads and purges a log by capture (its partition). Rows of release
        # 0.1 each count as a capture of their own: every place a view reached there was
        # a row boundary.
        env.sql.execute(f"ALTER TABLE {log_table.sql} ADD COLUMNS (capture__ BIGINT)")
        env.sql.execute(f"ALTER TABLE {log_table.sql} ADD PARTITION FIELD capture__")
        env.sql.execute(f"UPDATE {log_table.sql} SET capture__ = sequence__")
    youngest = _when(row["youngest"])
    if config.flavour is Flavour.TIMESTAMP:
        stamped = env.sql.query(
            f"SELECT max(snaptime__) FROM {log_table.sql} "
            "WHERE snaptime__ < TIMESTAMP_NTZ'4000-01-01 00:00:00'"
        )[0][0]
        if stamped is not None and stamped > youngest:
            youngest = stamped
    state = LogState(
        epoch=1, captured_through=row["captured_through"], captured_at=row["captured_at"],
        last_sequence=last, marked_sequence=int(row["marked_sequence"] or 0),
        youngest=youngest, oldest=_when(row["oldest"]),
        purged_sequence=int(row["purged_sequence"] or 0), purged_through=row["purged_through"],
        last_purge_time=row["last_purge_time"], last_purge_rows=int(row["last_purge_rows"] or 0),
        younger_than=_when(row["younger_than"]), younger_reason=row["younger_reason"],
        users={
            u["mview"]: Claim(_when(u["registered_at"]), int(u["last_sequence"] or 0),
                              _when(u["last_refresh"]))
            for u in users
        },
    )  # fmt: skip
    current = env.tables.load(log_table, fresh=True)
    anchored = state.replace(snapshot=current.current_snapshot if current else None)
    env.tables.set_properties(
        log_table, {LOG_CONFIG: config.to_json(), LOG_STATE: anchored.to_json()}
    )
    return state.epoch_id(config)


def _split_options(text: str) -> tuple[str, dict[str, str]]:
    """Release 0.1 kept the view's TBLPROPERTIES clause in its table options."""
    match = re.search(r"tblproperties\s*\((.*)\)\s*$", text or "", flags=re.IGNORECASE | re.S)
    if not match:
        return text or "", {}
    pairs = re.findall(r"'((?:[^'\\]|\\.)*)'\s*=\s*'((?:[^'\\]|\\.)*)'", match.group(1))
    return text[: match.start()].strip(), dict(pairs)


def _migrate_view(
    env: Env, row: dict[str, Any], claims: dict[str, tuple[str, dict[str, Any]]]
) -> None:
    view = TableName.parse(row["mview"])
    meta = env.tables.load(view, fresh=True)
    if meta is None or not meta.iceberg or not row.get("definition"):
        return
    options, properties = _split_options(row.get("table_options") or "")
    config = ViewConfig(
        definition=row["definition"], query_hash=row["query_hash"] or "",
        master_schema_hash=row["master_schema_hash"] or "", shape=row["shape"] or "",
        masters=tuple(TableName.parse(m) for m in row["masters"] or ()),
        table_options=options, registered_at=_when(row["registered_at"]),
        table_properties=properties,
    )  # fmt: skip
    state = ViewState(
        refresh_method=row["refresh_method"] or "force",
        last_refresh_type=row["last_refresh_type"] or "COMPLETE",
        last_refresh_time=_when(row["last_refresh_time"]),
        last_fallback_reason=row["last_fallback_reason"],
        positions={
            log: Position(epoch, int(u["last_sequence"] or 0), _when(u["last_refresh"]))
            for log, (epoch, u) in claims.items()
            if epoch
        },
        master_snapshots={str(k): int(v) for k, v in (row["master_snapshots"] or {}).items()},
        snapshot=row["view_snapshot"],
    )
    env.tables.set_properties(view, {VIEW_CONFIG: config.to_json(), VIEW_STATE: state.to_json()})


def _migrate_history(env: Env) -> None:
    for name, kind, key in (("refresh_runs", "refresh_run", "run_id"),
                            ("capture_runs", "capture_run", None)):  # fmt: skip
        rows = _rows(env, name)
        values = []
        for r in rows:
            entity = str(r[key]) if key else f"{r['log_table']}@{r['last_sequence']}"
            recorded = r.get("ended") or r.get("captured_at") or dt.datetime(1970, 1, 1)
            values.append(values_row(kind, entity, r, recorded))
        for start in range(0, len(values), 500):
            env.sql.execute(
                f"INSERT INTO {table(env).sql} VALUES\n" + ",\n".join(values[start : start + 500])
            )
