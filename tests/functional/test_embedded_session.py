"""The driver JVM runs with the options the profile gives it, and its class cache works.

``spark.driver.extraJavaOptions`` only takes effect when the JVM is launched (pyspark's
``spark-submit``), so a default that never reached the JVM would pass every unit test.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from dbt.adapters.fastrefresh.runtime import class_cache
from dbt.adapters.fastrefresh.runtime.class_cache import CACHE_ENV
from dbt.adapters.fastrefresh.runtime.embedded import (
    GC_OPTION,
    JIT_OPTIONS,
    METASPACE_OPTION,
    check_java,
    own_java_options,
    session_parameters,
)
from tests.jvm import short_lived_env


def test_the_driver_jvm_runs_with_the_compiler_thresholds(spark: Any) -> None:
    bean = spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    arguments = list(bean.getInputArguments())
    for option in JIT_OPTIONS.split():
        assert option in arguments, arguments
    # HotSpot took them: the flag's value is the one the JVM runs with.
    hotspot = spark._jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        spark._jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean")
    )
    assert hotspot.getVMOption("Tier4InvocationThreshold").getValue() == "20000"


def test_the_driver_jvm_collects_class_metadata_from_256_mb(spark: Any) -> None:
    """``METASPACE_OPTION`` reached the JVM: HotSpot runs with the raised threshold."""
    bean = spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    assert METASPACE_OPTION in list(bean.getInputArguments())
    hotspot = spark._jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        spark._jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean")
    )
    assert hotspot.getVMOption("MetaspaceSize").getValue() == str(256 * 1024 * 1024)


def test_the_driver_jvm_runs_the_throughput_collector(spark: Any) -> None:
    """``GC_OPTION`` reached the JVM: its collectors are the parallel collector's."""
    beans = spark._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    names = sorted(bean.getName() for bean in beans)
    assert names == ["PS MarkSweep", "PS Scavenge"], names


def java_with_driver_flags(
    parameters: dict[str, str], environ: dict[str, str], *extra: str
) -> subprocess.CompletedProcess[str]:
    """``java -version`` with the ``-XX`` flags of ``parameters``' driver options and
    ``extra``, ``environ`` in its environment: how HotSpot takes them."""
    flags = parameters["spark.driver.extraJavaOptions"].split()
    started = subprocess.run(
        [check_java()[0], *(f for f in flags if f.startswith("-XX:")), *extra, "-version"],
        capture_output=True, text=True, env={**short_lived_env(), **environ},
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    return started


def test_a_collector_in_the_java_options_replaces_the_default() -> None:
    """HotSpot refuses two collectors, so ``own_java_options`` drops the default's when the
    environment chooses one; the JVM then starts with the user's."""
    java = check_java()[0]
    both = subprocess.run(
        [java, "-XX:+UseG1GC", GC_OPTION, "-version"], capture_output=True, text=True
    )
    assert both.returncode != 0, both
    assert "Multiple garbage collectors selected" in both.stdout + both.stderr, both
    environ = {"JDK_JAVA_OPTIONS": "-XX:+UseG1GC"}
    options = own_java_options(session_parameters(Path("/tmp/fr-state")), environ)
    started = java_with_driver_flags(options, environ, "-XX:+PrintCommandLineFlags")
    assert "-XX:+UseG1GC" in started.stdout and GC_OPTION not in started.stdout, started.stdout


def test_a_class_metadata_threshold_in_the_java_options_is_the_one_the_jvm_takes() -> None:
    """HotSpot takes a flag's last value, and ``JAVA_TOOL_OPTIONS`` comes before the
    command line: the default's ``METASPACE_OPTION`` would replace the user's value, so
    ``own_java_options`` leaves it out, and the JVM runs with the user's."""
    environ = {"JAVA_TOOL_OPTIONS": "-XX:MetaspaceSize=64m"}
    defaults = session_parameters(Path("/tmp/fr-state"))

    def metaspace_size(parameters: dict[str, str]) -> int:
        started = java_with_driver_flags(parameters, environ, "-XX:+PrintFlagsFinal")
        line = next(x for x in started.stdout.splitlines() if " MetaspaceSize " in x)
        return int(line.split("=")[1].split()[0])

    assert metaspace_size(defaults) == 256 * 1024 * 1024  # the default's value won
    assert metaspace_size(own_java_options(defaults, environ)) == 64 * 1024 * 1024


# A process of its own (a JVM is launched once per process): the embedded session on a
# state folder (its Iceberg extensions load with it), one Spark job, one write that a row
# stops (as a refresh's NaN guard does), and HotSpot's log of where each class came from.
# No catalog access: the metastore's start would double the test's time and show nothing
# more (the write goes to Spark's `noop` source, a DataSource V2 write as Iceberg's are).
SESSION = """
import sys
from dbt.adapters.fastrefresh.runtime.embedded import start_session
spark = start_session(sys.argv[1], {"spark.driver.extraJavaOptions": "-Xlog:class+load=info"})
assert spark.range(3).selectExpr("sum(id)").collect()[0][0] == 3
stopped = spark.range(3).selectExpr("if(id > 1, raise_error('stopped on purpose'), id) AS x")
try:
    stopped.write.format("noop").mode("overwrite").save()
except Exception as exc:
    assert "stopped on purpose" in str(exc), exc
else:
    raise AssertionError("the write was not stopped")
"""
# What the session's log4j2.properties keeps off stderr: the task's and the write's own
# ERROR lines about a failure the driver raises to the caller (a Java stack trace each).
ABORT_LINES = ("Aborting task", "Aborting commit", "Aborted commit", "Data source write support")
FROM_ARCHIVE = "source: shared objects file (top)"  # HotSpot: from the dynamic archive


def session(state: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**short_lived_env(), CACHE_ENV: str(cache)}
    result = subprocess.run(
        [sys.executable, "-c", SESSION, str(state)],
        capture_output=True, text=True, env=env, timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def test_a_second_process_loads_the_classes_the_first_archived(tmp_path: Path) -> None:
    cache = tmp_path / "classes"
    first = session(tmp_path / "one", cache)
    assert not [line for line in ABORT_LINES if line in first.stderr], first.stderr[-3000:]
    assert "saving the Spark JVM's classes" in first.stderr
    assert FROM_ARCHIVE not in first.stdout, "no archive yet: the first JVM read the jars"
    archives = list(cache.glob("*.jsa"))
    assert len(archives) == 1 and archives[0].stat().st_size > 5_000_000
    assert list(cache.glob("*.tmp")) == [], "the archive was renamed into place"
    written = archives[0].stat().st_mtime_ns

    second = session(tmp_path / "two", cache)
    assert "saving" not in second.stderr
    archived = [line for line in second.stdout.splitlines() if FROM_ARCHIVE in line]
    # Spark's own classes (the application class path) and Iceberg's (spark.jars, loaded
    # by Spark's class loader) came from the archive.
    assert any(" org.apache.spark.sql.SparkSession " in line for line in archived)
    iceberg = " org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions "
    assert any(iceberg in line for line in archived)
    assert [a.stat().st_mtime_ns for a in cache.glob("*.jsa")] == [written]
    # HotSpot's own warnings (unified logging, to stdout: through dbt's output) are off.
    assert "][warning]" not in first.stdout + second.stdout

    # A JVM that maps a truncated archive crashes: the check before an archive is put in
    # place (and before the first JVM writes one) is HotSpot's own answer.
    java, _ = check_java()
    assert class_cache.runs(java, f"-XX:SharedArchiveFile={archives[0]}")
    truncated = tmp_path / "truncated.jsa"
    truncated.write_bytes(archives[0].read_bytes()[:1_000_000])
    assert not class_cache.runs(java, f"-XX:SharedArchiveFile={truncated}")
    assert not class_cache.runs(java, f"-XX:ArchiveClassesAtExit={tmp_path}/x.jsa", "-Xshare:off")
    assert not list(Path.cwd().glob("hs_err_pid*")), "no crash report left behind"
