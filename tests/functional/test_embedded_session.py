"""The driver JVM runs with the options the profile gives it, and its class cache works.

``spark.driver.extraJavaOptions`` only takes effect when the JVM is launched (pyspark's
``spark-submit``), so a default that never reached the JVM would pass every unit test.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from collections.abc import Callable
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
from dbt.adapters.fastrefresh.runtime.jars import LOCAL_FS_CLASS
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


def processes_started(jvm: Any, folder: Path, action: Callable[[], None]) -> list[str]:
    """The commands the driver JVM started while ``action`` ran (a flight recording of
    its ``jdk.ProcessStart`` events)."""
    recording = jvm.jdk.jfr.Recording()
    recording.enable("jdk.ProcessStart")
    recording.start()
    try:
        action()
    finally:
        recording.stop()
    dump = jvm.java.io.File(str(folder / "processes.jfr")).toPath()
    recording.dump(dump)
    recording.close()
    events = jvm.jdk.jfr.consumer.RecordingFile.readAllEvents(dump)
    return [str(event.getString("command")) for event in events]


def test_the_local_file_system_writes_what_hadoops_writes_without_a_process(
    spark: Any, tmp_path: Path
) -> None:
    """The session's ``file:`` file system is dbt-fastrefresh's (``with_local_fs``), and it
    leaves on disk what Hadoop's own leaves: each file's and folder's permission bits, the
    checksum file beside each file, the bytes; without the ``chmod`` process Hadoop's
    starts for each. The sticky bit, which java.nio cannot set, takes Hadoop's way."""
    jvm = spark._jvm
    fs_ = jvm.org.apache.hadoop.fs
    conf = spark._jsc.hadoopConfiguration()
    ours = fs_.FileSystem.getLocal(conf)
    assert ours.getClass().getName() == LOCAL_FS_CLASS
    hadoops = fs_.LocalFileSystem()
    hadoops.initialize(jvm.java.net.URI("file:///"), conf)

    def write(fs: Any, root: Path) -> None:
        for mode in (0o755, 0o700, 0o1777, 0o750):
            assert fs.mkdirs(
                fs_.Path(f"file://{root}/d{mode:o}/nested"), fs_.permission.FsPermission(mode)
            )
        for folder, mode in (("d1777", 0o1777), ("d700", 0o711)):  # no umask: as given
            fs.setPermission(fs_.Path(f"file://{root}/{folder}"), fs_.permission.FsPermission(mode))
        for mode in (0o644, 0o600, 0o640, 0o755):
            path = fs_.Path(f"file://{root}/d755/f{mode:o}")
            out = fs.create(path, fs_.permission.FsPermission(mode), False, 4096, 1, 1 << 20, None)
            out.write(f"{mode}".encode())
            out.close()
        plain = fs.create(fs_.Path(f"file://{root}/d755/default"), False)
        plain.write(b"x")
        plain.close()

    trees, started = {}, {}
    for name, fs in (("ours", ours), ("hadoops", hadoops)):
        root = tmp_path / name
        started[name] = processes_started(jvm, tmp_path, functools.partial(write, fs, root))
        trees[name] = {
            str(p.relative_to(root)): (p.stat().st_mode, p.read_bytes() if p.is_file() else b"")
            for p in sorted(root.rglob("*"))
        }
    assert trees["ours"] == trees["hadoops"]
    assert ".f644.crc" in {Path(p).name for p in trees["ours"]}
    modes = {p: oct(m & 0o7777) for p, (m, _) in trees["ours"].items()}
    # mkdirs takes the umask's 022 off (and Hadoop's umask drops the sticky bit);
    # setPermission sets the bits as given.
    assert modes["d1777/nested"] == oct(0o755) and modes["d1777"] == oct(0o1777)
    assert modes["d700/nested"] == oct(0o700) and modes["d700"] == oct(0o711)
    assert modes["d755/f640"] == oct(0o640) and modes["d755/default"] == oct(0o644)
    # Hadoop's: a process per folder made, per permission set, per file and checksum file.
    assert len(started["hadoops"]) >= 8 + 2 + 10, started["hadoops"]
    assert [c.split()[:2] for c in started["ours"]] == [["chmod", "1777"]], started["ours"]
