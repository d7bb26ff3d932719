"""Which views a run of a dbt project releases from its logs by their recorded node
(``admin.ProjectNodes``; the run through dbt: tests/functional/test_model_styles.py)."""

from __future__ import annotations

import dataclasses
import datetime as dt

from dbt.adapters.fastrefresh.admin import ProjectNodes
from dbt.adapters.fastrefresh.protocol.state import ViewConfig
from dbt.adapters.fastrefresh.sqltext import TableName

CONFIG = ViewConfig(
    definition="SELECT 1", query_hash="h", master_schema_hash="m", shape="projection",
    masters=(), table_options="", registered_at=dt.datetime(2026, 1, 1),
    dbt_node="model.shop.orders_agg", dbt_project="shop:dbt_alice",
)  # fmt: skip
VIEW = TableName("dbt_alice", "orders_agg")
ALICE = ProjectNodes(
    "shop:dbt_alice",
    {"model.shop.orders_agg": (VIEW, "fast_refresh"),
     "model.shop.moved": (TableName("dbt_alice", "moved"), "fast_refresh"),
     "model.shop.now_table": (TableName("dbt_alice", "now_table"), "table")},
)  # fmt: skip


def test_a_view_its_model_still_builds_is_kept() -> None:
    assert ALICE.gone(VIEW, CONFIG) is None


def test_a_view_of_the_same_project_on_another_target_is_left_alone() -> None:
    # Production's (or another developer's) view of the same node: its runs release it.
    prod = dataclasses.replace(CONFIG, dbt_project="shop:analytics")
    assert ALICE.gone(TableName("analytics", "orders_agg"), prod) is None
    assert ALICE.gone(VIEW, dataclasses.replace(CONFIG, dbt_project="other:dbt_alice")) is None


def test_a_view_built_before_nodes_were_recorded_is_left_alone() -> None:
    assert ALICE.gone(VIEW, dataclasses.replace(CONFIG, dbt_node=None, dbt_project=None)) is None


def test_a_removed_moved_or_rematerialized_model_releases_its_view() -> None:
    removed = dataclasses.replace(CONFIG, dbt_node="model.shop.gone")
    gone = TableName("dbt_alice", "gone")
    assert "no longer in this dbt project" in (ALICE.gone(gone, removed) or "")
    moved = dataclasses.replace(CONFIG, dbt_node="model.shop.moved")
    old = TableName("dbt_alice_away", "moved")
    assert "now builds dbt_alice.moved" in (ALICE.gone(old, moved) or "")
    table = dataclasses.replace(CONFIG, dbt_node="model.shop.now_table")
    assert "materialized as 'table'" in (
        ALICE.gone(TableName("dbt_alice", "now_table"), table) or ""
    )


def test_a_view_another_model_builds_now_is_kept() -> None:
    """A model renamed with its alias kept (``orders_agg.sql`` to ``orders_agg_v2.sql``,
    ``alias='orders_agg'``): its view records the old node until a complete refresh,
    and the new one builds it."""
    renamed = ProjectNodes("shop:dbt_alice", {"model.shop.orders_agg_v2": (VIEW, "fast_refresh")})
    assert renamed.gone(VIEW, CONFIG) is None
    # Built by the renamed model as another materialization: released.
    as_table = ProjectNodes("shop:dbt_alice", {"model.shop.orders_agg_v2": (VIEW, "table")})
    assert "no longer in this dbt project" in (as_table.gone(VIEW, CONFIG) or "")


def test_the_recorded_node_survives_the_definition_json() -> None:
    assert ViewConfig.from_json(CONFIG.to_json()) == CONFIG
