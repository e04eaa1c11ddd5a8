"""`prune`: what it would delete (asked before anything goes), then the deletion and the space
it gave back. The rows themselves are deleted by each table's own writer (core/events.py,
memories, state, frames); this module counts, orders and measures."""

from __future__ import annotations

import os
import time
from typing import Any

import apsw

from ..core import db
from ..core.paths import db_path

STATE_KEEP = 20  # `prune` keeps at least this many changes of each state key

# The sessions whose raw records go: ended before ?1.
OLD_SESSIONS = "SELECT session_id FROM sessions WHERE status = 'ended' AND ended_at < ?1"


def plan(conn: apsw.Connection, root: str, before: float) -> dict[str, Any]:
    """What `run` would delete, counted without deleting: rows per table, the sessions they
    belong to (those that ended before `before`), and the workspace snapshot store's size
    (what is freed there depends on what other frames still point at)."""
    from ..core import memories
    from ..core import state as project_state
    from ..core.events import UNATTRIBUTED

    counts = {
        table: _count(
            conn, f"SELECT count(*) FROM {table} WHERE session_id IN ({OLD_SESSIONS})", before
        )
        for table in ("events", "hook_events")
    }
    # and the events of no session (other tools') that arrived before, with their audit rows
    counts["events"] += _count(conn, f"SELECT count(*) FROM ({UNATTRIBUTED})", before)
    counts["hook_events"] += _count(
        conn,
        f"SELECT count(*) FROM hook_events WHERE session_id IS NULL AND event_id IN"
        f" ({UNATTRIBUTED})",
        before,
    )
    counts["context_snapshots"] = _count(
        conn,
        f"SELECT count(*) FROM context_snapshots WHERE session_id IN ({OLD_SESSIONS}) AND id NOT"
        " IN (SELECT max(id) FROM context_snapshots GROUP BY session_id)",
        before,
    )
    counts["workspace_snapshot_pointers"] = _count(
        conn,
        "SELECT count(*) FROM vcs_tags WHERE status = 'captured'"
        f" AND session_id IN ({OLD_SESSIONS})",
        before,
    )
    cap = _memory_cap(root)
    # Their own rules decide which memories and state changes go: run them, then roll back.
    counts["memories"] = _rolled_back(conn, lambda: memories.prune(conn, before, cap))
    counts["state_history"] = _rolled_back(
        conn, lambda: project_state.prune_history(conn, before, STATE_KEEP)
    )
    from ..core import recall

    global_conn = recall.open_global()
    if global_conn is not None:
        try:
            counts["global_memories"] = _rolled_back(
                global_conn, lambda: memories.prune(global_conn, before, cap)
            )
        finally:
            global_conn.close()
    from .snapshots import workspace

    return {
        "older_than_days": round(max(0.0, time.time() - before) / 86400, 6),
        "before": before,
        "sessions": _count(conn, f"SELECT count(*) FROM ({OLD_SESSIONS})", before),
        "rows": counts,
        "database_bytes": database_bytes(root),
        "snapshot_store_bytes": workspace.size_bytes(root),
    }


def run(conn: apsw.Connection, root: str, before: float, vacuum: bool) -> dict[str, Any]:
    """Delete what `plan` counted, of the sessions that ended before `before` (a session not
    ended, its session memories and what it was given, and what a revert's undo needs always
    stay); the rows removed and the space before and after: the database file with its WAL,
    and the snapshot store. Without `vacuum` the freed pages stay inside the file for new
    rows (`free_inside_bytes`); with it they go back to the disk.
    Never on the word of a database this user's claude-session did not write: which snapshots
    it keeps decides which go (core/trust.py; trust.NotOurs says why)."""
    from ..core import events as event_log
    from ..core import trust
    from ..core.paths import db_path

    trust.require_ours(db_path(root), conn, "pruned")
    from ..core import frames, memories, recall
    from ..core import state as project_state
    from ..core.config import megabytes
    from . import config_file
    from .snapshots import workspace

    size_before = database_bytes(root)
    counts = event_log.prune(conn, before)
    values = config_file.load_or_defaults(root).values
    snapshots = workspace.prune_workspace(conn, root, megabytes(values, "snapshot_store_max_mb"))
    cap = _memory_cap(root)
    with db.Immediate(conn):
        counts["memories"] = memories.prune(conn, before, cap)
        counts["state_history"] = project_state.prune_history(conn, before, STATE_KEEP)
    global_conn = recall.open_global()
    if global_conn is not None:
        try:
            with db.Immediate(global_conn):
                counts["global_memories"] = memories.prune(global_conn, before, cap)
        finally:
            global_conn.close()
    while frames.pack_states(conn):  # states the capture process has not packed yet
        pass
    if vacuum:
        conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    page = _count(conn, "PRAGMA page_size")
    return {
        "rows_removed": counts,
        "database_bytes_before": size_before,
        "database_bytes_after": database_bytes(root),
        "free_inside_bytes": _count(conn, "PRAGMA freelist_count") * page,
        "vacuumed": vacuum,
        "workspace_snapshots": snapshots,
    }


def database_bytes(root: str) -> int:
    """The database file and its WAL, as they take space on the disk now."""
    path = db_path(root)
    return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))


def _count(conn: apsw.Connection, sql: str, *params: Any) -> int:
    found = conn.execute(sql, params).fetchall()
    return db.as_int(found[0][0]) if found else 0


class _DryRun(Exception):
    def __init__(self, count: int) -> None:
        self.count = count


def _rolled_back(conn: apsw.Connection, delete: Any) -> int:
    """How many rows `delete` removes, in a transaction rolled back: none are removed."""
    try:
        with db.Immediate(conn):
            raise _DryRun(int(delete()))
    except _DryRun as done:
        return done.count


def _memory_cap(root: str) -> int:
    from . import config_file

    return int(float(config_file.load_or_defaults(root).values["memory_max_count"]))  # type: ignore[arg-type]


class PurgeError(ValueError):
    """A path `prune --purge` cannot take: one line that says why."""


def purge_path(root: str, given: str) -> str:
    """`given` as a path in the project: absolute; or relative to the current folder when
    that is in the project, else to the project (`--project` from elsewhere)."""
    if not given or any(c in given for c in "\n\r\0"):
        raise PurgeError(f"{given!r}: not a path")
    top = os.path.realpath(root)
    here = os.path.realpath(os.getcwd())
    base = here if here == top or here.startswith(top.rstrip("/") + "/") else top
    full = os.path.realpath(os.path.join(base, given))
    relative = os.path.relpath(full, top)
    if relative == "." or relative.startswith(".." + os.sep) or relative == "..":
        raise PurgeError(f"{given}: not a path inside the project {root}")
    return relative.replace(os.sep, "/")


def purge_plan(root: str, path: str) -> dict[str, Any]:
    """How many snapshots hold `path` now, counted without changing anything."""
    from .snapshots import snapshot_over, workspace

    commits = sorted(set(workspace.refs(root).values()))
    holding = sum(snapshot_over.holds(root, commits, path))
    return {"path": path, "snapshots_holding": holding, "left_out_by_rule": _rule(root, path)}


def purge(conn: apsw.Connection, root: str, path: str) -> dict[str, Any]:
    """Take `path`'s content (a file, or a folder's) out of every snapshot: the snapshots that
    held it are rewritten without it, the frames and revert records point at the new ones,
    the old ones are let go and git frees their space. The purge is recorded, so a revert
    never reads the path's absence from a rewritten snapshot as "delete it"."""
    from ..core import frames
    from .snapshots import snapshot_over, workspace

    before = workspace.size_bytes(root)
    renamed = snapshot_over.rewrite_without(root, path)
    with db.Immediate(conn):
        frames.rename_snapshots(conn, renamed, path, time.time())
    workspace.prune(root, frames.kept_commits(conn))
    commits = sorted(set(workspace.refs(root).values()))
    return {
        "path": path,
        "snapshots_rewritten": len(renamed),
        "snapshots_still_holding": sum(snapshot_over.holds(root, commits, path)),
        "bytes_before": before,
        "bytes_after": workspace.size_bytes(root),
        "left_out_by_rule": _rule(root, path),
    }


def _rule(root: str, path: str) -> str | None:
    """The snapshot rule that keeps `path` out of future snapshots, or None: it will be
    captured again while it is in the project."""
    from .snapshots import snapshot_rules

    return snapshot_rules.left_out(root, [path]).get(path)
