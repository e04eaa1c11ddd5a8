"""Sessions as executions: their starts and lineage, turns, tool calls and forks.

The one writer of `session_starts`, `turns`, `tool_calls` and `branches`. Called by
`events.apply` inside the event's transaction (stdlib + apsw only: hooks import this), and by
the time-travel service for forks.
"""

import apsw

from .event import Event

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from .apply_types import Applied, Context

PROMPT_CAP = 500
RESULT_CAP = 2000  # characters of a turn's answer (the Stop's last_assistant_message) kept
# Events that commit a frame (core/frames.py says which kind); the module that builds frames
# is imported only for them.
FRAME_EVENTS = frozenset(
    {
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        "PostToolUseFailure",
        "Stop",
        "SubagentStart",
        "SubagentStop",
        "PreCompact",
        "TaskCompleted",
        "SessionEnd",
    }
)
# The events that tell a skill's inline shell commands have run: the agent's next step (its next
# tool call or the Skill call's end, the prompt a /skill expanded into, the end of its turn).
# PreSkillShellCommand has no Post event; these close its calls (`end_skill_commands`).
ENDS_SKILL_COMMANDS = frozenset(
    {
        "UserPromptExpansion",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "PostToolBatch",
        "Stop",
        "StopFailure",
        "SubagentStop",
        "PreCompact",
        "SessionEnd",
    }
)
SKILL_COMMAND_WINDOW = 10_000  # events: a skill's command older than this is not looked for
# Tools known not to change files; every other tool (Bash, Write, Edit, MultiEdit,
# NotebookEdit, MCP tools, tools of future versions) is taken to change them.
READ_ONLY_TOOLS = frozenset(
    {
        "Read",
        "Glob",
        "Grep",
        "LS",
        "WebFetch",
        "WebSearch",
        "TodoWrite",
        "TodoRead",
        "Agent",  # its subagent's own tool calls are frames of their own
        "Task",
        "TaskCreate",
        "TaskUpdate",
        "TaskGet",
        "TaskList",
        "TaskOutput",
        "TaskStop",
        "ToolSearch",
        "BashOutput",
        "KillShell",
        "ExitPlanMode",
        "EnterPlanMode",
        "AskUserQuestion",
        "ListMcpResourcesTool",
        "ReadMcpResourceTool",
        "Skill",
        "SlashCommand",
    }
)


def snapshot_pending(conn: apsw.Connection) -> bool:
    """A workspace snapshot is still being taken (frames' `vcs_tags`, by its partial index).
    Here, not in frames: every PreToolUse of a tool that can change files asks, and that
    hook does not otherwise import the frames module."""
    return bool(conn.execute("SELECT 1 FROM vcs_tags WHERE status = 'pending' LIMIT 1").fetchall())


# An agent not heard of for this long is taken to be gone (a session that never ended): it no
# longer makes every tool keep its files for the frames committed beside it.
LIVE_SECONDS = 3600.0


def others_live(conn: apsw.Connection, agent_id: str, now: float) -> bool:
    """Another agent of the project (the main thread, a subagent, another session) is running:
    it may commit a frame while a tool of `agent_id` runs, and that frame's snapshot must not
    take the tool's changes (services/snapshots/before_images.py)."""
    return bool(
        conn.execute(
            "SELECT 1 FROM agent_registry WHERE status = 'running' AND last_seen_at > ?2"
            " AND id != ?1 AND is_internal = 0 LIMIT 1",
            (agent_id, now - LIVE_SECONDS),
        ).fetchall()
    )


def tool_ends(conn: apsw.Connection, tool_use_ids: "list[str]") -> "dict[str, float | None]":
    """When each of these tool calls ended (its PostToolUse or PostToolUseFailure, the moment
    its frame was committed), None while it runs; a call never seen is left out."""
    found = conn.execute(
        "SELECT tool_use_id, ended_at FROM tool_calls WHERE tool_use_id IN"
        " (SELECT value FROM json_each(?1))",
        ("[" + ",".join('"' + i + '"' for i in tool_use_ids) + "]",),
    ).fetchall()
    return {str(i): float(e) if isinstance(e, int | float) else None for i, e in found}


def track(conn: apsw.Connection, ev: Event, ctx: "Context", applied: "Applied") -> None:
    """Keep the execution tables current for one stored event."""
    name = ev.name
    if name in ("PreToolUse", "PreSkillShellCommand"):  # a skill's command: a Bash call
        _tool_started(conn, ev, ctx, applied)
    elif name in ("PostToolUse", "PostToolUseFailure"):
        _tool_finished(conn, ev, ctx, applied)
    elif name == "UserPromptSubmit":
        _turn_started(conn, ev, ctx, applied)
    elif name in ("Stop", "StopFailure"):
        answer = ev.text_of("last_assistant_message")  # redacted with the payload
        _turn_ended(conn, ev.session_id, ctx.now, "done", answer[:RESULT_CAP] if answer else None)
    elif name == "SessionStart":
        _session_started(conn, ev, ctx, applied)


def turn_of(conn: apsw.Connection, ev: Event, applied: "Applied") -> int | None:
    """The event's turn (the session's latest), looked up once per event."""
    if applied.turn_id is False:
        applied.turn_id = current_turn(conn, ev.session_id)
    return applied.turn_id if isinstance(applied.turn_id, int) else None


# The session's latest turn (?2: the session), inside another statement.
LATEST_TURN = "(SELECT id FROM turns WHERE session_id = ?2 ORDER BY turn_no DESC LIMIT 1)"


def current_turn(conn: apsw.Connection, session_id: str) -> int | None:
    """The id of the session's latest turn (running or not), or None before the first prompt."""
    rows = conn.execute(
        "SELECT id FROM turns WHERE session_id = ? ORDER BY turn_no DESC LIMIT 1", (session_id,)
    ).fetchall()
    return rows[0][0] if rows and isinstance(rows[0][0], int) else None


def _agent_of(ev: Event) -> str:
    return ev.text_of("agent_id") or ev.session_id


def _tool_started(conn: apsw.Connection, ev: Event, ctx: "Context", applied: "Applied") -> None:
    tool_use_id = ev.text_of("tool_use_id")
    if not tool_use_id:
        return
    turn = _turn_known(applied)
    found = conn.execute(
        "INSERT INTO tool_calls (tool_use_id, session_id, turn_id, agent_id, tool_name,"
        " input_summary, status, started_at, pre_event_id)"
        f" VALUES (?1, ?2, {turn}, ?4, ?5, ?6, 'running', ?7, ?8)"
        " ON CONFLICT (tool_use_id) DO UPDATE SET started_at = coalesce(started_at, ?7),"
        f" pre_event_id = coalesce(pre_event_id, ?8) RETURNING {turn}",
        (
            tool_use_id,
            ev.session_id,
            applied.turn_id if turn == "?3" else None,
            _agent_of(ev),
            ev.text_of("tool_name"),
            ev.summary(ctx.root),
            ctx.now,
            applied.event_id,
        ),
    ).fetchall()
    _turn_found(applied, found)


def _turn_known(applied: "Applied") -> str:
    """The turn of a tool call as SQL: the one already looked up (`?3`), or the session's
    latest, read in the same statement (and returned, for `_turn_found`): one statement less."""
    return "?3" if applied.turn_id is not False else LATEST_TURN


def _turn_found(applied: "Applied", found: "list[tuple[object, ...]]") -> None:
    if applied.turn_id is False and found:
        turn = found[0][0]
        applied.turn_id = turn if isinstance(turn, int) else None


def _tool_finished(conn: apsw.Connection, ev: Event, ctx: "Context", applied: "Applied") -> None:
    tool_use_id = ev.text_of("tool_use_id")
    if not tool_use_id:
        return
    if ev.name == "PostToolUse":
        status = "succeeded"
    elif ev.get("is_interrupt") in (True, 1):
        status = "interrupted"
    else:
        status = "failed"
    duration = ev.get("duration_ms")
    duration = duration if isinstance(duration, int | float) else None
    turn = _turn_known(applied)
    found = conn.execute(
        "INSERT INTO tool_calls (tool_use_id, session_id, turn_id, agent_id, tool_name,"
        " input_summary, status, ended_at, duration_ms, post_event_id)"
        f" VALUES (?1, ?2, {turn}, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
        " ON CONFLICT (tool_use_id) DO UPDATE SET status = ?7, ended_at = ?8,"
        " duration_ms = coalesce(?9, round((?8 - started_at) * 1000, 3)), post_event_id = ?10"
        f" RETURNING {turn}",
        (
            tool_use_id,
            ev.session_id,
            applied.turn_id if turn == "?3" else None,
            _agent_of(ev),
            ev.text_of("tool_name"),
            ev.summary(ctx.root),
            status,
            ctx.now,
            duration,
            applied.event_id,
        ),
    ).fetchall()
    _turn_found(applied, found)


def end_skill_commands(
    conn: apsw.Connection, ev: Event, now: float, applied: "Applied"
) -> "list[tuple[str, str | None, str | None, str | None, str | None]]":
    """The agent's skill shell commands still open, now ended by `ev` (its next event, stored
    as `applied.event_id`): each as (tool_use_id, tool_name, summary, command, cwd). Their
    outcome is not reported to hooks: 'succeeded' says they ran to their end. Only those among
    the last SKILL_COMMAND_WINDOW events are looked for (an older one's agent has long gone
    on): the newest PreSkillShellCommand, read as the event was inserted, says whether any
    is."""
    event_id = applied.event_id
    since = event_id - SKILL_COMMAND_WINDOW
    if applied.newest_skill_command <= since:
        return []
    found = conn.execute(
        "SELECT t.tool_use_id, t.tool_name, t.input_summary,"
        " json_extract(e.payload, '$.tool_input.command'), json_extract(e.payload, '$.cwd')"
        " FROM events e JOIN tool_calls t ON t.tool_use_id = e.tool_use_id"
        " WHERE e.hook_event_name = 'PreSkillShellCommand' AND e.id > ?3 AND e.session_id = ?1"
        " AND t.status = 'running' AND t.agent_id = ?2 ORDER BY e.id",
        (ev.session_id, _agent_of(ev), since),
    ).fetchall()
    ended = []
    for tool_use_id, tool_name, summary, command, cwd in found:
        conn.execute(
            "UPDATE tool_calls SET status = 'succeeded', ended_at = ?2, post_event_id = ?3,"
            " duration_ms = round((?2 - started_at) * 1000, 3) WHERE tool_use_id = ?1",
            (tool_use_id, now, event_id),
        )
        ended.append(
            (
                str(tool_use_id),
                None if tool_name is None else str(tool_name),
                None if summary is None else str(summary),
                command if isinstance(command, str) else None,
                cwd if isinstance(cwd, str) else None,
            )
        )
    return ended


def set_tool_frame(conn: apsw.Connection, tool_use_id: str, frame_no: int) -> None:
    """The frame committed after this tool call."""
    conn.execute(
        "UPDATE tool_calls SET frame_no = ?2 WHERE tool_use_id = ?1", (tool_use_id, frame_no)
    )


def _turn_started(conn: apsw.Connection, ev: Event, ctx: "Context", applied: "Applied") -> None:
    """A prompt starts a turn; a turn still running then was interrupted (no Stop came)."""
    session_id = ev.session_id
    _turn_ended(conn, session_id, ctx.now, "interrupted")
    prompt = ev.text_of("prompt") or ""
    conn.execute(
        "INSERT INTO turns (session_id, turn_no, prompt_id, prompt, started_at)"
        " VALUES (?1, coalesce((SELECT max(turn_no) FROM turns WHERE session_id = ?1), 0) + 1,"
        " ?2, ?3, ?4)",
        (session_id, ev.text_of("prompt_id"), prompt[:PROMPT_CAP], ctx.now),
    )
    applied.turn_id = conn.last_insert_rowid()


def _turn_ended(
    conn: apsw.Connection, session_id: str, now: float, status: str, answer: str | None = None
) -> None:
    """The latest turn ends (if still running); its answer, when one came, is kept, also from
    a later Stop of the same turn (a Stop hook that made Claude go on)."""
    conn.execute(
        "UPDATE turns SET ended_at = CASE WHEN status = 'running' THEN ?2 ELSE ended_at END,"
        " status = CASE WHEN status = 'running' THEN ?3 ELSE status END,"
        " result_text = coalesce(?4, result_text) WHERE id = (SELECT id FROM turns"
        " WHERE session_id = ?1 ORDER BY turn_no DESC LIMIT 1)"
        " AND (status = 'running' OR (?4 IS NOT NULL AND status = 'done'))",
        (session_id, now, status, answer),
    )


def _session_started(conn: apsw.Connection, ev: Event, ctx: "Context", applied: "Applied") -> None:
    """Record the start and its lineage: after /clear, the session that just ended with
    reason 'clear'; in a fork, the parent session (claimed from `branches`)."""
    source = ev.text_of("source")
    previous = None
    if source == "clear":
        rows = conn.execute(
            "SELECT session_id FROM sessions WHERE session_id != ?1 AND end_reason = 'clear'"
            " ORDER BY ended_at DESC LIMIT 1",
            (ev.session_id,),
        ).fetchall()
        previous = rows[0][0] if rows else None
    claimed = claim_branch(conn, ev.session_id, ctx.root, ctx.now)
    if claimed is not None:
        previous = claimed[1]
        applied.forked_from = claimed
    conn.execute(
        "INSERT INTO session_starts (session_id, source, at, event_id, previous_session_id)"
        " VALUES (?, ?, ?, ?, ?)",
        (ev.session_id, source, ctx.now, applied.event_id, previous),
    )


def claim_branch(
    conn: apsw.Connection, session_id: str, root: str, now: float
) -> "tuple[int, str, int, str | None] | None":
    """The first session started in a fork claims its branch row: (branch id, parent session,
    parent frame, state hash), or None when this folder is not an unclaimed fork."""
    rows = conn.execute(
        "SELECT id, parent_session_id, parent_frame_no, state_hash FROM branches"
        " WHERE path = ?1 AND child_session_id IS NULL ORDER BY id LIMIT 1",
        (root,),
    ).fetchall()
    if not rows:
        return None
    branch_id, parent, frame_no, state_hash = rows[0]
    conn.execute(
        "UPDATE branches SET child_session_id = ?2, claimed_at = ?3 WHERE id = ?1",
        (branch_id, session_id, now),
    )
    return (
        int(branch_id) if isinstance(branch_id, int) else 0,
        str(parent),
        int(frame_no) if isinstance(frame_no, int) else 0,
        state_hash if isinstance(state_hash, str) else None,
    )


def add_branch(
    conn: apsw.Connection,
    *,
    kind: str,
    parent_session_id: str,
    parent_frame_no: int,
    parent_root: str,
    path: str,
    label: str | None,
    state_hash: str | None,
    prompt: str | None,
    now: float,
    mac: str | None = None,
) -> int:
    """A fork or replay of a frame, recorded in the parent's database and in the fork's, with
    our MAC of it (`mac`, services/timetravel/fork.py): a record without one is not ours."""
    conn.execute(
        "INSERT INTO branches (kind, parent_session_id, parent_frame_no, parent_root, path,"
        " label, state_hash, prompt, created_at, mac) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            kind,
            parent_session_id,
            parent_frame_no,
            parent_root,
            path,
            label,
            state_hash,
            prompt,
            now,
            mac,
        ),
    )
    return conn.last_insert_rowid()
