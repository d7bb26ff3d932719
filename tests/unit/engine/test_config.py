"""ModelConfig: a fast_refresh model's config, validated once (engine/config.py)."""

from __future__ import annotations

import pytest

from dbt.adapters.fastrefresh.engine.config import (
    UNPARTITIONED_VIEW_PROPERTIES,
    VIEW_PROPERTIES,
    ModelConfig,
    TableSpec,
    check_config_names,
)
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.protocol.decisions import RefreshMethod


def test_defaults() -> None:
    config = ModelConfig.parse("s.v")
    assert config == ModelConfig(RefreshMethod.FORCE, False, TableSpec("", {}))
    assert config.table.table_properties() == UNPARTITIONED_VIEW_PROPERTIES


def test_values_are_typed() -> None:
    config = ModelConfig.parse(
        "s.v", refresh_method="C", file_format="Iceberg", full_refresh=1,
        table_options=" partitioned by (d)\\n ", tblproperties={"a": True, "b": 2},
    )  # fmt: skip
    assert config.method is RefreshMethod.COMPLETE and config.full_refresh is True
    assert config.table.properties == {"a": "true", "b": "2"}
    assert config.table.stored() == "partitioned by (d)\\n"
    assert ModelConfig.parse(
        "s.v", table_options="PARTITIONED BY (d)"
    ).table.table_properties() == (VIEW_PROPERTIES)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"refresh_method": "fastest"}, "Model s.v: refresh_method must be 'force', 'fast'"),
        ({"file_format": "delta"}, "file_format is 'delta'. Fix: remove file_format"),
        ({"tblproperties": "x=1"}, "tblproperties must be a mapping"),
        ({"tblproperties": {"Fast_Refresh.log": "1"}}, "hold dbt-fastrefresh's own state"),
        ({"tblproperties": {"a": None}}, "tblproperties['a'] must be a string"),
        ({"tblproperties": {"a": [1]}}, "Fix: give it a scalar value"),
    ],
)
def test_bad_values_name_model_cause_and_fix(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(FastRefreshError) as raised:
        ModelConfig.parse("s.v", **kwargs)  # type: ignore[arg-type]
    text = raised.value.msg
    assert text.startswith("Model s.v: ") and "Fix:" in text
    assert message in text


def test_on_schema_change_takes_dbts_four_values() -> None:
    assert ModelConfig.parse("s.v").on_schema_change == "ignore"
    assert ModelConfig.parse("s.v", on_schema_change="FAIL").on_schema_change == "fail"
    with pytest.raises(FastRefreshError) as raised:
        ModelConfig.parse("s.v", on_schema_change="sometimes")
    assert "on_schema_change must be one of ignore, fail" in raised.value.msg
    assert "Fix: on_schema_change='sync_all_columns'" in raised.value.msg


KNOWN = ("materialized", "schema", "refresh_method", "partition_by", "pre-hook", "tags")


@pytest.mark.parametrize(
    ("key", "meant"),
    [
        ("refresh_methd", "refresh_method"),
        ("refresh-method", "refresh_method"),
        ("Refresh_Method", "refresh_method"),
        ("refreshmethod", "refresh_method"),
        ("refresh_mehtod", "refresh_method"),
        ("mview_logs", "mview_log"),
        ("tbl_properties", "tblproperties"),
        ("partitionby", "partition_by"),
        ("on_schema_chnage", "on_schema_change"),
        ("bucket", "buckets"),
    ],
)
def test_a_misspelt_config_is_refused_naming_the_one_it_means(key: str, meant: str) -> None:
    with pytest.raises(FastRefreshError) as raised:
        check_config_names("s.v", {"materialized": "fast_refresh", key: "x"}, KNOWN)
    text = raised.value.msg
    assert text.startswith(f"Model s.v: config {key!r} is not one dbt or dbt-fastrefresh"), text
    assert f"leaving {meant} at its default. Fix: write {meant}" in text, text


@pytest.mark.parametrize(
    "key",
    [
        "refresh_method", "partition_by", "pre-hook", "partition_by_day", "my_refresh", "mview",
        # read by the model, but no field dbt or dbt-spark declares
        "tblproperties", "mview_log",
    ],
)  # fmt: skip
def test_declared_configs_and_the_users_own_pass(key: str) -> None:
    check_config_names("s.v", {key: 1, "tags": []}, KNOWN)
