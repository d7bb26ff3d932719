"""The tables a model reads, found in dbt's graph, and the logs created on them for it.

A ``fast_refresh`` model over other dbt nodes (sources, seeds, snapshots, ``table``,
``incremental`` or ``fast_refresh`` models; ephemeral models are looked through) needs a
materialized view log on each of them to refresh fast. The refresh creates the missing
ones when it finds a master without a log (``engine.refresh``, with the masters it loads
anyway), idempotently, unless the upstream node says ``mview_log: false``. The key of a
created log:

- ``mview_log: {key: [...]}`` on the upstream node (``config`` of a model, seed or
  snapshot; ``meta`` of a source), with any other ``create_mview_log`` option;
- else ``create_mview_log``'s default (``mlog.ddl._resolve_key``): for a ``fast_refresh``
  upstream (its log is on its storage table), the view's own key (a keyed projection's or
  a join's key columns, kept in its configuration); an aggregate view gets a key-less log
  (its group values may be NULL, which a key may not); for a table, its Iceberg
  identifier fields, a key-less log when it has none. Such a log is created again once
  they change (``engine.refresh._rekeyed``): the key may then repeat.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.mlog.ddl import column_list, flag, purge_mode
from dbt.adapters.fastrefresh.sqltext import TableName, storage_of

READ_KINDS = ("model", "seed", "snapshot", "source")
LOG_OPTIONS = ("key", "columns", "commit_scn", "purge")


@dataclass(frozen=True)
class Upstream:
    """One table a model reads, and what its node says of its log.

    ``log``: None (create one when missing, keyed as the module says), False (never), True
    (create one with ``options``, ``create_mview_log``'s arguments).
    """

    relation: TableName
    node: str  # the node's unique_id, for messages
    log: bool | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    materialized: str = ""  # the node's materialization (``seed`` for a seed); "": a source
    keeps_table: bool = False  # a ``table`` model configured ``fast_refresh_keep_table``


def upstream_of(model: Mapping[str, Any], graph: Mapping[str, Any]) -> tuple[Upstream, ...]:
    """The tables ``model`` (a node of dbt's graph) reads, through ephemeral models.

    Args:
        model: the model's node (``unique_id``, ``depends_on``).
        graph: dbt's flat graph (``nodes``, ``sources``).
    """
    nodes: Mapping[str, Any] = {**(graph.get("nodes") or {}), **(graph.get("sources") or {})}
    found: dict[TableName, Upstream] = {}
    seen: set[str] = set()
    todo = list((model.get("depends_on") or {}).get("nodes") or [])
    while todo:
        uid = todo.pop(0)
        node = nodes.get(uid)
        if uid in seen or node is None or node.get("resource_type") not in READ_KINDS:
            continue
        seen.add(uid)
        config = node.get("config") or {}
        if config.get("materialized") == "ephemeral":
            todo += list((node.get("depends_on") or {}).get("nodes") or [])
            continue
        relation = node.get("relation_name")
        if not relation:
            continue
        name = TableName.parse(relation)
        if config.get("materialized") == "fast_refresh":
            name = storage_of(name)  # the view's rows (and its log) are in that table
        setting = config.get("mview_log", (node.get("meta") or {}).get("mview_log"))
        kind = (
            ""
            if node.get("resource_type") == "source"
            else str(config.get("materialized") or node.get("resource_type"))
        )
        keeps = config.get("fast_refresh_keep_table") is True
        found.setdefault(name, Upstream(name, uid, *_log_setting(uid, setting), kind, keeps))
    return tuple(found.values())


def _log_setting(uid: str, setting: Any) -> tuple[bool | None, Mapping[str, Any]]:
    """(create or not, the options) from a node's ``mview_log``."""
    if setting is None or setting is True:
        return None, {}
    if setting is False:
        return False, {}
    if isinstance(setting, Mapping) and set(setting) <= set(LOG_OPTIONS):
        return True, _checked_options(uid, setting)
    raise FastRefreshError(
        f"{uid}: mview_log must be true, false or a mapping of create_mview_log options "
        f"({', '.join(LOG_OPTIONS)}), got {setting!r}. Fix: mview_log: {{key: [id]}}."
    )


def _checked_options(uid: str, setting: Mapping[str, Any]) -> dict[str, Any]:
    """A node's ``mview_log`` options, checked as ``create_mview_log`` checks its arguments
    and in its types (``commit_scn: 'false'`` is no), before the refresh writes anything:
    a value taken as it came made a log unlike the one asked for (``'false'`` is a true
    string), which every later run then warned of, or failed on."""
    options = dict(setting)
    try:
        if "commit_scn" in options:
            options["commit_scn"] = flag(options["commit_scn"], "commit_scn")
        for name in ("key", "columns"):
            if name in options:
                options[name] = column_list(options[name], name)
        if "purge" in options:
            options["purge"] = purge_mode(options["purge"]).value
    except FastRefreshError as exc:
        said = exc.message.removeprefix("create_mview_log ").replace(
            "Fix: ", "Fix (in the node's mview_log config): ", 1
        )
        raise FastRefreshError(f"{uid}: mview_log {said}") from None
    return options


def _named(node: Mapping[str, Any]) -> TableName | None:
    """A node's relation (None: none, or a name no fast_refresh view or master can have,
    as a seed `country-codes.csv` has: such a node is none of dbt-fastrefresh's, and the
    hooks that list the project's relations pass it by, where they failed every run)."""
    relation = node.get("relation_name")
    if not relation:
        return None
    try:
        return TableName.parse(relation)
    except FastRefreshError:
        return None


def model_relations(graph: Mapping[str, Any]) -> dict[str, tuple[TableName, str]]:
    """The relation and materialization of each enabled model of dbt's flat graph, by its
    node's unique_id."""
    found = {}
    for uid, node in (graph.get("nodes") or {}).items():
        name = _named(node) if node.get("resource_type") == "model" else None
        if name is not None:
            found[str(uid)] = (name, str((node.get("config") or {}).get("materialized") or "model"))
    return found


def project_relations(graph: Mapping[str, Any]) -> dict[TableName, str]:
    """The tables of the project's enabled models, seeds and snapshots (dbt's flat graph),
    each with its materialization (``fast_refresh``, ``table``, ``seed`` ...)."""
    found = {}
    for node in (graph.get("nodes") or {}).values():
        config = node.get("config") or {}
        name = _named(node) if node.get("resource_type") in ("model", "seed", "snapshot") else None
        if name is not None:
            found[name] = str(config.get("materialized") or node["resource_type"])
    return found
