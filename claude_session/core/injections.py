"""The injection log: every text put in front of the model, verbatim, and when (the one writer
of `injections`; stdlib + apsw).

What a hook answers is built without side effects (runtime/handlers.py); the runtime records
what of it reaches the model once the answer is made, and the MCP server its answers. `restore`
prints the last one, and a resumed or compacted session is told what changed since what it
already holds. Redacted once more before it is stored, like everything else.
"""

import apsw

from .redact import redact

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from typing import Any

RESTORE, CONFLICT, REFUSED_EDIT, MEMORIES, LADDER, JUDGE, MCP = (
    "restore",
    "conflict",
    "refused_edit",
    "memories",
    "ladder",
    "judge",
    "mcp",
)
_BY_EVENT = {
    "SessionStart": RESTORE,
    "UserPromptSubmit": MEMORIES,
    "PreToolUse": CONFLICT,
    "PostToolUse": LADDER,
    "PostToolUseFailure": LADDER,
    "Stop": JUDGE,
    "SubagentStop": JUDGE,
    "TaskCompleted": JUDGE,
}
REFUSED_PREFIX = "claude-session: edits to "  # answers.refused_edit


def model_text(event: str, answer: "Any") -> "tuple[str, str] | None":
    """(kind, text) of what a hook's answer puts before the model, or None: additionalContext,
    a PreToolUse refusal's reason, a Stop block's reason (systemMessage is the user's)."""
    if isinstance(answer, str):  # an exit-2 block's reason (TaskCompleted): the model reads it
        return JUDGE, answer
    if not isinstance(answer, dict):
        return None
    output = answer.get("hookSpecificOutput")
    output = output if isinstance(output, dict) else {}
    text = output.get("additionalContext")
    if isinstance(text, str) and text:
        return _BY_EVENT.get(event, event), text
    reason = output.get("permissionDecisionReason")
    if output.get("permissionDecision") == "deny" and isinstance(reason, str) and reason:
        return (REFUSED_EDIT if reason.startswith(REFUSED_PREFIX) else CONFLICT), reason
    if answer.get("decision") == "block" and isinstance(answer.get("reason"), str):
        return JUDGE, str(answer["reason"])
    return None


def record(
    conn: apsw.Connection,
    at: float,
    session_id: str,
    agent_id: str | None,
    event: str,
    kind: str,
    text: str,
    *,
    source: str | None = None,
    event_id: int | None = None,
    tool_use_id: str | None = None,
) -> int:
    """Keep one injection; returns its id."""
    from .db import Immediate

    stored = redact(text)
    with Immediate(conn):
        conn.execute(
            "INSERT INTO injections (at, session_id, agent_id, event, kind, source, event_id,"
            " tool_use_id, text, chars, timestamp)"
            " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, datetime(?1, 'unixepoch'))",
            (at, session_id, agent_id, event, kind, source, event_id, tool_use_id, stored,
             len(stored)),
        )  # fmt: skip
        return conn.last_insert_rowid()


COLUMNS = "id, at, session_id, agent_id, event, kind, source, event_id, tool_use_id, text, chars"


def latest(
    conn: apsw.Connection, session_id: str, kind: str | None = None
) -> "dict[str, Any] | None":
    """The session's last injection (of `kind`, when given)."""
    from .db import rows

    found = rows(
        conn,
        f"SELECT {COLUMNS} FROM injections WHERE session_id = ?1 AND (?2 IS NULL OR kind = ?2)"
        " ORDER BY at DESC, id DESC LIMIT 1",
        (session_id, kind),
    )
    return found[0] if found else None


def of_session(conn: apsw.Connection, session_id: str) -> "list[dict[str, Any]]":
    """Every injection into the session, oldest first."""
    from .db import rows

    return rows(
        conn,
        f"SELECT {COLUMNS} FROM injections WHERE session_id = ? ORDER BY at, id",
        (session_id,),
    )


def latest_compaction_restore(conn: apsw.Connection) -> "dict[str, Any] | None":
    """The project's last restore after a compaction, whichever session it went to."""
    from .db import rows

    found = rows(
        conn,
        f"SELECT {COLUMNS} FROM injections WHERE kind = 'restore' AND source = 'compact'"
        " ORDER BY at DESC, id DESC LIMIT 1",
    )
    return found[0] if found else None
