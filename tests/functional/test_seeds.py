"""`dbt seed` under fast_refresh models: the seed's table is kept and its rows replaced in
one commit, so the log records only the rows the CSV changed and the models over the seed
refresh fast (dbt-spark drops and creates a seed's table on every `dbt seed`, which
started its log anew: every model over it rebuilt, and under 'fast' failed), until its
columns or table options change. A dbt
`table` model with a log and `fast_refresh_keep_table: true` is kept so too (dbt-spark
replaces its table on every run), until its columns or table options change."""

from __future__ import annotations

from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file

from tests.functional.dbt_project import FastRefreshProject
from tests.functional.sites import SHARED

SEED = "id,name\n1,north\n2,south\n3,east\n4,west\n"
CHANGED = "id,name\n1,north\n2,SOUTH\n3,east\n5,centre\n"  # 2 renamed, 4 gone, 5 new

SEED_PARTITIONED = """
version: 2
seeds:
  - name: regions
    config:
      partition_by: ["name"]
"""

# The query reads a temporary view its pre-hook creates, new in each run (the tests' dbt
# runs share one Spark session): whether the table is kept is asked after the pre-hooks.
REGIONS_TABLE = """
{{%- set src = 'regions_src_' ~ invocation_id | replace('-', '_') -%}}
{{{{ config(materialized='table', file_format='iceberg'{options}, pre_hook="create or replace
    temporary view {{{{ 'regions_src_' ~ invocation_id | replace('-', '_') }}}} as
    select id, name from {{{{ ref('regions') }}}}") }}}}
-- depends_on: {{{{ ref('regions') }}}}
select id, name from {{{{ src }}}}
"""
MODELS = {
    "sources.yml": """
version: 2
sources:
  - name: shop
    schema: "{{ target.schema }}"
    tables:
      - name: orders
""",
    "by_region.sql": """
{{ config(materialized='fast_refresh', refresh_method='fast') }}
select r.name, count(*) as n, sum(o.amount) as total
from {{ source('shop', 'orders') }} o join {{ ref('regions') }} r on o.region_id = r.id
group by r.name
""",
    # A table model over the seed, and a model over it: dbt-spark replaces the table on
    # each run, until the model says fast_refresh_keep_table (below).
    "regions_table.sql": REGIONS_TABLE.format(options=""),
    "over_table.sql": """
{{ config(materialized='fast_refresh') }}
select id, name from {{ ref('regions_table') }}
""",
    "schema.yml": """
version: 2
models:
  - name: regions_table
    columns:
      - name: id
        data_type: bigint
      - name: name
        data_type: string
""",
    "region_names.sql": """
{{ config(materialized='fast_refresh', refresh_method='fast') }}
select id, upper(name) as name from {{ ref('regions') }}
""",
}
QUERIES = {
    "over_table": "select id, name from {s}.regions_table",
    "by_region": (
        "select r.name, count(*) as n, sum(o.amount) as total from {s}.orders o "
        "join {s}.regions r on o.region_id = r.id group by r.name"
    ),
    "region_names": "select id, upper(name) as name from {s}.regions",
}


class TestSeeds(FastRefreshProject):
    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"regions.csv": SEED}

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return MODELS

    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        return {
            "seeds": {
                "+file_format": "iceberg",
                "test": {
                    "regions": {
                        "+mview_log": {"key": ["id"]},
                        # an empty CSV infers no types: these keep the table's, in
                        # words the Iceberg table does not use (it says bigint, string)
                        "+column_types": {"id": "long", "name": "varchar(20)"},
                    }
                },
            }
        }

    def same(self, project: Any, name: str) -> None:
        s = project.test_schema
        view = self.rows(project, f"select * from {s}.{name}")
        query = self.rows(project, QUERIES[name].format(s=s))
        assert sorted(view, key=repr) == sorted(query, key=repr), name

    def test_a_seed_changed_refreshes_the_models_over_it_fast(self, ready: Any) -> None:
        project, s = ready, ready.test_schema
        project.run_sql(
            f"create table {s}.orders (id bigint not null, region_id bigint, amount int) "
            "using iceberg"
        )
        project.run_sql(f"alter table {s}.orders set identifier fields id")
        project.run_sql(
            f"insert into {s}.orders values (1, 1, 10), (2, 2, 20), (3, 2, 5), (4, 4, 7), (5, 5, 1)"
        )
        run_dbt(["seed"])
        _, out = run_dbt_and_capture(["run"])
        for name in ("by_region", "region_names", "over_table"):
            assert f"COMPLETE refresh of {s}.{name}: first build" in out, out
        # The CSV changed: one row renamed, one gone, one new.
        write_file(CHANGED, project.project_root, "seeds", "regions.csv")
        run_dbt(["seed"])
        project.run_sql(f"insert into {s}.orders values (6, 3, 2)")
        _, out = run_dbt_and_capture(["run"])
        assert f"FAST refresh of {s}.region_names: 4 log row(s)" in out, out
        assert f"FAST refresh of {s}.by_region" in out, out
        assert (
            f"{s}.regions_table is a dbt `table` model, which every run replaces" in out
            and "configure it fast_refresh_keep_table: true" in out
        ), out
        for name in QUERIES:
            self.same(project, name)
        # The same CSV again: the seed's commit changes no row, and the log records none.
        # The table model now keeps its table, but its options changed too: its table is
        # replaced as dbt-spark does (this once), and the model over it rebuilds, saying why.
        run_dbt(["seed"])
        # (The contract, enforced from here on, is not an option: the rows it selects are.)
        options = (
            ", fast_refresh_keep_table=true, contract={'enforced': true}, "
            "tblproperties={'write.metadata.previous-versions-max': '50'}"
        )
        write_file(
            REGIONS_TABLE.format(options=options),
            project.project_root,
            "models",
            "regions_table.sql",
        )
        _, out = run_dbt_and_capture(["run", "-s", "region_names", "regions_table", "over_table"])
        assert f"FAST refresh of {s}.region_names: 0 log row(s)" in out or ("no changes" in out), (
            out
        )
        assert f"COMPLETE refresh of {s}.over_table" in out, out
        assert (
            f"{s}.regions_table is a dbt `table` model whose table its last run replaced" in out
        ), out
        # Every row gone (the CSV's header alone): deleted in one commit, and FAST.
        write_file("id,name\n", project.project_root, "seeds", "regions.csv")
        run_dbt(["seed"])
        _, out = run_dbt_and_capture(["run", "-s", "region_names", "regions_table", "over_table"])
        assert f"FAST refresh of {s}.region_names: 4 log row(s)" in out, out
        assert f"FAST refresh of {s}.over_table: 4 log row(s)" in out, out
        assert self.rows(project, f"select * from {s}.region_names") == []
        assert self.rows(project, f"select * from {s}.over_table") == []
        write_file(CHANGED, project.project_root, "seeds", "regions.csv")
        # --full-refresh drops and creates the seed's table as dbt-spark does: the log
        # starts anew, and a 'fast' model over it fails, saying why.
        run_dbt(["seed", "--full-refresh"])
        _, out = run_dbt_and_capture(["run", "-s", "region_names"], expect_pass=False)
        assert f"{s}.regions is a dbt seed whose table its last `dbt seed` dropped" in out, out
        _, out = run_dbt_and_capture(["run", "--full-refresh"])
        for name in QUERIES:
            self.same(project, name)
        # The seed's table options changed (partitioned now): `dbt seed` drops and creates
        # its table as dbt-spark does, this once, and a 'fast' model over it fails, saying
        # why; the next `dbt seed` keeps the new table (one more snapshot of it).
        write_file(SEED_PARTITIONED, project.project_root, "seeds", "regions.yml")
        run_dbt(["seed"])
        _, out = run_dbt_and_capture(["run", "-s", "region_names"], expect_pass=False)
        assert f"{s}.regions is a dbt seed whose table its last `dbt seed` dropped" in out, out
        described = self.rows(project, f"describe table {s}.regions")
        partitioned = described[[r[0] for r in described].index("# Partition Information") :]
        assert [r[0] for r in partitioned[2:]] == ["name"], described
        snapshots = f"select count(*) from {s}.regions.snapshots"
        assert self.rows(project, snapshots) == [(1,)]
        run_dbt(["seed"])
        assert self.rows(project, snapshots) == [(2,)]
        # A setting that is not a boolean fails the model, naming it, and leaves its table.
        table = f"select * from {s}.regions_table order by id"
        before = self.rows(project, table)
        assert before
        bad = REGIONS_TABLE.format(options=", fast_refresh_keep_table='yes'")
        write_file(bad, project.project_root, "models", "regions_table.sql")
        _, out = run_dbt_and_capture(["run", "-s", "regions_table"], expect_pass=False)
        assert "fast_refresh_keep_table of model.test.regions_table must be true or false" in out
        assert self.rows(project, table) == before


# A seed and a kept `table` model left at dbt-spark's default file_format (parquet). On a
# shared catalog (Iceberg's SparkCatalog) `USING parquet` creates an Iceberg table, so
# both keep their tables as those configured iceberg do; on the embedded default they are
# Hive tables, which the views over them cannot read changes from.
PLAIN_FORMAT = {
    "cities_table.sql": """
{{ config(materialized='table', fast_refresh_keep_table=true{options}) }}
select id, name from {{ ref('cities') }}
""",
    "over_cities.sql": """
{{ config(materialized='fast_refresh') }}
select id, upper(name) as name from {{ ref('cities') }}
""",
    "over_cities_table.sql": """
{{ config(materialized='fast_refresh') }}
select id, name from {{ ref('cities_table') }}
""",
}
PLAIN_QUERIES = {
    "over_cities": "select id, upper(name) as name from {s}.cities",
    "over_cities_table": "select id, name from {s}.cities",
}


class TestDefaultFileFormat(FastRefreshProject):
    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"cities.csv": SEED}

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            name: sql.replace("{options}", "") if name == "cities_table.sql" else sql
            for name, sql in PLAIN_FORMAT.items()
        }

    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        keyed = {"+mview_log": {"key": ["id"]}}
        return {
            "seeds": {"test": {"cities": keyed}},
            "models": {"test": {"cities_table": keyed}},
        }

    def same(self, project: Any) -> None:
        s = project.test_schema
        for name, query in PLAIN_QUERIES.items():
            view = self.rows(project, f"select * from {s}.{name}")
            assert sorted(view) == sorted(self.rows(project, query.format(s=s))), name

    def test_parquet_seeds_and_table_models_are_kept_where_they_are_iceberg(
        self, ready: Any
    ) -> None:
        project, s = ready, ready.test_schema
        run_dbt(["seed"])
        run_dbt(["run"])
        write_file(CHANGED, project.project_root, "seeds", "cities.csv")
        run_dbt(["seed"])
        _, out = run_dbt_and_capture(["run"])
        if not SHARED:
            for name in PLAIN_QUERIES:
                assert f"COMPLETE refresh of {s}.{name}" in out, out
            assert f"{s}.cities is not a known master table: it is a 'hive' table" in out, out
            self.same(project)
            return
        assert f"FAST refresh of {s}.over_cities: 4 log row(s)" in out, out
        assert f"FAST refresh of {s}.over_cities_table: 4 log row(s)" in out, out
        self.same(project)
        # New table options: the table model's table is dropped and created as dbt-spark
        # does (its create_table_as creates a parquet-configured table, it cannot replace
        # it), and the view over it rebuilds once, saying why.
        options = ", tblproperties={'write.metadata.previous-versions-max': '50'}"
        write_file(
            PLAIN_FORMAT["cities_table.sql"].replace("{options}", options),
            project.project_root,
            "models",
            "cities_table.sql",
        )
        _, out = run_dbt_and_capture(["run"])
        assert f"{s}.cities_table is a dbt `table` model whose table its last run replaced" in out
        properties = dict(self.rows(project, f"show tblproperties {s}.cities_table"))
        assert properties.get("write.metadata.previous-versions-max") == "50", properties
        write_file(SEED, project.project_root, "seeds", "cities.csv")
        run_dbt(["seed"])
        _, out = run_dbt_and_capture(["run"])
        assert f"FAST refresh of {s}.over_cities: 4 log row(s)" in out, out
        assert f"FAST refresh of {s}.over_cities_table: 4 log row(s)" in out, out
        self.same(project)
