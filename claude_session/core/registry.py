"""The agent registry and file claims: writes (part of the store layer; stdlib + apsw).

Every status change goes through `transition`, a compare-and-swap that records when and why:
a late event can never resurrect a finished agent, and a stale agent that speaks again is
revived visibly. The main thread of a session is an agent too (its registry id is the session
id, is_main = 1); its file claims carry agent_id 'main'.
"""

import apsw

from .db import as_opt_text, as_text

MAIN = "main"
RUNNING = "running"
FINISHED = ("completed", "failed")
STALE = "aborted_stale"
EDIT_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")


def claim_owner(agent_id: str | None) -> str:
    """The agent_id a claim or error is recorded under: the subagent's id, or 'main'."""
    return agent_id or MAIN


def registry_id(session_id: str, claim_agent: str) -> str:
    """The agent_registry id behind a claim's agent_id."""
    return session_id if claim_agent == MAIN else claim_agent


def register(
    conn: apsw.Connection,
    agent_id: str,
    session_id: str,
    agent_type: str | None,
    now: float,
    reason: str,
    *,
    status: str = RUNNING,
    internal: bool = False,
    main: bool = False,
) -> bool:
    """Record an agent the first time it shows up; False if it was known already."""
    # A subagent hangs under its session's main thread until its launch says otherwise
    # (`describe`), and runs in the Claude Code process its session has now.
    conn.execute(
        "INSERT INTO agent_registry (id, session_id, agent_type, status, status_reason,"
        " is_internal, is_main, started_at, ended_at, last_seen_at, spawn_time, end_time,"
        " parent_id, claude_pid, claude_started_ticks, claude_pid_space)"
        " SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?8, datetime(?8, 'unixepoch'),"
        " datetime(?9, 'unixepoch'), CASE WHEN ?7 THEN NULL ELSE ?2 END,"
        " s.claude_pid, s.claude_started_ticks, s.claude_pid_space"
        " FROM (SELECT 1) LEFT JOIN sessions s ON s.session_id = ?2 AND NOT ?7"
        " WHERE true ON CONFLICT (id) DO NOTHING",
        (
            agent_id,
            session_id,
            agent_type,
            status,
            reason,
            int(internal),
            int(main),
            now,
            None if status == RUNNING else now,
        ),
    )
    if conn.changes() == 0:
        return False
    _log_transition(conn, agent_id, session_id, None, status, now, reason)
    return True


def set_main_task(conn: apsw.Connection, session_id: str, task: str) -> None:
    """The main thread's task is what the user asked last."""
    conn.execute(
        "UPDATE agent_registry SET task_description = ?2 WHERE id = ?1 AND is_main = 1",
        (session_id, task),
    )


def confirm_started(
    conn: apsw.Connection, agent_id: str, agent_type: str | None, now: float
) -> None:
    """A SubagentStart for an agent a tool event or a SubagentStop recorded first: it is a
    real agent after all, started no later than now."""
    conn.execute(
        "UPDATE agent_registry SET is_internal = 0, started_at = min(started_at, ?2),"
        " spawn_time = datetime(min(started_at, ?2), 'unixepoch'),"
        " agent_type = coalesce(nullif(?3, ''), agent_type) WHERE id = ?1",
        (agent_id, now, agent_type),
    )


def describe(conn: apsw.Connection, agent_id: str, tool_use_id: str | None) -> None:
    """The Agent call that launched this agent gives its description and task; None forgets a
    launch that turned out to be another agent's."""
    if tool_use_id is None:
        conn.execute(
            "UPDATE agent_registry SET tool_use_id = NULL, description = NULL,"
            " task_description = NULL, parent_id = session_id, launched_at = NULL,"
            " background = NULL WHERE id = ?",
            (agent_id,),
        )
        return
    # The launch also places it in the tree: its parent (the agent that made the Agent call),
    # when, and whether that parent waits for it.
    conn.execute(
        "UPDATE agent_registry SET tool_use_id = l.tool_use_id, description = l.description,"
        " task_description = l.prompt, parent_id = coalesce(l.parent_agent_id, l.session_id),"
        " launched_at = l.launched_at, background = l.background FROM agent_launches AS l"
        " WHERE l.tool_use_id = ?1 AND agent_registry.id = ?2",
        (tool_use_id, agent_id),
    )


def record_stop(conn: apsw.Connection, agent_id: str, message: str | None, now: float) -> None:
    """What a SubagentStop says: the agent's last message, and that it was seen now."""
    conn.execute(
        "UPDATE agent_registry SET last_message = coalesce(?3, last_message),"
        " last_seen_at = max(last_seen_at, ?2) WHERE id = ?1",
        (agent_id, now, message),
    )


def transition(
    conn: apsw.Connection,
    agent_id: str,
    to_status: str,
    reason: str,
    now: float,
    allowed_from: tuple[str, ...],
) -> bool:
    """Compare-and-swap the status; records the transition and releases claims on leaving
    `running`. False (and nothing written) when the agent is not in an allowed state."""
    found = conn.execute(
        "SELECT status, session_id, is_main FROM agent_registry WHERE id = ?", (agent_id,)
    ).fetchall()
    if not found or found[0][0] not in allowed_from or found[0][0] == to_status:
        return False
    status, session_id, is_main = found[0]
    conn.execute(
        "UPDATE agent_registry SET status = ?2, status_reason = ?3,"
        " ended_at = CASE WHEN ?2 = 'running' THEN NULL ELSE ?4 END,"
        " end_time = CASE WHEN ?2 = 'running' THEN NULL ELSE datetime(?4, 'unixepoch') END"
        " WHERE id = ?1 AND status = ?5",
        (agent_id, to_status, reason, now, status),
    )
    if conn.changes() == 0:
        return False
    session = as_text(session_id)
    _log_transition(conn, agent_id, session, as_opt_text(status), to_status, now, reason)
    if to_status != RUNNING:
        release_claims(conn, session, MAIN if is_main else agent_id, now, reason)
    return True


def _log_transition(
    conn: apsw.Connection,
    agent_id: str,
    session_id: str,
    from_status: str | None,
    to_status: str,
    now: float,
    reason: str,
) -> None:
    conn.execute(
        "INSERT INTO agent_transitions (agent_id, session_id, from_status, to_status, at, reason)"
        " VALUES (?,?,?,?,?,?)",
        (agent_id, session_id, from_status, to_status, now, reason),
    )


# last_seen_at moves in steps of a second or more: within one, the row's index entry stays
# where it is and writes no page to the WAL (pages written are most of a commit's cost).
LAST_SEEN_TO_THE_SECOND = "CASE WHEN ?2 >= last_seen_at + 1 THEN ?2 ELSE last_seen_at END"


def heartbeat(
    conn: apsw.Connection,
    session_id: str,
    agent_id: str | None,
    agent_type: str | None,
    now: float,
    lease_seconds: float,
    what: str,
    tool_use: bool,
) -> None:
    """Activity of an agent (a subagent's tool event, or any main-thread event): last seen,
    tool count, lease renewal of its claims, and revival if it had been marked stale."""
    if agent_id:
        register(conn, agent_id, session_id, agent_type, now, f"first seen in {what}")
        found = conn.execute(
            f"UPDATE agent_registry SET last_seen_at = {LAST_SEEN_TO_THE_SECOND},"
            " tool_uses = tool_uses + ?3, agent_type = coalesce(nullif(agent_type, ''), ?4)"
            " WHERE id = ?1 RETURNING status",
            (agent_id, now, int(tool_use), agent_type),
        ).fetchall()
        target = agent_id
    else:
        found = conn.execute(
            f"UPDATE agent_registry SET last_seen_at = {LAST_SEEN_TO_THE_SECOND},"
            " tool_uses = tool_uses + ?3 WHERE id = ?1 RETURNING status",
            (session_id, now, int(tool_use)),
        ).fetchall()
        target = session_id
    if found and found[0][0] == STALE:  # revived: it was marked stale and speaks again
        transition(
            conn, target, RUNNING, f"spoke again ({what}) after being marked stale", now, (STALE,)
        )
    # Renewed when a tenth of the lease has passed, not on every event: an unchanged row
    # costs no page written to the WAL (pages written are most of a commit's cost).
    conn.execute(
        "UPDATE file_claims SET expires_at = ?3"
        " WHERE session_id = ?1 AND agent_id = ?2 AND released_at IS NULL"
        " AND coalesce(expires_at, 0) < ?3 - ?4",
        (session_id, claim_owner(agent_id), now + lease_seconds, lease_seconds / 10),
    )


def claim(
    conn: apsw.Connection,
    session_id: str,
    agent_id: str | None,
    file_path: str,
    operation: str | None,
    now: float,
    lease_seconds: float,
    event_id: int | None = None,
) -> None:
    """The agent claims the file for a lease; `operation` is the tool that claimed it and
    `event_id` the edit's event (kept so the ladder can quote the latest change)."""
    conn.execute(
        "INSERT INTO file_claims (session_id, agent_id, file_path, operation, first_claimed_at,"
        " last_touched_at, expires_at, last_event_id, timestamp)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, ?7, datetime(?5, 'unixepoch'))"
        " ON CONFLICT (session_id, agent_id, file_path) DO UPDATE SET"
        " last_touched_at = max(last_touched_at, excluded.last_touched_at),"
        " timestamp = datetime(max(last_touched_at, excluded.last_touched_at), 'unixepoch'),"
        " expires_at = max(coalesce(expires_at, 0), excluded.expires_at),"
        " operation = excluded.operation, edits = edits + 1, released_at = NULL,"
        " release_reason = NULL, last_event_id = coalesce(excluded.last_event_id, last_event_id)",
        (
            session_id,
            claim_owner(agent_id),
            file_path,
            operation,
            now,
            now + lease_seconds,
            event_id,
        ),
    )


def add_changed_file(conn: apsw.Connection, agent_id: str, file_path: str) -> None:
    """The agent (a subagent's id, or the session id for the main thread) changed this file:
    appended to its files_changed once, in the order of first change."""
    conn.execute(
        "UPDATE agent_registry SET files_changed = json_insert(files_changed, '$[#]', ?2)"
        " WHERE id = ?1 AND NOT EXISTS"
        " (SELECT 1 FROM json_each(agent_registry.files_changed) WHERE value = ?2)",
        (agent_id, file_path),
    )


def release_claims(
    conn: apsw.Connection, session_id: str, claim_agent: str, now: float, reason: str
) -> None:
    conn.execute(
        "UPDATE file_claims SET released_at = ?3, release_reason = ?4"
        " WHERE session_id = ?1 AND agent_id = ?2 AND released_at IS NULL",
        (session_id, claim_agent, now, reason),
    )


def release_if_finished(
    conn: apsw.Connection, session_id: str, agent_id: str | None, now: float
) -> None:
    """The agent's claims are released at once when it has finished already (completed or
    failed): a claim its late edit made holds nothing."""
    owner = claim_owner(agent_id)
    conn.execute(
        "UPDATE file_claims SET released_at = ?3, release_reason = 'its agent had finished'"
        " WHERE session_id = ?1 AND agent_id = ?2 AND released_at IS NULL AND EXISTS"
        " (SELECT 1 FROM agent_registry WHERE id = ?4 AND status IN ('completed', 'failed'))",
        (session_id, owner, now, registry_id(session_id, owner)),
    )


def release_expired(conn: apsw.Connection, now: float) -> int:
    """Claims whose lease ran out (their agent went quiet) are released; returns how many."""
    conn.execute(
        "UPDATE file_claims SET released_at = ?1, release_reason = 'lease expired'"
        " WHERE released_at IS NULL AND expires_at < ?1",
        (now,),
    )
    return conn.changes()


def close_out_session(conn: apsw.Connection, session_id: str, now: float, reason: str) -> int:
    """A session that is over: its running subagents become aborted_stale, its main agent ends.
    Returns how many subagents were closed out."""
    closed = 0
    running = conn.execute(
        "SELECT id FROM agent_registry WHERE session_id = ? AND status = 'running' AND is_main = 0",
        (session_id,),
    ).fetchall()
    for (agent_id,) in running:
        closed += transition(conn, as_text(agent_id), STALE, reason, now, (RUNNING,))
    transition(conn, session_id, "completed", reason, now, (RUNNING, STALE))
    return closed
