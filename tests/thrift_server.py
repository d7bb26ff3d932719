"""A Spark Thrift server on localhost, started from the pyspark install (its
``spark-hive-thriftserver`` jar), configured as the embedded default is (Iceberg in a Hive
metastore in a folder of its own): for the tests that run dbt through ``method: thrift``,
where every statement goes through PyHive's cursor and comes back as PyHive's values, and
no Spark runs in the test's process (the SQL path, as on a real server).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.standalone import SPARK_HOME, free_port

START_TIMEOUT = 180.0
THRIFT_SERVER = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"


@dataclass
class ThriftServer:
    """One Thrift server (its driver runs Spark in local mode) with its state under ``root``."""

    root: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> Path:
        return self.root / "thrift-server.log"

    def start(self) -> ThriftServer:
        from dbt.adapters.fastrefresh.runtime.embedded import session_parameters, with_jars
        from dbt.adapters.fastrefresh.runtime.jars import ensure_iceberg_jars

        state = self.root / "state"
        state.mkdir(parents=True, exist_ok=True)
        jars = ensure_iceberg_jars().spark_jars()
        settings = with_jars(session_parameters(state, {"spark.master": "local[2]"}), jars)
        settings.pop("spark.app.name", None)
        # On the driver's own class path too: the server runs each statement on a thread
        # of its own, which loaded Iceberg's SQL extensions' classes from spark.jars only
        # some of the time (NoClassDefFoundError: ...analysis.ViewUtil$).
        settings["spark.driver.extraClassPath"] = jars.replace(",", os.pathsep)
        command = [str(SPARK_HOME / "bin" / "spark-submit"), "--class", THRIFT_SERVER]
        for key, value in settings.items():
            command += ["--conf", f"{key}={value}"]
        command += [
            "spark-internal",
            "--hiveconf", f"hive.server2.thrift.port={self.port}",
            "--hiveconf", "hive.server2.thrift.bind.host=127.0.0.1",
        ]  # fmt: skip
        env = dict(os.environ, SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1")
        env.pop("PYSPARK_GATEWAY_PORT", None)
        self.process = subprocess.Popen(
            command,
            cwd=state,
            env=env,
            stdout=self.log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._wait()
        return self

    def _listening(self) -> bool:
        with socket.socket() as s:
            s.settimeout(1)
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def _wait(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while not self._listening():
            assert self.process is not None
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                tail = self.log.read_text(errors="replace")[-4000:]
                raise RuntimeError(f"the Thrift server did not start:\n{tail}")
            time.sleep(0.5)

    def profile(self, schema: str, **extra: object) -> dict[str, object]:
        """A dbt-fastrefresh target on this server (``method: thrift``)."""
        return {
            "type": "fastrefresh",
            "method": "thrift",
            "host": "127.0.0.1",
            "port": self.port,
            "schema": schema,
            "connect_retries": 3,
            "connect_timeout": 10,
            **extra,
        }

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.process = None
