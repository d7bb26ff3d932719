"""A log's key may hold one NULL (a user-declared key of a nullable column), which
identifies its row like any value. An inner join view matched its changed keys with `=`,
which never holds for NULL: a change of that row inserted the new view rows but deleted
none of the old ones."""

from __future__ import annotations

from typing import Any

from dbt.adapters.fastrefresh.mlog import ddl as mlog
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.functional.sites import env_for, refresh_and_check


def test_a_null_key_of_a_joined_table_is_matched(spark: Any) -> None:
    # The statements are the same on both metadata paths: the Java path's alone.
    schema = "join_null_keys"
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(f"CREATE TABLE {schema}.f (id INT NOT NULL, region STRING, x INT) USING iceberg")
    spark.sql(f"CREATE TABLE {schema}.d (code INT, region STRING, name STRING) USING iceberg")
    spark.sql(f"INSERT INTO {schema}.f VALUES (1, 'n', 1), (2, 's', 2), (3, 'n', 3)")
    spark.sql(f"INSERT INTO {schema}.d VALUES (NULL, 'n', 'north'), (1, 's', 'south')")
    env = env_for(spark, f"{schema}_registry", "java")
    mlog.create_mview_log(env, f"{schema}.f", key=["id"])
    mlog.create_mview_log(env, f"{schema}.d", key=["code"])
    view = TableName(schema, "v")
    sql = f"SELECT f.id, f.x, d.name FROM {schema}.f f JOIN {schema}.d d ON f.region = d.region"
    refresh_and_check(spark, env, view, sql, exists=False, expect="COMPLETE")
    rounds = [
        [f"UPDATE {schema}.d SET name = 'NORTH' WHERE code IS NULL"],
        # Both sides at once: the NULL-keyed row and the rows joined to it.
        [f"UPDATE {schema}.d SET region = 's' WHERE code IS NULL",
         f"UPDATE {schema}.f SET x = x + 10 WHERE region = 's'"],
        [f"DELETE FROM {schema}.d WHERE code IS NULL"],
        [f"INSERT INTO {schema}.d VALUES (NULL, 'n', 'back')"],
    ]  # fmt: skip
    for statements in rounds:
        for statement in statements:
            spark.sql(statement)
        refresh_and_check(spark, env, view, sql, exists=True, expect="FAST")
