"""The embedded session's files: what it points the JVM at exists in the package."""

from __future__ import annotations

from dbt.adapters.fastrefresh.runtime.embedded import LOG4J_CONFIG


def test_log4j_config_is_the_packaged_file() -> None:
    assert LOG4J_CONFIG.is_file(), LOG4J_CONFIG
    assert (
        LOG4J_CONFIG.parent.name == "fastrefresh" and LOG4J_CONFIG.parent.parent.name == "include"
    )
    assert "rootLogger" in LOG4J_CONFIG.read_text()


def test_the_users_driver_options_go_after_the_embedded_defaults() -> None:
    """A flag the user adds keeps the embedded Derby and log4j options; any other setting
    of the user's replaces the default's."""
    from pathlib import Path

    from dbt.adapters.fastrefresh.runtime.embedded import session_parameters

    state = Path("/tmp/fr-state")
    default = session_parameters(state)["spark.driver.extraJavaOptions"]
    assert f"-Dderby.system.home={state}" in default
    user = {
        "spark.driver.extraJavaOptions": "-XX:+HeapDumpOnOutOfMemoryError -Dderby.system.home=/x",
        "spark.sql.shuffle.partitions": "64",
    }
    merged = session_parameters(state, user)
    assert (
        merged["spark.driver.extraJavaOptions"]
        == f"{default} {user['spark.driver.extraJavaOptions']}"
    )
    assert merged["spark.sql.shuffle.partitions"] == "64"
    emptied = session_parameters(state, {"spark.driver.extraJavaOptions": ""})
    assert emptied["spark.driver.extraJavaOptions"] == default


def test_both_defaults_raise_the_optimizing_compilers_thresholds() -> None:
    """The embedded default and a shared catalog's both start the driver JVM with
    ``JIT_OPTIONS``; a user's own value of one of them goes after, so it wins (HotSpot takes
    the last)."""
    from pathlib import Path

    from dbt.adapters.fastrefresh.runtime.catalog import SharedCatalog
    from dbt.adapters.fastrefresh.runtime.embedded import JIT_OPTIONS, session_parameters

    assert JIT_OPTIONS.split() == [
        "-XX:Tier4InvocationThreshold=20000",
        "-XX:Tier4MinInvocationThreshold=2400",
        "-XX:Tier4CompileThreshold=60000",
        "-XX:Tier4BackEdgeThreshold=160000",
    ]
    catalog = SharedCatalog.parse({"uri": "jdbc:sqlite:x", "warehouse": "/w"})
    for parameters in (
        session_parameters(Path("/tmp/fr-state")),
        session_parameters(None, catalog=catalog),
    ):
        options = parameters["spark.driver.extraJavaOptions"].split()
        assert options[-4:] == JIT_OPTIONS.split()
    user = {"spark.driver.extraJavaOptions": "-XX:Tier4InvocationThreshold=5000"}
    given = session_parameters(Path("/tmp/fr-state"), user)["spark.driver.extraJavaOptions"]
    assert given.split()[-1] == "-XX:Tier4InvocationThreshold=5000"


def test_both_defaults_raise_the_class_metadata_threshold() -> None:
    """The embedded default and a shared catalog's both start the driver JVM with
    ``METASPACE_OPTION``; a user's own value goes after it, so it wins."""
    from pathlib import Path

    from dbt.adapters.fastrefresh.runtime.catalog import SharedCatalog
    from dbt.adapters.fastrefresh.runtime.embedded import METASPACE_OPTION, session_parameters

    assert METASPACE_OPTION == "-XX:MetaspaceSize=256m"
    key = "spark.driver.extraJavaOptions"
    catalog = SharedCatalog.parse({"uri": "jdbc:sqlite:x", "warehouse": "/w"})
    for parameters in (
        session_parameters(Path("/tmp/fr-state")),
        session_parameters(None, catalog=catalog),
    ):
        assert METASPACE_OPTION in parameters[key].split()
    given = session_parameters(Path("/tmp/fr-state"), {key: "-XX:MetaspaceSize=64m"})[key]
    assert given.split().index("-XX:MetaspaceSize=64m") > given.split().index(METASPACE_OPTION)


def test_the_driver_runs_the_throughput_collector_unless_the_user_chooses_one() -> None:
    """Both defaults start the driver JVM with ``GC_OPTION``; a collector of the user's, in
    the profile's driver options or in the environment's Java options, replaces it (HotSpot
    refuses to start with two collectors)."""
    from pathlib import Path

    from dbt.adapters.fastrefresh.runtime.catalog import SharedCatalog
    from dbt.adapters.fastrefresh.runtime.embedded import (
        GC_OPTION,
        own_java_options,
        session_parameters,
    )

    key = "spark.driver.extraJavaOptions"
    catalog = SharedCatalog.parse({"uri": "jdbc:sqlite:x", "warehouse": "/w"})
    state = Path("/tmp/fr-state")
    for parameters in (session_parameters(state), session_parameters(None, catalog=catalog)):
        assert GC_OPTION in parameters[key].split()
        assert own_java_options(parameters, {})[key] == parameters[key]
    # Flags that only look like a collector's, or the same collector again, keep it.
    kept = session_parameters(state, {key: "-XX:+UseCompressedOops -XX:+UseParallelGC"})
    assert own_java_options(kept, {"JDK_JAVA_OPTIONS": "-XX:+UseGCOverheadLimit"}) == kept
    chosen = session_parameters(state, {key: "-Xmx8g -XX:+UseG1GC"})
    options = own_java_options(chosen, {})[key].split()
    assert GC_OPTION not in options and options[-2:] == ["-Xmx8g", "-XX:+UseG1GC"]
    assert options == [o for o in chosen[key].split() if o != GC_OPTION]
    # Only the default's flag goes: the rest of the value is left as written.
    spaced = {key: f"{GC_OPTION} -Dname='a  b' -XX:+UseZGC"}
    assert own_java_options(spaced, {})[key] == "-Dname='a  b' -XX:+UseZGC"
    for variable in ("JDK_JAVA_OPTIONS", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "SPARK_SUBMIT_OPTS"):
        from_environment = own_java_options(session_parameters(state), {variable: "-XX:+UseZGC"})
        assert GC_OPTION not in from_environment[key].split(), variable
    spark_default = {**session_parameters(state), "spark.driver.defaultJavaOptions": "-XX:+UseZGC"}
    assert GC_OPTION not in own_java_options(spark_default, {})[key].split()


def test_a_value_the_user_sets_outside_the_profile_replaces_the_defaults() -> None:
    """A ``-XX:Name=value`` of the defaults' (``METASPACE_OPTION``, ``JIT_OPTIONS``) that
    the environment's Java options or ``spark.driver.defaultJavaOptions`` set is left out:
    those come before the extra options on the JVM's command line, and HotSpot takes a
    flag's last value. Only that flag goes; one in the profile's own options stays after
    the default's, where it wins already."""
    from pathlib import Path

    from dbt.adapters.fastrefresh.runtime.catalog import SharedCatalog
    from dbt.adapters.fastrefresh.runtime.embedded import (
        GC_OPTION,
        JIT_OPTIONS,
        METASPACE_OPTION,
        own_java_options,
        session_parameters,
    )

    key = "spark.driver.extraJavaOptions"
    catalog = SharedCatalog.parse({"uri": "jdbc:sqlite:x", "warehouse": "/w"})
    for defaults in (
        session_parameters(Path("/tmp/fr-state")),
        session_parameters(None, catalog=catalog),
    ):
        ours = defaults[key].split()
        for variable in (
            "JDK_JAVA_OPTIONS",
            "JAVA_TOOL_OPTIONS",
            "_JAVA_OPTIONS",
            "SPARK_SUBMIT_OPTS",
        ):
            environ = {variable: "-Xmx2g -XX:MetaspaceSize=64m -XX:+UseCompressedOops"}
            assert own_java_options(defaults, environ)[key].split() == [
                o for o in ours if o != METASPACE_OPTION
            ], variable
        threshold = JIT_OPTIONS.split()[0]
        assert threshold.startswith("-XX:Tier4InvocationThreshold=")
        environ = {"JAVA_TOOL_OPTIONS": "-XX:Tier4InvocationThreshold=5000"}
        assert own_java_options(defaults, environ)[key].split() == [
            o for o in ours if o != threshold
        ]
        spark_default = {**defaults, "spark.driver.defaultJavaOptions": "-XX:MetaspaceSize=1g"}
        options = own_java_options(spark_default, {})[key].split()
        assert METASPACE_OPTION not in options and GC_OPTION in options
        # A name that only starts like one of ours, or a flag without a value: kept.
        environ = {"JDK_JAVA_OPTIONS": "-XX:MetaspaceSizeX=1 -XX:MaxMetaspaceSize=1g -XX:+Foo"}
        assert own_java_options(defaults, environ) == defaults
    profile = session_parameters(Path("/tmp/fr-state"), {key: "-XX:MetaspaceSize=64m"})
    assert own_java_options(profile, {}) == profile
    # Both kinds at once: the collector and a value.
    environ = {"_JAVA_OPTIONS": "-XX:+UseSerialGC -XX:MetaspaceSize=64m"}
    options = own_java_options(session_parameters(Path("/tmp/fr-state")), environ)[key].split()
    assert GC_OPTION not in options and METASPACE_OPTION not in options
