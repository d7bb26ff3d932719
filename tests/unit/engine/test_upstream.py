"""The tables a model reads, from dbt's graph (engine/upstream.py), without Spark."""

from __future__ import annotations

from typing import Any

import pytest

from dbt.adapters.fastrefresh.engine.upstream import Upstream, upstream_of
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.sqltext import TableName


def node(uid: str, kind: str, relation: str | None, *deps: str, **config: Any) -> dict[str, Any]:
    return {
        "unique_id": uid, "resource_type": kind, "relation_name": relation,
        "config": {"materialized": "table", **config}, "depends_on": {"nodes": list(deps)},
        "meta": config.pop("meta", {}),
    }  # fmt: skip


GRAPH = {
    "nodes": {
        "model.p.stg": node("model.p.stg", "model", "`an`.`stg`", "source.p.shop.orders"),
        "model.p.eph": node("model.p.eph", "model", None, "model.p.stg", materialized="ephemeral"),
        "seed.p.regions": node(
            "seed.p.regions", "seed", "`an`.`regions`", materialized="seed", mview_log={"key": ["id"]}
        ),
        "model.p.skip": node(
            "model.p.skip", "model", "`an`.`skip`", mview_log=False, fast_refresh_keep_table=True
        ),
        "test.p.t": node("test.p.t", "test", None),
    },
    "sources": {
        "source.p.shop.orders": {
            "unique_id": "source.p.shop.orders", "resource_type": "source",
            "relation_name": "shop.orders", "config": {}, "meta": {"mview_log": {"commit_scn": True}},
        },
    },
}  # fmt: skip


def test_reads_through_ephemeral_models_once_each() -> None:
    model = {"depends_on": {"nodes": ["model.p.eph", "model.p.stg", "seed.p.regions", "test.p.t"]}}
    assert upstream_of(model, GRAPH) == (
        Upstream(TableName("an", "stg"), "model.p.stg", None, {}, "table"),
        Upstream(TableName("an", "regions"), "seed.p.regions", True, {"key": ["id"]}, "seed"),
    )


def test_settings_of_sources_and_models() -> None:
    found = upstream_of({"depends_on": {"nodes": ["source.p.shop.orders", "model.p.skip"]}}, GRAPH)
    assert [(u.relation, u.log, dict(u.options), u.materialized, u.keeps_table) for u in found] == [
        (TableName("shop", "orders"), True, {"commit_scn": True}, "", False),
        (TableName("an", "skip"), False, {}, "table", True),
    ]


def test_a_bad_setting_names_the_node_and_the_fix() -> None:
    graph = {"nodes": {"model.p.x": node("model.p.x", "model", "a.x", mview_log={"keys": ["id"]})}}
    with pytest.raises(FastRefreshError, match=r"model.p.x: mview_log must be .* Fix: "):
        upstream_of({"depends_on": {"nodes": ["model.p.x"]}}, graph)


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ({"commit_scn": "maybe"}, r"mview_log commit_scn must be true or false, got 'maybe'"),
        ({"key": 5}, r"mview_log key must be a list of column names, got 5\."),
        ({"columns": ["a", 1]}, r"mview_log columns must be a list of column names"),
        ({"purge": "never"}, r"mview_log purge must be 'deferred' or 'synchronous', got 'never'"),
    ],
)
def test_a_bad_option_value_names_the_node_before_any_log_is_made(
    setting: dict[str, Any], said: str
) -> None:
    """A value taken as it came made a log unlike the one asked for (``commit_scn:
    'false'`` is a true string: a commit-SCN log, then a warning on every run that the
    drop it advised made again), or failed later runs only (helper-38)."""
    graph = {"nodes": {"model.p.x": node("model.p.x", "model", "a.x", mview_log=setting)}}
    with pytest.raises(
        FastRefreshError,
        match=rf"\n  model\.p\.x: {said}.*Fix \(in the node's mview_log config\): ",
    ):
        upstream_of({"depends_on": {"nodes": ["model.p.x"]}}, graph)


def test_option_values_are_read_as_create_mview_log_reads_its_arguments() -> None:
    setting = {"commit_scn": "false", "key": "id, region", "columns": [], "purge": "SYNCHRONOUS"}
    graph = {"nodes": {"model.p.x": node("model.p.x", "model", "a.x", mview_log=setting)}}
    (found,) = upstream_of({"depends_on": {"nodes": ["model.p.x"]}}, graph)
    assert dict(found.options) == {
        "commit_scn": False, "key": ["id", "region"], "columns": [], "purge": "synchronous",
    }  # fmt: skip


def test_a_fast_refresh_upstream_is_read_from_its_storage_table() -> None:
    graph = {
        "nodes": {
            "model.p.fr": node("model.p.fr", "model", "`an`.`fr`", materialized="fast_refresh")
        }
    }
    (found,) = upstream_of({"depends_on": {"nodes": ["model.p.fr"]}}, graph)
    assert found.relation == TableName("an", "fr__fr_data")


def test_a_node_whose_name_no_view_or_master_can_have_is_passed_by() -> None:
    """A seed `country-codes.csv` or a view model `stg-people` (legal in dbt): the hooks
    that list the project's relations failed every run of the project on its name."""
    from dbt.adapters.fastrefresh.engine.upstream import model_relations, project_relations

    graph = {
        "nodes": {
            "seed.p.country-codes": {"resource_type": "seed", "config": {},
                                     "relation_name": "`s`.`country-codes`"},
            "model.p.stg-people": {"resource_type": "model", "config": {"materialized": "view"},
                                   "relation_name": "`s`.`stg-people`"},
            "model.p.a": {"resource_type": "model", "config": {"materialized": "fast_refresh"},
                          "relation_name": "`s`.`a`"},
        }
    }  # fmt: skip
    assert project_relations(graph) == {TableName("s", "a"): "fast_refresh"}
    assert model_relations(graph) == {"model.p.a": (TableName("s", "a"), "fast_refresh")}
