"""The JIT setting of the JVMs the tests start in subprocesses of their own.

Such a JVM lives a minute or two (the demo, a crash test's phases, a shared-catalog
worker): most of its CPU goes to compiling, and the JIT's optimizing tier (C2) recompiles
code that would not run long enough to pay that back. Stopped at the first tier (C1),
with room in the code cache for what C1 keeps, the demo test took 54-56 s instead of
72-74 s and the real kill 52-58 s instead of 70-78 s in the default suite on 2 cores.
The pytest workers' own JVMs keep the default: they live the whole suite, and C1 alone
made their long tests slower (the DAG test 182 -> 192-220 s). Only the tests set this;
a user's JVM is never touched.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

SHORT_LIVED = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m"


def short_lived_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with ``SHORT_LIVED`` added to the
    options every ``java`` launch reads (``JDK_JAVA_OPTIONS``), after any already set."""
    env = dict(os.environ if base is None else base)
    env["JDK_JAVA_OPTIONS"] = " ".join(filter(None, (env.get("JDK_JAVA_OPTIONS"), SHORT_LIVED)))
    return env
