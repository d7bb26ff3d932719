"""The embedded default: in-process PySpark with a local Iceberg catalog.

A profile holding nothing but ``type: fastrefresh`` and ``schema`` runs Spark inside the
dbt process, with a Derby metastore, an Iceberg-enabled session catalog and a warehouse
under a state folder of the dbt project. Every setting here is only a default: a key the
user puts in ``server_side_parameters`` wins.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, no check
    fcntl = None  # type: ignore[assignment]

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.fastrefresh.runtime import class_cache
from dbt.adapters.fastrefresh.runtime.catalog import EMBEDDED_METASTORE_KEYS, SharedCatalog
from dbt.adapters.fastrefresh.runtime.executor import EXCLUDED_RULES, with_safe_rules
from dbt.adapters.fastrefresh.runtime.jars import (
    LOCAL_FS_CLASS,
    ensure_iceberg_jars,
    ensure_local_fs_jar,
)

DEFAULT_STATE_DIR = ".fastrefresh"
# The state folder is one process's at a time (its Derby metastore admits one JVM): the
# holder keeps an exclusive lock on this file, which the OS drops when it exits however
# it ends, and writes who it is into it for the next one's message.
LOCK_FILE = "in-use.lock"
WAIT_ENV = "FASTREFRESH_STATE_WAIT"  # seconds a second process waits for the folder
_held: dict[Path, IO[str]] = {}
LOG4J_CONFIG = Path(__file__).resolve().parents[3] / "include" / "fastrefresh" / "log4j2.properties"
MIN_JAVA, MAX_JAVA = 8, 17  # the Java releases Spark 3.5 supports

# The driver JVM's optimizing (C2) compiler compiles a method after 4x HotSpot's default
# invocations and loop iterations. A refresh runs little data through a great variety of
# Spark, Iceberg, Janino and Derby code, and with the defaults C2 kept compiling the
# lukewarm part of it: 40% of the JVM's CPU in a 140 s test, still 25% after 20 minutes,
# on the cores the statements needed. Loops over real data pass the higher thresholds
# within milliseconds. Measured (docs/bookkeeping.md): three oracle tests on two workers,
# 385 and 384 s with the defaults, 315 and 352 s with these.
JIT_OPTIONS = (
    "-XX:Tier4InvocationThreshold=20000 -XX:Tier4MinInvocationThreshold=2400 "
    "-XX:Tier4CompileThreshold=60000 -XX:Tier4BackEdgeThreshold=160000"
)
# The throughput collector, not HotSpot's default (G1): a refresh's JVM allocates short-lived
# objects by the million (plans, generated classes, Iceberg metadata) and needs none of
# G1's short pauses, whose bookkeeping (write barriers, concurrent marking) costs CPU.
# Measured on 2 cores (docs/bookkeeping.md): the oracle's deterministic test (`java-1`)
# alone, 54.1-62.0 s with it against 67.6-72.2 s with G1, interleaved.
# Left out when the user's driver options or the environment's Java options choose a
# collector (``own_java_options``): HotSpot refuses to start with two.
GC_OPTION = "-XX:+UseParallelGC"
# Class metadata may grow to 256 MB before it triggers a full collection. HotSpot's first
# threshold is about 21 MB and rises a little after each such collection, and Spark,
# Iceberg, Derby and dbt's classes with the ones Spark generates for each statement pass
# it again and again: a `make demo` JVM (61 MB of class metadata at its end) stopped for
# three full collections of 0.1-0.33 s, and the one in its last `dbt run` took a FAST
# refresh from 0.5-0.7 s to 0.9-1.2 s (docs/bookkeeping.md). The classes Spark's cache of
# generated code lets go are still unloaded, by the full collection at that threshold or
# at any other.
METASPACE_OPTION = "-XX:MetaspaceSize=256m"
COLLECTOR_FLAG = re.compile(r"(?<!\S)-XX:\+Use\w*GC(?!\S)")
VALUE_FLAG = re.compile(r"(?<!\S)-XX:(\w+)=\S*")  # -XX:Name=value; group 1: its name
# Where else the driver JVM's options come from, beside ``spark.driver.extraJavaOptions``:
# the environment's Java options, and Spark's launcher's (spark-submit puts
# ``SPARK_SUBMIT_OPTS`` and ``spark.driver.defaultJavaOptions`` before the extra options).
JAVA_OPTION_VARIABLES = (
    "JDK_JAVA_OPTIONS",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "SPARK_SUBMIT_OPTS",
)
DEFAULT_JAVA_OPTIONS = "spark.driver.defaultJavaOptions"
# The driver JVM's options on any catalog; the embedded one adds its Derby's.
DRIVER_OPTIONS = (
    f"-Dlog4j2.configurationFile={LOG4J_CONFIG} {GC_OPTION} {METASPACE_OPTION} {JIT_OPTIONS}"
)


class EmbeddedSparkError(RuntimeError):
    """The embedded Spark cannot start; the message names the cause and the fix."""


def resolve_state_dir(state_dir: str | None, project_dir: str | None) -> Path:
    """The state folder: absolute as given, or relative to the dbt project folder."""
    base = Path(project_dir or os.getcwd())
    path = Path(state_dir or DEFAULT_STATE_DIR).expanduser()
    return path if path.is_absolute() else (base / path).resolve()


def embedded_defaults(state_dir: Path) -> dict[str, str]:
    """Spark settings of the embedded default, except ``spark.jars`` (see ``with_jars``)."""
    derby_home = str(state_dir)
    return {
        "spark.master": "local[*]",
        "spark.app.name": "dbt-fastrefresh",
        "spark.driver.memory": "4g",
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        "spark.sql.catalog.spark_catalog": "org.apache.iceberg.spark.SparkSessionCatalog",
        "spark.sql.catalog.spark_catalog.type": "hive",
        # The embedded Derby metastore has no Hive lock tables; with locking on, commits
        # retry for minutes and then fail. dbt-fastrefresh serializes its own writes.
        "spark.hadoop.iceberg.engine.hive.lock-enabled": "false",
        "spark.hadoop.hive.metastore.schema.verification": "false",
        # A model's storage table replaced with other columns (a changed query, a join whose
        # tables' logs gained keys) changes column types by position, which a Hive
        # metastore refuses by default; Iceberg owns the schema, the metastore only mirrors it.
        "spark.hadoop.hive.metastore.disallow.incompatible.col.type.changes": "false",
        "spark.hadoop.datanucleus.schema.autoCreateAll": "true",
        "spark.sql.warehouse.dir": str(state_dir / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={state_dir / 'metastore_db'};create=true"
        ),
        "spark.driver.extraJavaOptions": (
            f"-Dderby.system.home={derby_home} "
            f"-Dderby.stream.error.file={state_dir / 'derby.log'} "
            f"{DRIVER_OPTIONS}"
        ),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        # Spark compiles each query's operators to Java and keeps the last 100 classes;
        # one refresh's capture and MERGE make about 60, so with the default every refresh
        # compiled its statements again (0.2-0.4 s each). Identical code is reused.
        "spark.sql.codegen.cache.maxEntries": "2000",
        "spark.sql.session.timeZone": "UTC",
        # A rule that drops reads of one table at another snapshot (runtime/executor.py).
        EXCLUDED_RULES: with_safe_rules(None),
    }


# Settings whose user value goes after the default's instead of replacing it: the driver
# JVM's options carry the embedded Derby's home and log and the log4j configuration, and
# a user adding one flag (a heap dump, a GC log) must not lose them. A later ``-D`` of the
# same property wins, so any default can still be overridden.
APPENDED = ("spark.driver.extraJavaOptions",)


def merge_parameters(defaults: Mapping[str, str], user: Mapping[str, str]) -> dict[str, str]:
    """Embedded defaults overlaid with the user's ``server_side_parameters``: the user's
    value wins, except the ``APPENDED`` settings', which go after the default's."""
    merged = dict(defaults)
    for key, value in user.items():
        key, value = str(key), str(value)
        if key in APPENDED:
            value = " ".join(filter(None, (merged.get(key), value)))
        merged[key] = value
    return merged


def own_java_options(parameters: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """``parameters`` without the defaults' JVM options the user sets elsewhere.

    - ``GC_OPTION``, when the user's driver options, ``spark.driver.defaultJavaOptions``
      or the environment's Java options choose another collector: HotSpot refuses to
      start with two ("Multiple garbage collectors selected").
    - A ``-XX:Name=value`` of ``METASPACE_OPTION`` or ``JIT_OPTIONS``, when the
      environment's Java options or ``spark.driver.defaultJavaOptions`` set that flag.
      HotSpot takes a flag's last value, and those come before the extra options on the
      JVM's command line (``_JAVA_OPTIONS`` after it), so the default's value would
      silently replace the user's. A value in the profile's own extra options goes after
      the default's (``merge_parameters``) and wins as it is.
    """
    merged = dict(parameters)
    key = "spark.driver.extraJavaOptions"
    options = merged.get(key, "")
    elsewhere = [merged.get(DEFAULT_JAVA_OPTIONS, "")]
    elsewhere += [environ.get(name, "") for name in JAVA_OPTION_VARIABLES]
    chosen = {flag for value in (options, *elsewhere) for flag in COLLECTOR_FLAG.findall(value)}
    drop = {GC_OPTION: 0} if chosen - {GC_OPTION} else {}  # 0: every occurrence
    named = {name for value in elsewhere for name in VALUE_FLAG.findall(value)}
    for flag in f"{METASPACE_OPTION} {JIT_OPTIONS}".split():
        match = VALUE_FLAG.match(flag)
        if match and match.group(1) in named:
            drop[flag] = 1  # the default's, the first: a user's equal one stays
    for flag, count in drop.items():
        ours = re.compile(rf"(?<!\S){re.escape(flag)}(?!\S)\s*")
        options = ours.sub("", options, count=count)
    if drop:
        merged[key] = options.strip()
    return merged


def with_jars(parameters: Mapping[str, str], jars: str) -> dict[str, str]:
    """Put the Iceberg jars on ``spark.jars``, after any jars the user listed."""
    merged = dict(parameters)
    existing = merged.get("spark.jars", "")
    if jars not in existing:
        merged["spark.jars"] = f"{existing},{jars}" if existing else jars
    return merged


LOCAL_FS_KEY = "spark.hadoop.fs.file.impl"
CLASS_PATH_KEY = "spark.driver.extraClassPath"
_local_fs_told: list[str] = []
logger = AdapterLogger("fastrefresh")


def with_local_fs(parameters: Mapping[str, str], java: str) -> dict[str, str]:
    """``parameters`` with Hadoop's local file system replaced by dbt-fastrefresh's
    (``include/fastrefresh/java/NioLocalFileSystem.java``: the same, setting permissions
    without a ``chmod`` process per file written), its jar on the driver's class path.

    The class path, not ``spark.jars``: Spark's launcher reads local files (the jars it
    is given among them) before ``spark.jars`` are loaded. So only for a ``local``
    master, whose executors are the driver, and only when the settings name no local
    file system of their own; when the jar cannot be built, the session keeps Hadoop's
    and a warning says why, once per process.
    """
    merged = dict(parameters)
    if LOCAL_FS_KEY in merged or not merged.get("spark.master", "").startswith("local"):
        return merged
    jar, error = ensure_local_fs_jar(java)
    if jar is None:
        if not _local_fs_told:
            _local_fs_told.append(error)
            logger.warning(
                f"dbt-fastrefresh: Spark keeps Hadoop's local file system, which starts a "
                f"`chmod` process for every file it writes (about 8 ms a file), because its "
                f"replacement could not be built: {error}. Fix: check that `{java}` runs and "
                "that the jar cache (DBT_FASTREFRESH_CACHE_DIR) is writable, then delete "
                f"the manifest named above to build it again; or set {LOCAL_FS_KEY} in "
                "server_side_parameters to choose a file system."
            )
        return merged
    path = merged.get(CLASS_PATH_KEY, "")
    if str(jar) not in path.split(os.pathsep):
        merged[CLASS_PATH_KEY] = os.pathsep.join(filter(None, (path, str(jar))))
    merged[LOCAL_FS_KEY] = LOCAL_FS_CLASS
    return merged


def java_major_version(output: str) -> int | None:
    """Parse ``java -version`` output: ``"17.0.15"`` → 17, ``"1.8.0_392"`` → 8."""
    match = re.search(r'version "(\d+)(?:\.(\d+))?', output)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def check_java() -> tuple[str, int]:
    """Fail clearly when no usable Java is found, before PySpark fails obscurely; return
    the ``java`` that Spark will run and its major version."""
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if not java or not Path(java).exists():
        raise EmbeddedSparkError(
            "Java was not found: the embedded Spark needs a Java runtime (8, 11 or 17). "
            "Fix: install Java 17 (for example `apt-get install openjdk-17-jre-headless`) "
            "and put `java` on PATH or set JAVA_HOME."
        )
    try:
        result = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except OSError as exc:
        raise EmbeddedSparkError(f"Cannot run {java}: {exc}. Fix: reinstall Java 17.") from exc
    version = java_major_version(result.stderr + result.stdout)
    if version is None or not MIN_JAVA <= version <= MAX_JAVA:
        raise EmbeddedSparkError(
            f"{java} is Java {version or 'of unknown version'}; Spark 3.5 runs on Java 8, 11 "
            "or 17. Fix: install Java 17 and set JAVA_HOME to it."
        )
    return java, version


def hold_state_dir(state_dir: Path, wait: float | None = None) -> None:
    """Take the state folder for this process, or fail naming the process that has it.

    ``wait``: seconds to wait for it (default: ``$FASTREFRESH_STATE_WAIT``, else 0). A
    second process on the folder would die in Derby with a stack trace ("Unable to
    instantiate SessionHiveMetaStoreClient"), or worse race this one's commits.
    """
    if fcntl is None or state_dir in _held:
        return
    if wait is None:
        try:
            wait = float(os.environ.get(WAIT_ENV) or 0)
        except ValueError as exc:
            raise EmbeddedSparkError(
                f"{WAIT_ENV}={os.environ[WAIT_ENV]!r} is not a number of seconds. Fix: set it "
                "to the seconds to wait for another process's run (for example 600), or unset it."
            ) from exc
    handle = (state_dir / LOCK_FILE).open("a+", encoding="utf-8")
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                holder = _holder(handle)
                handle.close()
                raise EmbeddedSparkError(
                    f"The state folder {state_dir} is in use by another process ({holder}); "
                    "the embedded Spark's Derby metastore admits one process at a time"
                    + (f", and it did not become free within {wait:g} s" if wait else "")
                    + f". Fix: let that run finish and start this one again, or set {WAIT_ENV} "
                    "to the seconds to wait for it (for example 600), or give this project "
                    "its own state_dir in the profile; for several processes at once, use a "
                    "shared catalog (the profile's `catalog`, README: 'Several dbt processes at once')."
                ) from None
            time.sleep(0.2)
    handle.seek(0)
    handle.truncate()
    since = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    handle.write(json.dumps({"pid": os.getpid(), "command": " ".join(sys.argv), "since": since}))
    handle.flush()
    _held[state_dir] = handle


def _holder(handle: IO[str]) -> str:
    """Who holds the state folder, as its lock file says."""
    handle.seek(0)
    try:
        who = json.loads(handle.read() or "{}")
    except ValueError:
        who = {}
    if not who:
        return "process unknown"
    return f"process {who.get('pid')}, `{who.get('command', '?')}`, since {who.get('since', '?')}"


def prepare_embedded(
    parameters: Mapping[str, str], state_dir: Path | None, catalog: SharedCatalog | None = None
) -> dict[str, str]:
    """Check Java, build the jars, create the state folder and take it for this process
    (none with a shared catalog: several processes share it); return the final settings,
    with the driver JVM's class cache (``runtime/class_cache.py``)."""
    java, version = check_java()
    if catalog is None:
        assert state_dir is not None
        try:
            state_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a file there, a folder this user cannot write
            raise EmbeddedSparkError(
                f"The state folder {state_dir} (the profile's state_dir) cannot be created: "
                f"{exc.strerror or exc}. Fix: set state_dir to a folder this user can write "
                "(relative paths are taken from the dbt project folder), or remove it "
                "(<project>/.fastrefresh)."
            ) from exc
        hold_state_dir(state_dir)
    jars = ensure_iceberg_jars().spark_jars()
    if catalog is not None and catalog.jars:
        jars = ",".join((jars, *catalog.jars))
    final = own_java_options(with_jars(parameters, jars), os.environ)
    final = with_local_fs(final, java)
    cache = class_cache.jvm_options(java, version, final)
    if cache and cache not in final.get("spark.driver.extraJavaOptions", ""):
        # Appended after the profile's and the defaults' options, as a user's would be.
        final = merge_parameters(final, {"spark.driver.extraJavaOptions": cache})
    return final


def check_running_session(expected: Mapping[str, str]) -> None:
    """Refuse a Spark session already running in this process with another catalog setup.

    Static settings (catalog, warehouse, metastore) cannot change once a JVM runs: a
    session started elsewhere without Iceberg would silently ignore ours.
    """
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    if session is None:
        return
    conf = session.sparkContext.getConf()
    for key in ("spark.sql.catalog.spark_catalog", "spark.sql.warehouse.dir"):
        want = expected.get(key)
        have = conf.get(key, None)
        if want is not None and have is not None and _normalize(have) != _normalize(want):
            raise EmbeddedSparkError(
                f"A Spark session is already running in this process with {key}={have}, "
                f"but the profile asks for {want}. Static Spark settings cannot change in a "
                "running JVM. Fix: use the same state_dir for every project in one process, "
                "or set `embedded: false` in the profile to use the running session as it is."
            )
        if want is not None and have is None and key == "spark.sql.catalog.spark_catalog":
            raise EmbeddedSparkError(
                "A Spark session without Iceberg is already running in this process. "
                "Fix: start it with the dbt-fastrefresh embedded settings "
                "(dbt.adapters.fastrefresh.runtime.embedded.session_builder), or set `embedded: false`."
            )


def _normalize(value: str) -> str:
    return value.removeprefix("file:").rstrip("/")


def shared_defaults(catalog: SharedCatalog) -> dict[str, str]:
    """The embedded defaults with ``catalog`` as the session catalog instead of the state
    folder's Derby metastore (``runtime/catalog.py``)."""
    defaults = embedded_defaults(Path(catalog.warehouse))
    for key in EMBEDDED_METASTORE_KEYS:
        defaults.pop(key, None)
    defaults["spark.driver.extraJavaOptions"] = DRIVER_OPTIONS
    defaults.update(catalog.spark_parameters())
    return defaults


def session_parameters(
    state_dir: Path | None,
    user: Mapping[str, str] | None = None,
    catalog: SharedCatalog | None = None,
) -> dict[str, str]:
    """Every setting a session profile gets: embedded defaults (or a shared catalog's), the
    user's, dbt-spark's.

    The single source for the profile (``FastrefreshCredentials``) and for code that starts
    the session itself (tests, demo, benchmarks), so both always agree.
    """
    if catalog is not None:
        defaults = shared_defaults(catalog)
    else:
        assert state_dir is not None
        defaults = embedded_defaults(state_dir)
    merged = merge_parameters(defaults, user or {})
    # dbt-spark forces this on every session profile; mirror it so both paths agree.
    merged["spark.sql.ansi.enabled"] = "false"
    return merged


def start_session(  # type: ignore[no-untyped-def]
    state_dir: str | Path | None,
    user: Mapping[str, str] | None = None,
    catalog: SharedCatalog | None = None,
):
    """Start (or return) this process's embedded SparkSession with the profile's settings
    (``catalog``: on a shared catalog instead of the state folder's).

    A dbt invocation in the same process (``dbtRunner``) then reuses this session, which
    saves the JVM start on every run.
    """
    path = None if catalog is not None else resolve_state_dir(str(state_dir), None)
    parameters = prepare_embedded(session_parameters(path, user, catalog), path, catalog)
    check_running_session(parameters)
    return session_builder(parameters).getOrCreate()


def session_builder(parameters: Mapping[str, str]):  # type: ignore[no-untyped-def]
    """A SparkSession builder with exactly the settings dbt-spark's cursor will apply."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.enableHiveSupport()
    for key, value in parameters.items():
        builder = builder.config(key, value)
    return builder
