"""Log administration (Oracle's DBMS_MVIEW): PURGE_LOG, PURGE_MVIEW_FROM_LOG,
UNREGISTER_MVIEW, and the end-of-run release of views that are gone.

A log row may go once every view registered on the log has consumed it (the wrap-up's
purge, ``mlog.consumers.purge``). ``purge_log`` may cut deeper, dooming the least recently
refreshed views to a complete refresh: the log remembers how far it was purged, and a view
whose place is before that point is told the rows it needed were purged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dbt.adapters.fastrefresh.engine.refresh import load_view
from dbt.adapters.fastrefresh.errors import FastRefreshError
from dbt.adapters.fastrefresh.mlog import capture
from dbt.adapters.fastrefresh.mlog.consumers import (
    execute_purge,
    plan_purge,
    read_view_state,
    view_positions,
)
from dbt.adapters.fastrefresh.mlog.ddl import (
    load_log,
    load_log_for_write,
    load_log_locked,
    log_lock,
    master_table,
    record_state,
)
from dbt.adapters.fastrefresh.protocol.env import Env
from dbt.adapters.fastrefresh.protocol.state import VIEW_CONFIG, VIEW_STATE, ViewConfig
from dbt.adapters.fastrefresh.registry import store as registry
from dbt.adapters.fastrefresh.runtime.process import Journal
from dbt.adapters.fastrefresh.sqltext import TableName, log_table_for, storage_of, view_of


def purge_log(env: Env, master_name: object, num: object = 1, flag: object = "delete") -> str:
    """DBMS_MVIEW.PURGE_LOG: purge rows needed only by the ``num`` least recently
    refreshed views (``flag='delete'``: at least one), which then need a complete refresh.

    Args:
        master_name: the master whose log to purge (``schema.table``).
        num: how many of the least recently refreshed views may lose rows.
        flag: ``delete`` (at least one view, even with ``num=0``) or ``nop``.
    """
    master = master_table(env, master_name)
    if not isinstance(num, int) or isinstance(num, bool) or num < 0:
        raise FastRefreshError(
            f"purge_log num must be a whole number >= 0, got {num!r}. Fix: num=1."
        )
    if str(flag).lower() not in ("delete", "nop"):
        raise FastRefreshError(
            f"purge_log flag must be 'delete' or 'nop', got {flag!r}. Fix: flag='nop' purges "
            "for the num least recently refreshed views; flag='delete' for at least one, even "
            "when num=0."
        )
    with env.holding([log_lock(log_table_for(master))]):
        log = load_log_for_write(env, master)
        positions = view_positions(env, log)
        claims = log.state.users

        def place(view: str) -> int:
            position = positions.get(view)
            return position.last_sequence if position else claims[view].position

        users = sorted(claims, key=lambda v: (place(v), v))
        count = max(num, 1) if str(flag).lower() == "delete" else num
        plan = plan_purge(log, positions, env.clock(), keep=users[count:])
        if plan is not None:
            execute_purge(env, log, plan)
            env.runtime.journal(env.registry).views.update(plan.doomed)
    rows = plan.rows if plan else 0
    doomed = plan.doomed if plan else ()
    note = f"; now needing a complete refresh: {', '.join(doomed)}" if doomed else ""
    return f"purge_log {master}: deleted {rows} row(s) from {log.log_table}{note}"


def purge_mview_from_log(env: Env, mview_name: object, master_name: object | None = None) -> str:
    """DBMS_MVIEW.PURGE_MVIEW_FROM_LOG: drop one view's claim on its logs (or one master's)
    and purge the rows only it still needed. The view then needs a complete refresh."""
    mview = TableName.parse(mview_name)
    master = master_table(env, master_name) if master_name else None
    candidates = _candidate_masters(env, mview) if master is None else [master]
    messages = []
    for name in candidates:
        with env.holding([log_lock(log_table_for(name))]):
            log = load_log_locked(env, name)
            if log is None or str(mview) not in log.state.users:
                continue
            users = {v: c for v, c in log.state.users.items() if v != str(mview)}
            released = log.__class__(
                log.config, log.state.replace(users=users), log.meta, log.found
            )
            plan = plan_purge(released, view_positions(env, released), env.clock())
            if plan is not None:
                execute_purge(env, released, plan, released=True)
            else:
                record_state(env, released, released.state)
            env.runtime.journal(env.registry).released.add((str(log.log_table), str(mview)))
            env.runtime.journal(env.registry).logs.add(str(name))
            rows = plan.rows if plan else 0
            messages.append(f"{log.log_table}: released, {rows} row(s) purged")
    if not messages:
        where = f" on the log of {master}" if master else " on any log"
        raise FastRefreshError(
            f"{mview} is not registered{where}, so there is nothing to purge. Fix: check the "
            "names (schema.table; the fast_refresh_log_backlog model lists each log's views); "
            "a view purged before registers again at its next complete refresh."
        )
    env.runtime.journal(env.registry).views.add(str(mview))
    return (
        f"purge_mview_from_log {mview}: "
        + "; ".join(messages)
        + "; the view needs a complete refresh to register again"
    )


def _candidate_masters(env: Env, mview: TableName) -> list[TableName]:
    """The masters whose logs may hold a claim of ``mview``: those its state and its
    configuration name, and those the registry shows it on (it may be dropped)."""
    found: set[TableName] = set()
    record = load_view(env, mview, columns=False)
    if record is not None and record.config is not None:
        found.update(record.config.masters)
    state = read_view_state(env, mview)
    for name in state.positions if state else {}:
        found.add(_master_of(TableName.parse(name)))
    for claimed in registry.claimed_logs(env, mview):
        found.add(_master_of(claimed))
    return sorted(found)


def _master_of(log_table: TableName) -> TableName:
    return TableName(log_table.schema, log_table.table.removeprefix("mlog__"))


def unregister_mview(env: Env, mview_name: object) -> str:
    """DBMS_MVIEW.UNREGISTER_MVIEW: forget the view's registration (not its log claims)."""
    mview = TableName.parse(mview_name)
    # Its configuration and state alone, fresh: no columns needed.
    meta = env.tables.load_state(storage_of(mview), fresh=True)
    if meta is None or VIEW_CONFIG not in meta.properties:
        raise FastRefreshError(
            f"{mview} is not a registered materialized view. Fix: check the name "
            "(schema.table); registered views are listed in the fast_refresh registry models."
        )
    state = read_view_state(env, mview, meta)
    env.tables.set_properties(storage_of(mview), {}, remove=[VIEW_CONFIG, VIEW_STATE])
    env.runtime.journal(env.registry).unregistered.add(str(mview))
    claims = sorted(state.positions) if state else []
    note = (
        f"; its claims on {', '.join(claims)} remain (release them with "
        f"fast_refresh.purge_mview_from_log('{mview}'))"
        if claims
        else ""
    )
    return f"unregistered {mview}{note}"


@dataclass(frozen=True)
class ProjectNodes:
    """The dbt project and target a run is of (``<root project's name>:<target schema>``:
    a project's runs on another target, another developer's or production, build other
    views from the same nodes) and the relation of each of its graph's models, by
    unique_id (``release_orphans``)."""

    name: str
    relations: Mapping[str, tuple[TableName, str]]  # (relation, materialized)

    def gone(self, view: TableName, config: ViewConfig) -> str | None:
        """Why no model of this project builds ``view`` any more, which a model of it
        built (its definition records the node); None: one does, or the view is not this
        project's on this target (another project's or target's, or built before the node
        was recorded). A view another model of the project builds now as fast_refresh (the
        model renamed, its alias kept) is kept: its recorded node is the old model's until
        its next complete refresh."""
        if config.dbt_project != self.name or not config.dbt_node:
            return None
        if (view, "fast_refresh") in self.relations.values():
            return None
        now, materialized = self.relations.get(config.dbt_node, (None, None))
        if now is None:
            return (
                f"its model {config.dbt_node} is no longer in this dbt project (removed, "
                f"renamed or disabled; drop the view {view} and its table "
                f"{storage_of(view)} if it is not needed)"
            )
        if now != view:
            return (
                f"its model {config.dbt_node} now builds {now} (its schema or alias "
                f"changed; drop the view {view} and its table {storage_of(view)} if it is "
                "not needed)"
            )
        if materialized != "fast_refresh":
            return (
                f"its model {config.dbt_node} is now materialized as {materialized!r}, no "
                f"longer fast_refresh (its old storage table {storage_of(view)} is no "
                "longer refreshed: drop it if it is not needed)"
            )
        return None


def release_orphans(
    env: Env,
    project: Mapping[TableName, str] | None = None,
    nodes: ProjectNodes | None = None,
) -> list[str]:
    """Release the claims of registered views that no longer hold their logs back.

    Looks at the logs this invocation changed or left for a purge, and those of the
    storage tables its refreshes wrote (``registry.settle_written``). A view registered on
    one is released (``purge_mview_from_log``; its rows purged when no other view needs
    them) when its table is gone or is no longer a fast_refresh view (dropped, or rebuilt
    by another materialization), when its query no longer reads the log's master (its
    model changed: its last refresh read no such log), and, given ``project`` (the dbt
    project's tables and their materializations), when it sits in the schema of one of its
    fast_refresh models but is not one of them: a model removed from the project or
    renamed, whose old table dbt leaves behind, or a model now of another
    materialization, whose storage table stays behind. Given ``nodes``, a view whose
    definition records that a model of this project built it is released in any schema
    once no model of the project builds it (removed, renamed, disabled, or moved to
    another schema or alias). What was done, a line per view. A
    view this process has just refreshed is not read again (``_standing``): what it read
    is in the journal.
    """
    journal = env.runtime.journal(env.registry)
    project_views = (
        None if project is None else {t for t, m in project.items() if m == "fast_refresh"}
    )
    schemas = {v.schema for v in project_views or ()}
    standing = _standing(journal)
    registry.settle_written(env, journal)
    done = []
    for master in sorted(journal.logs | journal.to_purge):
        name = TableName.parse(master)
        log = load_log(env, name, columns=False)  # its users alone
        # A master that is a fast_refresh view's storage is named by the view.
        shown = view_of(name) or master
        log_table = log_table_for(name)
        for user in sorted(log.state.users) if log is not None else []:
            view = TableName.parse(user)
            removed = (
                project_views is not None and view.schema in schemas and view not in project_views
            )
            why: str | None = None
            if user in standing and not removed:
                reads = journal.reads.get(user)
                if reads is not None and str(log_table) not in reads:
                    why = f"its query no longer reads {shown}"
            else:
                why = _orphaned(
                    env, view, log_table, shown, project if removed else None, nodes=nodes
                )
            if why is None:
                continue
            released = purge_mview_from_log(env, view, master)
            done.append(f"released {view} from the log of {shown}: {why} ({released})")
    return done


def _orphaned(
    env: Env,
    view: TableName,
    log_table: TableName,
    shown: object,
    project: Mapping[TableName, str] | None,
    *,
    nodes: ProjectNodes | None = None,
) -> str | None:
    """Why ``view``, registered on ``log_table`` (of master ``shown``), is released from
    it, read from its table; None: it holds its place. ``project``: given when the view is
    not a fast_refresh model of the dbt project, in a schema of one."""
    # Its state alone (no columns: on the SQL path a DESCRIBE fewer per view).
    meta = env.tables.load_state(storage_of(view), fresh=True)
    if meta is None:
        return f"its table {storage_of(view)} is gone"
    if VIEW_CONFIG not in meta.properties:
        return (
            f"its table {storage_of(view)} is no longer a fast_refresh view's "
            "(unregistered, or replaced by another table)"
        )
    if project is not None and view in project:
        # The model is now a table, view ... at the same name: that is the user's now,
        # and only the storage table is left over.
        return (
            f"the model is now materialized as {project[view]!r}, no longer "
            f"fast_refresh (its old storage table {storage_of(view)} is no longer "
            "refreshed: drop it if it is not needed)"
        )
    if project is not None:
        return (
            "it is no longer a model of this dbt project (removed or renamed; drop "
            f"the view {view} and its table {storage_of(view)} if it is not needed)"
        )
    if nodes is not None:
        gone = nodes.gone(view, ViewConfig.from_json(meta.properties[VIEW_CONFIG]))
        if gone is not None:
            return gone
    state = read_view_state(env, view, meta)
    if state is not None and str(log_table) not in state.positions:
        return f"its query no longer reads {shown}"
    return None


def _standing(journal: Journal) -> set[str]:
    """The views this process refreshed since the last publish, the last time with
    success, and did not unregister or release since: the refresh committed their state
    to their tables moments ago, so the release does not read those again (on the SQL
    path two statements a view, on every dbt invocation). A view dropped by another
    process since is released by the next invocation that touches its log."""
    last = {r.mview: r.status for r in journal.refreshes}
    released = {view for _, view in journal.released}
    return (
        {v for v, status in last.items() if status == "SUCCESS"} - journal.unregistered - released
    )


def capture_every_log(env: Env, masters: Sequence[TableName]) -> tuple[str, str | None]:
    """Capture each of ``masters`` (every registered log): (what each capture did, why
    those that failed did). A log that fails (its master dropped or renamed, say) keeps
    none of the others from their capture: a scheduled job capturing every log went no
    further than the first such log."""
    done: list[str] = []
    failed: list[str] = []
    for master in masters:
        try:
            done.append(capture.capture(env, master).message())
        except FastRefreshError as exc:
            failed.append(f"- {log_table_for(master)}: {_capture_failure(env, master, exc)}")
    if not failed:
        return "\n".join(done), None
    return "\n".join(done), (
        f"Capture failed for {len(failed)} of {len(masters)} materialized view logs; the "
        "others were captured:\n" + "\n".join(failed) + "\nFix: as each says; a log "
        "whose master was dropped or renamed for good is dropped with "
        "fast_refresh.drop_mview_log (its views then refresh completely once)."
    )


def _capture_failure(env: Env, master: TableName, exc: FastRefreshError) -> str:
    """Why capture of ``master``'s log failed, as ``capture_every_log`` says it. A log on
    a name a fast_refresh model's view now has was on the table of that name the model
    replaced (left by a refresh that died between the two): the view's error ("a view,
    not a table ... make it a fast_refresh model") sent the user the wrong way."""
    if master_table(env, master) == master:
        return exc.message
    return (
        f"{master} is a fast_refresh model's view now, no longer the table this log was on "
        "(the model replaced that table), so the log can capture nothing again. Fix: dbt "
        "run-operation fast_refresh.drop_mview_log --args "
        f"'{{master: {master}}}' (it drops this log, not the log of the model's storage "
        f"table {storage_of(master)})."
    )
