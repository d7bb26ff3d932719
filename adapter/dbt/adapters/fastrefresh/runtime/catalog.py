"""A shared Iceberg catalog: several dbt processes, on one machine or many, on one set of tables.

The embedded default keeps its catalog in a Derby metastore that one process holds. A
profile's ``catalog:`` instead makes Spark's session catalog an Iceberg catalog that
commits atomically across processes (Iceberg's ``SparkCatalog``; tested with the JDBC
catalog on PostgreSQL), with the warehouse on storage every process reaches. Spark still
runs inside the dbt process, with the embedded default's jars and settings; every table,
view and namespace lives in the shared catalog (Spark's own catalog is in memory only).

Iceberg's atomic commits keep each commit whole; what spans several commits (a capture,
a refresh, a purge) is kept apart across processes by leases (``runtime/leases.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SESSION_CATALOG = "spark.sql.catalog.spark_catalog"
# Iceberg's DataFrame source (``format("iceberg").load(name)``, which capture's staged
# scans use) goes to this catalog when the session catalog is not SparkSessionCatalog.
SOURCE_CATALOG = "spark.sql.catalog.default_iceberg"
SHARED_CATALOG_CLASS = "org.apache.iceberg.spark.SparkCatalog"
# Where Debian's libpostgresql-jdbc-java (and most Linux packages) put the driver.
SYSTEM_JARS = {"postgresql": "/usr/share/java/postgresql.jar"}
DEFAULT_LEASE_SECONDS = 60.0
DEFAULT_LEASE_WAIT_SECONDS = 900.0
# Settings of the embedded default that belong to its Derby/Hive metastore.
EMBEDDED_METASTORE_KEYS = (
    "spark.sql.catalog.spark_catalog.type",
    "spark.hadoop.iceberg.engine.hive.lock-enabled",
    "spark.hadoop.hive.metastore.schema.verification",
    "spark.hadoop.hive.metastore.disallow.incompatible.col.type.changes",
    "spark.hadoop.datanucleus.schema.autoCreateAll",
    "spark.hadoop.javax.jdo.option.ConnectionURL",
)


class CatalogConfigError(ValueError):
    """The profile's ``catalog`` is malformed; the message names the field and the fix."""


@dataclass(frozen=True)
class SharedCatalog:
    """The profile's ``catalog``, validated: Iceberg catalog properties for Spark's session
    catalog, the jars its client needs, and the leases' timing."""

    properties: Mapping[str, str]
    jars: tuple[str, ...] = ()
    lease_seconds: float = DEFAULT_LEASE_SECONDS
    lease_wait_seconds: float = DEFAULT_LEASE_WAIT_SECONDS

    @classmethod
    def parse(cls, raw: object) -> SharedCatalog:
        """``catalog`` as the profile gives it.

        ``type`` (default ``jdbc``), ``uri`` and ``warehouse`` are Iceberg's catalog
        properties; ``user`` and ``password`` are the JDBC catalog's ``jdbc.user`` and
        ``jdbc.password``; ``jars`` lists the jars its client needs (for a PostgreSQL URI,
        Debian's driver jar by default); ``lease_seconds`` and ``lease_wait_seconds`` time
        the leases. Any other key is passed to Iceberg as it is (``jdbc.ssl``, ``io-impl``...).

        >>> SharedCatalog.parse({"uri": "jdbc:sqlite:x", "warehouse": "/w"}).properties["type"]
        'jdbc'
        """
        if not isinstance(raw, Mapping):
            raise CatalogConfigError(
                f"catalog must be a mapping of Iceberg catalog settings, got {raw!r}. Fix: "
                "catalog: {uri: 'jdbc:postgresql://host:5432/iceberg', warehouse: '/shared/wh'}"
            )
        data = {str(k): v for k, v in raw.items()}
        jars = _jars(data.pop("jars", None))
        lease = _seconds(data, "lease_seconds", DEFAULT_LEASE_SECONDS)
        wait = _seconds(data, "lease_wait_seconds", DEFAULT_LEASE_WAIT_SECONDS)
        kind = str(data.pop("type", "jdbc") or "jdbc").strip().lower()
        properties = {"type": kind}
        for field in ("user", "password"):
            if field in data:
                value = data.pop(field)
                properties[f"jdbc.{field}" if kind == "jdbc" else field] = str(value)
        properties.update({k: str(v) for k, v in data.items() if v is not None})
        for needed in ("warehouse", *(("uri",) if kind in ("jdbc", "rest") else ())):
            if not properties.get(needed):
                raise CatalogConfigError(
                    f"catalog has no {needed!r}: a shared {kind} catalog needs one. Fix: "
                    + (
                        "set catalog.warehouse to a folder every dbt process and executor "
                        "reaches (a shared mount, hdfs://, s3://...)."
                        if needed == "warehouse"
                        else "set catalog.uri (for example jdbc:postgresql://host:5432/iceberg)."
                    )
                )
        # Other processes commit to these tables: a table cached by this session goes
        # stale, and one thread's REFRESH TABLE could swap a stale copy under another's
        # commit. Every lookup reads the catalog instead (a few milliseconds).
        properties.setdefault("cache-enabled", "false")
        if kind == "jdbc":
            # Views need the JDBC catalog's V1 schema (Iceberg creates it on a new database).
            properties.setdefault("jdbc.schema-version", "V1")
            jars = jars or _default_driver(properties["uri"])
        if lease <= 0 or wait < 0:
            raise CatalogConfigError(
                f"catalog.lease_seconds must be > 0 and lease_wait_seconds >= 0, got {lease} "
                f"and {wait}. Fix: remove them (defaults {DEFAULT_LEASE_SECONDS:g} and "
                f"{DEFAULT_LEASE_WAIT_SECONDS:g}) or give positive numbers of seconds."
            )
        return cls(properties, jars, lease, wait)

    @property
    def warehouse(self) -> str:
        return self.properties["warehouse"]

    def spark_parameters(self) -> dict[str, str]:
        """The Spark settings that make the session catalog this catalog."""
        parameters = {SESSION_CATALOG: SHARED_CATALOG_CLASS, SOURCE_CATALOG: SHARED_CATALOG_CLASS}
        for prefix in (SESSION_CATALOG, SOURCE_CATALOG):
            parameters.update({f"{prefix}.{k}": v for k, v in self.properties.items()})
        # Spark's own (v1) catalog stays in memory: nothing of dbt's lives there, and a
        # Derby metastore per process would only collide on disk.
        parameters["spark.sql.catalogImplementation"] = "in-memory"
        parameters["spark.sql.warehouse.dir"] = self.warehouse
        return parameters

    def describe(self) -> str:
        """The catalog without its secrets, for messages."""
        shown = {k: v for k, v in self.properties.items() if "password" not in k}
        return ", ".join(f"{k}={v}" for k, v in sorted(shown.items()))


def _jars(value: Any) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    items = value.split(",") if isinstance(value, str) else list(value)
    jars = tuple(str(j).strip() for j in items if str(j).strip())
    missing = [j for j in jars if "://" not in j and not Path(j).exists()]
    if missing:
        raise CatalogConfigError(
            f"catalog.jars names jar(s) that do not exist: {', '.join(missing)}. Fix: give "
            "the path of the catalog's JDBC driver jar (Debian: apt-get install "
            "libpostgresql-jdbc-java puts it at /usr/share/java/postgresql.jar)."
        )
    return jars


def _seconds(data: dict[str, Any], key: str, default: float) -> float:
    value = data.pop(key, None)
    if value is None:
        return default
    try:
        return float(value)
    except (TypeError, ValueError):
        raise CatalogConfigError(
            f"catalog.{key} must be a number of seconds, got {value!r}. Fix: remove it "
            f"(default {default:g}) or give a number."
        ) from None


def _default_driver(uri: str) -> tuple[str, ...]:
    """The JDBC driver jar for ``uri`` where the system has one; none needed for others."""
    for name, jar in SYSTEM_JARS.items():
        if uri.startswith(f"jdbc:{name}:"):
            if Path(jar).exists():
                return (jar,)
            raise CatalogConfigError(
                f"catalog.uri is a {name} database, but its JDBC driver is not at {jar}. Fix: "
                "install it (Debian/Ubuntu: apt-get install libpostgresql-jdbc-java) or give "
                "its path as catalog.jars."
            )
    return ()
