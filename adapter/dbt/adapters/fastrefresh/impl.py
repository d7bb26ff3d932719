"""The dbt-fastrefresh adapter: dbt-spark, plus the fast-refresh Python layer.

Everything dbt-spark does works unchanged. The ``fr_*`` methods are the package's entry
points (materialization and run-operations); each has a parse-time stand-in, so parsing
a project never touches Spark. Each builds the protocol's ``Env`` from the connection:
its SQL through dbt's connection of the calling thread, and its metadata through
Iceberg's Java API when Spark runs in this process (``iceberg_api``), else through SQL.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dbt.adapters.base import BaseRelation, available
from dbt.adapters.spark.connections import SparkConnectionMethod
from dbt.adapters.spark.impl import SparkAdapter, SparkConfig

from dbt.adapters.fastrefresh import admin
from dbt.adapters.fastrefresh.connections import FastrefreshConnectionManager
from dbt.adapters.fastrefresh.engine import dbt_tables, dbt_views, inspection, refresh, seeds
from dbt.adapters.fastrefresh.engine.config import ModelConfig, ViewDocs, check_config_names
from dbt.adapters.fastrefresh.engine.upstream import (
    model_relations,
    project_relations,
    upstream_of,
)
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.mlog import capture
from dbt.adapters.fastrefresh.mlog import ddl as mlog
from dbt.adapters.fastrefresh.protocol.env import (
    DEFAULT_HISTORY_DAYS,
    DEFAULT_REGISTRY_SCHEMA,
    Env,
    tables_for,
)
from dbt.adapters.fastrefresh.registry import store as registry
from dbt.adapters.fastrefresh.runtime.executor import AdapterExecutor
from dbt.adapters.fastrefresh.sqltext import TableName

if TYPE_CHECKING:
    from typing import TypeAlias


def _parse_stub(*args: Any, **kwargs: Any) -> str:
    return ""


# What dbt's get_where_subquery makes of a test's model under a `where` config.
_WHERE_SUBQUERY = re.compile(r"^\s*\(select \* from (\S+) where .*\) dbt_subquery\s*$", re.S | re.I)
# An Iceberg table's ``table_type`` property, not an Iceberg view's (``ICEBERG-VIEW``).
_ICEBERG_TABLE = re.compile(r"table_type=iceberg(?![\w-])", re.IGNORECASE)


@dataclass
class FastrefreshConfig(SparkConfig):
    """The model configs this adapter adds to dbt-spark's, declared to dbt.

    ``refresh_method``: force (default), fast or complete; validated with the rest of a
    fast_refresh model's config by ``engine.config.ModelConfig.parse``.
    """

    refresh_method: str | None = None


def _declared_configs() -> list[str]:
    """The model configs dbt and this adapter declare (a node's config holds them all,
    and the user's own besides)."""
    from dbt.artifacts.resources.v1.model import ModelConfig as NodeConfig

    fields = {*NodeConfig.__dataclass_fields__, *FastrefreshConfig.__dataclass_fields__}
    return sorted({*(f for f in fields if not f.startswith("_")), "pre-hook", "post-hook"})


class FastrefreshAdapter(SparkAdapter):
    """dbt-spark's adapter; every dbt-spark feature keeps working unchanged."""

    ConnectionManager: TypeAlias = FastrefreshConnectionManager  # type: ignore[assignment]
    AdapterSpecificConfigs = FastrefreshConfig

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

        An Iceberg view (``table_type=ICEBERG-VIEW``: a fast_refresh model's view, or a dbt
        view model, on the embedded default) is not an Iceberg table: taken for one, dbt's
        table materialization skipped dropping it and its ``create or replace table``
        failed on every run ("View with same name already exists").
        """
        relations = []
        for relation in super()._build_spark_relation_list(row_list, relation_info_func):
            if not relation.schema:
                continue
            information = getattr(relation, "information", None) or ""
            if (
                not getattr(relation, "is_iceberg", False)
                and not relation.is_view
                and _ICEBERG_TABLE.search(information) is not None
            ):
                relation = relation.incorporate(is_iceberg=True)
            relations.append(relation)
        return relations

    def list_relations_without_caching(self, schema_relation: BaseRelation) -> list[BaseRelation]:
        """dbt-spark's listing; on a shared catalog (Iceberg's own: every table an Iceberg
        table), ``SHOW TABLES`` and ``SHOW VIEWS``, two statements. dbt-spark's fallback for
        Iceberg catalogs lists no views (``SHOW TABLES`` of a v2 catalog leaves them out)
        and runs a ``DESCRIBE`` per table."""
        if getattr(self.config.credentials, "shared_catalog", None) is None:
            return super().list_relations_without_caching(schema_relation)  # type: ignore[no-any-return]
        from dbt.adapters.contracts.relation import RelationType
        from dbt.adapters.spark.impl import SCHEMA_NOT_FOUND_MESSAGES
        from dbt_common.exceptions import DbtRuntimeError

        schema = schema_relation.schema
        quoted = "`" + str(schema).replace("`", "``") + "`"
        try:
            _, tables = self.execute(f"SHOW TABLES IN {quoted}", fetch=True)
            _, views = self.execute(f"SHOW VIEWS IN {quoted}", fetch=True)
        except DbtRuntimeError as exc:
            if any(m in str(exc) for m in SCHEMA_NOT_FOUND_MESSAGES):
                return []
            raise
        found: list[BaseRelation] = []
        view_names = {str(row[1]) for row in views if not row[2]}
        for row in tables:
            if row[2] or str(row[1]) in view_names:  # temporary, or a view listed twice
                continue
            table = RelationType.Table
            found.append(
                self.Relation.create(
                    schema=schema, identifier=str(row[1]), type=table, is_iceberg=True
                )
            )
        found += [
            self.Relation.create(schema=schema, identifier=name, type=RelationType.View)
            for name in sorted(view_names)
        ]
        return found

    def drop_schema(self, relation: BaseRelation) -> None:
        """dbt-spark's ``DROP SCHEMA ... CASCADE``; on a shared catalog, whose Iceberg
        catalog drops only empty namespaces (it ignores CASCADE), the schema's relations
        are dropped first."""
        if getattr(self.config.credentials, "shared_catalog", None) is not None:
            for found in self.list_relations_without_caching(relation.without_identifier()):
                self.drop_relation(found)
        super().drop_schema(relation)

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

        from dbt.adapters.fastrefresh.iceberg import columns as master_module

        creds = self.config.credentials
        if not getattr(creds, "embedded", False) or not relation.schema or not relation.identifier:
            return
        if getattr(creds, "shared_catalog", None) is not None:
            return  # Iceberg's own catalog: no such folder is left
        warehouse = creds.server_side_parameters.get("spark.sql.warehouse.dir", "")
        root = Path(warehouse.removeprefix("file:")).resolve()
        folder = (root / f"{relation.schema.lower()}.db" / relation.identifier.lower()).resolve()
        if root not in folder.parents or not folder.is_dir():
            return
        name = TableName(relation.schema, relation.identifier)
        if master_module.table_exists(AdapterExecutor(self), name):
            return
        shutil.rmtree(folder, ignore_errors=True)

    # -- the Python layer ---------------------------------------------------------------

    def _env(self) -> Env:
        creds = self.config.credentials
        x = AdapterExecutor(self)
        env = Env(
            x,
            tables_for(x, self._in_process_spark()),
            registry=str(getattr(creds, "registry_schema", DEFAULT_REGISTRY_SCHEMA)).lower(),
            shared_catalog=bool(getattr(creds, "shared", False)),
            history_days=getattr(creds, "registry_history_days", DEFAULT_HISTORY_DAYS),
        )
        catalog = getattr(creds, "shared_catalog", None)
        if catalog is not None:  # the profile's lease timing
            env.lease_seconds = catalog.lease_seconds
            env.lease_wait_seconds = catalog.lease_wait_seconds
        return env

    def _in_process_spark(self) -> Any:
        """This process's SparkSession when the Java path applies (session method,
        ``iceberg_api`` not ``sql``), started with exactly the profile's settings."""
        creds = self.config.credentials
        if getattr(creds, "iceberg_api", "auto") == "sql":
            return None
        if creds.method != SparkConnectionMethod.SESSION:
            return None
        from pyspark.sql import SparkSession

        running = SparkSession._instantiatedSession  # no JVM round trip when there is one
        if running is not None:
            return running
        # Opening the connection prepares the embedded settings (jars) first.
        self.connections.get_thread_connection().handle  # noqa: B018
        from dbt.adapters.fastrefresh.runtime.embedded import session_builder

        return session_builder(creds.server_side_parameters).getOrCreate()

    @available.parse(_parse_stub)
    def fr_registry_schema(self) -> str:
        return self._env().registry

    @available.parse(_parse_stub)
    def fr_ensure_registry(self) -> str:
        env = self._env()
        registry.ensure(env, again=True)  # as it is now, not as this process last found it
        return f"registry ready in schema {env.registry}"

    @available.parse(_parse_stub)
    def fr_rebuild_registry(self) -> str:
        return registry.rebuild(self._env())

    @available.parse(_parse_stub)
    def fr_publish_registry(
        self, graph: Any = None, release_removed: Any = True, project: Any = None
    ) -> str:
        """The end of a dbt invocation (the package's on-run-end hook): release the views
        that no longer hold their logs back (``admin.release_orphans``; with ``graph``,
        also the project's removed or renamed models unless ``release_removed`` is false),
        then publish the registry."""
        env = self._env()
        relations = project_relations(graph) if graph and release_removed else None
        nodes = (
            admin.ProjectNodes(str(project), model_relations(graph))
            if graph and release_removed and project
            else None
        )
        released = admin.release_orphans(env, relations, nodes)
        return "\n".join([*released, registry.publish(env)])

    def _published(self, env: Env, message: str) -> str:
        """A run-operation's message, after publishing what it changed."""
        registry.publish(env)
        return message

    @available.parse(_parse_stub)
    def fr_create_mview_log(
        self,
        master: Any,
        columns: list[str] | None = None,
        commit_scn: bool = False,
        key: list[str] | None = None,
        purge: str = "deferred",
        *,
        if_not_exists: bool = False,
    ) -> str:
        env = self._env()
        message = mlog.create_mview_log(
            env, master, columns=columns, commit_scn=mlog.flag(commit_scn, "commit_scn"),
            key=key, purge=purge, if_not_exists=mlog.flag(if_not_exists, "if_not_exists"),
        )  # fmt: skip
        return self._published(env, message)

    @available.parse(_parse_stub)
    def fr_drop_mview_log(self, master: Any) -> str:
        env = self._env()
        return self._published(env, mlog.drop_mview_log(env, master))

    @available.parse(_parse_stub)
    def fr_capture_changes(self, master: Any = None) -> str:
        env = self._env()
        if master is not None:  # '' is a master named wrong, not every log
            return self._published(
                env, capture.capture(env, mlog.master_table(env, master)).message()
            )
        masters = registry.logs_published(env)
        if not masters:
            return "capture: no materialized view logs are registered"
        done, failed = admin.capture_every_log(env, masters)
        done = self._published(env, done)  # the captures that went through, recorded
        if failed:
            raise FastRefreshError(failed)
        return done

    @available.parse(_parse_stub)
    def fr_purge_log(self, master: Any, num: Any = 1, flag: Any = "delete") -> str:
        env = self._env()
        return self._published(env, admin.purge_log(env, master, num, flag))

    @available.parse(_parse_stub)
    def fr_purge_mview_from_log(self, mview: Any, master: Any = None) -> str:
        env = self._env()
        return self._published(env, admin.purge_mview_from_log(env, mview, master))

    @available.parse(lambda *args, **kwargs: None)
    def fr_model_config(
        self,
        relation: BaseRelation,
        *,
        refresh_method: Any = "force",
        file_format: Any = "iceberg",
        full_refresh: Any = False,
        table_options: Any = "",
        tblproperties: Any = None,
        model: Any = None,
        graph: Any = None,
        on_schema_change: Any = "ignore",
        empty: Any = False,
        project: Any = None,
    ) -> ModelConfig:
        """A fast_refresh model's config, validated once before anything runs.

        Args:
            relation: the model's relation, named in errors.
            refresh_method, file_format, full_refresh, table_options, tblproperties: the
                model's config as dbt gives it (``ModelConfig.parse``).
            model, graph: the model's node and dbt's graph, for the tables it reads.
            on_schema_change: the model's config (dbt's four values).
            empty: dbt's ``--empty`` flag (the query reads no rows).
            project: the root dbt project's name and the target's schema
                (``<project_name>:<target.schema>``).
        """
        where = str(TableName.parse(relation))
        check_config_names(where, (model or {}).get("config") or {}, _declared_configs())
        upstream = upstream_of(model, graph) if model and graph else ()
        return ModelConfig.parse(
            where, refresh_method=refresh_method,
            file_format=file_format, full_refresh=full_refresh, table_options=table_options,
            tblproperties=tblproperties, upstream=upstream, on_schema_change=on_schema_change,
            docs=ViewDocs.of(model), name=(model or {}).get("name"), empty=empty,
            node=(model or {}).get("unique_id"), project=str(project) if project else None,
        )  # fmt: skip

    @available.parse(lambda *args, **kwargs: {})
    def fr_refresh_model(
        self,
        relation: BaseRelation,
        existing: BaseRelation | None,
        sql: str,
        config: ModelConfig,
        replaces_table: bool = False,
    ) -> dict[str, Any]:
        """The fast_refresh materialization's one refresh: the model's view, as ``config``
        (``fr_model_config``) says. ``existing``: the relation as dbt found it (the view;
        its storage table is looked up by the refresh); ``sql``: the compiled SELECT;
        ``replaces_table``: the model's name is another materialization's table, which the
        view replaces once the refresh has built its storage table."""
        result = refresh.refresh_view(
            self._env(), view=TableName.parse(relation), sql=sql, method=config.method,
            full_refresh=config.full_refresh, table=config.table,
            on_schema_change=config.on_schema_change, upstream=config.upstream,
            docs=config.docs, replace_table=replaces_table,
            model=refresh.DbtModel(
                config.name or str(relation), config.empty, existing is not None,
                node=config.node, project=config.project,
            ),
        )  # fmt: skip
        return {
            "logs_created": list(result.logs_created),
            "log_warnings": list(result.log_warnings),
            "type": str(result.refresh_type), "reason": str(result.reason or ""),
            "message": result.message(), "log_rows": result.log_rows, "noop": result.noop,
            "seconds": round(result.seconds, 3),
        }  # fmt: skip

    @available.parse(lambda *args, **kwargs: False)
    def fr_built_by_0_1(self, relation: BaseRelation) -> bool:
        """Whether the table at a fast_refresh model's name holds a view built by
        dbt-fastrefresh 0.1 (the materialization renames it to the storage table)."""
        return refresh.built_by_0_1(self._env(), TableName.parse(relation))

    @available.parse(lambda *args, **kwargs: False)
    def fr_view_unchanged(self, relation: BaseRelation, create_sql: str) -> bool:
        """Whether the view model's existing view was created by ``create_sql`` in this
        release (``engine/dbt_views.py``): a metastore read on the Java path, else one
        ``SHOW TBLPROPERTIES``."""
        return dbt_views.unchanged(self._env(), TableName.parse(relation), create_sql)

    @available.parse(lambda *args, **kwargs: False)
    def fr_seed_keeps_table(self, relation: BaseRelation, columns: Any, options: str) -> bool:
        """Whether ``dbt seed`` keeps the seed's table ``relation`` and replaces its rows in
        one commit (``engine/seeds.py``): it has a materialized view log, was created with
        ``options`` (the seed's options fingerprint) and the CSV's ``columns`` ([name,
        type], ...) are its own. Remembered for ``fr_seed_replacing``."""
        name = TableName.parse(relation)
        keep = seeds.keeps_table(self._env(), name, columns, options)
        if keep:
            self.__dict__.setdefault("_seeds_kept", set()).add(str(name))
        return keep

    @available.parse(lambda *args, **kwargs: False)
    def fr_seed_replacing(self, relation: BaseRelation) -> bool:
        """Whether this ``dbt seed`` of ``relation`` kept its table (``fr_seed_keeps_table``),
        so its rows are loaded replacing the table's; asked once per seed."""
        name, kept = str(TableName.parse(relation)), self.__dict__.get("_seeds_kept", set())
        if name not in kept:
            return False
        kept.discard(name)
        return True

    @available.parse(lambda *args, **kwargs: False)
    def fr_table_keeps_rows(self, relation: BaseRelation, options: str, query: str) -> bool:
        """Whether the ``table`` model building ``relation`` with ``query`` keeps its table
        and replaces its rows in one commit (``engine/dbt_tables.py``): it has a
        materialized view log, was created with ``options`` (the model's options
        fingerprint) and has the query's columns."""
        return dbt_tables.keeps_table(self._env(), TableName.parse(relation), options, query)

    @available.parse(lambda *args, **kwargs: "")
    def fr_table_options_property(self) -> str:
        """The table property a seed's or ``table`` model's options fingerprint is
        recorded in."""
        return seeds.OPTIONS_PROPERTY

    @available.parse(lambda *args, **kwargs: False)
    def fr_views_replace_in_place(self) -> bool:
        """Whether ``CREATE OR REPLACE VIEW`` replaces a view's query in this catalog: on a
        shared catalog (Iceberg's ``SparkCatalog``) it does, atomically. Elsewhere the view
        materialization drops the view first: behind Iceberg's ``SparkSessionCatalog`` on a
        Hive metastore (the embedded default) the metastore keeps the old query
        (apache/iceberg#15490), and a cluster's catalog cannot be seen from here."""
        return self.fr_tables_are_iceberg()

    @available.parse(lambda *args, **kwargs: False)
    def fr_tables_are_iceberg(self) -> bool:
        """Whether every table created here is an Iceberg table, whatever a model's or
        seed's ``file_format``: on a shared catalog (Iceberg's ``SparkCatalog``), ``USING
        parquet`` (dbt-spark's default), ``avro`` or ``orc`` creates an Iceberg table that
        writes its data files in that format, and any other format is refused."""
        return getattr(self.config.credentials, "shared_catalog", None) is not None

    @available.parse(_parse_stub)
    def fr_mark_view(self, relation: BaseRelation, create_sql: str) -> str:
        """Record on a view model's view, just created by ``create_sql``, what created it."""
        dbt_views.mark(self._env(), TableName.parse(relation), create_sql)
        return ""

    @available.parse(_parse_stub)
    def fr_refresh_mviews(self, names: Any, method: str = "force") -> str:
        """DBMS_MVIEW.REFRESH with a list: names as a list or a comma-separated string."""
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",") if n.strip()]
        named = (isinstance(n, str) or hasattr(n, "identifier") for n in names or ())
        if not isinstance(names, (list, tuple)) or not all(named):  # names or relations
            raise FastRefreshError(
                f"refresh_mviews names must be a list of views (schema.view), got {names!r}; "
                'nothing was refreshed. Fix: --args "{names: [schema.a, schema.b]}" (or '
                "names: 'schema.a, schema.b')."
            )
        env = self._env()
        results = inspection.refresh_mviews(env, list(names), method)
        return self._published(env, "\n".join(r.message() for r in results))

    @available.parse(_parse_stub)
    def fr_explain_mview(self, target: Any) -> str:
        if not str(target or "").strip():
            raise FastRefreshError(
                "explain_mview needs a registered view (schema.view) or a SELECT as mview, "
                "and got none. Fix: dbt run-operation fast_refresh.explain_mview --args "
                '"{mview: schema.view}".'
            )
        return inspection.explain(self._env(), str(target))

    @available.parse(lambda *args, **kwargs: ["FRESH", ""])
    def fr_staleness(self, relation: Any) -> list[str]:
        env = self._env()
        state, why = inspection.staleness(env, TableName.parse(relation))
        return [str(state), why]

    @available.parse(lambda *args, **kwargs: None)
    def fr_tested_relation(self, model: Any) -> BaseRelation:
        """The relation a package test (``equals_query``, ``is_fresh``) is on: ``model``,
        or under the test's ``where`` config the relation dbt wrapped in a subquery
        (``(select * from <relation> where ...) dbt_subquery``)."""
        if getattr(model, "identifier", None):
            return model  # type: ignore[no-any-return]
        match = _WHERE_SUBQUERY.match(str(model))
        if match is None:
            raise FastRefreshError(
                f"A fast_refresh test got {model!r} for its model, neither a relation nor "
                "dbt's `where` subquery of one. Fix: remove the test's `where` config, or "
                "the project's own get_where_subquery macro for this test."
            )
        name = TableName.parse(match.group(1))
        return self.Relation.create(schema=name.schema, identifier=name.table)  # type: ignore[no-any-return]

    @available.parse(_parse_stub)
    def fr_pinned_definition(self, relation: Any) -> str:
        return inspection.pinned_definition(self._env(), TableName.parse(relation))

    @available.parse(_parse_stub)
    def fr_unregister_mview(self, mview: Any) -> str:
        env = self._env()
        return self._published(env, admin.unregister_mview(env, mview))
