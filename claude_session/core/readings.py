"""What the store holds about a session, read as plain data: the state a snapshot keeps at
PreCompact and SessionEnd, and what the composers (`context`, the services) put into words.

Reads only, and imports no writer and no composer: the writers (`store`) and the composers
(`context`) both read through here, so neither reaches into the other. Standard library and
apsw only.
"""

import apsw

from .db import rows

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from typing import Any

# An entry still counts toward its ladder until it is fixed or abandoned; what a finished
# session abandoned is still unfixed for the next one.
OPEN = "(resolution IS NULL OR resolution IN ('escalated_research', 'escalated_user'))"
UNFIXED = "(resolution IS NULL OR resolution != 'auto_fixed')"
# A session the daemon ended because it never said SessionEnd: silent past the idle time, or
# its Claude Code process gone (core/staleness.py writes these reasons).
CLAUDE_EXITED = "Claude Code exited without SessionEnd"
NEVER_ENDED = f"(end_reason LIKE 'session gone:%' OR end_reason = '{CLAUDE_EXITED}')"


def gather(conn: apsw.Connection, session_id: str, now: float) -> "dict[str, Any]":
    """Everything worth restoring about one session, as plain JSON-ready data."""
    return {
        "session_id": session_id,
        "gathered_at": now,
        "task": rows(
            conn,
            "SELECT prompt, submitted_at FROM (SELECT id, prompt, submitted_at FROM prompts"
            " WHERE session_id = ? ORDER BY id DESC LIMIT 5) ORDER BY id",
            (session_id,),
        ),
        "agents": live_agents(conn, session_id),
        "claims": rows(
            conn,
            # Every file the session changed, held or since released: the model needs them all.
            "SELECT file_path, agent_id, operation, edits, last_touched_at FROM file_claims"
            " WHERE session_id = ? ORDER BY last_touched_at DESC",
            (session_id,),
        ),
        "errors": open_errors(conn, session_id),
        "failed_paths": failed_paths(conn, now, session_id),
    }


def live_agents(conn: apsw.Connection, session_id: str) -> "list[dict[str, Any]]":
    return rows(
        conn,
        "SELECT id, agent_type, description, task_description, status, last_seen_at, tool_uses"
        " FROM agent_registry WHERE session_id = ? AND status = 'running' AND is_internal = 0"
        " ORDER BY last_seen_at DESC",
        (session_id,),
    )


def finished_agents(conn: apsw.Connection, session_id: str) -> "list[dict[str, Any]]":
    """The session's subagents that finished: what each was asked and what it reported."""
    return rows(
        conn,
        "SELECT id, agent_type, description, task_description, status, last_message, ended_at"
        " FROM agent_registry WHERE session_id = ? AND status != 'running' AND is_main = 0"
        " AND is_internal = 0 ORDER BY ended_at DESC LIMIT 20",
        (session_id,),
    )


def open_errors(
    conn: apsw.Connection, session_id: str, include_abandoned: bool = False
) -> "list[dict[str, Any]]":
    """Unfixed errors, one line per ladder, with how many attempts failed so far. A session
    that is over abandoned its open ones: for the next session they are still unfixed, and
    `abandoned` / `ended_at` say that its session ended with them open."""
    unfixed = UNFIXED if include_abandoned else OPEN
    return rows(
        conn,
        # total(), not max(): a third max() could pick the row error_message comes from
        "SELECT signature, tool_name, error_category, file_path, command,"
        " max(attempt_number) AS attempts, error_message, max(occurred_at) AS last_at,"
        " session_id, total(resolution = 'abandoned') > 0 AS abandoned,"
        " (SELECT s.ended_at FROM sessions s WHERE s.session_id = error_log.session_id"
        "  AND s.status = 'ended') AS ended_at"
        f" FROM error_log WHERE session_id = ? AND {unfixed}"
        " AND interrupted = 0 GROUP BY ladder_key"
        " ORDER BY last_at DESC LIMIT 20",
        (session_id,),
    )


# A failed path an earlier version recorded at a check's third failure (its context names the
# ladder: "failed 3 times; ladder test|..."): a check is to be re-run, never avoided.
LEGACY_CHECK_PATH = (
    "(coalesce(f.context, '') GLOB 'failed * times; ladder test|*'"
    " OR coalesce(f.context, '') GLOB 'failed * times; ladder lint|*'"
    " OR coalesce(f.context, '') GLOB 'failed * times; ladder type|*'"
    " OR coalesce(f.context, '') GLOB 'failed * times; ladder build|*')"
)


def failed_paths(
    conn: apsw.Connection, now: float, session_id: str | None = None
) -> "list[dict[str, Any]]":
    """Dead ends still worth knowing: those of `session_id` (the work at hand) and those about
    files it changed first, then the rest of the project's, newest first."""
    return rows(
        conn,
        "SELECT id, approach, reason_failed, file_path, created_at FROM failed_paths f"
        " WHERE still_relevant = 1 AND (expires_at IS NULL OR expires_at > ?1)"
        f" AND NOT {LEGACY_CHECK_PATH}"
        " ORDER BY (f.session_id = ?2) DESC,"
        " EXISTS (SELECT 1 FROM file_claims c WHERE c.session_id = ?2"
        "  AND c.file_path = f.file_path) DESC, created_at DESC, id DESC LIMIT 20",
        (now, session_id),
    )


def latest_snapshot(
    conn: apsw.Connection, session_id: str, kind: str = "pre_compact"
) -> "dict[str, Any] | None":
    found = rows(
        conn,
        "SELECT content, created_at FROM context_snapshots WHERE session_id = ?"
        " AND snapshot_type = ? ORDER BY id DESC LIMIT 1",
        (session_id, kind),
    )
    if not found:
        return None
    import json

    try:
        content = json.loads(found[0]["content"])
    except ValueError:
        return None
    return content if isinstance(content, dict) else None


CRASH_IDLE_SECONDS = 600  # an active session silent this long is taken for crashed
CRASH_LOOKBACK_SECONDS = 7 * 86400

# Sessions that never ended (no SessionEnd): closed by the sweep, or active but long silent.
CRASHED_SQL = (
    "SELECT s.session_id, s.last_activity_at, s.end_reason, s.cwd,"
    " (SELECT summary FROM frames f WHERE f.session_id = s.session_id"
    "  ORDER BY frame_no DESC LIMIT 1) AS last_step,"
    " (SELECT max(frame_no) FROM frames f WHERE f.session_id = s.session_id) AS last_frame,"
    " (SELECT count(*) FROM error_log e WHERE e.session_id = s.session_id AND e.interrupted = 0"
    f"  AND {OPEN}) AS open_errors"
    " FROM sessions s WHERE s.session_id != ?1 AND s.last_activity_at > ?2 - ?3"
    " AND ((s.status = 'active' AND s.last_activity_at < ?2 - ?4)"
    f"  OR {NEVER_ENDED})"
    " ORDER BY s.last_activity_at DESC LIMIT 3"
)


def crashed_sessions(conn: apsw.Connection, session_id: str, now: float) -> "list[dict[str, Any]]":
    """Recent sessions that never ended (crashed, or the terminal was closed), newest first,
    with their last step and the command that resumes them."""
    return rows(conn, CRASHED_SQL, (session_id, now, CRASH_LOOKBACK_SECONDS, CRASH_IDLE_SECONDS))
