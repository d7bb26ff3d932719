"""The capture statement: master commits become log rows in one INSERT (pure SQL text).

For each master commit, capture reads the rows the commit removed and the rows it added
(``iceberg.tables.CaptureReads``: the Java path stages the exact files, the SQL path reads
them with pruning predicates, ``iceberg/changes.py``). Rows both removed and added by one
commit are copy-on-write carry-overs and cancel (multiset difference, one aggregation over
every commit of the run: each distinct row once, with a count per commit). On a keyed log,
the rest pair up by key into updates (old and new image, ``change_vector__`` of the changed
columns); unpaired rows are deletes and inserts, so a key update is a delete plus an
insert. A key-less log logs every change as a delete of the old row image and an insert of
the new one.

A keyed log whose commits removed no whole data file (merge-on-read: each removed row is
one a statement matched) skips the multiset difference: the rows are paired by key at
once, and a pair of identical images (an update that changed nothing) cancels there. That
is one aggregation, and one shuffle, fewer. When those commits changed few rows (their
summaries say how many at most), the pairing runs in the one task that numbers the rows
(``ONE_TASK_ROWS``): the numbering's shuffle is then the statement's only one.

The multiset difference aggregates every row the commits rewrote, carried-over rows
included: tens of millions when a copy-on-write commit rewrites a large file. When the
number of rows read is known, the rows get enough shuffle partitions that each
partition's aggregation fits in memory (``netting_partitions``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from dbt.adapters.fastrefresh.iceberg import columns as mt
from dbt.adapters.fastrefresh.iceberg.tables import CaptureReads, RowSource
from dbt.adapters.fastrefresh.protocol import changevector as cv
from dbt.adapters.fastrefresh.protocol.keys import duplicate_key_fix, key_error_sql
from dbt.adapters.fastrefresh.protocol.state import LogConfig
from dbt.adapters.fastrefresh.sqltext import (
    holds_float,
    ident,
    sign_key,
    string,
    timestamp,
)

UNMARKED_SQL = "TIMESTAMP_NTZ'4000-01-01 00:00:00'"

# Changed rows up to which a merge-on-read capture pairs its rows by key in one task, where
# the numbering (one window over every log row) runs anyway: one shuffle and one Spark job
# fewer. 10,000 changes of a 10M-row master in three commits: the statement's SELECT took
# 0.69 s against 0.75 s (medians of 20, warm); 100,000 changes, 1.51 s against 1.49 s. Above
# it the pairing keeps its own shuffle, whose tasks run in parallel.
ONE_TASK_ROWS = 100_000

# The bytes of rows (at their width in memory) per shuffle partition of the multiset
# difference, above the session's own partition count. A hash aggregation whose partition
# outgrows a task's share of execution memory falls back to sorting and spills: a 100M-row
# master loaded by INSERTs (25M-row files), its first capture after an UPDATE and a DELETE
# read 61M rows and took 76.4 s with the embedded default's 4 partitions, 49.6 s with 32,
# 47.4 s with the 58 this gives, 45.2 s with 64 (the DML itself 42.9-47.6 s). Later
# captures of that master read 34M rows in 26-28 s with 4 or 32 partitions: a partition
# of 8.5M rows still fit (``docs/logs-and-capture.md``).
PARTITION_BYTES = 128 * 1024 * 1024
# Column types of a fixed width in Spark's rows (8 bytes each); others (strings, binary,
# decimals above 18 digits, nested types) are counted ``VARIABLE_BYTES`` more.
_FIXED_TYPES = frozenset(
    {"bigint", "int", "smallint", "tinyint", "boolean", "float", "double", "date"}
    | {"timestamp", "timestamp_ntz"}
)
VARIABLE_BYTES = 24


def _duplicate_key_error(config: LogConfig, keys: Sequence[str], snapshot: str) -> str:
    """``raise_error`` of two rows of one commit with one key (``keys``: the key columns'
    SQL), naming the key's values (NULL too) and the commit's ``snapshot`` (SQL)."""
    return key_error_sql(config.master, keys, snapshot, duplicate_key_fix(config.master))


# -- the statement ------------------------------------------------------------------------


def capture_statement(
    config: LogConfig,
    columns: Sequence[mt.Column],
    reads: CaptureReads,
    start_sequence: int,
    stamp: dt.datetime | None = None,
    *,
    session_partitions: int | None = None,
) -> str:
    """One INSERT that appends the log rows of ``reads`` (pure).

    ``stamp``: the refresh time to stamp the rows with, when capture runs inside a
    refresh's setup (the first refresher would stamp them at once); otherwise rows are
    appended unmarked (``4000-01-01``).

    ``session_partitions``: the session's shuffle partitions, when known
    (``netting_partitions``).

    What changes from one capture to the next (the commits' snapshot ids, the first
    sequence, the stamp) is one map literal, from each commit's ordinal to its snapshot
    id with the run's first sequence and stamp, looked up per row (``element_at``). Spark
    compiles a query's operators to Java: a number or timestamp literal becomes part of
    that code, but a map literal is passed to it as an object, so the next capture of the
    same shape reuses the compiled code (about 0.3 s of a small capture). A lookup, not a
    join with a ``VALUES`` relation: Spark broadcasts a joined relation, one more job
    (about 0.1 s) each time.
    """
    first = timestamp(stamp) if stamp is not None else UNMARKED_SQL
    commits = _commit_map(reads, start_sequence, first)
    keys = [] if config.keyless else [ident(k) for k in config.key_columns]
    netted = config.keyless or reads.carries_over
    partitions = netting_partitions(reads, columns, session_partitions) if netted else None
    ctes = [
        *_net(columns, reads, netted=netted, keys=keys, partitions=partitions),
        *_images(config, columns, reads.removes, commits, one_task=_one_task(reads)),
    ]
    return (
        "WITH "
        + ",\n".join(ctes)
        + f"\nINSERT INTO {config.log_table.sql}\n"
        + _select(config, columns, commits, unpaired_keys=bool(keys) and not reads.removes)
    )


def one_partition(config: LogConfig, reads: CaptureReads) -> bool:
    """Whether every shuffle of the capture statement ends in one partition: nothing to
    net (a keyed log, no copy-on-write carry-over), the pairing by key in the
    numbering's one task (``ONE_TASK_ROWS``), and sources that shuffle nothing
    themselves. Such a statement runs without adaptive execution
    (``runtime/interpreted.py``, ``ADAPTIVE_OFF``)."""
    netted = config.keyless or reads.carries_over
    return reads.unshuffled and not netted and _one_task(reads)


def _one_task(reads: CaptureReads) -> bool:
    """Whether the rows are paired by key in the numbering's one task (``ONE_TASK_ROWS``)."""
    changed = reads.changed_rows
    return changed is not None and changed <= ONE_TASK_ROWS


def netting_partitions(
    reads: CaptureReads, columns: Sequence[mt.Column], session: int | None
) -> int | None:
    """The shuffle partitions of the multiset difference: None (the session's,
    ``session``) unless the rows read, at their width in memory, need more than that
    (``PARTITION_BYTES`` each). None too when either is not known (the SQL path)."""
    if session is None or reads.rows is None:
        return None
    fields = len(columns) + len(reads.commits)  # a sign column per commit
    variable = sum(1 for c in columns if not _fixed_width(c.type))
    width = 8 * ((fields + 63) // 64) + 8 * fields + VARIABLE_BYTES * variable
    wanted = -(-reads.rows * width // PARTITION_BYTES)
    return wanted if wanted > session else None


def _fixed_width(spark_type: str) -> bool:
    if spark_type.startswith("decimal("):
        return int(spark_type[len("decimal(") :].split(",")[0]) <= 18
    return spark_type in _FIXED_TYPES


def _commit_map(reads: CaptureReads, start_sequence: int, first: str) -> str:
    """The map literal from each commit's ordinal to its snapshot id (``xid__``), the
    run's first sequence (``base__``) and stamp (``stamp__``)."""
    commits = [(o, info.snapshot_id) for o, info in reads.commits] or [(0, 0)]
    run = f"'base__', {start_sequence}L, 'stamp__', {first}"
    return "map(" + ", ".join(f"{o}, named_struct('xid__', {x}L, {run})" for o, x in commits) + ")"


def _net(
    columns: Sequence[mt.Column],
    reads: CaptureReads,
    *,
    netted: bool,
    keys: Sequence[str],
    partitions: int | None = None,
) -> list[str]:
    """CTEs ending in ``net``: each changed row of each commit, ``n__`` times (< 0: removed).

    ``netted``: each distinct row once per commit, rows a commit both removed and added
    cancelled. Otherwise each row read, once per commit it counts for: a commit's identical
    removed and added images are left for the pairing by key to cancel.

    ``keys``: a keyed log's key columns. The rows are distributed by key before the
    multiset difference, so that the pairing by key that follows finds them already in
    place: one shuffle for both aggregations, not two.

    ``partitions``: the multiset difference's shuffle partitions (None: the session's).
    A key-less log's rows are distributed by all their columns then, as the aggregation
    would: still one shuffle."""
    names = [c.name for c in columns]
    sel = ", ".join(ident(n) for n in names)
    ordinals = [o for o, _ in reads.commits]
    if not reads.sources:
        return [
            f"net AS (SELECT 0 AS ord__, {sel}, 0 AS n__ FROM (SELECT {_nulls(columns)}) WHERE FALSE)"
        ]
    if not reads.removes:
        # Only inserts (appends): every row read is one added row of its commit.
        return [
            "net AS ("
            + "\n  UNION ALL ".join(
                f"SELECT {next(iter(r.signs))} AS ord__, {sel}, 1 AS n__ FROM ({r.sql}) r__"
                for r in reads.sources
            )
            + ")"
        ]
    src = (
        "src AS ("
        + "\n  UNION ALL ".join(
            f"SELECT {sel}, {_signs(r, ordinals)} FROM ({r.sql}) r__" for r in reads.sources
        )
        + ")"
    )
    if not netted:
        return [src, _per_commit("src", "s", names, ordinals)]
    # Each distinct row once, with its count in each commit (-1 removed, +1 added): rows a
    # commit removed and added again (copy-on-write carry-overs) count 0 there and are
    # dropped; the rest were deleted (n__ < 0) or inserted (n__ > 0), |n__| times.
    placed = _placed("src", keys or [ident(n) for n in names], partitions, by_key=bool(keys))
    return [src, _counted(columns, placed, ordinals), _per_commit("w", "n", names, ordinals)]


def _counted(columns: Sequence[mt.Column], placed: str, ordinals: Sequence[int]) -> str:
    """The CTE ``w``: each distinct row of ``placed`` once, with its count in each commit.
    A FLOAT or DOUBLE -0.0 (or a value holding one) is a row of its own and keeps its
    sign: GROUP BY takes it for 0.0 and returns 0.0, ``first`` the value as read
    (``sqltext.sign_key``)."""
    counts = ", ".join(f"sum(s{o}__) AS n{o}__" for o in ordinals)
    signed = [c for c in columns if holds_float(c.type)]
    groups = [ident(c.name) for c in columns] + [sign_key(ident(c.name), c.type) for c in signed]
    kept = ", ".join(
        f"first({ident(c.name)}) AS {ident(c.name)}" if c in signed else ident(c.name)
        for c in columns
    )
    return f"w AS (SELECT {kept}, {counts} FROM {placed} GROUP BY {', '.join(groups)})"


def _signs(source: RowSource, ordinals: Sequence[int]) -> str:
    """A row source's sign in each commit (``s{o}__``), by row when it carries ``ord__``."""
    if source.by_row:
        return ", ".join(
            f"IF(r__.ord__ = {o}, {source.signs.get(o, 0)}, 0) AS s{o}__" for o in ordinals
        )
    return ", ".join(f"{source.signs.get(o, 0)} AS s{o}__" for o in ordinals)


def _placed(relation: str, by: Sequence[str], partitions: int | None, *, by_key: bool) -> str:
    """``relation`` distributed for the multiset difference: over ``partitions`` (None:
    the session's) by ``by``; with the session's, a key-less log's (``by_key`` False)
    is left to its aggregation's own shuffle."""
    if partitions is not None:
        return f"(SELECT /*+ REPARTITION({partitions}, {', '.join(by)}) */ * FROM {relation})"
    if by_key:
        return f"(SELECT * FROM {relation} DISTRIBUTE BY {', '.join(by)})"
    return relation


def _per_commit(relation: str, count: str, names: Sequence[str], ordinals: Sequence[int]) -> str:
    """The ``net`` CTE: each row of ``relation`` once for each commit ``o`` whose count
    column ``{count}{o}__`` is not 0 there, as ``n__``."""
    per = ", ".join(f"named_struct('ord__', {o}, 'n__', {count}{o}__)" for o in ordinals)
    cols = ", ".join(f"{relation}.{ident(n)}" for n in names)
    return (
        f"net AS (SELECT e__.ord__, {cols}, e__.n__ FROM {relation} "
        f"LATERAL VIEW inline(filter(array({per}), x__ -> x__.n__ <> 0)) e__)"
    )


def _images(
    config: LogConfig,
    columns: Sequence[mt.Column],
    removes: bool,
    commits: str,
    *,
    one_task: bool,
) -> list[str]:
    """CTEs ending in ``o``: the log rows' images, before they are numbered. A keyed log
    pairs a commit's old and new image of one key into an update (``one_task``: in one
    task, ``ONE_TASK_ROWS``)."""
    log_cols = list(config.columns)
    keyed = not config.keyless
    if keyed and removes:
        key_only = not [c for c in config.logged_columns if c not in config.key_columns]
        return _pair_by_key(config, columns, log_cols, key_only, commits, one_task=one_task)
    ncols = len(columns)
    delete_vector = cv.sql_bytes(cv.delete_vector(ncols))
    insert_vector = cv.sql_bytes(cv.insert_vector(ncols))
    sel_log = ", ".join(ident(c) for c in log_cols)
    return [
        "o AS (\n  "
        f"SELECT ord__, IF(n__ < 0, 0, 1) AS half__, {sel_log}, "
        "IF(n__ < 0, 'D', 'I') AS dmltype__, IF(n__ < 0, 'O', 'N') AS old_new__, "
        f"IF(n__ < 0, {delete_vector}, {insert_vector}) AS change_vector__ FROM net "
        "LATERAL VIEW explode(sequence(1, abs(n__))) r__ AS rep__)"
    ]


def _select(
    config: LogConfig, columns: Sequence[mt.Column], commits: str, *, unpaired_keys: bool
) -> str:
    """The log rows, numbered in commit order, then by key (or row), old image first.

    ``unpaired_keys``: a keyed log's rows that were not paired by key (commits that only
    added rows), where two rows of one commit with one key stop the statement as the
    pairing does: each row is compared with the one numbered before it, in the numbering's
    own window (the same sort; no other pass over the rows)."""
    log_cols = list(config.columns)
    order_cols = (
        list(config.key_columns)
        if not config.keyless
        else [c.name for c in columns if c.comparable and c.name in log_cols]
    )
    order = ", ".join(["o.ord__", *(f"o.{ident(c)}" for c in order_cols), "o.half__"])
    snaptime = "" if config.commit_scn else "o.c__.stamp__ AS snaptime__, "
    xid = "o.c__.xid__"
    if unpaired_keys:
        keys = [f"o.{ident(k)}" for k in config.key_columns]
        window = f"OVER (ORDER BY {order})"
        same = " AND ".join(
            [f"lag(o.ord__) {window} = o.ord__", *(f"lag({k}) {window} <=> {k}" for k in keys)]
        )
        error = _duplicate_key_error(config, keys, xid)
        xid = f"IF({same}, CAST({error} AS BIGINT), {xid}) AS xid__"
    return (
        f"SELECT {', '.join('o.' + ident(c) for c in log_cols)}, {snaptime}o.dmltype__, "
        "o.old_new__, o.change_vector__, "
        f"o.c__.base__ + row_number() OVER (ORDER BY {order}) AS sequence__, "
        f"{xid}, o.c__.base__ + 1 AS capture__ "
        f"FROM (SELECT *, element_at({commits}, ord__) AS c__ FROM o) o"
    )


def _nulls(columns: Sequence[mt.Column]) -> str:
    return ", ".join(f"CAST(NULL AS {c.type}) AS {ident(c.name)}" for c in columns)


def _compared(
    columns: Sequence[mt.Column], old: Sequence[str], new: Sequence[str]
) -> tuple[str, str]:
    """(The change vector of an update from the ``old`` image's fields to the ``new``
    one's, whether the two images are equal). Struct equality takes a FLOAT or DOUBLE
    -0.0 for 0.0, inside arrays too: an update between them changes (``sqltext.sign_key``)."""
    signed = {i: c.type for i, c in enumerate(columns) if holds_float(c.type)}
    same = ["o__ <=> w__"]
    same += [f"{sign_key(old[i], t)} <=> {sign_key(new[i], t)}" for i, t in signed.items()]
    return cv.sql_update_vector(old, new, signed), " AND ".join(same)


def _pair_by_key(
    config: LogConfig,
    columns: Sequence[mt.Column],
    log_cols: Sequence[str],
    key_only: bool,
    commits: str,
    *,
    one_task: bool,
) -> list[str]:
    """CTEs pairing what is left by key: an old and a new image of one key is an update.
    ``one_task``: the rows go to one task first, where the numbering after the pairing
    finds them (a single partition satisfies both; Spark adds no shuffle between)."""
    keys = [ident(k) for k in config.key_columns]
    names = [c.name for c in columns]
    row = ", ".join(f"{string(n)}, {ident(n)}" for n in names)
    old = [f"o__.{ident(n)}" for n in names]
    new = [f"w__.{ident(n)}" for n in names]
    ncols = len(names)
    delete_vector = cv.sql_bytes(cv.delete_vector(ncols))
    insert_vector = cv.sql_bytes(cv.insert_vector(ncols))
    source = "(SELECT /*+ REPARTITION(1) */ * FROM net)" if one_task else "net"
    vector, same = _compared(columns, old, new)
    ctes = [
        "k AS (SELECT ord__, "
        "sum(IF(n__ < 0, -n__, 0)) AS nold__, sum(IF(n__ > 0, n__, 0)) AS nnew__, "
        f"first(IF(n__ < 0, named_struct({row}), NULL), TRUE) AS o__, "
        f"first(IF(n__ > 0, named_struct({row}), NULL), TRUE) AS w__, "
        f"{', '.join(keys)} FROM {source} GROUP BY ord__, {', '.join(keys)})",
        # An old and a new image that are equal (an update that changed nothing; never
        # left by the multiset difference) cancel. The change vector: once, for both halves.
        "j AS (SELECT k.ord__, nold__ > 0 AS has_old__, nnew__ > 0 AS has_new__, o__, "
        f"w__, {vector} AS cv__, {', '.join(keys)} FROM k "
        f"WHERE NOT (nold__ = 1 AND nnew__ = 1 AND {same}) "
        "AND IF(greatest(nold__, nnew__) > 1, CAST("
        f"{_duplicate_key_error(config, keys, f'element_at({commits}, ord__).xid__')} "
        "AS BOOLEAN), TRUE))",
    ]
    old_cols = ", ".join(f"{string(c)}, o__.{ident(c)}" for c in log_cols)
    new_cols = ", ".join(f"{string(c)}, w__.{ident(c)}" for c in log_cols)
    old_filter = "has_old__ AND NOT has_new__" if key_only else "has_old__"
    new_old_new = "IF(has_old__, 'U', 'N')" if key_only else "'N'"
    halves = (
        f"IF({old_filter}, named_struct('half__', 0, {old_cols}, "
        "'dmltype__', IF(has_new__, 'U', 'D'), 'old_new__', 'O', 'change_vector__', "
        f"IF(has_new__, cv__, {delete_vector})), NULL), "
        f"IF(has_new__, named_struct('half__', 1, {new_cols}, "
        f"'dmltype__', IF(has_old__, 'U', 'I'), 'old_new__', {new_old_new}, "
        f"'change_vector__', IF(has_old__, cv__, {insert_vector})), NULL)"
    )
    ctes.append(
        "o AS (SELECT ord__, h__.* FROM j LATERAL VIEW "
        f"inline(filter(array({halves}), e__ -> e__ IS NOT NULL)) h__)"
    )
    return ctes
