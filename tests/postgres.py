"""A PostgreSQL server the tests start themselves, for the shared Iceberg catalog (an Iceberg
JDBC catalog on it: atomic commits across processes, ``runtime/catalog.py``).

It runs Debian's PostgreSQL (``apt-get install postgresql libpostgresql-jdbc-java``,
which ``make postgres-deps`` does) from a data folder of the test run, on a free port of loopback,
with trust authentication; as root, the server runs as the ``postgres`` user, which
refuses to start as root.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.standalone import free_port

START_TIMEOUT = 60.0
INSTALL_HINT = (
    "Fix: install Debian's PostgreSQL and its JDBC driver "
    "(`apt-get install -y postgresql libpostgresql-jdbc-java`), as .ci/run does."
)


def server_binaries() -> Path | None:
    """The folder of ``initdb`` and ``pg_ctl`` (Debian keeps them out of PATH)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)
    if found:
        return Path(found[0]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@dataclass
class PostgresServer:
    """One server under ``root`` (data folder, socket, log): by default a new folder of
    the system's temporary folder, which the ``postgres`` user can reach (pytest's own
    are private to root)."""

    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="fastrefresh-pg-")))
    port: int = field(default_factory=free_port)
    user: str = "postgres"

    def _as_owner(self, *args: str) -> list[str]:
        if os.geteuid() == 0:
            return ["runuser", "-u", "postgres", "--", *args]
        return list(args)

    def start(self) -> PostgresServer:
        binaries = server_binaries()
        if binaries is None:
            raise RuntimeError(
                f"PostgreSQL's server (initdb, pg_ctl) was not found. {INSTALL_HINT}"
            )
        self.root.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
        data = self.root / "data"
        subprocess.run(
            self._as_owner(
                str(binaries / "initdb"), "-D", str(data), "-A", "trust", "-U", self.user
            ),
            check=True,
            capture_output=True,
        )
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 "
            "-c max_connections=200 -c fsync=off"
        )
        subprocess.run(
            self._as_owner(
                str(binaries / "pg_ctl"), "-D", str(data), "-o", options, "-l",
                str(self.root / "server.log"), "-w", "-t", str(int(START_TIMEOUT)), "start",
            ),
            check=True,
            capture_output=True,
        )  # fmt: skip
        return self

    def create_database(self, name: str) -> str:
        """A new database; its JDBC URL."""
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            done = subprocess.run(
                ["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user,
                 "-c", f'CREATE DATABASE "{name}"'],
                capture_output=True, text=True,
            )  # fmt: skip
            if done.returncode == 0:
                return self.jdbc_url(name)
            if time.monotonic() > deadline:
                raise RuntimeError(f"cannot create database {name}: {done.stderr}")
            time.sleep(0.5)

    def jdbc_url(self, database: str) -> str:
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        binaries = server_binaries()
        if binaries is None:
            return
        subprocess.run(
            self._as_owner(
                str(binaries / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate", "stop"
            ),
            capture_output=True,
        )  # fmt: skip
        shutil.rmtree(self.root, ignore_errors=True)
