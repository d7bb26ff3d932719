"""The Iceberg jar repair: relocation of Jackson class files and the build cache."""

from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path
from typing import Any

import pytest

from dbt.adapters.fastrefresh.runtime import jars


def utf8_constants(class_bytes: bytes) -> list[bytes]:
    """The UTF-8 entries of a class file's constant pool (an independent small parser)."""
    count = struct.unpack_from(">H", class_bytes, 8)[0]
    pos, index, found = 10, 1, []
    sizes = {3: 4, 4: 4, 5: 8, 6: 8, 7: 2, 8: 2, 9: 4, 10: 4, 11: 4, 12: 4, 15: 3, 16: 2,
             17: 4, 18: 4, 19: 2, 20: 2}  # fmt: skip
    while index < count:
        tag = class_bytes[pos]
        if tag == 1:
            length = struct.unpack_from(">H", class_bytes, pos + 1)[0]
            found.append(class_bytes[pos + 3 : pos + 3 + length])
            pos += 3 + length
        else:
            pos += 1 + sizes[tag]
        index += 2 if tag in (5, 6) else 1
    return found


def test_relocates_slashed_and_dotted_names_and_keeps_others() -> None:
    names = [b"com/fasterxml/jackson/core/JsonGenerator", b"com.fasterxml.jackson.databind.X",
             b"(Lcom/fasterxml/jackson/core/JsonParser;)V", b"java/lang/Object"]  # fmt: skip
    pool = b"".join(b"\x01" + struct.pack(">H", len(n)) + n for n in names)
    # A Long constant occupies two pool slots; the parser must not lose its place after it.
    pool += b"\x05" + (42).to_bytes(8, "big")
    body = b"\x00\x21trailing-bytes"
    data = b"\xca\xfe\xba\xbe\x00\x00\x00\x3d" + struct.pack(">H", len(names) + 3) + pool + body
    out = jars.relocate_class(data)
    assert utf8_constants(out) == [
        b"org/apache/iceberg/shaded/com/fasterxml/jackson/core/JsonGenerator",
        b"org.apache.iceberg.shaded.com.fasterxml.jackson.databind.X",
        b"(Lorg/apache/iceberg/shaded/com/fasterxml/jackson/core/JsonParser;)V",
        b"java/lang/Object",
    ]
    assert out.endswith(b"\x05" + (42).to_bytes(8, "big") + body)


def test_rejects_a_file_that_is_not_a_class() -> None:
    with pytest.raises(jars.JarError, match="not a Java class file"):
        jars.relocate_class(b"PK\x03\x04 not a class")


def test_a_damaged_source_jar_is_named_with_the_fix(tmp_path: Path) -> None:
    damaged = tmp_path / "jackson-core-2.15.2.jar"
    damaged.write_bytes(b"PK\x03\x04 cut short")
    with pytest.raises(jars.JarError, match=r"Cannot relocate .*jackson-core-2\.15\.2\.jar.*Fix: "):
        jars.build_relocated_jar([damaged], tmp_path / "out.jar")
    assert not (tmp_path / "out.jar").exists()
    assert [p.name for p in tmp_path.iterdir()] == [damaged.name], "no temporary jar left"


def test_built_jar_from_pysparks_jackson_is_fully_relocated(tmp_path: Path) -> None:
    target = tmp_path / "out.jar"
    jars.build_relocated_jar(jars.find_jackson_jars(), target)
    with zipfile.ZipFile(target) as jar:
        names = jar.namelist()
        classes = [n for n in names if n.endswith(".class")]
        assert "org/apache/iceberg/shaded/com/fasterxml/jackson/core/JsonGenerator.class" in names
        assert classes and all(
            n.startswith("org/apache/iceberg/shaded/com/fasterxml/") for n in classes
        )
        assert not any(
            n.endswith("module-info.class") or n.startswith("META-INF/versions/") for n in names
        )
        services = [n for n in names if n.startswith("META-INF/services/")]
        assert services and all("org.apache.iceberg.shaded.com.fasterxml" in n for n in services)
        for service in services:
            assert b"org.apache.iceberg.shaded.com.fasterxml.jackson." in jar.read(service)
        # No class may still point at the unshaded package.
        for name in classes[:200]:
            for constant in utf8_constants(jar.read(name)):
                stripped = constant.replace(b"org/apache/iceberg/shaded/com/fasterxml", b"")
                stripped = stripped.replace(b"org.apache.iceberg.shaded.com.fasterxml", b"")
                assert b"com/fasterxml/jackson" not in stripped, (name, constant)


def test_cache_is_built_once_then_reused(tmp_path: Path) -> None:
    first = jars.ensure_iceberg_jars(tmp_path)
    stamp = first.relocated_jackson.stat().st_mtime_ns
    second = jars.ensure_iceberg_jars(tmp_path)
    assert second == first
    assert second.relocated_jackson.stat().st_mtime_ns == stamp
    assert first.runtime.name == jars.ICEBERG_RUNTIME_JAR
    assert first.spark_jars() == f"{first.runtime},{first.relocated_jackson}"


@pytest.mark.parametrize("damage", ["truncate", "delete_jar", "delete_manifest", "stale_manifest"])
def test_cache_is_rebuilt_when_missing_or_corrupt(tmp_path: Path, damage: str) -> None:
    built = jars.ensure_iceberg_jars(tmp_path).relocated_jackson
    manifest = built.with_name(built.name + ".json")
    good = built.read_bytes()
    if damage == "truncate":
        built.write_bytes(good[: len(good) // 3])
    elif damage == "delete_jar":
        built.unlink()
    elif damage == "delete_manifest":
        manifest.unlink()
    else:
        record = json.loads(manifest.read_text())
        record["inputs"][0]["sha256"] = "0" * 64
        manifest.write_text(json.dumps(record))
    rebuilt = jars.ensure_iceberg_jars(tmp_path).relocated_jackson
    assert rebuilt.read_bytes() == good
    assert zipfile.ZipFile(rebuilt).testzip() is None
    assert json.loads(manifest.read_text())["inputs"][0]["sha256"] != "0" * 64


def test_missing_iceberg_wheel_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def fake_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "snowpark_connect_deps_iceberg":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(jars.JarError, match="pip install 'snowpark-connect-deps-iceberg"):
        jars.find_iceberg_runtime()


# The embedded default's local file system, compiled by Janino (a real `java` runs here).


def java_path() -> str:
    import shutil

    java = shutil.which("java")
    assert java, "the test suite needs Java 17 (make check-java)"
    return java


def test_the_local_file_system_is_compiled_once_then_reused(tmp_path: Path) -> None:
    jar, error = jars.ensure_local_fs_jar(java_path(), tmp_path)
    assert error == "" and jar is not None
    with zipfile.ZipFile(jar) as built:
        names = sorted(built.namelist())
        assert names == ["dbt/fastrefresh/NioLocalFileSystem$Raw.class",
                         "dbt/fastrefresh/NioLocalFileSystem.class"]  # fmt: skip
        # Janino writes Java 6 class files: any Java Spark 3.5 runs (8, 11, 17) loads them.
        assert all(built.read(n)[:8] == b"\xca\xfe\xba\xbe\x00\x00\x00\x32" for n in names)
    assert jars.LOCAL_FS_CLASS.replace(".", "/") + ".class" in names
    stamp = jar.stat().st_mtime_ns
    assert jars.ensure_local_fs_jar(java_path(), tmp_path) == (jar, "")
    assert jar.stat().st_mtime_ns == stamp


def test_the_local_file_system_is_compiled_again_from_a_changed_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "src" / jars.LOCAL_FS_SOURCE.name
    source.parent.mkdir()
    source.write_text(jars.LOCAL_FS_SOURCE.read_text())
    monkeypatch.setattr(jars, "LOCAL_FS_SOURCE", source)
    jar, _ = jars.ensure_local_fs_jar(java_path(), tmp_path)
    assert jar is not None
    first = zipfile.ZipFile(jar).read("dbt/fastrefresh/NioLocalFileSystem.class")
    source.write_text(
        source.read_text().replace("super(new Raw());", "super(new Raw());\n    int unused = 42;")
    )
    again, error = jars.ensure_local_fs_jar(java_path(), tmp_path)
    assert (again, error) == (jar, "")
    assert zipfile.ZipFile(jar).read("dbt/fastrefresh/NioLocalFileSystem.class") != first


def test_a_source_that_does_not_compile_is_told_and_not_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / jars.LOCAL_FS_SOURCE.name
    source.write_text(
        jars.LOCAL_FS_SOURCE.read_text().replace("extends LocalFileSystem", "extends")
    )
    monkeypatch.setattr(jars, "LOCAL_FS_SOURCE", source)
    jar, error = jars.ensure_local_fs_jar(java_path(), tmp_path)
    manifest = tmp_path / f"jars-v{jars.RELOCATION_FORMAT}" / (jars.LOCAL_FS_JAR_NAME + ".json")
    assert jar is None
    assert error.startswith("Janino failed: ") and str(manifest) in error, error
    assert "NioLocalFileSystem.java" in error  # Janino's message names the source

    def no_build(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the failed build ran again")

    monkeypatch.setattr(jars.subprocess, "run", no_build)
    again, same = jars.ensure_local_fs_jar(java_path(), tmp_path)
    assert again is None and "an earlier build's" in same and error.split(" (")[0] in same


def test_a_java_that_does_not_run_leaves_the_local_file_system_unbuilt(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-java")
    jar, error = jars.ensure_local_fs_jar(missing, tmp_path)
    assert jar is None and error.startswith("Janino did not run: "), error
