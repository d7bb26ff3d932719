"""Profile defaults: the embedded default for session profiles, out of the way otherwise."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.fastrefresh.connections import FastrefreshCredentials
from dbt.adapters.fastrefresh.runtime import embedded


def creds(**fields: object) -> FastrefreshCredentials:
    return FastrefreshCredentials.from_dict({"schema": "analytics", **fields})


def test_schema_alone_gives_the_embedded_session(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # No dbt project dir known (functional tests leave dbt's global flags set): the cwd.
    monkeypatch.setattr("dbt.adapters.fastrefresh.connections._project_dir", lambda: None)
    monkeypatch.chdir(tmp_path)
    c = creds()
    assert c.method == "session"
    assert c.embedded is True
    assert c.type == "fastrefresh"
    assert Path(c.state_dir or "") == tmp_path / ".fastrefresh"
    params = c.server_side_parameters
    assert (
        params["spark.sql.catalog.spark_catalog"] == "org.apache.iceberg.spark.SparkSessionCatalog"
    )
    assert params["spark.sql.catalog.spark_catalog.type"] == "hive"
    assert params["spark.hadoop.iceberg.engine.hive.lock-enabled"] == "false"
    assert params["spark.sql.warehouse.dir"] == str(tmp_path / ".fastrefresh" / "warehouse")
    assert (
        f"databaseName={tmp_path / '.fastrefresh' / 'metastore_db'}"
        in params["spark.hadoop.javax.jdo.option.ConnectionURL"]
    )
    assert params["spark.sql.ansi.enabled"] == "false"


def test_user_parameters_win_over_every_default(tmp_path: Path) -> None:
    c = creds(
        state_dir=str(tmp_path / "state"),
        server_side_parameters={"spark.master": "local[1]", "spark.sql.shuffle.partitions": 7},
    )
    params = c.server_side_parameters
    assert params["spark.master"] == "local[1]"
    assert params["spark.sql.shuffle.partitions"] == "7"
    assert params["spark.sql.warehouse.dir"] == str(tmp_path / "state" / "warehouse")


def test_relative_state_dir_is_taken_from_the_project_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(
        "dbt.adapters.fastrefresh.connections._project_dir", lambda: str(tmp_path / "proj")
    )
    c = creds(state_dir="state/here")
    assert Path(c.state_dir or "") == tmp_path / "proj" / "state" / "here"


@pytest.mark.parametrize("method", ["thrift", "http"])
def test_cluster_methods_get_no_embedded_settings(method: str) -> None:
    c = creds(method=method, host="spark.example", port=10001, token="t", cluster="c")
    assert c.embedded is False
    assert "spark.sql.catalog.spark_catalog" not in c.server_side_parameters
    assert "spark.master" not in c.server_side_parameters


def test_session_with_embedded_false_keeps_only_the_users_settings() -> None:
    c = creds(embedded=False, server_side_parameters={"spark.master": "yarn"})
    assert c.server_side_parameters == {"spark.master": "yarn", "spark.sql.ansi.enabled": "false"}


def test_embedded_true_on_a_cluster_method_is_refused_with_the_fix() -> None:
    with pytest.raises(DbtRuntimeError, match="embedded: true needs method: session"):
        creds(method="thrift", host="h", port=10001, embedded=True)


def test_jars_go_after_the_users_own_jars() -> None:
    merged = embedded.with_jars({"spark.jars": "/opt/mine.jar"}, "/a.jar,/b.jar")
    assert merged["spark.jars"] == "/opt/mine.jar,/a.jar,/b.jar"
    assert embedded.with_jars(merged, "/a.jar,/b.jar") == merged


@pytest.fixture
def built_local_fs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``ensure_local_fs_jar`` answering with /cache/fs.jar; the list: the javas it was given."""
    asked: list[str] = []

    def ensure(java: str) -> tuple[Path | None, str]:
        asked.append(java)
        return Path("/cache/fs.jar"), ""

    monkeypatch.setattr(embedded, "ensure_local_fs_jar", ensure)
    return asked


def test_a_local_master_gets_the_local_file_system_after_the_users_class_path(
    built_local_fs: list[str],
) -> None:
    merged = embedded.with_local_fs(
        {"spark.master": "local[*]", "spark.driver.extraClassPath": "/opt/mine.jar"}, "java"
    )
    assert merged["spark.hadoop.fs.file.impl"] == "dbt.fastrefresh.NioLocalFileSystem"
    assert merged["spark.driver.extraClassPath"] == f"/opt/mine.jar{os.pathsep}/cache/fs.jar"
    assert embedded.with_local_fs(merged, "java") == merged
    assert built_local_fs == ["java"]  # the second call found the setting and built nothing


@pytest.mark.parametrize(
    "settings",
    [
        {"spark.master": "spark://host:7077"},  # executors elsewhere have no such jar
        {"spark.master": "local[2]", "spark.hadoop.fs.file.impl": "org.example.MyFs"},
    ],
)
def test_a_cluster_or_a_users_file_system_is_left_alone(
    built_local_fs: list[str], settings: dict[str, str]
) -> None:
    assert embedded.with_local_fs(settings, "java") == settings
    assert built_local_fs == []


def test_a_local_file_system_that_cannot_be_built_is_told_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    warnings: list[str] = []
    monkeypatch.setattr(embedded, "ensure_local_fs_jar", lambda java: (None, "Janino failed: x"))
    monkeypatch.setattr(embedded.logger, "warning", warnings.append)
    monkeypatch.setattr(embedded, "_local_fs_told", [])
    settings = {"spark.master": "local[*]"}
    assert embedded.with_local_fs(settings, "/usr/bin/java") == settings
    assert embedded.with_local_fs(settings, "/usr/bin/java") == settings
    assert len(warnings) == 1
    assert "replacement could not be built: Janino failed: x" in warnings[0]
    assert "Fix: " in warnings[0] and "spark.hadoop.fs.file.impl" in warnings[0]


@pytest.mark.parametrize(
    ("output", "major"),
    [
        ('openjdk version "17.0.15" 2025-04-15', 17),
        ('java version "1.8.0_392"', 8),
        ('openjdk version "11.0.2" 2019-01-15', 11),
        ('openjdk version "21" 2023-09-19', 21),
        ("garbage", None),
    ],
)
def test_java_version_parsing(output: str, major: int | None) -> None:
    assert embedded.java_major_version(output) == major


def test_missing_java_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(embedded.EmbeddedSparkError, match=r"Java was not found.*install Java 17"):
        embedded.check_java()


def test_unsupported_java_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "java"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'openjdk version \"21.0.1\"' >&2\n")
    fake.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(embedded.EmbeddedSparkError, match=r"Java 21.*Java 8, 11 or 17"):
        embedded.check_java()


def test_an_unknown_profile_field_is_named_with_the_field_it_resembles() -> None:
    with pytest.raises(DbtRuntimeError, match=r"stat_dir \(did you mean state_dir\?\)"):
        creds(stat_dir="state")
    with pytest.raises(DbtRuntimeError, match="registy_schema"):
        creds(registy_schema="reg", threads=4)


@pytest.mark.parametrize("days", [0, -3, "30", 1.5, True])
def test_registry_history_days_other_than_a_count_of_days_or_null_is_refused(days: object) -> None:
    with pytest.raises(
        DbtRuntimeError,
        match=r"registry_history_days must be a whole number of days above zero, or null, "
        rf"got {days!r}\. Fix: remove it \(the registry keeps 365 days",
    ):
        creds(method="thrift", host="spark", registry_history_days=days)


def test_registry_history_days_defaults_to_a_year_and_null_keeps_all() -> None:
    assert creds(method="thrift", host="spark").registry_history_days == 365
    assert (
        creds(method="thrift", host="spark", registry_history_days=30).registry_history_days == 30
    )
    kept = creds(method="thrift", host="spark", registry_history_days=None)
    assert kept.registry_history_days is None


@pytest.mark.parametrize("name", ["my-registry", "ops.registry", "`reg`", "", 5])
def test_a_registry_schema_that_is_no_plain_name_is_refused_naming_the_field(name: object) -> None:
    """Spark refused it at the first statement, naming neither the field nor the fix."""
    with pytest.raises(
        DbtRuntimeError,
        match=rf"registry_schema must be a schema name of letters, digits and underscores, "
        rf"got {re.escape(repr(name))}\. Fix: remove it",
    ):
        creds(method="thrift", host="spark", registry_schema=name)
    assert creds(method="thrift", host="spark", registry_schema="Ops_Reg2").registry_schema


def test_a_state_dir_that_cannot_be_created_names_the_field(tmp_path: Path) -> None:
    """A file where the folder would be: Python's `[Errno 17] File exists` (or, below
    it, `[Errno 20] Not a directory`) was all."""
    taken = tmp_path / "afile"
    taken.write_text("")
    with pytest.raises(
        embedded.EmbeddedSparkError,
        match=rf"The state folder {re.escape(str(taken / 'state'))} \(the profile's state_dir\) "
        r"cannot be created: .*Fix: set state_dir to a folder this user can write",
    ):
        embedded.prepare_embedded({}, taken / "state")


def test_a_state_dir_nothing_would_use_is_refused_with_the_fix() -> None:
    with pytest.raises(DbtRuntimeError, match=r"state_dir is set, but .* Fix: remove state_dir"):
        creds(method="thrift", host="spark", state_dir="state")
    with pytest.raises(DbtRuntimeError, match="state_dir is set"):
        creds(embedded=False, state_dir="state")


def test_a_shared_catalog_replaces_the_state_folders_metastore(tmp_path: Path) -> None:
    driver = tmp_path / "driver.jar"
    driver.write_bytes(b"")
    c = creds(
        catalog={
            "uri": "jdbc:postgresql://db:5432/iceberg",
            "user": "ice",
            "password": "secret",
            "warehouse": "/shared/wh",
            "jars": str(driver),
            "lease_seconds": 30,
        }
    )
    assert c.shared and c.shared_catalog is not None
    assert c.shared_catalog.lease_seconds == 30
    assert c.shared_catalog.jars == (str(driver),)
    params = c.server_side_parameters
    for prefix in ("spark.sql.catalog.spark_catalog", "spark.sql.catalog.default_iceberg"):
        assert params[prefix] == "org.apache.iceberg.spark.SparkCatalog"
        assert params[f"{prefix}.type"] == "jdbc"
        assert params[f"{prefix}.uri"] == "jdbc:postgresql://db:5432/iceberg"
        assert params[f"{prefix}.jdbc.user"] == "ice"
        assert params[f"{prefix}.jdbc.password"] == "secret"
        assert params[f"{prefix}.jdbc.schema-version"] == "V1"
        assert params[f"{prefix}.warehouse"] == "/shared/wh"
    assert params["spark.sql.catalogImplementation"] == "in-memory"
    assert not any("derby" in v.lower() or "jdo" in k for k, v in params.items())
    assert "secret" not in c.shared_catalog.describe()
    assert "catalog" not in c._connection_keys()  # dbt debug would print the password


@pytest.mark.parametrize(
    ("catalog", "extra", "message"),
    [
        ({"uri": "jdbc:sqlite:x"}, {}, "catalog has no 'warehouse'"),
        ({"warehouse": "/w"}, {}, "catalog has no 'uri'"),
        ("jdbc:postgresql://db/x", {}, "catalog must be a mapping"),
        ({"uri": "jdbc:sqlite:x", "warehouse": "/w", "jars": "/no/such.jar"}, {}, "do not exist"),
        ({"uri": "jdbc:sqlite:x", "warehouse": "/w", "lease_seconds": "soon"}, {}, "number"),
        ({"uri": "jdbc:sqlite:x", "warehouse": "/w", "lease_seconds": 0}, {}, "must be > 0"),
        ({"uri": "jdbc:sqlite:x", "warehouse": "/w"}, {"state_dir": "s"}, "both set"),
        ({"uri": "jdbc:sqlite:x", "warehouse": "/w"}, {"method": "thrift", "host": "h"}, "thrift"),
        ({"uri": "jdbc:sqlite:x", "warehouse": "/w"}, {"embedded": False}, "embedded: false"),
    ],
)
def test_a_malformed_catalog_is_refused_naming_the_fix(
    catalog: object, extra: dict[str, object], message: str
) -> None:
    with pytest.raises(DbtRuntimeError, match=f"(?s){message}.*Fix"):
        creds(catalog=catalog, **extra)


def test_a_postgresql_catalog_without_its_driver_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from dbt.adapters.fastrefresh.runtime import catalog

    monkeypatch.setitem(catalog.SYSTEM_JARS, "postgresql", str(tmp_path / "absent.jar"))
    with pytest.raises(DbtRuntimeError, match="apt-get install libpostgresql-jdbc-java"):
        creds(catalog={"uri": "jdbc:postgresql://db/x", "warehouse": "/w"})
