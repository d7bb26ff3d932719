"""Models switched between dbt's `view`/`table` and `fast_refresh` (a review's findings).

- A `view` model switched to `fast_refresh` kept answering the old view's query: on the
  embedded default the view is an Iceberg view, which `CREATE OR REPLACE VIEW` updates
  the properties of but not the query of (apache/iceberg#15490), and the fingerprint then
  stamped on it kept it so, for good.
- A view (a `view` model's or a `fast_refresh` model's) switched to `table` failed on
  every run: the relation listing took the Iceberg view (`table_type=ICEBERG-VIEW`) for an
  Iceberg table, so dbt's table materialization did not drop it first.
- A `table` model switched to `fast_refresh` with a query that fails lost its table: the
  materialization dropped it before the refresh ran.
- `refresh_mviews` created the view again without the model's persist_docs comments.
- A `fast_refresh` model switched to `table` leaves its storage table behind, and the log
  operations took the model's name for that stale table.
- A `table` model read by fast_refresh models (so logged) switched to `fast_refresh` left
  its table's log behind: capture failed on it for good, and `drop_mview_log` of the
  model's name, the fix, dropped the live log of the model's storage table instead.
"""

from __future__ import annotations

from typing import Any

import pytest
from dbt.tests.util import run_dbt, write_file

from tests.functional.dbt_project import FastRefreshProject, op, op_failing, run_and_capture

VIEW = "{{{{ config(materialized='view') }}}} select id, v from {{{{ target.schema }}}}.raw {where}"
FAST = (
    "{{{{ config(materialized='fast_refresh') }}}} "
    "select id, v from {{{{ target.schema }}}}.raw {where}"
)
TABLE = (
    "{{{{ config(materialized='table', file_format='iceberg') }}}} "
    "select id, v from {{{{ target.schema }}}}.raw {where}"
)


class TestSwitchingMaterializations(FastRefreshProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "m.sql": VIEW.format(where="where v > 0"),
            "to_table.sql": VIEW.format(where=""),
            "fast_to_table.sql": FAST.format(where="where v < 100"),
            "table_to_fast.sql": TABLE.format(where=""),
            "over_switched.sql": "{{ config(materialized='fast_refresh') }} "
            "select id, v from {{ ref('table_to_fast') }} where v < 1000",
            "documented.sql": "{{ config(materialized='fast_refresh', persist_docs={'relation': "
            "true, 'columns': true}) }} select id, v from {{ target.schema }}.raw",
            "schema.yml": "version: 2\nmodels:\n  - name: documented\n    description: the rows\n"
            "    columns:\n      - name: v\n        description: the value\n",
        }

    def test_views_switched_to_fast_refresh_and_to_table(self, ready: Any) -> None:
        project, s = ready, ready.test_schema
        project.run_sql(f"create table {s}.raw (id int not null, v int) using iceberg")
        project.run_sql(f"alter table {s}.raw set identifier fields id")
        project.run_sql(f"insert into {s}.raw values (1, 1), (2, 2), (3, 30)")
        op("create_mview_log", master=f"{s}.raw")  # read by name, not as a dbt source
        run_dbt(["run"])

        def model(name: str, sql: str) -> None:
            write_file(sql, project.project_root, "models", f"{name}.sql")

        def rows(relation: str) -> list[tuple[Any, ...]]:
            return sorted(self.rows(project, f"select id, v from {s}.{relation}"))

        model("m", FAST.format(where="where v > 5"))
        model("to_table", TABLE.format(where=""))
        model("fast_to_table", TABLE.format(where="where v < 100"))
        ok, out = run_and_capture(["run"])
        assert ok, out
        # The model's name is the table model's now: the release names the storage table
        # alone as left over (it said to drop the view's name, the user's table now).
        released = (
            f"released {s}.fast_to_table from the log of {s}.raw: the model is now "
            f"materialized as 'table', no longer fast_refresh (its old storage table "
            f"{s}.fast_to_table__fr_data is no longer refreshed: drop it if it is not needed)"
        )
        assert released in out, out
        assert rows("m") == [(3, 30)], "the view answers the model's new query"
        assert rows("to_table") == rows("fast_to_table") == [(1, 1), (2, 2), (3, 30)]
        # The fast_refresh model's storage table stays behind; the model's name now means
        # the table model, and a log asked for by that name goes on it.
        out = op("create_mview_log", master=f"{s}.fast_to_table")
        assert f"created materialized view log {s}.mlog__fast_to_table on {s}.fast_to_table:" in out
        project.run_sql(f"insert into {s}.raw values (9, 9)")
        run_dbt(["run"])
        assert rows("m") == [(3, 30), (9, 9)]
        assert rows("to_table") == [(1, 1), (2, 2), (3, 30), (9, 9)]
        # A table model switched to fast_refresh with a query that fails keeps its table;
        # fixed, the model's view replaces it.
        model("table_to_fast", FAST.format(where="where no_such_column > 0"))
        run_dbt(["run", "-s", "table_to_fast"], expect_pass=False)
        assert rows("table_to_fast") == [(1, 1), (2, 2), (3, 30), (9, 9)]
        model("table_to_fast", FAST.format(where="where v > 1"))
        run_dbt(["run", "-s", "table_to_fast"])
        assert rows("table_to_fast") == [(2, 2), (3, 30), (9, 9)]
        # The model over it rebuilds once, saying why (its own SQL did not change).
        ok, out = run_and_capture(["run", "-s", "over_switched"])
        assert ok and (
            f"COMPLETE refresh of {s}.over_switched: the view's definition changed: "
            f"{s}.table_to_fast became a fast_refresh model (its rows are read from "
            f"{s}.table_to_fast__fr_data)" in out
        ), out
        assert rows("over_switched") == [(2, 2), (3, 30), (9, 9)]

        # refresh_mviews keeps the view's comments (persist_docs).
        def comment(column: str) -> Any:
            described = self.rows(project, f"describe table {s}.documented")
            return next(r[2] for r in described if r[0] == column)

        assert comment("v") == "the value"
        project.run_sql(f"update {s}.raw set v = 8 where id = 9")
        out = op("refresh_mviews", names=f"{s}.documented", method="f")
        assert "FAST refresh of" in out, out
        out = op("refresh_mviews", names=f"{s}.documented", method="c")
        assert "COMPLETE refresh of" in out, out
        assert comment("v") == "the value"
        assert rows("documented") == [(1, 1), (2, 2), (3, 30), (9, 8)]

        # And back: the table model becomes a view again, the fast_refresh model a table.
        model("to_table", VIEW.format(where="where v > 1"))
        model("m", TABLE.format(where="where v > 5"))
        run_dbt(["run"])
        assert rows("to_table") == [(2, 2), (3, 30), (9, 8)]
        assert rows("m") == [(3, 30), (9, 8)]


OVER = "{{{{ config(materialized='fast_refresh') }}}} select id, v from {{{{ ref('{of}') }}}}"


class TestLogsOfReplacedTables(FastRefreshProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "a.sql": TABLE.format(where=""),
            "over_a.sql": OVER.format(of="a"),
            "over_c.sql": OVER.format(of="c"),
            "c.sql": FAST.format(where=""),
        }

    def test_the_log_of_a_replaced_table_goes_with_it(self, ready: Any) -> None:
        project, s = ready, ready.test_schema
        project.run_sql(f"create table {s}.raw (id int not null, v int) using iceberg")
        project.run_sql(f"alter table {s}.raw set identifier fields id")
        project.run_sql(f"insert into {s}.raw values (1, 1), (2, 2)")
        op("create_mview_log", master=f"{s}.raw")

        def tables() -> set[str]:
            return {r[1] for r in self.rows(project, f"show tables in {s}")}

        def rows(relation: str) -> list[tuple[Any, ...]]:
            return sorted(self.rows(project, f"select id, v from {s}.{relation}"))

        # A table model read by a fast_refresh model gets a log; switched to fast_refresh,
        # its table goes, and its log with it (the views on it are released).
        run_dbt(["run", "-s", "a", "over_a"])
        assert "mlog__a" in tables()
        write_file(FAST.format(where=""), project.project_root, "models", "a.sql")
        ok, out = run_and_capture(["run", "-s", "a", "over_a"])
        assert ok, out
        assert (
            f"dropped materialized view log {s}.mlog__a on {s}.a; views that used it need a "
            f"complete refresh: {s}.over_a (its table {s}.a was replaced by the fast_refresh "
            "model's view)" in out
        ), out
        assert "mlog__a" not in tables() and "mlog__a__fr_data" in tables()
        project.run_sql(f"insert into {s}.raw values (3, 3)")
        ok, out = run_and_capture(["run", "-s", "a", "over_a"])
        assert ok and f"FAST refresh of {s}.over_a" in out, out
        assert rows("over_a") == rows("raw") == [(1, 1), (2, 2), (3, 3)]

        # A log left on a name that became a fast_refresh model's view (here: its table
        # dropped by hand before the model was written) is named by capture_changes with
        # the fix, which drops that log and not the storage table's, in use.
        project.run_sql(f"create table {s}.c (id int not null, v int) using iceberg")
        op("create_mview_log", master=f"{s}.c")
        project.run_sql(f"drop table {s}.c")
        run_dbt(["run", "-s", "c", "over_c"])
        assert {"mlog__c", "mlog__c__fr_data"} <= tables()
        out = op_failing("capture_changes")
        assert (
            f"- {s}.mlog__c: {s}.c is a fast_refresh model's view now, no longer the table "
            "this log was on (the model replaced that table), so the log can capture nothing "
            "again. Fix: dbt run-operation fast_refresh.drop_mview_log --args "
            f"'{{master: {s}.c}}' (it drops this log, not the log of the model's storage "
            f"table {s}.c__fr_data)." in out
        ), out
        out = op("drop_mview_log", master=f"{s}.c")
        assert f"dropped materialized view log {s}.mlog__c on {s}.c (" in out, out
        assert "mlog__c" not in tables() and "mlog__c__fr_data" in tables()
        assert "Capture failed" not in op("capture_changes")
        project.run_sql(f"insert into {s}.raw values (4, 4)")
        ok, out = run_and_capture(["run", "-s", "c", "over_c"])
        assert ok and f"FAST refresh of {s}.over_c" in out, out
        assert rows("over_c") == rows("raw")
        # Named again, the model's name means its storage table's log.
        out = op("drop_mview_log", master=f"{s}.c")
        assert f"dropped materialized view log {s}.mlog__c__fr_data on {s}.c__fr_data" in out
