"""dbt's governance on fast_refresh models, each as on dbt-spark's incremental models:
contracts, grants, on_schema_change, persist_docs, --empty, unit tests, build, retry."""

from __future__ import annotations

from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file

from tests.functional.dbt_project import FastRefreshProject, fr, run_and_capture

SOURCES = """
version: 2
sources:
  - name: app
    schema: "{{ target.schema }}"
    tables:
      - name: people
"""
PEOPLE = "select * from {{ source('app', 'people') }}"
SCHEMA = """
version: 2
models:
  - name: documented
    description: "People by team"
    config:
      persist_docs: {relation: true, columns: true}
    columns:
      - name: team
        description: "The person's team"
  - name: contracted
    config:
      contract: {enforced: true}
    columns:
      - name: id
        data_type: int
      - name: name
        data_type: string
unit_tests:
  - name: counts_people_per_team
    model: documented
    given:
      - input: source('app', 'people')
        rows:
          - {id: 1, name: a, team: x}
          - {id: 2, name: b, team: x}
          - {id: 3, name: c, team: null}
    expect:
      rows:
        - {team: x, people: 2}
        - {team: null, people: 1}
"""


MODELS = {
    "sources.yml": SOURCES,
    "schema.yml": SCHEMA,
    "documented.sql": fr(f"select team, count(*) as people from ({PEOPLE}) p group by team"),
    "contracted.sql": fr("select id, name from {{ source('app', 'people') }}"),
    "evolving.sql": fr("select id, name from {{ source('app', 'people') }}"),
    "strict.sql": fr("select id from {{ source('app', 'people') }}", on_schema_change="fail"),
    "exact.sql": fr("select id, name from {{ source('app', 'people') }}", refresh_method="fast"),
    "granted.sql": fr("select id from {{ source('app', 'people') }}", grants={"select": ["bi"]}),
    "granted_incremental.sql": (
        "{{ config(materialized='incremental', file_format='iceberg', "
        "grants={'select': ['bi']}) }}\nselect id from {{ source('app', 'people') }}"
    ),
}


class TestGovernance(FastRefreshProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return MODELS

    def test_governance_through_dbt(self, ready: Any) -> None:
        project, s = ready, ready.test_schema
        project.run_sql(
            f"create table {s}.people (id int not null, name string, team string) using iceberg"
        )
        project.run_sql(f"alter table {s}.people set identifier fields id")
        project.run_sql(f"insert into {s}.people values (1, 'ann', 'x'), (2, 'bob', null)")

        # --empty builds the views without rows (dbt limits every ref and source to none),
        # a view already built too: it is not its model's query, and the registry says
        # it needs a complete refresh.
        views = ["documented", "contracted", "evolving", "strict", "exact"]
        run_dbt(["run", "-s", "exact"])
        _, out = run_dbt_and_capture(["run", "--empty", "-s", *views])
        assert out.count("COMPLETE refresh (dbt run --empty: built without rows)") == 5, out
        assert self.rows(project, f"select count(*) from {s}.evolving") == [(0,)]
        assert self.rows(project, f"select count(*) from {s}.exact") == [(0,)]
        assert self.rows(
            project, f"select staleness, last_fallback_reason from {s}_reg.mviews "
            f"where mview = '{s}.exact'",
        ) == [("UNUSABLE", "built by `dbt run --empty`, without rows: its next dbt run rebuilds it")]  # fmt: skip
        # refresh_mviews refreshes from the stored query, which reads no rows: refused.
        _, out = run_dbt_and_capture(
            ["run-operation", "fast_refresh.refresh_mviews", "--args", f"{{names: {s}.exact}}"],
            expect_pass=False,
        )  # fmt: skip
        assert f"{s}.exact was last built by `dbt run --empty`" in out, out
        assert "Fix: build it with its rows by `dbt run` of its model" in out, out
        # dbt build: the unit test first, then the models (rebuilt, under refresh_method
        # 'fast' too, saying why), then their data tests; the run after it is FAST.
        _, out = run_dbt_and_capture(["build", "-s", *views])
        assert "counts_people_per_team" in out, out
        assert (
            out.count("COMPLETE refresh (its last build was `dbt run --empty`, without rows)") == 5
        ), out
        assert self.rows(project, f"select count(*) from {s}.evolving") == [(2,)]
        assert self.rows(project, f"select count(*) from {s}.exact") == [(2,)]
        project.run_sql(f"insert into {s}.people values (3, 'cy', 'x')")
        _, out = run_dbt_and_capture(["run", "-s", "documented", "evolving", "strict", "exact"])
        assert out.count("FAST refresh of") == 4, out

        # persist_docs: the table's comment and the column's.
        described = self.rows(project, f"describe table extended {s}.documented")
        comments = {str(r[0]).strip(): str(r[2] or "").strip() for r in described}
        details = {str(r[0]).strip(): str(r[1] or "").strip() for r in described}
        assert comments.get("team") == "The person's team", described
        assert details.get("Comment") == "People by team", described

        # A contract the query breaks fails the model before anything runs.
        models = project.project_root / "models"
        write_file(fr("select id, team as name, 1 as extra from {{ source('app', 'people') }}"),
                   models, "contracted.sql")  # fmt: skip
        _, out = run_dbt_and_capture(["run", "-s", "contracted"], expect_pass=False)
        assert "contract" in out.lower() and "extra" in out

        # on_schema_change: a new column rebuilds once, saying so; 'fail' stops the model.
        write_file(fr("select id, name, team from {{ source('app', 'people') }}"),
                   models, "evolving.sql")  # fmt: skip
        _, out = run_dbt_and_capture(["run", "-s", "evolving"])
        assert "COMPLETE refresh" in out and "new column(s) team" in out, out
        project.run_sql(f"update {s}.people set team = 'y' where id = 2")
        _, out = run_dbt_and_capture(["run", "-s", "evolving"])
        assert "FAST refresh of" in out
        write_file(fr("select id, name from {{ source('app', 'people') }}",
                      on_schema_change="fail"), models, "strict.sql")  # fmt: skip
        _, out = run_dbt_and_capture(["run", "-s", "strict"], expect_pass=False)
        assert "new column(s) name" in out and "on_schema_change is 'fail'" in out
        assert [r[0] for r in self.rows(project, f"describe table {s}.strict")][:1] == ["id"]
        assert "name" not in [r[0] for r in self.rows(project, f"describe table {s}.strict")]

        # dbt retry runs what failed, once its cause is fixed.
        write_file(fr("select id, name from {{ source('app', 'people') }}",
                      on_schema_change="sync_all_columns"), models, "strict.sql")  # fmt: skip
        write_file(fr("select id, name from {{ source('app', 'people') }}"),
                   models, "contracted.sql")  # fmt: skip
        run_dbt_and_capture(["run", "-s", "strict", "contracted"], expect_pass=True)
        write_file(fr("select id, name from {{ source('app', 'people') }}",
                      refresh_method="fastest"), models, "evolving.sql")  # fmt: skip
        run_dbt_and_capture(
            ["run", "--write-json", "-s", "evolving", "documented"], expect_pass=False
        )
        write_file(fr("select id, name, team from {{ source('app', 'people') }}"),
                   models, "evolving.sql")  # fmt: skip
        _, out = run_dbt_and_capture(["retry"])
        assert "1 of 1 OK" in out and "evolving" in out and "documented" not in out, out

        # grants: the same outcome as dbt-spark's incremental model with the same grants.
        ok_fr, out_fr = run_and_capture(["run", "-s", "granted"])
        ok_inc, out_inc = run_and_capture(["run", "-s", "granted_incremental"])
        assert ok_fr == ok_inc, (out_fr, out_inc)
        if not ok_fr:
            assert _grant_error(out_fr) == _grant_error(out_inc), (out_fr, out_inc)


def _grant_error(out: str) -> str:
    """The error under ``Runtime Error in model ...`` (its first line), as dbt prints it."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if "Runtime Error in model" in line)
    return lines[start + 1].strip()
