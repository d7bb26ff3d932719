"""dbt `view` models (the adapter's view materialization), on the embedded default and, in
`make test-shared`, on a shared catalog (where views are replaced in place).

- A view model whose SQL changed answers with its new SQL. Iceberg's views (behind the
  embedded session catalog) keep their old query through CREATE OR REPLACE VIEW, so a
  changed filter went on filtering the old way, silently. A model whose new SQL fails
  keeps its old view.
- The package's registry models (``fast_refresh_reuse_view: true``) are created again only
  when what would create them changed; otherwise no ``CREATE VIEW`` runs and dbt reports
  ``OK (unchanged)``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file

from dbt.adapters.fastrefresh.engine import dbt_views
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.functional.dbt_project import FastRefreshProject
from tests.functional.sites import env_for

REGISTRY_MODELS = (
    "fast_refresh_leases",
    "fast_refresh_log_backlog",
    "fast_refresh_logs",
    "fast_refresh_mviews",
    "fast_refresh_refresh_runs",
)
BASE = "{{ config(materialized='table', file_format='iceberg') }} select * from {{ ref('people') }}"
SEED = "id,name\n1,a\n2,b\n3,c\n"


# The view model's SQL that the failing one replaces, and that comes back after it.
TENS = "select name, id * 10 as tens from {{ ref('base') }} where id = 1"


def write_model(project: Any, name: str, sql: str) -> None:
    write_file(sql, project.project_root, "models", f"{name}.sql")


def rows(project: Any, sql: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in project.run_sql(sql, fetch="all"))


def run(*args: str) -> tuple[dict[str, str], set[str]]:
    """``dbt run``: each model's message, and the views whose CREATE VIEW it executed (from
    dbt's debug log: what ran, whatever the catalog)."""
    results, log = run_dbt_and_capture(["--debug", "run", *args])
    created = set(re.findall(r"create or replace view \S*?\.?`?(\w+)`?\s", log, re.IGNORECASE))
    return {r.node.name: str(r.message) for r in results}, created


class People:
    """A project seeded with ``people`` (three rows)."""

    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"people.csv": SEED}


class TestAChangedViewModelAnswersWithItsNewSql(People):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "base.sql": BASE,
            "filtered.sql": "select * from {{ ref('base') }} where id > 1",
        }

    def test_same_columns_then_other_columns(self, project: Any) -> None:
        run_dbt(["seed"])
        run_dbt(["run"])
        view = f"{project.test_schema}.filtered"
        assert rows(project, f"select id, name from {view}") == [(2, "b"), (3, "c")]
        # The same columns, another filter: the view must not keep the old one.
        write_model(project, "filtered", "select * from {{ ref('base') }} where id > 2")
        run_dbt(["run", "--select", "filtered"])
        assert rows(project, f"select id, name from {view}") == [(3, "c")]
        # Other columns.
        write_model(project, "filtered", TENS)
        run_dbt(["run", "--select", "filtered"])
        assert rows(project, f"select * from {view}") == [("a", 10)]
        # New SQL that fails: the model fails, and its view stays as it was.
        write_model(project, "filtered", "select name, no_such_column from {{ ref('base') }}")
        run_dbt(["run", "--select", "filtered"], expect_pass=False)
        assert rows(project, f"select * from {view}") == [("a", 10)]
        write_model(project, "filtered", TENS)
        # dbt's default: a view model is created again on every run.
        assert run("--select", "filtered")[1] == {"filtered"}


class TestRegistryModelsAreCreatedOnlyWhenChanged(People, FastRefreshProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "base.sql": BASE,
            # A project's own view may opt in too.
            "kept.sql": "{{ config(fast_refresh_reuse_view=true) }}"
            " select * from {{ ref('base') }} where id > 1",
        }

    def test_unchanged_views_are_kept_changed_ones_created(self, ready: Any) -> None:
        project = ready
        views = {*REGISTRY_MODELS, "kept"}
        run_dbt(["seed"])
        first, created = run()
        assert created >= views
        assert all(first[m] == "OK" for m in views)

        second, created = run()
        assert {m: second[m] for m in views} == {m: "OK (unchanged)" for m in views}
        assert not created & views
        # The kept views still answer.
        assert rows(project, f"select id from {project.test_schema}.kept") == [(2,), (3,)]
        logs = rows(project, f"select count(*) from {project.test_schema}.fast_refresh_logs")
        assert logs == [(0,)]

        # A view whose recorded definition is not what would create it now (another
        # release's, or edited by hand) is created again; so is a changed model; the
        # others are kept.
        project.run_sql(
            f"alter view {project.test_schema}.fast_refresh_logs "
            "set tblproperties ('fast_refresh.view-definition'='stale')"
        )
        write_model(
            project,
            "kept",
            "{{ config(fast_refresh_reuse_view=true) }} select * from {{ ref('base') }} where id > 2",
        )
        third, created = run()
        assert created & views == {"fast_refresh_logs", "kept"}
        assert third["fast_refresh_logs"] == third["kept"] == "OK"
        assert third["fast_refresh_mviews"] == "OK (unchanged)"
        assert rows(project, f"select id from {project.test_schema}.kept") == [(3,)]
        assert run()[0]["fast_refresh_logs"] == "OK (unchanged)"

        # --full-refresh creates every view again.
        full, created = run("--full-refresh")
        assert created >= views
        assert all(full[m] == "OK" for m in views)


@pytest.mark.parametrize("path", ["java", "sql"])
def test_a_view_is_unchanged_only_for_the_statement_that_marked_it(spark: Any, path: str) -> None:
    """Both ways to the view's properties (the metastore through Java, SHOW TBLPROPERTIES)
    read the fingerprint ``mark`` wrote."""
    schema = f"view_models_{path}"
    env = env_for(spark, f"{schema}_registry", path)
    view = TableName(schema, "v")
    create = f"CREATE VIEW {view.sql} AS SELECT 1 AS one"
    spark.sql(f"CREATE SCHEMA {schema}")
    assert not dbt_views.unchanged(env, view, create), "no view yet"
    spark.sql(create)
    assert not dbt_views.unchanged(env, view, create), "a view without the property"
    dbt_views.mark(env, view, create)
    assert dbt_views.unchanged(env, view, create)
    assert not dbt_views.unchanged(env, view, create.replace("1 AS one", "2 AS one"))
    assert spark.sql(f"SELECT * FROM {view.sql}").collect()[0][0] == 1
