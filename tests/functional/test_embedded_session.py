"""The driver JVM the tests share runs with the options the profile gives it.

``spark.driver.extraJavaOptions`` only takes effect when the JVM is launched (pyspark's
``spark-submit``), so a default that never reached the JVM would pass every unit test.
"""

from __future__ import annotations

from typing import Any

from dbt.adapters.fastrefresh.runtime.embedded import JIT_OPTIONS


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
