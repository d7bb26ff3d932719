"""The driver JVM's class cache: HotSpot's class data sharing for the Spark this process
starts.

Every ``dbt run`` on the embedded default starts a JVM, and before its first statement
answers that JVM loads and verifies more than 10,000 classes of Spark, Hive, Derby and
Iceberg from their jars. HotSpot can archive the classes one run loaded
(``-XX:ArchiveClassesAtExit``, Java 13 and later) and map that archive into the next JVMs
(``-XX:SharedArchiveFile``), already parsed and verified. Measured on the embedded default
(2 cores, Java 17): a session's start and its first Iceberg statements took 14.9-15.4 s
without the archive, 10.0-10.5 s with it; the quickstart's whole ``dbt run`` (eight
models) 22.6-24.6 s, 17.4-18.4 s with it (``docs/bookkeeping.md``).

- The archive lives in the jar cache (``runtime/jars.default_cache_dir``), under
  ``jvm-classes/``, one per Java and set of jars (its name is a hash of them), so an
  upgrade of either makes a new one. HotSpot checks an archive against the JVM and the
  class path before it maps it, and ignores one that does not fit.
- The first process without an archive takes a lock on it and starts its JVM with
  ``-XX:ArchiveClassesAtExit``. When that process exits, it closes the JVM, waits while
  the JVM writes the archive (10-20 s, once; it says so on stderr), and renames the
  finished file into place: a JVM never maps a half-written archive. Other processes
  meanwhile start without one.
- HotSpot is asked first: a JVM without the JDK's base archive (some minimal runtimes),
  or with ``-Xshare:off`` in ``JDK_JAVA_OPTIONS``, refuses to start with
  ``-XX:ArchiveClassesAtExit``, and one that maps a truncated archive crashes. So the
  writing process first runs ``java -XX:ArchiveClassesAtExit=... -version``, and the
  written archive is mapped once by ``java -version`` before it is put in place. If
  either fails, a ``<name>.refused`` file says so, and no process asks again (until
  Java or the jars change: another name); the JVM starts as it would without one.
- There is none with ``DBT_FASTREFRESH_CLASS_CACHE=off``, with a Java older than 13, or
  when the profile's ``spark.driver.extraJavaOptions`` has class data sharing flags of
  its own. ``DBT_FASTREFRESH_CLASS_CACHE=<folder>`` keeps the archives there instead.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, no class cache
    fcntl = None  # type: ignore[assignment]

from dbt.adapters.fastrefresh.runtime.jars import default_cache_dir

CACHE_ENV = "DBT_FASTREFRESH_CLASS_CACHE"
MIN_JAVA = 13  # -XX:ArchiveClassesAtExit
# The archive's own warnings ("Preload Warning: Verification failed for ...") would go to
# the process's stdout, through dbt's output.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
OWN_FLAGS = ("Xshare", "SharedArchiveFile", "ArchiveClassesAtExit")
SAVE_TIMEOUT = 300.0  # seconds to wait for the JVM writing the archive at exit


@dataclass
class Decision:
    """What this process's JVM does with the class cache: ``options`` to add to the
    driver's; when it writes the archive, it writes ``tmp`` at exit, which ``java`` then
    maps once before it is renamed to ``final``, holding ``lock`` meanwhile."""

    options: str
    java: str = "java"
    final: Path | None = None
    tmp: Path | None = None
    lock: IO[str] | None = None


def archive_key(java: str, spark_jars: str, class_path: str = "") -> str:
    """The archive's name: a hash of the Java runtime and of every jar of the class path
    (the driver's extra class path, Spark's own and ``spark.jars``), each by path, size
    and modification time."""
    import pyspark

    digest = hashlib.sha256()
    paths = [Path(java).resolve()]
    paths += [Path(p) for p in class_path.split(os.pathsep) if p]
    paths += sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))
    paths += [Path(p) for p in spark_jars.split(",") if p]
    for path in paths:
        try:
            stat = path.stat()
            digest.update(f"{path}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
        except OSError:
            digest.update(f"{path}|missing\n".encode())
    return digest.hexdigest()[:16]


def decide(
    java: str, version: int, parameters: Mapping[str, str], folder: Path | None = None
) -> Decision:
    """Map the archive when there is one; else write it at exit when this process takes
    its lock; else nothing. Never fails: without a cache the JVM only starts slower."""
    setting = os.environ.get(CACHE_ENV, "").strip()
    user = parameters.get("spark.driver.extraJavaOptions", "")
    if (
        setting.lower() in ("off", "0", "false", "no")
        or fcntl is None
        or version < MIN_JAVA
        or any(flag in user for flag in OWN_FLAGS)
    ):
        return Decision("")
    named = setting and setting.lower() not in ("on", "1", "true", "yes")
    folder = folder or (Path(setting).expanduser() if named else None)
    folder = folder or default_cache_dir() / "jvm-classes"
    key = archive_key(
        java, parameters.get("spark.jars", ""), parameters.get("spark.driver.extraClassPath", "")
    )
    final = folder / f"{key}.jsa"
    if any(c.isspace() for c in str(final)):  # JVM options split on whitespace
        return Decision("")
    if final.is_file():
        return Decision(f"-XX:SharedArchiveFile={final} {QUIET}")
    if refused(final).exists():
        return Decision("")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        lock = (folder / f"{key}.lock").open("a+", encoding="utf-8")
    except OSError:
        return Decision("")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # another process is writing it
        lock.close()
        return Decision("")
    if final.is_file():  # the previous holder of the lock wrote it since the first look
        lock.close()
        return Decision(f"-XX:SharedArchiveFile={final} {QUIET}")
    if refused(final).exists():  # ... or found HotSpot refusing it
        lock.close()
        return Decision("")
    tmp = folder / f"{key}.{os.getpid()}.tmp"
    for stale in folder.glob(f"{key}.*.tmp"):  # left by a process killed while saving
        stale.unlink(missing_ok=True)
    probe = folder / f"{key}.{os.getpid()}.probe.tmp"
    try:
        if not runs(java, f"-XX:ArchiveClassesAtExit={probe}"):
            refused(final).touch()
            lock.close()
            return Decision("")
    finally:
        probe.unlink(missing_ok=True)
    return Decision(f"-XX:ArchiveClassesAtExit={tmp} {QUIET}", java, final, tmp, lock)


def refused(final: Path) -> Path:
    """The file that says HotSpot refused to write or to map the archive ``final``."""
    return final.with_suffix(".refused")


def runs(java: str, *options: str) -> bool:
    """Whether ``java -version`` with ``options`` (and this process's environment, whose
    ``JDK_JAVA_OPTIONS`` every launch reads) starts and exits cleanly."""
    # A JVM that crashes on a bad archive writes no crash report into the user's folder.
    quiet_crash = [f"-XX:ErrorFile={os.devnull}", "-XX:-CreateCoredumpOnCrash"]
    try:
        done = subprocess.run(
            [java, *options, *QUIET.split(), *quiet_crash, "-version"],
            capture_output=True,
            timeout=120,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


_decided: list[Decision] = []


def jvm_options(java: str, version: int, parameters: Mapping[str, str]) -> str:
    """The class cache's options for this process's driver JVM (decided once per process:
    every session of the process is the one JVM)."""
    if not _decided:
        decision = decide(java, version, parameters)
        _decided.append(decision)
        if decision.tmp is not None:
            atexit.register(save, decision)
    return _decided[0].options


def save(decision: Decision) -> bool:
    """At exit: close the JVM this process started with ``decision``'s
    ``ArchiveClassesAtExit``, wait while it writes the archive, put the archive in place.
    Returns whether it did."""
    assert decision.tmp is not None and decision.final is not None
    try:
        from pyspark import SparkContext

        gateway = SparkContext._gateway
        proc = getattr(gateway, "proc", None)
        if proc is None or str(decision.tmp) not in " ".join(map(str, proc.args)):
            return False  # no JVM, or one started by someone else without the option
        if proc.poll() is None:
            print(
                "dbt-fastrefresh: saving the Spark JVM's classes for faster starts "
                f"(once, 10-20 s; {CACHE_ENV}=off turns this off)",
                file=sys.stderr,
                flush=True,
            )
            if proc.stdin is not None:
                proc.stdin.close()  # the gateway exits on end of input
            proc.wait(timeout=SAVE_TIMEOUT)
        whole = proc.returncode == 0 and decision.tmp.is_file() and decision.tmp.stat().st_size
        if not whole:  # the JVM was killed, or wrote nothing: the next process tries again
            return False
        if not runs(decision.java, f"-XX:SharedArchiveFile={decision.tmp}"):
            refused(decision.final).touch()
            return False
        os.replace(decision.tmp, decision.final)
        return True
    except Exception:  # the cache only saves time: never fail an exit for it
        return False
    finally:
        if decision.tmp is not None:
            decision.tmp.unlink(missing_ok=True)
        if decision.lock is not None:
            decision.lock.close()
