"""Names Spark redacts: a master, its columns and views named with "url", "token", "secret".

Spark prints ``*********(redacted)`` in place of a table property whose key or value
matches its redaction patterns (``spark.sql.redaction.options.regex``, "(?i)url" by
default; ``spark.redaction.regex``, "(?i)secret|password|token|access[.]key"), in ``SHOW
TBLPROPERTIES`` as in ``DESCRIBE``. The SQL path (every connection method but
``session``) reads a log's and a view's state so, and their JSON names the master, its
columns and the view's query: a master with a column ``page_url`` failed its first build
there (the log's configuration read back as that text, not JSON). dbt-fastrefresh now
writes its JSON with one character of each such word escaped
(``sqltext.property_json``), and a property Spark still hides (written by an
earlier release, or under patterns of the server's own) fails with its cause and fix.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from dbt.adapters.fastrefresh.engine import refresh
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.mlog import ddl as mlog
from dbt.adapters.fastrefresh.registry import store as registry
from dbt.adapters.fastrefresh.sqltext import REDACTED, TableName, string
from tests.functional.sites import (
    PATHS,
    env_for,
    refresh_and_check,
    views_follow_rounds,
)

REDACTION = "spark.sql.redaction.options.regex"


def _master(spark: Any, schema: str) -> str:
    """``schema.url_hits``: a keyed master whose columns Spark's default patterns match."""
    spark.sql(f"CREATE SCHEMA {schema}")
    master = f"{schema}.url_hits"
    spark.sql(
        f"CREATE TABLE {master} (k BIGINT NOT NULL, page_url STRING, api_token STRING, x INT) "
        "USING iceberg"
    )
    spark.sql(f"ALTER TABLE {master} SET IDENTIFIER FIELDS k")
    spark.sql(
        f"INSERT INTO {master} VALUES (1, '/a', 'secret-1', 1), (2, '/b', 'password-2', 2), "
        "(3, '/a', NULL, 3)"
    )
    return master


def _views(master: str) -> dict[str, str]:
    return {
        "url_counts": f"SELECT page_url, count(*) AS n, sum(x) AS sx FROM {master} GROUP BY page_url",
        "secret_tokens": (
            f"SELECT k, api_token AS token, x FROM {master} WHERE api_token LIKE 'secret%' "
            "OR page_url = '/url'"
        ),
    }


def _own_properties(spark: Any, schema: str) -> dict[str, dict[str, str]]:
    """dbt-fastrefresh's properties of every table and view in ``schema``, as SQL shows them."""
    shown = {}
    for row in spark.sql(f"SHOW TABLES IN {schema}").collect():
        name = f"{schema}.{row.tableName}"
        props = {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES {name}").collect()}
        shown[name] = {k: v for k, v in props.items() if k.startswith("fast_refresh.")}
    return shown


@pytest.mark.parametrize("path", PATHS)
def test_names_spark_redacts_refresh_fast_on_both_paths(spark: Any, path: str) -> None:
    schema = f"url_redacts_{path}"
    master = _master(spark, schema)
    env = env_for(spark, f"{schema}_registry", path)
    mlog.create_mview_log(env, master)
    views = _views(master)
    rounds = [
        [
            f"UPDATE {master} SET x = x + 10, api_token = 'secret-3' WHERE k = 3",
            f"INSERT INTO {master} VALUES (4, '/url', 'token-4', 4)",
            f"DELETE FROM {master} WHERE k = 2",
        ],
        [f"UPDATE {master} SET page_url = '/b' WHERE k = 1"],
    ]
    views_follow_rounds(spark, env, schema, views, rounds)
    # The other path reads what this one wrote: a round refreshed through it.
    other = env_for(spark, f"{schema}_registry", "java" if path == "sql" else "sql")
    spark.sql(f"UPDATE {master} SET x = 0 WHERE k = 4")
    for name, sql in views.items():
        refresh_and_check(spark, other, TableName(schema, name), sql, exists=True, expect="FAST")
    shown = _own_properties(spark, schema)
    assert {"fast_refresh.log", "fast_refresh.log-state"} <= set(shown[f"{schema}.mlog__url_hits"])
    assert "fast_refresh.view" in shown[f"{schema}.url_counts__fr_data"]
    hidden = {
        name: key
        for name, props in shown.items()
        for key, value in props.items()
        if value == REDACTED and key != "fast_refresh.master"
    }
    assert hidden == {}


def _built_with_a_changed_master(spark: Any, schema: str) -> tuple[Any, str]:
    """A master, its log and the view ``url_counts`` on the SQL path, then a change to the
    master: the environment and the view's query."""
    master = _master(spark, schema)
    env = env_for(spark, f"{schema}_registry", "sql")
    mlog.create_mview_log(env, master)
    sql = _views(master)["url_counts"]
    views_follow_rounds(spark, env, schema, {"url_counts": sql}, [])
    spark.sql(f"UPDATE {master} SET x = 7 WHERE k = 1")
    return env, sql


def _versions(spark: Any, table: str) -> int:
    """How many metadata versions ``table`` has had: one more for any commit to it, of data
    or of properties."""
    return spark.sql(f"SELECT count(*) FROM {table}.metadata_log_entries").collect()[0][0]


def _fails_writing_nothing(spark: Any, env: Any, schema: str, sql: str, hidden: str) -> None:
    """A refresh of ``url_counts`` fails naming ``hidden`` and the fix, and writes nothing."""
    tables = [f"{schema}.mlog__url_hits", f"{schema}.url_counts__fr_data"]
    before = [_versions(spark, t) for t in tables]
    rows = sorted(spark.table(f"{schema}.url_counts").collect())
    with pytest.raises(FastRefreshError) as failed:
        refresh.refresh_view(
            env, view=TableName(schema, "url_counts"), sql=sql, method="force", exists=True
        )
    message = str(failed.value)
    assert f"Spark hides {hidden} of {schema}." in message, message
    assert REDACTION in message and "Fix:" in message, message
    assert [_versions(spark, t) for t in tables] == before
    assert sorted(spark.table(f"{schema}.url_counts").collect()) == rows


def test_a_property_an_earlier_release_wrote_plain_fails_with_its_cause_and_fix(
    spark: Any,
) -> None:
    schema = "url_hidden_plain"
    env, sql = _built_with_a_changed_master(spark, schema)
    log = f"{schema}.mlog__url_hits"
    spark.conf.set(REDACTION, "(?!)")  # to read it as written
    try:
        written = spark.sql(f"SHOW TBLPROPERTIES {log} ('fast_refresh.log')").collect()[0][1]
    finally:
        spark.conf.unset(REDACTION)
    assert "page_\\u0075rl" in written
    # As release 0.1.0 wrote it: plain JSON, which names the column page_url.
    plain = json.dumps(json.loads(written), separators=(",", ":"))
    spark.sql(f"ALTER TABLE {log} SET TBLPROPERTIES ('fast_refresh.log'={string(plain)})")
    _fails_writing_nothing(spark, env, schema, sql, "fast_refresh.log")
    # The registry's rebuild leaves the log out, naming it, and shows the view UNUSABLE
    # with the cause (it failed whole on the log, and showed no other).
    said = registry.rebuild(env)
    assert f"left out, unreadable: {log}" in said and "published" in said, said
    (row,) = registry.select(env, "mviews", f"mview = '{schema}.url_counts'")
    assert row["staleness"] == "UNUSABLE", row
    assert f"its masters cannot be read: Spark hides fast_refresh.log of {log}" in str(
        row["last_fallback_reason"]
    ), row


def test_a_pattern_of_the_sessions_own_that_hides_a_property_fails_with_its_cause_and_fix(
    spark: Any,
) -> None:
    schema = "url_hidden_pattern"
    env, sql = _built_with_a_changed_master(spark, schema)
    spark.conf.set(REDACTION, "(?i)captured_through")  # a word of every log's state
    try:
        _fails_writing_nothing(spark, env, schema, sql, "fast_refresh.log-state")
    finally:
        spark.conf.unset(REDACTION)
