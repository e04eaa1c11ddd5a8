"""What the live views show (`watch`, `serve`): one read of agents, claims and open errors,
on the library's read-only connection (`Project.live`; `Project.changed` is their poll)."""

from __future__ import annotations

import time
from typing import Any

import apsw

from ..core.errors import USER_AT
from . import queries


def ladder_step(attempts: int) -> str:
    """The error ladder's step as the status line shows it: `2/4`, `4/4`, `4/4+` past the top."""
    return f"{min(attempts, USER_AT)}/{USER_AT}" + ("+" if attempts > USER_AT else "")


def snapshot(conn: apsw.Connection, root: str, session: str | None = None) -> dict[str, Any]:
    """Agents (running first), file claims (contested first) and open errors, now.

    `session` is an id prefix; times are ages in seconds (the caller formats them)."""
    now = time.time()
    prefix = session or ""
    found_agents = [
        {
            "agent": row["agent"],
            "session_id": row["session_id"],
            "type": row["type"],
            "task": row["task"] or None,
            "state": row["state"],
            "age_seconds": row["age_seconds"],
            "silent_seconds": row["silent_seconds"],
            "files": row["files"],
            "reason": row["reason"],
        }
        for row in queries.agents(conn, session=session, limit=100)
    ]
    found_claims = [
        {
            "file_path": row["file_path"],
            "agent": row["agent"],
            "session_id": row["session_id"],
            "operation": row["operation"],
            "lease": row["lease"],
            "contested": bool(row["contested"]),
            "touched_seconds": _age(now, row["last_touched_at"]),
        }
        for row in queries.claims(conn)
        if str(row["session_id"]).startswith(prefix)
    ]
    found_errors = [
        {
            "session_id": row["session_id"],
            "tool": row["tool_name"],
            "category": row["error_category"],
            "what": row["what"],
            "attempts": row["attempts"],
            "step": ladder_step(int(row["attempts"] or 0)),
            "last_seconds": _age(now, row["last_at"]),
        }
        for row in queries.open_errors(conn)
        if str(row["session_id"]).startswith(prefix)
    ]
    return {
        "project": root,
        "session": session,
        "taken_at": now,
        "agents": found_agents,
        "claims": found_claims,
        "open_errors": found_errors,
    }


def _age(now: float, at: object) -> float | None:
    return round(now - at) if isinstance(at, int | float) else None
