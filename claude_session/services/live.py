"""What the live views show (`watch`, `serve`): one read of agents, claims and open errors.

Both views poll: `changed` asks SQLite whether anything committed since the last look
(`PRAGMA data_version`, no table read), so an idle project costs nothing but a pragma.
The connection is read-only (`core.db.connect(readonly=True)`): a view never migrates,
creates or writes the database.
"""

from __future__ import annotations

import os
import time
from typing import Any

import apsw

from ..core import db
from ..core.errors import USER_AT
from ..core.paths import db_path
from . import queries


class NoDatabase(Exception):
    """No database to show (or one that cannot be read): one clear line for the user."""


def open_readonly(root: str) -> apsw.Connection:
    """The project's database, read-only; `NoDatabase` with the reason otherwise."""
    path = db_path(root)
    if not os.path.lexists(path):
        raise NoDatabase(
            f"no claude-session database at {path}: install the hooks with"
            " `claude-session install` and start Claude Code, or try `claude-session demo`"
        )
    try:
        return db.connect(path, readonly=True, create=False)
    except db.DatabaseError as exc:
        raise NoDatabase(f"cannot read {path}: {exc}") from exc


class Changes:
    """Tells whether another connection committed since the last call (cheap: one pragma)."""

    def __init__(self, conn: apsw.Connection) -> None:
        self.conn = conn
        self.seen: int | None = None

    def __call__(self) -> bool:
        value = self.conn.execute("PRAGMA data_version").fetchall()[0][0]
        changed = value != self.seen
        self.seen = value  # type: ignore[assignment]
        return changed


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
