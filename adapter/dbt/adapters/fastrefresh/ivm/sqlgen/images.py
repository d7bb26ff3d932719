"""Where a delta's changed rows come from, as signed images of master rows.

On a keyed log, the net change per key is the first old image and the last new image by
``sequence__``; on a key-less log every row counts; when the log lacks a column the view
reads, the images are read from the master by time travel for the changed keys (old: the
snapshot the view reflected, new: the pinned one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dbt.adapters.fastrefresh.ivm.analysis import ViewPlan
from dbt.adapters.fastrefresh.ivm.sqlgen.render import KeyGuard, q
from dbt.adapters.fastrefresh.protocol import changevector as cv
from dbt.adapters.fastrefresh.protocol.keys import added_key_fix, key_error_sql
from dbt.adapters.fastrefresh.sqltext import TableName


@dataclass(frozen=True)
class LogSource:
    """Images from a log range."""

    log_table: TableName
    range_predicate: str
    key_columns: tuple[str, ...]  # empty for a key-less log
    master_columns: tuple[str, ...]  # all master columns at log creation (vector positions)
    logged: tuple[str, ...] = ()  # the master columns the log holds (key included)
    # The log's snapshot the range is read at: the one its refresh's setup read or wrote
    # (None: the current one). A purge after the setup then takes none of the range's rows.
    snapshot: int | None = None
    master: TableName | None = None  # for the messages of its guards (None: the log's name)

    @property
    def relation(self) -> str:
        """The log as the delta reads it: at ``snapshot`` when it is known."""
        if self.snapshot is None:
            return self.log_table.sql
        return f"{self.log_table.sql} VERSION AS OF {self.snapshot}"


@dataclass(frozen=True)
class MasterSource:
    """Images from the master by time travel, for the keys changed in a log range."""

    log: LogSource
    master: TableName
    old_snapshot: int
    new_snapshot: int


Source = LogSource | MasterSource


def cv_skip(columns_read: Sequence[str], log: LogSource) -> str:
    """Skip updates that changed no column the view reads (``change_vector__``)."""
    positions = [log.master_columns.index(c) + 1 for c in columns_read if c in log.master_columns]
    if not positions:
        return "TRUE"
    touches = cv.sql_touches("change_vector__", positions, len(log.master_columns))
    return f"(dmltype__ <> 'U' OR {touches})"


# A key's commit that added it, from its rows in a range (an aggregate): the first row's
# commit when that row is a new image (the key had no row before the range), else NULL.
# Numbers only in the aggregate's buffer: min_by(old_new__, ...) would make Spark sort
# the rows instead of hashing them.
FIRST_ADDED = (
    "IF(min(IF(old_new__ = 'N', sequence__, NULL)) = min(sequence__), "
    "min_by(xid__, sequence__), CAST(NULL AS BIGINT))"
)


def changed_key_ops(log: LogSource) -> str:
    """A SELECT, over the CTEs ``image_ctes`` defines on a keyed log, of each key in the
    range once, with ``__fr_op`` ``'D'`` (its row before the range is to be deleted) or
    ``'C'`` (it had none: ``__fr_added``, the commit that added it, checks the view holds
    no row of it). One aggregate of the range, without the images' sort by key
    (``render.KeyGuard``)."""
    keys = ", ".join(q(k) for k in log.key_columns)
    return (
        f"SELECT {keys}, IF(__fr_added IS NULL, 'D', 'C') AS __fr_op, __fr_added FROM "
        f"(SELECT {keys}, {FIRST_ADDED} AS __fr_added FROM __fr_rng GROUP BY {keys})"
    )


def _prefix(name: str) -> str:
    """The prefix of the CTEs ``image_ctes(..., name)`` defines before ``name``."""
    return "__fr_" if name == "imgs" else f"{name}_"


def changed_keys(source: Source, name: str = "imgs") -> str | None:
    """A SELECT, over the CTEs ``image_ctes(..., name)`` (net) defines, of the keys of
    ``source`` that can have had a row before the range: on a keyed log, every key with an
    old image in the range (any old image, not only the first: a key the range inserted
    has no row yet, so naming it too deletes nothing); from the master, every changed key.
    None for a key-less log. The master's key column names; one row per image, not
    distinct."""
    log = source.log if isinstance(source, MasterSource) else source
    if not log.key_columns:
        return None
    p = _prefix(name)
    keys = ", ".join(q(k) for k in log.key_columns)
    if isinstance(source, MasterSource):
        return f"SELECT {keys} FROM {p}keys"
    return f"SELECT {keys} FROM {p}rng WHERE old_new__ = 'O'"


def _images_only(log: LogSource, where: str) -> str:
    """``where`` (a log range's rows), less a keyed log's 'U' rows: a key-only log writes
    an update as the key alone, unchanged, which changes nothing a view read from the
    log reads (a log of images writes none). Kept, one ended a key's rows in the range,
    and the net window (``image_ctes``) dropped the key's insert before it: the view
    lost the row. (A delta from the master by time travel takes the keys of those rows
    too: ``where`` as it was.)"""
    return f"{where} AND old_new__ <> 'U'" if log.key_columns else where


def image_ctes(
    plan: ViewPlan,
    source: Source,
    columns: Sequence[str] | None = None,
    name: str = "imgs",
    *,
    net: bool = True,
    added: bool = False,
) -> list[str]:
    """CTEs ending in ``name``: the needed master columns plus ``__fr_sign``.

    ``columns``: the master columns to read (default: all the view reads); ``name`` names
    the last CTE and prefixes the others, so several masters' images can sit side by side.
    ``net``: on a keyed log, only each key's net change (its first old and last new
    image). A delta that is linear in its rows (signed sums and counts, the join delta
    rule under them) passes ``net=False`` and takes every image of the range, signed: a
    key's images telescope (each update's new image is the next one's old), so their
    signed sum is the net change, without the window that sorts the range by key.
    ``added``: on a keyed log's net images (``added_log``), each image also carries
    ``__fr_added``, the commit that added its key when the key's first image in the range
    is new (it had no row before the range), else NULL; such a key's last image is kept
    even when it is an old one (signed -1: a check, not a delete; ``added_key_error``).
    """
    log = source.log if isinstance(source, MasterSource) else source
    assert not added or (net and added_log(source) is not None), "no __fr_added to give"
    read = plan.columns_read if columns is None else columns
    cols = list(log.key_columns) + [c for c in read if c not in log.key_columns]
    p = _prefix(name)
    sel = ", ".join(q(c) for c in cols)
    where = f"({log.range_predicate}) AND {cv_skip(read, log)}"
    if isinstance(source, MasterSource):
        keys = ", ".join(q(k) for k in log.key_columns)
        on = " AND ".join(f"m.{q(k)} <=> c.{q(k)}" for k in log.key_columns)
        m = source.master.sql
        msel = ", ".join(f"m.{q(c)}" for c in cols)
        return [
            f"{p}keys AS (SELECT DISTINCT {keys} FROM {log.relation} WHERE {where})",
            f"{p}old AS (SELECT {msel}, -1 AS __fr_sign FROM {m} VERSION AS OF {source.old_snapshot} m "
            f"LEFT SEMI JOIN {p}keys c ON {on})",
            f"{p}new AS (SELECT {msel}, 1 AS __fr_sign FROM {m} VERSION AS OF {source.new_snapshot} m "
            f"LEFT SEMI JOIN {p}keys c ON {on})",
            f"{name} AS (SELECT * FROM {p}old UNION ALL SELECT * FROM {p}new)",
        ]
    where = _images_only(log, where)
    if not log.key_columns or not net:
        # A view that reads no column of a key-less master (`count(*)`, a constant per
        # row) takes the sign alone.
        head = f"{sel}, " if sel else ""
        return [
            f"{name} AS (SELECT {head}IF(old_new__ = 'N', 1, -1) AS __fr_sign "
            f"FROM {log.relation} WHERE {where})"
        ]
    return _net_ctes(log, sel, where, name, added=added)


def _net_ctes(log: LogSource, sel: str, where: str, name: str, *, added: bool) -> list[str]:
    """``image_ctes``'s net change per key of a keyed log's range (rows ``where``): its
    first old image and its last new image. One window (one sort) and one pass; a UNION
    ALL of two passes would read the log twice. ``added``: with ``__fr_added`` (the
    first image's commit when it is new, and the last image of such a key, new or old)."""
    p = _prefix(name)
    part = ", ".join(q(k) for k in log.key_columns)
    window = f"OVER (PARTITION BY {part} ORDER BY sequence__)"
    first, take, last = "", "", ""
    if added:
        first = (
            f", IF(first_value(old_new__) {window} = 'N', first_value(xid__) {window}, "
            "CAST(NULL AS BIGINT)) AS __fr_added"
        )
        take, last = ", __fr_added", " OR (__fr_pos = __fr_n AND __fr_added IS NOT NULL)"
    return [
        f"{p}rng AS (SELECT {sel}, old_new__, sequence__, xid__ FROM {log.relation} WHERE {where})",
        f"{p}ranked AS (SELECT *, row_number() {window} AS __fr_pos, "
        f"count(1) OVER (PARTITION BY {part} ORDER BY sequence__ "
        "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS __fr_n, "
        f"lag(old_new__) {window} AS __fr_prev{first} FROM {p}rng)",
        f"{name} AS (SELECT {sel}, IF(old_new__ = 'O', -1, 1) AS __fr_sign{take} FROM {p}ranked "
        f"WHERE {_added_key_guard(log)} AND ((__fr_pos = 1 AND old_new__ = 'O') OR "
        f"(__fr_pos = __fr_n AND old_new__ = 'N'){last}))",
    ]


def added_log(source: Source) -> LogSource | None:
    """``source`` when ``image_ctes(..., added=True)`` of it gives ``__fr_added``: a keyed
    log's net images. (None: the master read by time travel holds both rows of a key two
    rows share, and a key-less log names no key.)"""
    return source if isinstance(source, LogSource) and source.key_columns else None


def added_key_error(log: LogSource, keys: Sequence[str], added: str) -> str:
    """``raise_error`` of a view row found holding a key a range's commit ``added`` (SQL:
    ``__fr_added``) to ``log``'s master: the key had no row before the range, unless
    another row of the master held it. Capture and the net window see only the rows of
    the range, so a row added with the key of a row added before it, in a range an earlier
    refresh consumed, is found only where the view still holds that row. ``keys``: the
    key's values as SQL."""
    master = log.master or log.log_table
    return key_error_sql(master, keys, added, added_key_fix(master))


def added_key_guard(log: LogSource, columns: Sequence[str]) -> KeyGuard:
    """The ``render.KeyGuard`` of a delta whose ``'C'`` rows carry the view's key
    ``columns`` and the commit that added the key (``__fr_added``) to ``log``'s master."""

    def error(alias: str) -> str:
        values = [f"{alias}.{q(c)}" for c in columns]
        return added_key_error(log, values, "s.__fr_added")

    return KeyGuard(error)


def _added_key_guard(log: LogSource) -> str:
    """A predicate, TRUE but where a key's new image follows another new image with no
    old image between: a commit added a row with a key another row still held, which no
    capture finds (it compares the rows of one commit, not the rest of the master).
    There it raises (``raise_error``, nothing committed), naming the key and the commit:
    the net change would keep one of the two rows (``protocol/keys.added_key_fix``)."""
    master = log.master or log.log_table
    keys = [q(k) for k in log.key_columns]
    error = key_error_sql(master, keys, "xid__", added_key_fix(master))
    return f"IF(old_new__ = 'N' AND __fr_prev = 'N', CAST({error} AS BOOLEAN), TRUE)"
