"""A Spark standalone cluster on localhost, started from the pyspark install: one master and
two workers, each its own JVM (``spark-class`` of pyspark's ``bin``), for the tests that
prove nothing relies on one local JVM (tests/cluster/).

The driver stays in the test process (client mode), as with dbt's ``session`` method or a
Thrift server; the executors that scan, join and write Iceberg files run in the workers'
JVMs, which fetch the Iceberg jars from the driver (``spark.jars``).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).parent
WORKERS = 2
START_TIMEOUT = 120.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class StandaloneCluster:
    """A master and ``WORKERS`` workers (1 core, 1.5 GiB each) under ``root``."""

    root: Path
    port: int = field(default_factory=free_port)
    ui_port: int = field(default_factory=free_port)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _spawn(self, name: str, *args: str) -> None:
        env = dict(os.environ, SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1")
        env.pop("PYSPARK_GATEWAY_PORT", None)
        log = (self.root / f"{name}.log").open("wb")
        self.processes.append(
            subprocess.Popen(
                [str(SPARK_HOME / "bin" / "spark-class"), *args],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )

    def start(self) -> StandaloneCluster:
        self.root.mkdir(parents=True, exist_ok=True)
        self._spawn(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--webui-port",
            str(self.ui_port),
        )
        for i in range(WORKERS):
            work = self.root / f"worker-{i}"
            work.mkdir(exist_ok=True)
            self._spawn(
                f"worker-{i}",
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                "127.0.0.1",
                "--cores",
                "1",
                "--memory",
                "1536m",
                "--work-dir",
                str(work),
                "--webui-port",
                str(free_port()),
                self.url,
            )
        self.wait_for_workers()
        return self

    def state(self) -> dict[str, object]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as r:
            return dict(json.load(r))

    def alive_workers(self) -> int:
        try:
            workers = self.state().get("workers", [])
        except OSError:
            return 0
        if not isinstance(workers, list):
            return 0
        return sum(1 for w in workers if isinstance(w, dict) and w.get("state") == "ALIVE")

    def wait_for_workers(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while self.alive_workers() < WORKERS:
            dead = [p.args for p in self.processes if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                self.stop()
                logs = "\n".join(
                    f"--- {log.name}\n{log.read_text(errors='replace')[-2000:]}"
                    for log in sorted(self.root.glob("*.log"))
                )
                raise RuntimeError(f"the standalone cluster did not start ({dead}):\n{logs}")
            time.sleep(0.5)

    def session_parameters(self) -> dict[str, str]:
        """What a profile sets to run on this cluster (``server_side_parameters``)."""
        return {
            "spark.master": self.url,
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.executor.cores": "1",
            "spark.executor.memory": "1g",
            "spark.cores.max": str(WORKERS),
            # The executors' Python workers run this interpreter (the tests' own venv).
            "spark.pyspark.python": sys.executable,
        }

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
        self.processes.clear()
