"""A fast_refresh model's configuration, declared once and validated once.

dbt hands the materialization the model's config as loose values; ``ModelConfig.parse``
turns them into this typed record or raises one error naming the model, the setting, the
cause and the fix, before anything is read or written. The adapter declares the same keys
to dbt (``impl.FastrefreshConfig``) so that ``dbt_project.yml`` and ``config()`` accept
them as dbt-spark's own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.fastrefresh.engine.upstream import Upstream
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.protocol.decisions import RefreshMethod

# The table properties of a view built without ``tblproperties``: format v2 (row-level
# deletes); an unpartitioned view's MERGE needs no shuffle before its write (Iceberg's
# default hash distribution adds one; about 0.1 s of a 1M-row view's MERGE here).
VIEW_PROPERTIES = {"format-version": "2"}
UNPARTITIONED_VIEW_PROPERTIES = {**VIEW_PROPERTIES, "write.merge.distribution-mode": "none"}

# Table properties dbt-fastrefresh keeps its own state in (protocol/state.py).
RESERVED_PROPERTY_PREFIX = "fast_refresh."


@dataclass(frozen=True)
class TableSpec:
    """How the view's table is created: dbt-spark's clauses and its table properties."""

    options: str = ""  # PARTITIONED BY / CLUSTERED BY / LOCATION / COMMENT
    properties: Mapping[str, str] = field(default_factory=dict)  # the model's tblproperties

    def stored(self) -> str:
        """The options as the view's configuration keeps them (whitespace folded)."""
        return " ".join(self.options.split())

    def table_properties(self) -> dict[str, str]:
        if self.properties:
            return {str(k): str(v) for k, v in self.properties.items()}
        if "partitioned by" in self.options.lower():
            return dict(VIEW_PROPERTIES)
        return dict(UNPARTITIONED_VIEW_PROPERTIES)


@dataclass(frozen=True)
class ViewDocs:
    """The comments a model's view carries (dbt's ``persist_docs``): the relation's
    description, and each documented column's; and, under an enforced contract, the order
    of its columns (``order``, lower case: the contract's, as dbt-spark's ``table``
    models take it; the storage table keeps the query's)."""

    relation: str | None = None
    columns: Mapping[str, str] = field(default_factory=dict)
    order: tuple[str, ...] = ()

    @classmethod
    def of(cls, model: Mapping[str, Any] | None) -> ViewDocs:
        """From dbt's model node: what ``persist_docs`` asks to persist."""
        if not model:
            return cls()
        config = model.get("config") or {}
        persist = config.get("persist_docs") or {}
        relation = model.get("description") if persist.get("relation") else None
        columns = {
            str(name).lower(): str(column.get("description"))
            for name, column in (model.get("columns") or {}).items()
            if persist.get("columns") and column.get("description")
        }
        contract = config.get("contract") or {}
        enforced = contract.get("enforced") if isinstance(contract, Mapping) else False
        order = tuple(str(n).lower() for n in (model.get("columns") or {})) if enforced else ()
        return cls(str(relation) if relation else None, columns, order)


@dataclass(frozen=True)
class ModelConfig:
    """What a ``fast_refresh`` model's config says, typed.

    Attributes:
        method: ``refresh_method`` (force, fast or complete).
        full_refresh: ``dbt run --full-refresh`` (or the model's ``full_refresh`` config).
        table: how the view's storage table is created (dbt-spark's clauses,
            ``tblproperties``).
        upstream: the tables the model reads, from dbt's graph, and their ``mview_log``
            settings (``engine/upstream.py``).
        on_schema_change: what a change of the view's columns does (``refresh_view``).
        docs: the comments the view carries (``persist_docs``).
        name: the dbt model's name (what ``dbt run -s`` selects), for fixes.
        empty: ``dbt run --empty`` (dbt limits each table the query reads to no rows).
        node, project: the model's node (unique_id) and the root dbt project's name
            and target schema (``<project_name>:<target.schema>``).
    """

    method: RefreshMethod = RefreshMethod.FORCE
    full_refresh: bool = False
    table: TableSpec = field(default_factory=TableSpec)
    upstream: tuple[Upstream, ...] = ()
    on_schema_change: str = "ignore"
    docs: ViewDocs = field(default_factory=ViewDocs)
    name: str | None = None
    empty: bool = False
    node: str | None = None
    project: str | None = None

    @classmethod
    def parse(
        cls,
        model: str,
        *,
        refresh_method: object = "force",
        file_format: object = "iceberg",
        full_refresh: object = False,
        table_options: object = "",
        tblproperties: object = None,
        upstream: Sequence[Upstream] = (),
        on_schema_change: object = "ignore",
        docs: ViewDocs | None = None,
        name: str | None = None,
        empty: object = False,
        node: str | None = None,
        project: str | None = None,
    ) -> ModelConfig:
        """The config of ``model`` from dbt's values, or an error naming the bad one.

        Args:
            model: the model's relation, for messages.
            refresh_method: ``force`` (default), ``fast``, ``complete`` or Oracle's letters.
            file_format: must be ``iceberg`` (the default): the view is an Iceberg table.
            full_refresh: whether dbt asks for a full refresh.
            table_options: dbt-spark's rendered PARTITIONED BY / CLUSTERED BY / LOCATION /
                COMMENT clauses.
            tblproperties: a mapping of property names to scalar values.
            upstream: the tables the model reads (``upstream.upstream_of``).
            on_schema_change: dbt's ``ignore`` (default), ``fail``,
                ``append_new_columns`` or ``sync_all_columns``.
            docs: the comments the view carries (``ViewDocs.of`` the model's node).
            name: the dbt model's name, which fixes name in ``dbt run -s``.
            empty: dbt's ``--empty`` flag.
            node, project: the model's unique_id, and ``<project_name>:<target.schema>``.
        """
        where = f"Model {model}"
        if str(file_format or "iceberg").strip().lower() != "iceberg":
            raise FastRefreshError(
                f"{where}: a fast_refresh view is stored as an Iceberg table, but file_format "
                f"is {file_format!r}. Fix: remove file_format or set file_format='iceberg'."
            )
        return cls(
            method=RefreshMethod.parse(refresh_method, where=where),
            full_refresh=bool(full_refresh),
            table=TableSpec(str(table_options or ""), _properties(where, tblproperties)),
            upstream=tuple(upstream),
            on_schema_change=_on_schema_change(where, on_schema_change),
            docs=docs or ViewDocs(),
            name=name,
            empty=bool(empty),
            node=node,
            project=project,
        )


ON_SCHEMA_CHANGE = ("ignore", "fail", "append_new_columns", "sync_all_columns")

# The configs a fast_refresh model reads. dbt keeps a config it does not know as the
# user's own, so a misspelt one left the setting at its default without a word
# (``refresh_methd: fast`` refreshed under ``force``).
READ_CONFIGS = (
    "refresh_method", "on_schema_change", "mview_log", "tblproperties", "file_format",
    "partition_by", "clustered_by", "buckets", "location_root", "persist_docs", "contract",
    "grants", "full_refresh",
)  # fmt: skip


def check_config_names(model: str, config: Mapping[str, object], known: Sequence[str]) -> None:
    """Raise, naming the key and the config it likely means, when a key of ``config`` (a
    model's, as dbt gives it) is no config dbt or an adapter declares (``known``) but is
    a slip of one a fast_refresh model reads (``READ_CONFIGS``): one edit away (a letter
    left out, added, changed or two swapped; ``-`` for ``_``; the case), two for a name
    of more than eight letters. A user's own config further away is left alone."""
    declared = {*known, *READ_CONFIGS}  # (tblproperties and mview_log are dbt's extras)
    for key in config:
        if key in declared:
            continue
        for meant in READ_CONFIGS:
            if _edits(key.lower().replace("-", "_"), meant) <= (2 if len(meant) > 8 else 1):
                raise FastRefreshError(
                    f"Model {model}: config {key!r} is not one dbt or dbt-fastrefresh "
                    f"knows, and a misspelt config is ignored, leaving {meant} at its "
                    f"default. Fix: write {meant} (or, for a config of your own, a name "
                    "further from it)."
                )


def _edits(a: str, b: str) -> int:
    """The optimal string alignment distance of ``a`` and ``b``: the insertions,
    deletions, substitutions and swaps of two neighbouring letters between them."""
    rows = [list(range(len(b) + 1))]
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            row[j] = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows.append(row)
    return rows[-1][len(b)]


def _on_schema_change(where: str, value: object) -> str:
    text = str(value or "ignore").strip().lower()
    if text not in ON_SCHEMA_CHANGE:
        raise FastRefreshError(
            f"{where}: on_schema_change must be one of {', '.join(ON_SCHEMA_CHANGE)}, got "
            f"{value!r}. Fix: on_schema_change='sync_all_columns' (a view always has its "
            "query's columns: any value but 'fail' rebuilds it once when they change)."
        )
    return text


def _properties(where: str, raw: object) -> dict[str, str]:
    """``tblproperties`` as strings: a mapping of names to scalars, none of ours."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise FastRefreshError(
            f"{where}: tblproperties must be a mapping of property names to values, got "
            f"{type(raw).__name__} {raw!r}. Fix: tblproperties={{'write.merge.mode': "
            "'merge-on-read'}."
        )
    out: dict[str, str] = {}
    for key, value in raw.items():
        name = str(key)
        if name.lower().startswith(RESERVED_PROPERTY_PREFIX):
            raise FastRefreshError(
                f"{where}: tblproperties sets {name!r}, but properties starting with "
                f"'{RESERVED_PROPERTY_PREFIX}' hold dbt-fastrefresh's own state. Fix: remove "
                "it from tblproperties."
            )
        if isinstance(value, (Mapping, list, tuple, set)) or value is None:
            raise FastRefreshError(
                f"{where}: tblproperties[{name!r}] must be a string, number or boolean, got "
                f"{value!r}. Fix: give it a scalar value."
            )
        out[name] = _scalar(value)
    return out


def _scalar(value: Any) -> str:
    """A property value as Spark stores it (booleans lower case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
