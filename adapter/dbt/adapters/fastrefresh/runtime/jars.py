"""Locate the Apache Iceberg runtime for Spark 3.5 and repair it for use.

The only Iceberg runtime jar that installs from a package registry here ships in the
PyPI wheel ``snowpark-connect-deps-iceberg``. That copy lacks the Jackson classes the
official runtime bundles under ``org.apache.iceberg.shaded.com.fasterxml.jackson``, so
every Iceberg statement fails with ``ClassNotFoundException``. We rebuild the missing
piece from pyspark's own Jackson jars: every class is renamed into the shaded package
by rewriting the UTF-8 entries of its constant pool (a class file refers to other
classes only through those entries), and the service files are renamed likewise.

The built jar is cached, with a manifest holding its SHA-256 and the identity of its
inputs; it is rebuilt when missing, corrupt, or built from other inputs.

The embedded default's local file system is built here too (``ensure_local_fs_jar``):
Hadoop's, setting permissions without a ``chmod`` process per file
(``include/fastrefresh/java/NioLocalFileSystem.java``), compiled at first use by Janino,
the Java compiler in pyspark's jars, and cached the same way.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import struct
import subprocess
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ICEBERG_WHEEL = "snowpark-connect-deps-iceberg"
ICEBERG_RUNTIME_JAR = "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
JACKSON_JARS = (
    "jackson-annotations",
    "jackson-core",
    "jackson-databind",
    "jackson-datatype-jsr310",
)
SHADED_PREFIX = "org/apache/iceberg/shaded/"
_SLASHED = b"com/fasterxml/jackson/"
_DOTTED = b"com.fasterxml.jackson."
# Bump when the relocation logic changes, so cached jars built by older code are rebuilt.
RELOCATION_FORMAT = 1
RELOCATED_JAR_NAME = "iceberg-shaded-jackson.jar"


class JarError(RuntimeError):
    """The Iceberg jars cannot be found or built; the message says how to fix it."""


@dataclass(frozen=True)
class IcebergJars:
    """The jars to put on ``spark.jars`` for Iceberg to work."""

    runtime: Path
    relocated_jackson: Path

    def spark_jars(self) -> str:
        return f"{self.runtime},{self.relocated_jackson}"


def default_cache_dir() -> Path:
    """Where built jars are cached: ``$DBT_FASTREFRESH_CACHE_DIR`` or the XDG cache."""
    explicit = os.environ.get("DBT_FASTREFRESH_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dbt-fastrefresh"


def find_iceberg_runtime() -> Path:
    """The Iceberg Spark 3.5 runtime jar shipped in the ``snowpark-connect-deps-iceberg`` wheel."""
    try:
        import snowpark_connect_deps_iceberg as wheel
    except ImportError as exc:
        raise JarError(
            f"The Iceberg runtime is missing: the Python package '{ICEBERG_WHEEL}' is not "
            f"installed. Fix: pip install '{ICEBERG_WHEEL}==1.0.3' (dbt-fastrefresh depends "
            "on it; reinstall dbt-fastrefresh)."
        ) from exc
    jar = Path(wheel.__file__).parent / "jars" / ICEBERG_RUNTIME_JAR
    if not jar.is_file() or not zipfile.is_zipfile(jar):
        raise JarError(
            f"The Iceberg runtime jar {jar} is missing or unreadable. "
            f"Fix: pip install --force-reinstall '{ICEBERG_WHEEL}==1.0.3'."
        )
    return jar


def find_jackson_jars() -> list[Path]:
    """pyspark's own Jackson jars, the inputs of the relocated jar."""
    import pyspark

    jars_dir = Path(pyspark.__file__).parent / "jars"
    found: list[Path] = []
    for stem in JACKSON_JARS:
        matches = sorted(jars_dir.glob(f"{stem}-2.*.jar"))
        if not matches:
            raise JarError(
                f"pyspark's {stem} jar is missing from {jars_dir}. "
                "Fix: pip install --force-reinstall 'pyspark==3.5.9'."
            )
        found.append(matches[-1])
    return found


def relocate_class(data: bytes) -> bytes:
    """Return the class file with every Jackson name moved into the shaded package.

    Only the constant pool is rewritten: all class, field, method and descriptor names a
    class file uses live there as UTF-8 entries, and nothing after the pool refers to the
    pool by byte offset, so the rest of the file is copied unchanged.

    >>> relocate_class(_tiny_class(b"com/fasterxml/jackson/core/X"))[10:]
    b'\\x01\\x00(org/apache/iceberg/shaded/com/fasterxml/jackson/core/X'
    """
    if data[:4] != b"\xca\xfe\xba\xbe":
        raise JarError("not a Java class file (bad magic number)")
    count = struct.unpack_from(">H", data, 8)[0]
    out = bytearray(data[:10])
    pos = 10
    index = 1
    while index < count:
        tag = data[pos]
        if tag == 1:  # CONSTANT_Utf8: u2 length, then bytes
            length = struct.unpack_from(">H", data, pos + 1)[0]
            value = data[pos + 3 : pos + 3 + length]
            value = value.replace(_SLASHED, SHADED_PREFIX.encode() + _SLASHED)
            value = value.replace(_DOTTED, SHADED_PREFIX.replace("/", ".").encode() + _DOTTED)
            out += bytes([1]) + struct.pack(">H", len(value)) + value
            pos += 3 + length
        else:
            size = _CONSTANT_SIZES.get(tag)
            if size is None:
                raise JarError(f"unknown constant pool tag {tag} at byte {pos}")
            out += data[pos : pos + 1 + size]
            pos += 1 + size
        # Long and Double constants take two slots of the pool.
        index += 2 if tag in (5, 6) else 1
    out += data[pos:]
    return bytes(out)


# Payload size (after the tag byte) of each fixed-size constant pool entry.
_CONSTANT_SIZES = {3: 4, 4: 4, 5: 8, 6: 8, 7: 2, 8: 2, 9: 4, 10: 4, 11: 4, 12: 4, 15: 3, 16: 2,
                   17: 4, 18: 4, 19: 2, 20: 2}  # fmt: skip


def _tiny_class(name: bytes) -> bytes:
    """A minimal class-file prefix with one UTF-8 constant, for doctests and tests."""
    return (
        b"\xca\xfe\xba\xbe\x00\x00\x00\x3d\x00\x02" + b"\x01" + struct.pack(">H", len(name)) + name
    )


def _relocated_entry_name(name: str) -> str:
    if name.startswith("com/fasterxml/jackson/"):
        return SHADED_PREFIX + name
    if name.startswith("META-INF/services/com.fasterxml.jackson."):
        return "META-INF/services/" + SHADED_PREFIX.replace("/", ".") + name.split("/", 2)[2]
    return name


def _skip_entry(name: str) -> bool:
    return (
        name.endswith("/")
        or name.endswith("module-info.class")
        or name.startswith("META-INF/versions/")
        or name == "META-INF/MANIFEST.MF"
        or name.startswith("META-INF/maven/")
        or name.upper().endswith((".SF", ".RSA", ".DSA"))
    )


def build_relocated_jar(sources: list[Path], target: Path) -> None:
    """Write the relocated Jackson jar built from ``sources`` to ``target`` (atomically)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".tmp-", suffix=".jar", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        seen: set[str] = set()
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as out:
            for source in sources:
                try:
                    _relocate_jar(source, out, seen)
                except (JarError, zipfile.BadZipFile, struct.error, IndexError) as exc:
                    raise JarError(
                        f"Cannot relocate {source}: {exc}. The jar is damaged or not one of "
                        "pyspark's own. Fix: pip install --force-reinstall 'pyspark==3.5.9'."
                    ) from exc
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _relocate_jar(source: Path, out: zipfile.ZipFile, seen: set[str]) -> None:
    """Copy ``source``'s entries into ``out`` with Jackson relocated (``seen``: the names
    written so far)."""
    with zipfile.ZipFile(source) as jar:
        for info in jar.infolist():
            if _skip_entry(info.filename):
                continue
            name = _relocated_entry_name(info.filename)
            if name in seen:  # LICENSE/NOTICE repeat across the jars
                continue
            seen.add(name)
            data = jar.read(info)
            if name.endswith(".class"):
                data = relocate_class(data)
            elif name.startswith("META-INF/services/"):
                data = data.replace(_DOTTED, SHADED_PREFIX.replace("/", ".").encode() + _DOTTED)
            # Fixed timestamps make the build reproducible byte for byte.
            entry = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            entry.compress_type = zipfile.ZIP_DEFLATED
            out.writestr(entry, data)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _inputs_identity(sources: list[Path]) -> list[dict[str, object]]:
    return [{"name": s.name, "size": s.stat().st_size, "sha256": _sha256(s)} for s in sources]


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _read_manifest(manifest: Path) -> dict[str, object]:
    """A cached jar's manifest (empty when missing or unreadable)."""
    try:
        recorded = json.loads(manifest.read_text())
    except (OSError, ValueError):
        return {}
    return recorded if isinstance(recorded, dict) else {}


def _write_manifest(manifest: Path, record: dict[str, object]) -> None:
    """Replace a cached jar's manifest atomically."""
    tmp = manifest.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=2))
    os.replace(tmp, manifest)


def _cache_is_valid(
    jar: Path, manifest: Path, inputs: list[dict[str, object]], version: int = RELOCATION_FORMAT
) -> bool:
    if not jar.is_file() or not manifest.is_file():
        return False
    recorded = _read_manifest(manifest)
    return (
        recorded.get("format") == version
        and recorded.get("inputs") == inputs
        and recorded.get("sha256") == _sha256(jar)
        and zipfile.is_zipfile(jar)
    )


def ensure_iceberg_jars(cache_dir: Path | None = None) -> IcebergJars:
    """Return the jars Iceberg needs, building the relocated Jackson jar if needed.

    Safe to call from several processes at once: the build runs under a file lock and
    the jar and its manifest are replaced atomically.
    """
    runtime = find_iceberg_runtime()
    sources = find_jackson_jars()
    cache = (cache_dir or default_cache_dir()) / f"jars-v{RELOCATION_FORMAT}"
    jar = cache / RELOCATED_JAR_NAME
    manifest = cache / (RELOCATED_JAR_NAME + ".json")
    inputs = _inputs_identity(sources)
    if _cache_is_valid(jar, manifest, inputs):
        return IcebergJars(runtime, jar)
    try:
        with _file_lock(cache / ".lock"):
            if not _cache_is_valid(jar, manifest, inputs):
                manifest.unlink(missing_ok=True)
                build_relocated_jar(sources, jar)
                record = {"format": RELOCATION_FORMAT, "inputs": inputs, "sha256": _sha256(jar)}
                _write_manifest(manifest, record)
    except OSError as exc:
        raise JarError(
            f"Cannot build the relocated Jackson jar in {cache}: {exc}. Fix: make that folder "
            "writable, or point DBT_FASTREFRESH_CACHE_DIR at a writable folder."
        ) from exc
    return IcebergJars(runtime, jar)


# The embedded default's local file system (``include/fastrefresh/java``): its class, and
# its jar in the cache, built by Janino from the source the package ships.
LOCAL_FS_CLASS = "dbt.fastrefresh.NioLocalFileSystem"
LOCAL_FS_SOURCE = (
    Path(__file__).resolve().parents[3]
    / "include"
    / "fastrefresh"
    / "java"
    / "NioLocalFileSystem.java"
)
LOCAL_FS_JAR_NAME = "fastrefresh-local-fs.jar"
LOCAL_FS_FORMAT = 1  # bump when the build changes
JANINO_MAIN = "org.codehaus.commons.compiler.samples.CompilerDemo"  # Janino's javac


def ensure_local_fs_jar(java: str, cache_dir: Path | None = None) -> tuple[Path | None, str]:
    """The local file system's jar (built by ``java`` running Janino when missing or built
    from other inputs) and ``""``; or None and why it cannot be built. A build that failed
    is not tried again until an input changes (its error is kept in the manifest)."""
    import pyspark

    spark_jars = sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))
    janino = [j for j in spark_jars if j.name.startswith(("janino-", "commons-compiler-"))]
    if len(janino) != 2:
        return None, "pyspark's Janino jars (janino, commons-compiler) are missing"
    cache = (cache_dir or default_cache_dir()) / f"jars-v{RELOCATION_FORMAT}"
    jar = cache / LOCAL_FS_JAR_NAME
    manifest = cache / (LOCAL_FS_JAR_NAME + ".json")
    try:
        # The class is compiled against pyspark's Hadoop, and the Java that compiled it
        # decides whether a failed build is tried again.
        inputs = _inputs_identity([LOCAL_FS_SOURCE])
        inputs.append({"pyspark": pyspark.__version__, "java": str(Path(java).resolve())})
        if _cache_is_valid(jar, manifest, inputs, LOCAL_FS_FORMAT):
            return jar, ""
        with _file_lock(cache / ".lock"):
            if _cache_is_valid(jar, manifest, inputs, LOCAL_FS_FORMAT):
                return jar, ""
            failed = _recorded_error(manifest, inputs)
            if failed:
                return None, f"{failed} (an earlier build's, kept in {manifest})"
            manifest.unlink(missing_ok=True)
            error = _compile_local_fs(java, janino, spark_jars, jar)
            record: dict[str, object] = {"format": LOCAL_FS_FORMAT, "inputs": inputs}
            record.update({"error": error} if error else {"sha256": _sha256(jar)})
            _write_manifest(manifest, record)
            return (None, f"{error} (kept in {manifest})") if error else (jar, "")
    except OSError as exc:
        return None, f"the jar cache {cache} cannot be written: {exc}"


def _recorded_error(manifest: Path, inputs: list[dict[str, object]]) -> str:
    """The error of an earlier build from the same ``inputs``, or ``""``."""
    recorded = _read_manifest(manifest)
    if recorded.get("format") == LOCAL_FS_FORMAT and recorded.get("inputs") == inputs:
        return str(recorded.get("error") or "")
    return ""


def _compile_local_fs(java: str, janino: list[Path], spark_jars: list[Path], jar: Path) -> str:
    """Compile ``LOCAL_FS_SOURCE`` with Janino into ``jar`` (atomically); ``""`` or why not."""
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=jar.parent, prefix=".build-") as build:
        classes = Path(build) / "classes"
        classes.mkdir()
        command = [
            java, "-cp", os.pathsep.join(map(str, janino)), JANINO_MAIN, "-d", str(classes),
            "-classpath", os.pathsep.join(map(str, spark_jars)), str(LOCAL_FS_SOURCE),
        ]  # fmt: skip
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.SubprocessError) as exc:
            return f"Janino did not run: {exc}"
        built = sorted(classes.rglob("*.class"))
        if done.returncode != 0 or not built:
            output = (done.stderr or done.stdout).strip().splitlines()
            return f"Janino failed: {output[-1] if output else f'exit code {done.returncode}'}"
        tmp = Path(build) / LOCAL_FS_JAR_NAME
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as out:
            for path in built:
                out.write(path, path.relative_to(classes).as_posix())
        os.replace(tmp, jar)
    return ""
