"""The embedded session's files: what it points the JVM at exists in the package."""

from __future__ import annotations

from dbt.adapters.fastrefresh.runtime.embedded import LOG4J_CONFIG


def test_log4j_config_is_the_packaged_file() -> None:
    assert LOG4J_CONFIG.is_file(), LOG4J_CONFIG
    assert (
        LOG4J_CONFIG.parent.name == "fastrefresh" and LOG4J_CONFIG.parent.parent.name == "include"
    )
    assert "rootLogger" in LOG4J_CONFIG.read_text()
