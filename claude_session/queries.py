"""The read API behind the CLI: plain dict rows, short read transactions."""

from __future__ import annotations

import os
import time
from typing import Any

import apsw

from . import context, db, log, spool
from .paths import db_path


def status(conn: apsw.Connection, root: str) -> dict[str, Any]:
    now = time.time()
    path = db_path(root)
    size = sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))
    errors_logged, last_error = log.count_errors(root)
    latest = db.rows(
        conn,
        "SELECT session_id, snapshot_type, trigger, created_at FROM context_snapshots"
        " ORDER BY id DESC LIMIT 1",
    )
    return {
        "database": {
            "path": path,
            "size_bytes": size,
            "schema_version": db.schema_version(conn),
            "events": db.rows(conn, "SELECT count(*) AS n FROM events")[0]["n"],
            "spool_backlog": spool.backlog(root),
            "internal_errors": errors_logged,
            "last_internal_error": last_error,
            "last_snapshot": latest[0] if latest else None,
        },
        "sessions": sessions(conn, limit=5),
        "agents": agents(conn, limit=15),
        "claims": claims(conn),
        "open_errors": open_errors(conn),
        "failed_paths": [
            {k: v for k, v in row.items() if k != "id"} for row in context.failed_paths(conn, now)
        ],
        "hooks": hook_runs(conn),
    }


def sessions(conn: apsw.Connection, limit: int = 20) -> list[dict[str, Any]]:
    return db.rows(
        conn,
        "SELECT s.session_id, s.status, s.start_source AS source, s.started_at,"
        " s.last_activity_at, s.end_reason, m.events, m.prompts, m.tool_calls,"
        " m.tool_failures, m.file_edits, m.subagents, m.compactions"
        " FROM sessions s LEFT JOIN session_metrics m USING (session_id)"
        " ORDER BY s.last_activity_at DESC LIMIT ?",
        (limit,),
    )


def agents(
    conn: apsw.Connection, limit: int = 50, include_internal: bool = False
) -> list[dict[str, Any]]:
    return db.rows(
        conn,
        "SELECT agent_id, agent_type, status, description, task, session_id, last_seen_at,"
        " tool_uses, status_reason FROM agent_registry WHERE is_internal = 0 OR ?"
        " ORDER BY status = 'running' DESC, last_seen_at DESC LIMIT ?",
        (int(include_internal), limit),
    )


def claims(conn: apsw.Connection) -> list[dict[str, Any]]:
    """Active claims; a file held by more than one agent is marked contested."""
    return db.rows(
        conn,
        "SELECT file_path, agent_id, session_id, tool_name, edits, last_touched_at,"
        " (SELECT count(DISTINCT c2.session_id || '/' || c2.agent_id) FROM file_claims c2"
        "  WHERE c2.file_path = c.file_path AND c2.released_at IS NULL) > 1 AS contested"
        " FROM file_claims c WHERE released_at IS NULL ORDER BY last_touched_at DESC",
    )


def open_errors(conn: apsw.Connection) -> list[dict[str, Any]]:
    return db.rows(
        conn,
        "SELECT session_id, tool_name, category, coalesce(command, file_path, signature) AS what,"
        " max(attempt) AS attempts, max(occurred_at) AS last_at FROM error_log"
        " WHERE resolution IS NULL GROUP BY session_id, signature ORDER BY last_at DESC LIMIT 30",
    )


def hook_runs(conn: apsw.Connection) -> dict[str, Any]:
    summary = db.rows(
        conn,
        "SELECT count(*) AS runs, sum(outcome = 'duplicate') AS duplicates,"
        " sum(outcome = 'spooled') AS replayed_from_spool, round(avg(duration_ms), 1)"
        " AS mean_duration_ms, max(started_at) AS last_run_at FROM hook_events",
    )[0]
    return summary


def events(
    conn: apsw.Connection,
    *,
    session: str | None = None,
    event: str | None = None,
    tool: str | None = None,
    agent: str | None = None,
    limit: int = 50,
    payload: bool = False,
) -> list[dict[str, Any]]:
    """The most recent matching events, oldest first."""
    where, params = [], []
    for column, value in (
        ("session_id", session),
        ("hook_event_name", event),
        ("tool_name", tool),
        ("agent_id", agent),
    ):
        if value:
            where.append(f"{column} = ?" if column != "session_id" else "session_id LIKE ?")
            params.append(value + "%" if column == "session_id" else value)
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    extra = ", payload" if payload else ""
    found = db.rows(
        conn,
        f"SELECT id, received_at, session_id, hook_event_name AS event, tool_name, agent_id,"
        f" tool_use_id, payload_bytes, via{extra} FROM events {clause}"
        f" ORDER BY id DESC LIMIT ?",
        (*params, limit),
    )
    return list(reversed(found))


def latest_session(conn: apsw.Connection) -> str | None:
    found = db.rows(conn, "SELECT session_id FROM sessions ORDER BY last_activity_at DESC LIMIT 1")
    return found[0]["session_id"] if found else None
