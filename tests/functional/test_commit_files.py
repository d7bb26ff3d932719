"""The SQL path's read of the files each master commit touched (``iceberg/changes.py``).

It reads them from ``all_entries``, whose cost grows with the master's whole history, or
from ``entries`` at each commit's snapshot, whose cost grows with the live manifests
(``entries_at_commits`` picks one). Both must name the same files, with the same bounds,
for every kind of commit: appends, copy-on-write rewrites, merge-on-read deletes (position
delete files, and format v3's deletion vectors), an overwrite, compactions.
"""

from __future__ import annotations

import collections
import itertools
from typing import Any

import pytest

from dbt.adapters.fastrefresh.iceberg import changes
from dbt.adapters.fastrefresh.iceberg.sql import SqlTables
from dbt.adapters.fastrefresh.iceberg.tables import chain_after
from dbt.adapters.fastrefresh.mlog import capture
from dbt.adapters.fastrefresh.mlog import ddl as mlog
from dbt.adapters.fastrefresh.protocol.env import Env
from dbt.adapters.fastrefresh.sqltext import TableName
from tests.functional.sites import env_for

_counter = itertools.count()


def master(spark: Any, name: str, version: int) -> tuple[Env, TableName]:
    """An empty master ``m`` (key ``k``; merge-on-read updates and deletes, copy-on-write
    merges) in a schema of its own, and an SQL-path environment on it."""
    schema = f"commit_files_{next(_counter)}_{name}_v{version}"
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(
        f"CREATE TABLE {schema}.m (k BIGINT NOT NULL, v INT, s STRING) USING iceberg "
        f"TBLPROPERTIES ('format-version'='{version}', 'write.update.mode'='merge-on-read', "
        "'write.delete.mode'='merge-on-read', 'write.merge.mode'='copy-on-write')"
    )
    spark.sql(f"ALTER TABLE {schema}.m SET IDENTIFIER FIELDS k")
    return env_for(spark, f"{schema}_registry", "sql"), TableName(schema, "m")


def normalized(found: list[changes.SnapshotChanges]) -> list[tuple[Any, ...]]:
    """What a read named, each commit's files in a fixed order."""
    out = []
    for c in found:
        files = (c.added, c.removed, c.deleted_from, c.delete_files)
        out.append((c.snapshot.snapshot_id, c.ordinal, *(sorted(f, key=repr) for f in files)))
    return out


@pytest.mark.parametrize("version", [2, 3])
def test_both_reads_name_the_same_files_for_every_kind_of_commit(spark: Any, version: int) -> None:
    env, m = master(spark, "kinds", version)
    t = m.sql
    statements = [
        f"INSERT INTO {t} SELECT id, CAST(id AS INT), 'a' FROM range(1, 21)",
        f"INSERT INTO {t} SELECT id, CAST(id AS INT), NULL FROM range(21, 31)",
        f"UPDATE {t} SET v = v + 1 WHERE k IN (3, 25)",  # positions deleted in two files
        f"DELETE FROM {t} WHERE k = 4",  # a second delete of the first file
        f"MERGE INTO {t} t USING (SELECT 5 AS k, 0 AS v, 'm' AS s) u ON t.k = u.k "
        "WHEN MATCHED THEN UPDATE SET *",  # copy-on-write: a file rewritten
        f"CALL system.rewrite_position_delete_files(table => '{t}', "
        "options => map('rewrite-all', 'true'))",  # replace: skipped
        f"DELETE FROM {t} WHERE k BETWEEN 26 AND 27",
        f"CALL system.rewrite_data_files(table => '{t}', options => map('rewrite-all', 'true'))",
        f"UPDATE {t} SET s = 'b' WHERE k = 1",  # into the compacted file
        f"INSERT OVERWRITE {t} SELECT * FROM {t} WHERE k <> 2",  # every file replaced
        f"DELETE FROM {t} WHERE k = 6",
    ]
    for statement in statements:
        spark.sql(statement)
    tables = env.tables
    assert isinstance(tables, SqlTables)
    history = tables.history(m)
    current = spark.sql(f"SELECT snapshot_id FROM {t}.snapshots ORDER BY committed_at").collect()
    chain = chain_after(history, int(current[-1][0]), None).snapshots
    # Format v3's deletion vectors leave the delete files' compaction nothing to commit.
    assert [s.operation for s in chain].count("replace") == (2 if version == 2 else 1)
    meta = env.tables.load(m)
    assert meta is not None
    kinds: set[str] = set()
    for length in (1, 2, 5, len(chain)):
        for start in range(len(chain) - length + 1):
            window = chain[start : start + length]
            read = {
                at: changes.read_changes(tables.x, m, meta.columns, ["k"], window, at_commits=at)
                for at in (True, False)
            }
            assert normalized(read[True]) == normalized(read[False]), window
            for c in read[True]:
                named = {"added": c.added, "removed": c.removed, "deleted_from": c.deleted_from}
                kinds |= {kind for kind, files in named.items() if files}
                # The bounds of the files deletes point into are read too.
                assert all(f.bounds for f in c.deleted_from), c
    assert kinds == {"added", "removed", "deleted_from"}


def captured_reading(env: Env, m: TableName) -> str:
    """Capture ``m``'s log; the statements it ran, joined."""
    statements = env.sql.statements  # type: ignore[attr-defined]
    before = len(statements)
    capture.capture(env, m)
    return " ".join(statements[before:])


def logged(spark: Any, m: TableName) -> collections.Counter[tuple[Any, ...]]:
    return collections.Counter(
        tuple(r) for r in spark.sql(f"SELECT k, v, old_new__ FROM {m.schema}.mlog__m").collect()
    )


def updates(
    spark: Any, m: TableName, first: int, count: int, statement: str
) -> list[tuple[Any, ...]]:
    """Updates ``first`` to ``first + count - 1`` of a 100-row master (update ``i`` sets
    ``v = i + 1`` where ``k = i % 5 + 1``, by ``statement``); the log rows they make."""
    rows = []
    for i in range(first, first + count):
        k, v = i % 5 + 1, i + 1
        spark.sql(statement.format(t=m.sql, k=k, v=v))
        rows += [(k, 0 if i < 5 else i - 4, "O"), (k, v, "N")]
    return rows


MOR_UPDATE = "UPDATE {t} SET v = {v} WHERE k = {k}"
COW_UPDATE = (
    "MERGE INTO {t} t USING (SELECT {k} AS k) u ON t.k = u.k WHEN MATCHED THEN UPDATE SET v = {v}"
)


def test_a_capture_reads_at_each_commit_where_that_reads_less(spark: Any) -> None:
    """One commit to capture is read at its snapshot: never more than ``all_entries``
    reads. Several are where a bound of that read is below the history's length (a
    master of one data file rewritten by copy-on-write commits), and from
    ``all_entries`` where it is not (merge-on-read commits each add a data file and a
    delete file). Either way the log gets each update's images."""
    env, m = master(spark, "mor", 2)
    spark.sql(f"INSERT INTO {m.sql} SELECT id, 0, 'a' FROM range(1, 101)")
    mlog.create_mview_log(env, m.sql)
    expected = updates(spark, m, 0, 30, MOR_UPDATE)
    read = captured_reading(env, m)  # 30 commits, two appends
    assert read.count("all_entries") == 2 and "`entries` VERSION AS OF" not in read, read
    assert read.count("all_data_files") == 2, read
    expected += updates(spark, m, 30, 1, MOR_UPDATE)
    read = captured_reading(env, m)
    assert f"{m.sql}.`entries` VERSION AS OF" in read and "all_entries" not in read, read
    assert f"{m.sql}.`data_files` VERSION AS OF" in read and "all_data_files" not in read, read
    assert logged(spark, m) == collections.Counter(expected)

    env, m = master(spark, "cow", 2)
    spark.sql(f"INSERT INTO {m.sql} SELECT id, 0, 'a' FROM range(1, 101)")
    mlog.create_mview_log(env, m.sql)
    expected = updates(spark, m, 0, 20, COW_UPDATE)
    read = captured_reading(env, m)  # 20 commits: a bound of 60 manifests, 22 snapshots
    assert "all_entries" in read and "`entries` VERSION AS OF" not in read, read
    expected += updates(spark, m, 20, 3, COW_UPDATE)
    read = captured_reading(env, m)  # 3 commits: a bound of 9, 25 snapshots
    assert read.count("`entries` VERSION AS OF") == 3 and "all_entries" not in read, read
    assert logged(spark, m) == collections.Counter(expected)
