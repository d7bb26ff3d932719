"""The view over a fast_refresh model's storage table (engine/surface.py), without Spark."""

from __future__ import annotations

from dbt.adapters.fastrefresh.engine.config import ViewDocs
from dbt.adapters.fastrefresh.engine.surface import view_statement
from dbt.adapters.fastrefresh.iceberg.columns import Column
from dbt.adapters.fastrefresh.sqltext import TableName, storage_of, view_of

V = TableName("an", "revenue")
COLUMNS = [Column("k", "bigint"), Column("n", "bigint"), Column("__fr_count", "bigint")]


def test_the_storage_table_is_named_after_the_view_and_back() -> None:
    assert storage_of(V) == TableName("an", "revenue__fr_data")
    assert view_of(storage_of(V)) == V
    assert view_of(V) is None and view_of(TableName("an", "__fr_data")) is None


def test_the_view_shows_the_user_columns_with_their_comments() -> None:
    statement, fingerprint = view_statement(
        V, storage_of(V), COLUMNS, ViewDocs("Revenue", {"n": "it's n"})
    )
    assert len(fingerprint) == 16
    assert statement == (
        "CREATE OR REPLACE VIEW `an`.`revenue` (`k`, `n` COMMENT 'it\\'s n') COMMENT 'Revenue' "
        f"TBLPROPERTIES ('fast_refresh.view-of'='{fingerprint}') "
        "AS SELECT `k`, `n` FROM `an`.`revenue__fr_data`"
    )
    # A first build's plain CREATE VIEW: the same view and fingerprint.
    plain, same = view_statement(
        V, storage_of(V), COLUMNS, ViewDocs("Revenue", {"n": "it's n"}), replace=False
    )
    assert same == fingerprint
    assert plain == "CREATE VIEW " + statement.removeprefix("CREATE OR REPLACE VIEW ")


def test_the_fingerprint_changes_with_columns_types_and_comments_only() -> None:
    def fingerprint(columns: list[Column], docs: ViewDocs | None = None) -> str:
        return view_statement(V, storage_of(V), columns, docs or ViewDocs())[1]

    base = fingerprint(COLUMNS)
    assert fingerprint(COLUMNS[:2]) == base  # hidden columns are not shown
    assert fingerprint([Column("k", "bigint"), Column("n", "int")]) != base
    assert fingerprint([Column("k", "bigint")]) != base
    assert fingerprint(COLUMNS, ViewDocs("about")) != base
    assert fingerprint(COLUMNS, ViewDocs(None, {"k": "key"})) != base


def test_persist_docs_says_which_comments_the_view_carries() -> None:
    model = {
        "description": "Revenue per customer",
        "columns": {"N": {"description": "orders"}, "k": {"description": ""}},
        "config": {"persist_docs": {"relation": True, "columns": True}},
    }
    assert ViewDocs.of(model) == ViewDocs("Revenue per customer", {"n": "orders"})
    assert ViewDocs.of({**model, "config": {}}) == ViewDocs()
    assert ViewDocs.of(None) == ViewDocs()


def test_an_aggregate_with_having_shows_the_groups_it_holds_for() -> None:
    columns = [*COLUMNS, Column("__fr_having", "boolean")]
    statement, fingerprint = view_statement(V, storage_of(V), columns, ViewDocs())
    assert statement.endswith("AS SELECT `k`, `n` FROM `an`.`revenue__fr_data` WHERE `__fr_having`")
    assert fingerprint != view_statement(V, storage_of(V), COLUMNS, ViewDocs())[1]


def test_a_join_of_key_less_tables_repeats_each_row_by_its_count() -> None:
    columns = [*COLUMNS, Column("__fr_repeat", "bigint")]
    statement, fingerprint = view_statement(V, storage_of(V), columns, ViewDocs())
    assert statement.endswith(
        "AS SELECT `k`, `n` FROM `an`.`revenue__fr_data` LATERAL VIEW "
        "explode(array_repeat(0, CAST(`__fr_repeat` AS INT))) __fr_x AS __fr_n"
    )
    assert fingerprint != view_statement(V, storage_of(V), COLUMNS, ViewDocs())[1]
