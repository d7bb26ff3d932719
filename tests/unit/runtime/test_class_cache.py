"""The driver JVM's class cache: when a process maps the archive, writes it, or neither
(real files and locks; the JVM's side is in tests/functional/test_embedded_session.py)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from dbt.adapters.fastrefresh.runtime import class_cache

JARS = {"spark.jars": ""}


def fake_java(folder: Path, exit_code: int) -> str:
    """A ``java`` that answers every launch with ``exit_code`` and counts its launches in
    ``launches`` beside it (HotSpot's own answers are in the functional test)."""
    java = folder / f"java-{exit_code}"
    java.write_text(f"#!/bin/sh\necho launched >> {folder / 'launches'}\nexit {exit_code}\n")
    java.chmod(0o755)
    return str(java)


@pytest.fixture(autouse=True)
def no_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(class_cache.CACHE_ENV, raising=False)


@pytest.fixture
def java(tmp_path_factory: pytest.TempPathFactory) -> str:
    return fake_java(tmp_path_factory.mktemp("jdk"), 0)


def close(decision: class_cache.Decision) -> None:
    if decision.lock is not None:
        decision.lock.close()


def test_the_first_process_writes_the_archive_and_later_ones_map_it(
    tmp_path: Path, java: str
) -> None:
    key = class_cache.archive_key(java, "")
    (tmp_path / f"{key}.12345.tmp").write_bytes(b"left by a killed process")
    first = class_cache.decide(java, 17, JARS, tmp_path)
    assert first.tmp == tmp_path / f"{key}.{os.getpid()}.tmp"
    assert first.options.startswith(f"-XX:ArchiveClassesAtExit={first.tmp} ")
    assert "-Xlog:cds=off" in first.options
    assert not (tmp_path / f"{key}.12345.tmp").exists(), "a stale partial archive goes"
    # Another process meanwhile (another open file: its own lock) starts without one.
    assert class_cache.decide(java, 17, JARS, tmp_path).options == ""
    (tmp_path / f"{key}.jsa").write_bytes(b"archive")
    close(first)
    later = class_cache.decide(java, 17, JARS, tmp_path)
    assert later.options.startswith(f"-XX:SharedArchiveFile={tmp_path / key}.jsa ")
    assert later.tmp is None and later.lock is None


def test_a_jar_on_the_drivers_class_path_gives_another_archive(tmp_path: Path, java: str) -> None:
    """The embedded default puts its local file system's jar on the driver's class path,
    which HotSpot checks an archive against: a cache made without it is not taken."""
    jar = tmp_path / "fs.jar"
    jar.write_bytes(b"one")
    plain = class_cache.archive_key(java, "")
    with_jar = class_cache.archive_key(java, "", str(jar))
    assert with_jar != plain
    jar.write_bytes(b"rebuilt")  # another size: another archive
    assert class_cache.archive_key(java, "", str(jar)) not in (plain, with_jar)
    parameters = {**JARS, "spark.driver.extraClassPath": str(jar)}
    decision = class_cache.decide(java, 17, parameters, tmp_path)
    assert decision.tmp is not None and decision.tmp.name.startswith(
        class_cache.archive_key(java, "", str(jar))
    )
    close(decision)


@pytest.mark.parametrize(
    ("version", "user", "setting"),
    [
        (11, "", ""),  # no -XX:ArchiveClassesAtExit before Java 13
        (17, "-Xshare:off", ""),  # the profile's own class data sharing
        (17, "-XX:SharedArchiveFile=/x.jsa", ""),
        (17, "", "off"),
    ],
)
def test_no_cache_without_java_13_or_against_the_user(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    java: str,
    version: int,
    user: str,
    setting: str,
) -> None:
    if setting:
        monkeypatch.setenv(class_cache.CACHE_ENV, setting)
    parameters = {**JARS, "spark.driver.extraJavaOptions": user}
    decision = class_cache.decide(java, version, parameters, tmp_path)
    assert decision == class_cache.Decision("")
    assert list(tmp_path.iterdir()) == [], "nothing written"


def test_the_setting_names_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, java: str
) -> None:
    monkeypatch.setenv(class_cache.CACHE_ENV, str(tmp_path / "classes"))
    decision = class_cache.decide(java, 17, JARS)
    assert decision.tmp is not None and decision.tmp.parent == tmp_path / "classes"
    close(decision)


def test_on_is_the_default_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, java: str
) -> None:
    monkeypatch.setenv("DBT_FASTREFRESH_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv(class_cache.CACHE_ENV, "on")
    decision = class_cache.decide(java, 17, JARS)
    assert decision.tmp is not None and decision.tmp.parent == tmp_path / "jvm-classes"
    close(decision)


def test_a_jvm_that_will_not_write_an_archive_gets_no_option(tmp_path: Path) -> None:
    """Without the JDK's base archive, or with -Xshare:off in JDK_JAVA_OPTIONS, a JVM
    given -XX:ArchiveClassesAtExit does not start: the probe's failure means no option,
    no archive, the lock free again, and no probe in later processes."""
    refusing = fake_java(tmp_path, 1)
    folder = tmp_path / "classes"
    assert class_cache.decide(refusing, 17, JARS, folder) == class_cache.Decision("")
    key = class_cache.archive_key(refusing, "")
    assert sorted(p.name for p in folder.iterdir()) == [f"{key}.lock", f"{key}.refused"]
    with (folder / f"{key}.lock").open("a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if still held
    # HotSpot's answer is kept: later processes do not ask again (0.4 s each).
    assert (tmp_path / "launches").read_text().count("launched") == 1
    assert class_cache.decide(refusing, 17, JARS, folder) == class_cache.Decision("")
    assert (tmp_path / "launches").read_text().count("launched") == 1


def test_the_archive_is_per_java_and_jars(tmp_path: Path, java: str) -> None:
    jar = tmp_path / "extra.jar"
    jar.write_bytes(b"1")
    before = class_cache.archive_key(java, str(jar))
    assert class_cache.archive_key(java, str(jar)) == before
    assert class_cache.archive_key(java, "") != before
    assert class_cache.archive_key(str(tmp_path / "other-java"), str(jar)) != before
    jar.write_bytes(b"12")
    assert class_cache.archive_key(java, str(jar)) != before, "a changed jar: a new archive"
