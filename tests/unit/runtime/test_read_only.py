"""Statements by kind: ``Env.reading_only`` refuses those that write and lets reads through;
those that may plan a query exclude the optimizer's unsafe rules first."""

from __future__ import annotations

from typing import Any

import pytest

from dbt.adapters.fastrefresh.protocol.env import Env, ReadOnlyTables
from dbt.adapters.fastrefresh.runtime.executor import ReadOnlyExecutor, WouldWrite, plans_a_query
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.unit.iceberg.stand_in import NoSession

READS = [
    "SELECT 1",
    "  with t AS (SELECT 1) SELECT * FROM t",
    "SHOW TBLPROPERTIES s.t",
    "DESCRIBE TABLE EXTENDED s.t",
    "REFRESH TABLE s.t",
    "SET spark.sql.session.timeZone",
    "EXPLAIN SELECT 1",
]
WRITES = [
    "INSERT INTO s.t VALUES (1)",
    "MERGE INTO s.t USING u ON t.k = u.k WHEN MATCHED THEN DELETE",
    "UPDATE s.t SET x = 1",
    "DELETE FROM s.t",
    "ALTER TABLE s.t SET TBLPROPERTIES ('a'='b')",
    "CREATE OR REPLACE VIEW s.v AS SELECT 1",
    "CREATE TABLE IF NOT EXISTS s.t (a INT)",
    "DROP TABLE s.t",
    "CALL spark_catalog.system.expire_snapshots('s.t')",
    "/* a comment first */ INSERT INTO s.t VALUES (1)",
    "WITH s AS (SELECT 1 AS a) INSERT INTO s.t SELECT a FROM s",
    "REFRESH FUNCTION f",
    "selectx",
]


class Recording(NoSession):
    def __init__(self) -> None:
        self.ran: list[str] = []

    def execute(self, sql: str) -> None:
        self.ran.append(sql)

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        self.ran.append(sql)
        return []


def test_reads_run_and_writes_are_refused_and_remembered() -> None:
    inner = Recording()
    x = ReadOnlyExecutor(inner)
    for sql in READS:
        x.query(sql)
    assert inner.ran == READS and not x.refused
    for sql in WRITES:
        with pytest.raises(WouldWrite):
            x.execute(sql)
    assert inner.ran == READS and x.refused


def test_a_read_only_environment_refuses_commits_and_takes_no_lease() -> None:
    inner = Recording()
    env = Env(inner, ReadOnlyTables(None), shared_catalog=True).reading_only()  # type: ignore[arg-type]
    assert env.read_only and not env.refused
    with pytest.raises(WouldWrite):
        env.tables.set_properties(TableName("s", "t"), {"a": "b"})
    assert env.refused
    with env.holding(["view:s.v"]):  # no lease read or taken: no statement
        pass
    assert inner.ran == []


@pytest.mark.parametrize(
    ("sql", "plans"),
    [
        ("SHOW TBLPROPERTIES `s`.`t` ('fast_refresh.view-of')", False),
        ("  describe table extended s.t", False),
        ("REFRESH TABLE s.t", False),
        ("SET spark.sql.session.timeZone", False),
        ("ALTER TABLE s.t SET TBLPROPERTIES ('a'='1')", False),
        ("DROP VIEW IF EXISTS s.v", False),
        ("SELECT 1", True),
        ("WITH a AS (SELECT 1) SELECT * FROM a", True),
        ("INSERT INTO s.t SELECT * FROM s.u", True),
        ("MERGE INTO s.t USING s.u ON t.k = u.k WHEN MATCHED THEN DELETE", True),
        ("DELETE FROM s.t WHERE k = 1", True),
        ("CREATE OR REPLACE TABLE s.t USING iceberg AS SELECT 1", True),
        ("CALL system.expire_snapshots(table => 's.t')", True),
        ("SETTLE", True),  # a keyword only as a whole word
    ],
)
def test_only_statements_that_may_plan_a_query_need_the_safe_rules(sql: str, plans: bool) -> None:
    # The optimizer's unsafe rules (executor.UNSAFE_RULES) are excluded on a connection
    # before its first statement that may plan a query, and only then: on a server that
    # exclusion is a statement of its own, which a refresh reading metadata alone spares.
    assert plans_a_query(sql) is plans
