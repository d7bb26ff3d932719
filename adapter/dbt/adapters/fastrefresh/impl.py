"""The dbt-fastrefresh adapter: dbt-spark, plus the fast-refresh Python layer.

Everything dbt-spark does works unchanged. The ``fr_*`` methods are the package's entry
points (materialization and run-operations); each has a parse-time stand-in, so parsing
a project never touches Spark.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dbt.adapters.base import BaseRelation, available
from dbt.adapters.spark.impl import SparkAdapter

from dbt.adapters.fastrefresh import admin, capture, inspection, logs, refresh
from dbt.adapters.fastrefresh import master as master_module
from dbt.adapters.fastrefresh.clock import utcnow
from dbt.adapters.fastrefresh.connections import (
    DEFAULT_REGISTRY_SCHEMA,
    FastrefreshConnectionManager,
)
from dbt.adapters.fastrefresh.executor import AdapterExecutor
from dbt.adapters.fastrefresh.registry import Registry
from dbt.adapters.fastrefresh.sqltext import TableName

if TYPE_CHECKING:
    from typing import TypeAlias


def _parse_stub(*args: Any, **kwargs: Any) -> str:
    return ""


class FastrefreshAdapter(SparkAdapter):
    """dbt-spark's adapter; every dbt-spark feature keeps working unchanged."""

    ConnectionManager: TypeAlias = FastrefreshConnectionManager  # type: ignore[assignment]

    @classmethod
    def type(cls) -> str:
        return "fastrefresh"

    def _build_spark_relation_list(
        self,
        row_list: Any,
        relation_info_func: Callable[[Any], tuple[str, str, str]],
    ) -> list[BaseRelation]:
        """dbt-spark's relation listing, fixed for an Iceberg session catalog.

        - Behind ``SparkSessionCatalog`` on a Hive metastore, ``SHOW TABLE EXTENDED`` says
          ``Provider: hive`` for Iceberg tables; only ``table_type=ICEBERG`` in their
          properties tells them apart (dbt-labs/dbt-spark#870). Without this, dbt-spark
          drops and recreates Iceberg tables and refuses to rerun snapshots.
        - It also lists the session's temporary views, with no schema, in every schema;
          they are not relations of the schema (and break ``docs generate``).
        """
        relations = []
        for relation in super()._build_spark_relation_list(row_list, relation_info_func):
            if not relation.schema:
                continue
            information = getattr(relation, "information", None) or ""
            if (
                not getattr(relation, "is_iceberg", False)
                and "table_type=iceberg" in information.lower()
            ):
                relation = relation.incorporate(is_iceberg=True)
            relations.append(relation)
        return relations

    @available.parse_none
    def fr_remove_dropped_location(self, relation: BaseRelation) -> None:
        """Embedded only: remove what a DROP left of a relation's warehouse folder.

        Behind Iceberg's SparkSessionCatalog, a view is an Iceberg view with metadata in the
        warehouse folder of its name, and dropping it (or a non-Iceberg table) leaves that
        folder (apache/iceberg#10157); Spark then refuses to create a table of that name
        (LOCATION_ALREADY_EXISTS). Only a folder inside the embedded warehouse, of a
        relation that no longer exists, is removed.
        """
        import shutil
        from pathlib import Path

        creds = self.config.credentials
        if not getattr(creds, "embedded", False) or not relation.schema or not relation.identifier:
            return
        warehouse = creds.server_side_parameters.get("spark.sql.warehouse.dir", "")
        root = Path(warehouse.removeprefix("file:")).resolve()
        folder = (root / f"{relation.schema.lower()}.db" / relation.identifier.lower()).resolve()
        if root not in folder.parents or not folder.is_dir():
            return
        executor = self._executor()
        if master_module.table_exists(executor, TableName(relation.schema, relation.identifier)):
            return
        shutil.rmtree(folder, ignore_errors=True)

    # -- the Python layer ---------------------------------------------------------------

    def _executor(self) -> AdapterExecutor:
        return AdapterExecutor(self)

    def _registry(self) -> Registry:
        schema = getattr(self.config.credentials, "registry_schema", DEFAULT_REGISTRY_SCHEMA)
        return Registry(self._executor(), schema)

    @available.parse(_parse_stub)
    def fr_registry_schema(self) -> str:
        return self._registry().schema

    @available.parse(_parse_stub)
    def fr_ensure_registry(self) -> str:
        registry = self._registry()
        registry.ensure()
        return f"registry ready in schema {registry.schema}"

    @available.parse(_parse_stub)
    def fr_create_mview_log(
        self,
        master: Any,
        columns: list[str] | None = None,
        commit_scn: bool = False,
        key: list[str] | None = None,
    ) -> str:
        return logs.create_mview_log(
            self._executor(), self._registry(), master, columns, bool(commit_scn), key, utcnow
        )

    @available.parse(_parse_stub)
    def fr_drop_mview_log(self, master: Any) -> str:
        return logs.drop_mview_log(self._executor(), self._registry(), master)

    @available.parse(_parse_stub)
    def fr_capture_changes(self, master: Any = None) -> str:
        registry = self._registry()
        registry.ensure()
        masters = [TableName.parse(master)] if master else [log.master for log in registry.logs()]
        if not masters:
            return "capture: no materialized view logs are registered"
        results = [
            capture.capture(self._executor(), registry, m, utcnow).message() for m in masters
        ]
        return "\n".join(results)

    @available.parse(_parse_stub)
    def fr_purge_log(self, master: Any, num: int = 1, flag: str = "delete") -> str:
        return admin.purge_log(self._executor(), self._registry(), master, num, flag, utcnow)

    @available.parse(_parse_stub)
    def fr_purge_mview_from_log(self, mview: Any, master: Any = None) -> str:
        return admin.purge_mview_from_log(self._executor(), self._registry(), mview, master, utcnow)

    @available.parse(lambda *args, **kwargs: {})
    def fr_refresh_model(
        self,
        relation: BaseRelation,
        existing: BaseRelation | None,
        sql: str,
        refresh_method: str,
        full_refresh: bool,
        table_options: str,
    ) -> dict[str, Any]:
        """The fast_refresh materialization's one call: refresh the model's view."""
        result = refresh.refresh_view(
            self._executor(), self._registry(), TableName.parse(relation), sql,
            str(refresh_method), bool(full_refresh), existing is not None, table_options, utcnow,
        )  # fmt: skip
        return {
            "type": result.refresh_type, "reason": result.reason, "message": result.message(),
            "log_rows": result.log_rows, "noop": result.noop, "seconds": round(result.seconds, 3),
        }  # fmt: skip

    @available.parse(_parse_stub)
    def fr_refresh_mviews(self, names: Any, method: str = "force") -> str:
        """DBMS_MVIEW.REFRESH with a list: names as a list or a comma-separated string."""
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",") if n.strip()]
        method = {"f": "fast", "c": "complete", "?": "force"}.get(
            str(method).lower(), str(method).lower()
        )
        results = refresh.refresh_mviews(
            self._executor(), self._registry(), list(names), method, utcnow
        )
        return "\n".join(r.message() for r in results)

    @available.parse(_parse_stub)
    def fr_explain_mview(self, target: Any) -> str:
        return inspection.explain(self._executor(), self._registry(), str(target))

    @available.parse(lambda *args, **kwargs: ["FRESH", ""])
    def fr_staleness(self, relation: Any) -> list[str]:
        state, why = inspection.staleness(
            self._executor(), self._registry(), TableName.parse(relation), utcnow
        )
        return [state, why]

    @available.parse(_parse_stub)
    def fr_pinned_definition(self, relation: Any) -> str:
        return inspection.pinned_definition(self._registry(), TableName.parse(relation))

    @available.parse(_parse_stub)
    def fr_unregister_mview(self, mview: Any) -> str:
        return admin.unregister_mview(self._registry(), mview)
