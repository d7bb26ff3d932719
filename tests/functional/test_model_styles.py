"""fast_refresh models as dbt projects write them, and the runs around them: an import
CTE named like the table it reads, an enforced contract's column order (and a model over
it), a `view` model switched to fast_refresh, a model that can never refresh fast (no log
made for it), a failed run of one model beside others on the same log, the package's
tests under `where` and `--empty`, and models removed or moved out of schemas of their
own."""

from __future__ import annotations

from typing import Any

import pytest
from dbt.tests.util import rm_file, run_dbt, write_file

from tests.functional.dbt_project import FastRefreshProject, fr, run_and_capture

SOURCES = """
version: 2
sources:
  - name: app
    schema: "{{ target.schema }}"
    tables:
      - name: people
      - name: others
"""
CONTRACT = """
version: 2
models:
  - name: contracted
    config:
      contract: {enforced: true}
    columns:
      - name: name
        data_type: string
      - name: id
        data_type: int
  - name: contracted_table
    config:
      contract: {enforced: true}
    columns:
      - name: name
        data_type: string
      - name: id
        data_type: int
"""


def people(project: Any) -> str:
    s = project.test_schema
    project.run_sql(f"create table {s}.people (id int not null, name string) using iceberg")
    project.run_sql(f"alter table {s}.people set identifier fields id")
    project.run_sql(f"insert into {s}.people values (1, 'a')")
    return str(s)


class TestModelStyles(FastRefreshProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        source = "{{ source('app', 'people') }}"
        return {
            "sources.yml": SOURCES,
            "schema.yml": CONTRACT,
            # dbt's style guide: an import CTE named like the table it reads.
            "same_name.sql": fr(
                f"with people as (select * from {source})\nselect id, name from people"
            ),
            "contracted.sql": fr(f"select id, name from {source}"),
            "contracted_table.sql": (
                "{{ config(materialized='table', file_format='iceberg') }}\n"
                f"select id, name from {source}"
            ),
            # Over the contracted view: `select *` takes its columns in the contract's order.
            "over_contracted.sql": fr("select * from {{ ref('contracted') }}"),
            "switched.sql": f"{{{{ config(materialized='view') }}}}\nselect id, name from {source}",
            # Never fast (LIMIT), the only model over its source: no log is made for it.
            "limited.sql": fr("select id from {{ source('app', 'others') }} order by id limit 1"),
        }

    def test_styles(self, ready: Any) -> None:
        project = ready
        s = people(project)
        project.run_sql(f"create table {s}.others (id int not null) using iceberg")
        project.run_sql(f"insert into {s}.others values (2), (1)")
        ok, out = run_and_capture(["run"])
        assert ok, out
        assert (
            f"{s}.limited: COMPLETE refresh (first build; it cannot refresh fast: "
        ) in out and "LIMIT" in out, out
        tables = {r[1] for r in self.rows(project, f"show tables in {s}")}
        assert "mlog__people" in tables and "mlog__others" not in tables, tables
        # The contract's order, as dbt-spark's table model takes it; the storage table
        # keeps the query's.
        describe = [r[0] for r in self.rows(project, f"describe table {s}.contracted")]
        table = [r[0] for r in self.rows(project, f"describe table {s}.contracted_table")]
        over = [r[0] for r in self.rows(project, f"describe table {s}.over_contracted")]
        assert describe[:2] == table[:2] == over[:2] == ["name", "id"], (describe, table, over)
        assert self.rows(project, f"select * from {s}.contracted") == [("a", 1)]
        assert self.rows(project, f"select * from {s}.over_contracted") == [("a", 1)]
        # The `view` model switched to fast_refresh: a first build, not a lost table.
        write_file(fr("select id, name from {{ source('app', 'people') }}"),
                   project.project_root, "models", "switched.sql")  # fmt: skip
        project.run_sql(f"insert into {s}.people values (2, 'b')")
        ok, out = run_and_capture(["run"])
        assert ok, out
        assert f"{s}.switched: COMPLETE refresh (first build)" in out, out
        assert "dropped?" not in out, out
        # The import CTE's table is a master: the model refreshes fast.
        assert f"FAST refresh of {s}.same_name" in out, out
        assert f"FAST refresh of {s}.contracted" in out, out
        assert sorted(self.rows(project, f"select * from {s}.same_name")) == [(1, "a"), (2, "b")]
        assert sorted(self.rows(project, f"select * from {s}.contracted")) == [("a", 1), ("b", 2)]
        assert f"FAST refresh of {s}.over_contracted" in out, out
        assert sorted(self.rows(project, f"select * from {s}.over_contracted")) == [
            ("a", 1),
            ("b", 2),
        ]


class TestAFailedRunLeavesTheSharedLog(FastRefreshProject):
    """A model edited to read a column its master gained since the log was created: its
    run fails (`on_schema_change: fail`, or `refresh_method: fast`), and the log the other
    views share is left as it was (it was dropped and created again first, so the other
    views could no longer refresh fast)."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        source = "{{ source('app', 'people') }}"
        return {
            "sources.yml": SOURCES,
            "a.sql": fr(f"select id, name from {source}", refresh_method="fast"),
            "b.sql": fr(f"select id, name from {source} where id > 0", on_schema_change="fail"),
            "c.sql": fr(f"select id from {source}", refresh_method="fast"),
        }

    def test_shared_log(self, ready: Any) -> None:
        project = ready
        s = people(project)
        run_dbt(["run"])
        project.run_sql(f"alter table {s}.people add column team string")
        project.run_sql(f"insert into {s}.people values (2, 'b', 'x')")
        source = "{{ source('app', 'people') }}"
        write_file(fr(f"select id, name, team from {source} where id > 0", on_schema_change="fail"),
                   project.project_root, "models", "b.sql")  # fmt: skip
        write_file(fr(f"select id, team from {source}", refresh_method="fast"),
                   project.project_root, "models", "c.sql")  # fmt: skip
        for model in ("b", "c"):
            ok, out = run_and_capture(["run", "-s", model])
            assert not ok, out
        failed = self.rows(
            project, f"select mview, status from {s}_reg.refresh_runs where status = 'FAILED'"
        )
        assert sorted(failed) == [(f"{s}.b", "FAILED"), (f"{s}.c", "FAILED")], failed
        ok, out = run_and_capture(["run", "-s", "a"])
        assert ok and f"FAST refresh of {s}.a" in out, out
        # Rebuilt (the log created again for the new column), then fast on it.
        ok, out = run_and_capture(["run", "--full-refresh", "-s", "b", "c"])
        assert ok, out
        project.run_sql(f"insert into {s}.people values (3, 'c', 'y')")
        ok, out = run_and_capture(["run", "-s", "b", "c"])
        assert ok and f"FAST refresh of {s}.b" in out and f"FAST refresh of {s}.c" in out, out
        assert sorted(self.rows(project, f"select * from {s}.c")) == [
            (1, None), (2, "x"), (3, "y"),
        ]  # fmt: skip


TESTED = """
version: 2
models:
  - name: people_v
    data_tests:
      - fast_refresh.equals_query:
          name: equals_query_where
          config:
            where: "id > 1"
      - fast_refresh.is_fresh:
          config:
            where: "id > 1"
      - fast_refresh.equals_query:
          name: equals_query_whole
"""


class TestPackageTestsUnderWhereAndEmpty(FastRefreshProject):
    """The package's tests with dbt's `where` config (dbt hands them a subquery for the
    model) and under `dbt build --empty` (the model built without rows)."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "sources.yml": SOURCES,
            "schema.yml": TESTED,
            "people_v.sql": fr("select id, name from {{ source('app', 'people') }}"),
        }

    def test_where_and_empty(self, ready: Any) -> None:
        project = ready
        s = people(project)
        project.run_sql(f"insert into {s}.people values (2, 'b'), (3, 'c')")
        ok, out = run_and_capture(["build", "--empty"])
        assert ok, out
        ok, out = run_and_capture(["build"])
        assert ok, out
        for test in ("equals_query_where", "equals_query_whole", "fast_refresh_is_fresh_people_v_"):
            assert f"PASS {test}" in out, out
        # A row the view lacks that the filter leaves out: only the unfiltered test sees it.
        project.run_sql(f"delete from {s}.people_v__fr_data where id = 1")
        ok, out = run_and_capture(["test", "--select", "test_name:equals_query"])
        assert not ok and "PASS equals_query_where" in out, out
        assert "FAIL 1 equals_query_whole" in out, out


class TestRemovedModelsInOtherSchemas(FastRefreshProject):
    """A model removed from the project, or moved to another schema, whose old view sits
    in a schema no other fast_refresh model of the project has: its claim on the log it
    shares held the log's rows back for good (the release looked only in the schemas of
    the project's fast_refresh models). The view records its dbt node and project now.
    A removed model over a model held the upstream's log (of its storage table) for good:
    the release looked only at the logs the run captured or purged, and nothing captures
    a log whose only view is gone."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        source = "{{ source('app', 'people') }}"
        return {
            "sources.yml": SOURCES,
            "kept.sql": fr(f"select id, name from {source}"),
            "lonely.sql": fr(f"select id from {source}", schema="lonely"),
            "moved.sql": fr(f"select name from {source}", schema="away"),
            "over_kept.sql": fr("select id from {{ ref('kept') }}"),
        }

    def test_released(self, ready: Any) -> None:
        project = ready
        s = people(project)
        run_dbt(["run"])
        rm_file(project.project_root, "models", "lonely.sql")
        rm_file(project.project_root, "models", "over_kept.sql")
        write_file(fr("select name from {{ source('app', 'people') }}"),
                   project.project_root, "models", "moved.sql")  # fmt: skip
        project.run_sql(f"insert into {s}.people values (2, 'b')")
        ok, out = run_and_capture(["run"])
        assert ok, out
        assert (
            f"released {s}.over_kept from the log of {s}.kept: it is no longer a model of "
            "this dbt project (removed or renamed"
        ) in out, out
        users = self.rows(project, f"select mview from {s}_reg.mview_log_users")
        assert (f"{s}.over_kept",) not in users and (f"{s}.kept",) in users, users
        assert (
            f"released {s}_lonely.lonely from the log of {s}.people: its model "
            "model.test.lonely is no longer in this dbt project"
        ) in out, out
        assert (
            f"released {s}_away.moved from the log of {s}.people: its model model.test.moved "
            f"now builds {s}.moved"
        ) in out, out
        # No view holds the log's rows back: the next run's purge takes them all.
        project.run_sql(f"insert into {s}.people values (3, 'c')")
        ok, out = run_and_capture(["run"])
        assert ok and f"FAST refresh of {s}.kept" in out, out
        assert self.rows(project, f"select count(*) from {s}.mlog__people") == [(0,)]
        # A removed model whose relations are dropped too leaves the registry's mviews
        # (its last row showed it FRESH for good).
        write_file(fr("select id from {{ source('app', 'people') }}", schema="lonely"),
                   project.project_root, "models", "lonely.sql")  # fmt: skip
        run_dbt(["run"])
        rm_file(project.project_root, "models", "lonely.sql")
        project.run_sql(f"drop view {s}_lonely.lonely")
        project.run_sql(f"drop table {s}_lonely.lonely__fr_data")
        project.run_sql(f"insert into {s}.people values (4, 'd')")
        ok, out = run_and_capture(["run"])
        assert ok and f"released {s}_lonely.lonely from the log of {s}.people" in out, out
        mviews = [r[0] for r in self.rows(project, f"select mview from {s}_reg.mviews")]
        assert f"{s}_lonely.lonely" not in mviews and f"{s}.kept" in mviews, mviews


class TestRenamedModelKeepingItsAlias(FastRefreshProject):
    """A model renamed with its alias kept (``agg.sql`` to ``agg_v2.sql``,
    ``alias='agg'``) builds the same view, refreshed fast under its new node while its
    definition records the old one. A later run of another model alone released the view
    from its log ("its model model.test.agg is no longer in this dbt project ... drop the
    view"), and from then on every run of the renamed model failed, 'not registered'."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        source = "{{ source('app', 'people') }}"
        return {
            "sources.yml": SOURCES,
            "agg.sql": fr(f"select name, count(*) as n from {source} group by name",
                          refresh_method="fast"),
            "other.sql": fr(f"select id from {source}"),
        }  # fmt: skip

    def test_kept(self, ready: Any) -> None:
        project = ready
        s = people(project)
        run_dbt(["run"])
        rm_file(project.project_root, "models", "agg.sql")
        write_file(fr("select name, count(*) as n from {{ source('app', 'people') }} group by name",
                      refresh_method="fast", alias="agg"),
                   project.project_root, "models", "agg_v2.sql")  # fmt: skip
        project.run_sql(f"insert into {s}.people values (2, 'b')")
        ok, out = run_and_capture(["run"])
        assert ok and f"FAST refresh of {s}.agg" in out, out
        for n, select in enumerate((["run", "-s", "other"], ["run"], ["run"])):
            project.run_sql(f"insert into {s}.people values ({3 + n}, 'b')")
            ok, out = run_and_capture(select)
            assert ok and "released" not in out, out
        assert f"FAST refresh of {s}.agg" in out, out
        users = self.rows(project, f"select mview from {s}_reg.mview_log_users")
        assert (f"{s}.agg",) in users, users
        assert self.rows(project, f"select name, n from {s}.agg order by name") == [
            ("a", 1),
            ("b", 4),
        ]


class TestErrorsThroughDbt(FastRefreshProject):
    """Errors as `dbt run` shows them, through dbt's connection: Spark's own message over
    a model's query that does not run (dbt's error around it began with "Runtime Error",
    which was all the message kept)."""

    BAD = "select id, count(nmae) as n from {{ source('app', 'people') }} group by id"

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"sources.yml": SOURCES, "bad.sql": fr(self.BAD)}

    def test_a_query_that_does_not_run(self, ready: Any) -> None:
        s = people(ready)
        ok, out = run_and_capture(["run", "-s", "bad"])
        assert not ok, out
        said = out.split(f"The query of {s}.bad does not run: ", 1)[-1]
        assert said.startswith("[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column"), out
        assert "`nmae` cannot be resolved" in said and "Runtime Error" not in said, out
        assert f"pos {self.BAD.index('nmae')}" in said.split("Fix:")[0], out
        assert "Fix: correct the model's SQL" in said, out
