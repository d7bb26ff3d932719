"""Credentials and connections: dbt-spark's, plus the embedded default.

Every dbt-spark profile field and connection method (session, thrift, http, odbc) works
unchanged. What this adds: ``method`` defaults to ``session``, and a session profile gets
the embedded Spark + Iceberg settings (see ``embedded``) unless it says ``embedded: false``.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import threading
from dataclasses import dataclass
from typing import Any

from dbt.adapters.contracts.connection import Connection
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.connections import (
    SparkConnectionManager,
    SparkConnectionMethod,
    SparkCredentials,
)
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.fastrefresh.protocol.env import DEFAULT_HISTORY_DAYS, DEFAULT_REGISTRY_SCHEMA
from dbt.adapters.fastrefresh.runtime import embedded, interpreted
from dbt.adapters.fastrefresh.runtime.catalog import CatalogConfigError, SharedCatalog

logger = AdapterLogger("fastrefresh")

ICEBERG_API_CHOICES = ("auto", "java", "sql")


def _project_dir() -> str | None:
    try:  # dbt-core sets the flags before it reads the profile
        from dbt.flags import get_flags

        return getattr(get_flags(), "PROJECT_DIR", None)
    except Exception:
        return None


@dataclass
class FastrefreshCredentials(SparkCredentials):
    """dbt-spark credentials with an embedded default for the ``session`` method."""

    # None means: yes for the session method, no for the others.
    embedded: bool | None = None
    # Folder of the embedded metastore and warehouse; relative paths are taken from the
    # dbt project folder. Default: <project>/.fastrefresh
    state_dir: str | None = None
    # Schema of the registry (its table and views: mview_logs, mview_log_users, mviews, ...).
    registry_schema: str = DEFAULT_REGISTRY_SCHEMA
    # Days of run history (refresh_runs, capture_runs) the registry keeps; null: all.
    registry_history_days: int | None = DEFAULT_HISTORY_DAYS
    # How table metadata is read and the protocol's state committed: "auto" (Iceberg's
    # Java API when Spark runs in this process, the session method; else SQL), "java"
    # (require the Java API), "sql" (Spark SQL only, as over thrift/http/odbc).
    iceberg_api: str = "auto"
    # A shared Iceberg catalog (runtime/catalog.py) instead of the state folder's: several
    # dbt processes, on one machine or many, refresh the same views and logs at once.
    catalog: dict[str, Any] | None = None

    @classmethod
    def __pre_deserialize__(cls, data: Any) -> Any:
        _refuse_unknown_fields(cls, data)
        _check_history_days(data)
        _check_registry_schema(data)
        if isinstance(data, dict) and data.get("catalog") is not None:
            try:  # before dbt's own check of the field's type, which names no fix
                SharedCatalog.parse(data["catalog"])
            except CatalogConfigError as exc:
                raise DbtRuntimeError(str(exc)) from exc
        data = super().__pre_deserialize__(data)
        data.setdefault("method", SparkConnectionMethod.SESSION.value)
        if data["method"] == SparkConnectionMethod.SESSION.value:
            # dbt-spark insists on a host even where none is used.
            data.setdefault("host", "localhost")
        return data

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.embedded is None:
            self.embedded = self.method == SparkConnectionMethod.SESSION
        if self.catalog is not None:
            self._check_catalog()
        if not self.embedded and self.state_dir is not None:
            raise DbtRuntimeError(
                "state_dir is set, but the profile does not use the embedded default "
                f"(method: {self.method}, embedded: false): nothing would use it. Fix: remove "
                "state_dir, or use method: session without `embedded: false`."
            )
        if self.embedded and self.method != SparkConnectionMethod.SESSION:
            raise DbtRuntimeError(
                f"embedded: true needs method: session, but the profile says method: "
                f"{self.method}. Fix: remove `embedded` (a {self.method} connection uses the "
                "cluster's own Spark settings) or set method: session."
            )
        self.iceberg_api = str(self.iceberg_api).lower()
        if self.iceberg_api not in ICEBERG_API_CHOICES:
            raise DbtRuntimeError(
                f"iceberg_api must be one of {', '.join(ICEBERG_API_CHOICES)}, got "
                f"{self.iceberg_api!r}. Fix: remove it (auto) or set iceberg_api: sql."
            )
        if self.iceberg_api == "java" and self.method != SparkConnectionMethod.SESSION:
            raise DbtRuntimeError(
                f"iceberg_api: java needs method: session (Spark in this process), but the "
                f"profile says method: {self.method}. Fix: remove iceberg_api (auto uses SQL "
                "over a remote connection) or set method: session."
            )
        if self.embedded and self.catalog is not None:
            self.server_side_parameters = embedded.session_parameters(
                None, self.server_side_parameters, self.shared_catalog
            )
        elif self.embedded:
            state_dir = embedded.resolve_state_dir(self.state_dir, _project_dir())
            self.state_dir = str(state_dir)
            self.server_side_parameters = embedded.session_parameters(
                state_dir, self.server_side_parameters
            )

    def _check_catalog(self) -> None:
        if self.method != SparkConnectionMethod.SESSION or self.embedded is False:
            raise DbtRuntimeError(
                f"catalog is set, but the profile says method: {self.method}"
                + (", embedded: false" if self.embedded is False else "")
                + ". The catalog field configures the Spark that runs in the dbt process. Fix: "
                "use method: session without `embedded: false`, or remove catalog and give the "
                "cluster's catalog settings to its Spark (README: 'On a real Spark cluster')."
            )
        if self.state_dir is not None:
            raise DbtRuntimeError(
                "state_dir and catalog are both set: with a shared catalog nothing is kept in a "
                "state folder. Fix: remove state_dir."
            )
        try:
            parsed = SharedCatalog.parse(self.catalog)
        except CatalogConfigError as exc:
            raise DbtRuntimeError(str(exc)) from exc
        object.__setattr__(self, "_shared_catalog", parsed)

    @property
    def shared_catalog(self) -> SharedCatalog | None:
        """The profile's ``catalog``, validated (None: the embedded default or a cluster)."""
        return getattr(self, "_shared_catalog", None)

    @property
    def shared(self) -> bool:
        """Whether other processes may write the same tables (a shared catalog, or a
        cluster's): then leases keep the protocol's writes apart across processes."""
        return self.catalog is not None or not self.embedded

    @property
    def type(self) -> str:
        return "fastrefresh"

    def _connection_keys(self) -> tuple[str, ...]:
        return (
            *super()._connection_keys(),
            "embedded",
            "state_dir",
            "registry_schema",
            "registry_history_days",
            "iceberg_api",
        )  # not catalog: it may hold a password, and dbt debug prints these


def _check_registry_schema(data: Any) -> None:
    """``registry_schema``: a plain schema name (the registry's statements name it
    unquoted, as dbt's own schemas are), not one Spark refuses with no word of the field."""
    if not isinstance(data, dict) or data.get("registry_schema") is None:
        return
    name = data["registry_schema"]
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise DbtRuntimeError(
            f"registry_schema must be a schema name of letters, digits and underscores, got "
            f"{name!r}. Fix: remove it (the registry goes to fast_refresh), or name a "
            "schema such as fast_refresh_registry (one schema, in the session catalog)."
        )


def _check_history_days(data: Any) -> None:
    """``registry_history_days``: a whole number of days above zero, or null (before
    dbt's own check of the field's type, which names no fix)."""
    if not isinstance(data, dict) or data.get("registry_history_days") is None:
        return
    days = data["registry_history_days"]
    if isinstance(days, bool) or not isinstance(days, int) or days < 1:
        raise DbtRuntimeError(
            f"registry_history_days must be a whole number of days above zero, or null, got "
            f"{days!r}. Fix: remove it (the registry keeps {DEFAULT_HISTORY_DAYS} days of "
            "refresh_runs and capture_runs), set a number of days, or null to keep them all."
        )


def _refuse_unknown_fields(cls: type, data: Any) -> None:
    """A profile field neither dbt-spark nor dbt-fastrefresh knows is a typo that would be
    ignored without a word (``stat_dir``: the state would go to the default folder)."""
    if not isinstance(data, dict):
        return
    known = {f.name for f in dataclasses.fields(cls)} | set(getattr(cls, "_ALIASES", {}))
    known |= {"type", "threads"}
    unknown = sorted(k for k in data if k not in known)
    if not unknown:
        return
    hints = []
    for key in unknown:
        close = difflib.get_close_matches(key, sorted(known), n=1)
        hints.append(f"{key} (did you mean {close[0]}?)" if close else key)
    raise DbtRuntimeError(
        f"The profile has field(s) dbt-fastrefresh does not know: {', '.join(hints)}. "
        "Fix: correct or remove them (the fields are listed in the README's Profile section)."
    )


_PREPARE_LOCK = threading.Lock()


class FastrefreshConnectionManager(SparkConnectionManager):
    TYPE = "fastrefresh"

    # Every statement holds the process's gate (``runtime/interpreted.py``): a refresh
    # turns Spark's generated code off for its small statements only while no other
    # thread's statement is planned or running, and holds theirs back meanwhile.
    def add_query(self, *args: Any, **kwargs: Any) -> tuple[Connection, Any]:
        with interpreted.GATE.statement():
            return super().add_query(*args, **kwargs)

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        with interpreted.GATE.statement():  # with a fetch: the collect runs in here too
            return super().execute(*args, **kwargs)

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        creds = connection.credentials
        if getattr(creds, "embedded", False):
            cls._prepare_embedded(creds)
        return super().open(connection)

    @classmethod
    def _prepare_embedded(cls, creds: FastrefreshCredentials) -> None:
        """Build the jars and check the JVM once, before the first statement starts Spark."""
        with _PREPARE_LOCK:
            if "spark.jars" in creds.server_side_parameters and getattr(creds, "_prepared", False):
                return
            try:
                catalog = creds.shared_catalog
                state_dir = (
                    None
                    if catalog is not None
                    else embedded.resolve_state_dir(creds.state_dir, None)
                )
                creds.server_side_parameters = embedded.prepare_embedded(
                    creds.server_side_parameters, state_dir, catalog
                )
                embedded.check_running_session(creds.server_side_parameters)
            except (embedded.EmbeddedSparkError, RuntimeError) as exc:
                raise DbtRuntimeError(str(exc)) from exc
            object.__setattr__(creds, "_prepared", True)
