"""``Tables`` through Spark SQL statements only: every dbt-spark connection method.

Tables are described with ``SHOW TBLPROPERTIES`` and ``DESCRIBE``, their history read from
the ``.snapshots`` metadata table, the protocol's state set as a table property after each
commit (``ALTER TABLE ... SET TBLPROPERTIES``), and capture's reads planned from the
``.entries`` metadata table at each commit, or ``.all_entries`` (``changes.py``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.iceberg import columns as mt
from dbt.adapters.fastrefresh.iceberg.changes import sql_commit_reads
from dbt.adapters.fastrefresh.iceberg.tables import (
    SUMMARY_STATS,
    CaptureReads,
    History,
    SnapshotInfo,
    TableMeta,
    epoch_millis,
)
from dbt.adapters.fastrefresh.runtime.executor import Executor
from dbt.adapters.fastrefresh.sqltext import REDACTED, TableName, ident, literal, string


class _SqlHistory:
    def __init__(self, x: Executor, name: TableName, keys: Sequence[str]) -> None:
        self.x, self.name, self.keys = x, name, keys
        self._all: dict[int, SnapshotInfo] | None = None

    def get(self, snapshot_id: int) -> SnapshotInfo | None:
        if self._all is None:
            self._all = _sql_snapshots(self.x, self.name, self.keys)
        return self._all.get(snapshot_id)

    @property
    def size(self) -> int | None:
        """The snapshots in the table's metadata, where they have been read (None: not
        yet; no statement for it)."""
        return None if self._all is None else len(self._all)


def _sql_snapshots(x: Executor, name: TableName, keys: Sequence[str]) -> dict[int, SnapshotInfo]:
    wanted = [*SUMMARY_STATS, *keys]
    picks = ", ".join(f"summary[{string(k)}]" for k in wanted)
    # The commit time as milliseconds since the epoch: a TIMESTAMP comes back as each
    # connection shows one (PySpark: a naive datetime in the Python process's local time;
    # a server: text in the session's zone), the number the same everywhere.
    rows = x.query(
        f"SELECT snapshot_id, parent_id, operation, unix_millis(committed_at), {picks} "
        f"FROM {name.metadata('snapshots')}"
    )
    out = {}
    for row in rows:
        summary = {k: str(v) for k, v in zip(wanted, row[4:], strict=True) if v is not None}
        out[int(row[0])] = SnapshotInfo(
            int(row[0]), None if row[1] is None else int(row[1]), str(row[2]),
            None if row[3] is None else epoch_millis(int(row[3])), summary,
        )  # fmt: skip
    return out


def _shown(name: TableName, rows: Sequence[Sequence[Any]]) -> dict[str, str]:
    """``SHOW TBLPROPERTIES`` rows of ``name`` by key. Fails where Spark printed
    ``REDACTED`` in place of one of dbt-fastrefresh's own properties: read so, a log's or a
    view's state is lost to this path (``fast_refresh.master``, a name kept for people and
    read by no one, may be)."""
    properties = {str(row[0]): str(row[1]) for row in rows if len(row) > 1}
    hidden = sorted(
        key
        for key, value in properties.items()
        if value == REDACTED and key.startswith("fast_refresh.") and key != "fast_refresh.master"
    )
    if hidden:
        raise FastRefreshError(
            f"Spark hides {', '.join(hidden)} of {name}: SHOW TBLPROPERTIES prints "
            f"'{REDACTED}' for a property whose key or value matches the session's "
            "redaction patterns (spark.sql.redaction.options.regex, '(?i)url' by default, "
            "and spark.redaction.regex, '(?i)secret|password|token|access[.]key' by "
            "default), and every connection method but `session` reads dbt-fastrefresh's "
            "state so. dbt-fastrefresh writes its properties so that the default patterns "
            "never match them: this value was written by an earlier release (a table, "
            "column or query with one of those words), or the server's patterns are not "
            "the defaults. Fix: make the patterns the defaults again (a session's "
            "spark.sql.redaction.options.regex can be set in the profile's "
            "server_side_parameters); for a value an earlier release wrote, rebuild the "
            "view with `dbt run --full-refresh` (a view's properties are written again), "
            "or drop the log and create it again (drop_mview_log, then create_mview_log; "
            "the views on it rebuild once)."
        )
    return properties


def _field_ids(schema: Mapping[str, Any]) -> dict[str, int]:
    """An Iceberg schema's (JSON) top-level field ids by lowercased name."""
    return {str(f["name"]).lower(): int(f["id"]) for f in schema["fields"]}


def _iceberg_meta(
    name: TableName, columns: tuple[mt.Column, ...], properties: Mapping[str, str]
) -> TableMeta:
    """An Iceberg table's ``TableMeta`` from its ``SHOW TBLPROPERTIES`` rows."""
    current = properties.get("current-snapshot-id", "")
    identifiers = properties.get("identifier-fields", "")
    return TableMeta(
        name, True, "iceberg", columns,
        int(current) if current.lstrip("-").isdigit() else None,
        {k: v for k, v in properties.items() if k.startswith("fast_refresh.")},
        tuple(p.strip().lower() for p in identifiers.strip("[]").split(",") if p.strip()),
    )  # fmt: skip


# Each snapshot's columns, read once per process (``SqlTables.snapshot_schema``).
_SNAPSHOT_COLUMNS: dict[tuple[TableName, int], tuple[mt.Column, ...]] = {}
# Names last found not to be Iceberg tables (views, mostly), in this process
# (``SqlTables.iceberg_table``). It only orders the lookups: no answer depends on it.
_NOT_ICEBERG: set[TableName] = set()


def _described_snapshot(info: Mapping[str, str]) -> str | None:
    """The ``current-snapshot-id`` in ``DESCRIBE TABLE EXTENDED``'s table properties
    (``[k=v,k=v]``; None: not there)."""
    found = re.search(r"(?:^\[|,)current-snapshot-id=([^,\]]*)", info.get("Table Properties", ""))
    return found.group(1) if found else None


def _is_iceberg_table(properties: Mapping[str, str]) -> bool:
    """Whether ``SHOW TBLPROPERTIES`` rows are an Iceberg table's (a view, Iceberg's or
    Spark's, has no ``format``; an Iceberg view's ``table_type`` is ``ICEBERG-VIEW``)."""
    return properties.get("format", "").lower().startswith("iceberg") and "VIEW" not in (
        properties.get("table_type", "").upper()
    )


class SqlTables:
    """``Tables`` through Spark SQL statements only (every connection method)."""

    kind = "sql"

    def __init__(self, x: Executor, state_keys: Sequence[str] = ()) -> None:
        self.x = x
        self.state_keys = tuple(state_keys)
        # Inside ``reading``: each table's first answer (two or three statements a load),
        # and the properties of each Iceberg table read by ``load_state`` (a later ``load``
        # of it then adds its columns alone).
        self._memo: dict[TableName, TableMeta | None] | None = None
        self._properties: dict[TableName, dict[str, str]] = {}
        self._histories: dict[TableName, _SqlHistory] = {}
        # Inside ``reading(keep=...)``: which tables the block keeps (by their properties).
        self._keep: Callable[[Mapping[str, str]], bool] | None = None
        # The properties of names ``iceberg_table`` found not to be Iceberg tables, for
        # the ``view_property`` call that follows it (taken once).
        self._not_tables: dict[TableName, dict[str, str]] = {}

    @contextlib.contextmanager
    def reading(self, keep: Callable[[Mapping[str, str]], bool] | None = None) -> Iterator[None]:
        """Inside the block each table is loaded, its state read and its history read,
        once (a load after a state read adds the columns alone): for a phase that only
        reads, where one log or view is read for each of its users (publishing the
        registry's rows). A write through this object ends the reuse.

        ``keep``: only the tables whose properties it accepts are read once (the others
        at each call, as outside a block), and a write through this object forgets the
        table it writes alone: for a phase that writes tables it does not keep, which
        nothing else writes meanwhile (the publish's purges write logs and keep views'
        storage tables). A block without ``keep`` nested in it reads every table once
        until it ends."""
        if self._memo is not None:  # nested: the outer block's reuse holds
            if self._keep is None or keep is not None:
                yield
                return
            outer, self._keep = self._keep, None
            try:
                yield
            finally:
                self._keep = outer
                self._forget_unkept()
            return
        self._memo, self._keep = {}, keep
        try:
            yield
        finally:
            self._forget()
            self._memo, self._keep = None, None

    def _forget(self, written: TableName | None = None) -> None:
        """After a write (to ``written``): a block that keeps some tables forgets that
        one; any other forgets everything."""
        if self._memo is None:
            return
        if self._keep is not None and written is not None:
            self._memo.pop(written, None)
            self._properties.pop(written, None)
            self._histories.pop(written, None)
            return
        self._memo.clear()
        self._properties.clear()
        self._histories.clear()

    def _forget_unkept(self) -> None:
        """Drop what a nested block read of the tables its outer block does not keep."""
        assert self._memo is not None and self._keep is not None
        kept = {n for n, p in self._properties.items() if self._keep(p)}
        kept |= {n for n, m in self._memo.items() if m is not None and self._keep(m.properties)}
        self._memo = {n: m for n, m in self._memo.items() if n in kept}
        self._properties = {n: p for n, p in self._properties.items() if n in kept}
        self._histories = {n: h for n, h in self._histories.items() if n in kept}

    def _kept(self, properties: Mapping[str, str]) -> bool:
        """Whether the block reads a table of these properties once."""
        return self._memo is not None and (self._keep is None or self._keep(properties))

    def load(self, name: TableName, *, fresh: bool = False) -> TableMeta | None:
        if self._memo is None:
            return self._load(name, fresh=fresh)
        if name not in self._memo:
            meta = self._load(name, fresh=fresh)
            if self._keep is not None and (meta is None or not self._keep(meta.properties)):
                return meta
            self._memo[name] = meta
        return self._memo[name]

    def load_state(self, name: TableName, *, fresh: bool = False) -> TableMeta | None:
        """``load`` without the columns (``SHOW TBLPROPERTIES`` alone, no ``DESCRIBE``)."""
        if self._memo is not None and name in self._memo:
            return self._memo[name]
        if self._memo is not None and name in self._properties:
            return _iceberg_meta(name, (), self._properties[name])
        try:
            if fresh:
                self.x.execute(f"REFRESH TABLE {name.sql}")
            rows = self.x.query(f"SHOW TBLPROPERTIES {name.sql}")
        except Exception as exc:
            if mt.is_missing(exc):
                return None
            raise
        properties = _shown(name, rows)
        if not _is_iceberg_table(properties):
            # Not an Iceberg table (or a view): its kind and columns take the full load.
            return self.load(name, fresh=False)
        if self._kept(properties):
            self._properties[name] = properties
        return _iceberg_meta(name, (), properties)

    def columns(self, name: TableName, *, own_write: bool = False) -> tuple[mt.Column, ...] | None:
        """One ``DESCRIBE`` (inside ``reading``: a load's answer, if there was one, unless
        ``own_write``). After this session's own write, no ``REFRESH TABLE`` first: its
        catalog saw the commit; what a ``reading`` block held of the table is forgotten."""
        if own_write:
            self._forget(name)
        loaded = self._memo.get(name) if self._memo is not None else None
        if loaded is not None:
            return loaded.columns
        described = mt.describe(self.x, name)
        return None if described is None else tuple(described[0])

    def _load(self, name: TableName, *, fresh: bool) -> TableMeta | None:
        known = self._properties.get(name) if self._memo is not None else None
        if fresh and known is None:
            # Another writer may have committed since this session cached the table: its
            # catalog answers DESCRIBE from the cache too, so the columns are read after
            # the refresh, with the snapshot (a column added meanwhile is not missed).
            try:
                self.x.execute(f"REFRESH TABLE {name.sql}")
            except Exception as exc:
                if mt.is_missing(exc):
                    return None
                raise
        described = mt.describe(self.x, name)
        if described is None:
            return None
        columns, info = described
        if info.get("Type", "").upper() == "VIEW":  # an Iceberg view's table_type is ICEBERG-VIEW
            return TableMeta(name, False, "view", tuple(columns), None, {})
        provider = info.get("Provider", "").lower()
        iceberg = (
            provider == "iceberg"
            or "table_type=iceberg" in info.get("Table Properties", "").lower()
        )
        if not iceberg:
            return TableMeta(name, False, provider, tuple(columns), None, {})
        _NOT_ICEBERG.discard(name)
        if known is not None:  # read in this ``reading`` block: its columns were missing
            return _iceberg_meta(name, tuple(columns), known)
        properties = _shown(name, self.x.query(f"SHOW TBLPROPERTIES {name.sql}"))
        return _iceberg_meta(name, tuple(columns), properties)

    def history(self, name: TableName) -> History:
        if self._memo is None or (
            self._keep is not None and name not in self._memo and name not in self._properties
        ):
            return _SqlHistory(self.x, name, self.state_keys)
        return self._histories.setdefault(name, _SqlHistory(self.x, name, self.state_keys))

    def set_properties(
        self, name: TableName, values: Mapping[str, str], *, remove: Sequence[str] = ()
    ) -> None:
        self._forget(name)
        if values:
            listed = ", ".join(f"{literal(k)}={literal(v)}" for k, v in values.items())
            self.x.execute(f"ALTER TABLE {name.sql} SET TBLPROPERTIES ({listed})")
        if remove:
            listed = ", ".join(literal(k) for k in remove)
            self.x.execute(f"ALTER TABLE {name.sql} UNSET TBLPROPERTIES IF EXISTS ({listed})")

    @contextlib.contextmanager
    def summary(self, values: Mapping[str, str]) -> Iterator[bool]:
        yield False

    def iceberg_table(self, name: TableName) -> TableMeta | None:
        """``REFRESH TABLE``, then ``SHOW TBLPROPERTIES``, which tell an Iceberg table
        from a view; a table's columns then (``DESCRIBE``): three statements, where asking
        for the view property first and then loading the table fresh took four. A view's
        properties answer the ``view_property`` call that follows, and its name goes to
        ``view_property`` at once the next time (one statement, as before). The refresh
        also drops this session's cached copy of a table that another session has since
        replaced with a view, so that the view is read as one."""
        if name in _NOT_ICEBERG:
            return None
        try:
            self.x.execute(f"REFRESH TABLE {name.sql}")
        except Exception as exc:
            if not mt.is_missing(exc):
                # Not every catalog refreshes a view ("No plan for RefreshTable": Iceberg's
                # views in a JDBC catalog): this path cannot tell. ``view_property`` is
                # asked, and a table's own fresh load would fail as this did.
                _NOT_ICEBERG.add(name)
            return None
        properties = self._show_properties(name)
        if properties is None:
            return None
        if not _is_iceberg_table(properties):
            _NOT_ICEBERG.add(name)
            self._not_tables[name] = properties
            return None
        described = mt.describe(self.x, name)
        if described is None:  # dropped since
            return None
        columns, info = described
        if _described_snapshot(info) != properties.get("current-snapshot-id"):
            # A commit came between the two reads (on a catalog that caches no table):
            # the properties again, after the columns, in a load's order, so that the
            # columns are never of a later snapshot than the one read.
            properties = self._show_properties(name)
            if properties is None:
                return None
        meta = _iceberg_meta(name, tuple(columns), properties)
        if self._kept(properties):
            assert self._memo is not None
            self._memo[name] = meta
        return meta

    def _show_properties(self, name: TableName) -> dict[str, str] | None:
        """``SHOW TBLPROPERTIES`` (None: no such table or view)."""
        try:
            rows = self.x.query(f"SHOW TBLPROPERTIES {name.sql}")
        except Exception as exc:
            if mt.is_missing(exc):
                return None
            raise
        return _shown(name, rows)

    def view_property(self, name: TableName, key: str) -> str | None:
        return self.view_entry(name, key)[1]

    def view_entries(self, name: TableName, keys: Sequence[str]) -> tuple[bool, dict[str, str]]:
        known = self._not_tables.pop(name, None)
        if known is None:
            known = self._show_properties(name)
        if known is None:
            return False, {}
        return True, {k: known[k] for k in keys if k in known}

    def view_entry(self, name: TableName, key: str) -> tuple[bool, str | None]:
        known = self._not_tables.pop(name, None)
        if known is not None:  # just read by ``iceberg_table``
            return True, known.get(key)
        try:
            rows = self.x.query(f"SHOW TBLPROPERTIES {name.sql} ({literal(key)})")
        except Exception as exc:  # a missing view is an error of Spark's, not ours
            if mt.is_missing(exc):
                return False, None
            raise
        # A missing property (of a view or a table) comes back as a sentence in the value
        # column.
        value = _shown(name, rows).get(key)
        return True, None if value is None or "does not have property" in value else value

    def snapshot_schema(
        self, name: TableName, snapshot: int, current: Sequence[mt.Column]
    ) -> mt.AtSnapshot | None:
        """One ``DESCRIBE QUERY`` (planned, not run; kept for the process: a snapshot's
        schema never changes), matched to ``current`` by name. When names cannot tell a
        rename from a drop and an add (``mt.ambiguous``), two statements more read the
        field ids from the table's current metadata file (``_with_field_ids``)."""
        key = (name, snapshot)
        if key not in _SNAPSHOT_COLUMNS:
            rows = self.x.query(f"DESCRIBE QUERY SELECT * FROM {name.sql} VERSION AS OF {snapshot}")
            _SNAPSHOT_COLUMNS[key] = tuple(
                mt.Column(str(r[0]).lower(), str(r[1]).lower().replace(" ", "")) for r in rows
            )
        then: Sequence[mt.Column] = _SNAPSHOT_COLUMNS[key]
        if mt.ambiguous(current, then):
            current, then = self._with_field_ids(name, snapshot, current, then)
        return mt.at_snapshot(current, then)

    def _with_field_ids(
        self,
        name: TableName,
        snapshot: int,
        current: Sequence[mt.Column],
        then: Sequence[mt.Column],
    ) -> tuple[list[mt.Column], list[mt.Column]]:
        """``current`` and ``then`` (the columns of ``snapshot``'s schema) with their
        Iceberg field ids, from the table's metadata file (read as text: SQL shows field
        ids nowhere else)."""
        try:
            rows = self.x.query(
                f"SELECT file FROM {name.metadata('metadata_log_entries')} "
                "ORDER BY timestamp DESC LIMIT 1"
            )
            path = str(rows[0][0]).replace("`", "``")
            text = "\n".join(str(r[0]) for r in self.x.query(f"SELECT value FROM text.`{path}`"))
            metadata = json.loads(text)
            schemas = {int(s["schema-id"]): s for s in metadata["schemas"]}
            at = next(s for s in metadata["snapshots"] if int(s["snapshot-id"]) == snapshot)
            now_ids = _field_ids(schemas[int(metadata["current-schema-id"])])
            then_ids = _field_ids(schemas[int(at["schema-id"])])
            with_ids = (
                [dataclasses.replace(c, field_id=now_ids[c.name.lower()]) for c in current],
                [dataclasses.replace(c, field_id=then_ids[c.name.lower()]) for c in then],
            )
        except Exception as exc:
            gone = sorted({c.name for c in then} - {c.name for c in current})
            new = sorted({c.name for c in current} - {c.name for c in then})
            raise FastRefreshError(
                f"{name}: column(s) {', '.join(gone)} of its snapshot {snapshot} are gone and "
                f"column(s) {', '.join(new)} are new since, with no commit between: renamed, "
                "or dropped and added? Only Iceberg's field ids tell, and the SQL path could "
                f"not read them from the table's metadata file ({exc}). Fix: make a commit to "
                f"{name} (its next write), or refresh through a connection with "
                "method: session, which reads them from Iceberg's API."
            ) from exc
        return with_ids

    @contextlib.contextmanager
    def capture_reads(
        self,
        master: TableName,
        columns: Sequence[mt.Column],
        key_columns: Sequence[str],
        snapshots: Sequence[SnapshotInfo],
        *,
        absent: Mapping[int, mt.AtSnapshot] | None = None,
        history: History | None = None,
    ) -> Iterator[CaptureReads]:
        size = history.size if isinstance(history, _SqlHistory) else None
        yield sql_commit_reads(
            self.x, master, columns, key_columns, snapshots, absent=absent, history_size=size
        )

    def delete_through(
        self, name: TableName, column: str, value: int, summary: Mapping[str, str]
    ) -> bool:
        # Spark deletes whole files by metadata when the condition covers them; otherwise
        # it rewrites them, which is still exact: the SQL path has no cheaper way to know.
        self._forget(name)
        self.x.execute(f"DELETE FROM {name.sql} WHERE {ident(column)} <= {int(value)}")
        return True
