"""Derived state: what one event implies for sessions, prompts, agent launches and snapshots.

Each `on_*` function writes the state one event implies; `events.DERIVE` says which runs for
which event, and `events.apply` runs it inside the event's transaction.
"""

import apsw

from . import ladder, registry
from .db import as_opt_text, as_text
from .event import Event
from .paths import relative_to_root
from .readings import gather

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from typing import Any

    from .apply_types import Applied, Context

EDIT_TOOLS = registry.EDIT_TOOLS
AGENT_TOOLS = ("Agent", "Task")
MAIN_TYPE = "main"
NO_START = "SubagentStop without SubagentStart"
PROMPT_CAP = 4000
MESSAGE_CAP = 2000
NOT_USER_PROMPTS = ("<task-notification>", "<system-reminder>")


# --- derived state -------------------------------------------------------------------------


def touch_session(conn: apsw.Connection, ev: Event, ctx: "Context") -> None:
    """Every event keeps its session's last activity, cwd and transcript current."""
    started = conn.execute(
        "INSERT INTO sessions (session_id, started_at, last_activity_at, cwd, transcript_path)"
        " VALUES (?1, ?2, ?2, ?3, ?4) ON CONFLICT (session_id) DO UPDATE SET"
        # A second's resolution: within it the row (and its activity index) is left as it is,
        # and an unchanged page is not written to the WAL (most of a commit's cost).
        " last_activity_at = CASE WHEN excluded.last_activity_at >= last_activity_at + 1"
        "  THEN excluded.last_activity_at ELSE last_activity_at END,"
        " cwd = coalesce(excluded.cwd, cwd),"
        " transcript_path = coalesce(excluded.transcript_path, transcript_path)"
        " RETURNING started_at",
        (ev.session_id, ctx.now, ev.text_of("cwd"), ev.text_of("transcript_path")),
    ).fetchall()
    if started and started[0][0] != ctx.now:
        return  # the session was known: its main thread was recorded with it
    # The session's main thread is an agent too, recorded with the session's row.
    registry.register(
        conn,
        ev.session_id,
        ev.session_id,
        MAIN_TYPE,
        ctx.now,
        f"session seen ({ev.name})",
        main=True,
    )


def on_session_start(conn: apsw.Connection, ev: Event, ctx: "Context", applied: "Applied") -> None:
    source = ev.text_of("source")
    conn.execute(
        "UPDATE sessions SET status = 'active', ended_at = NULL, end_reason = NULL,"
        " start_source = ?2, model = coalesce(?3, model) WHERE session_id = ?1",
        (ev.session_id, source, ev.text_of("model")),
    )
    # A start (or a resume, in another process) names its process anew, NULL if not known: an
    # older, dead one left on the row would end the session the moment it is resumed.
    record_claude_process(conn, ev.session_id, ctx.claude_process, known_only=False)
    registry.transition(
        conn,
        ev.session_id,
        registry.RUNNING,
        f"session started again ({source})",
        ctx.now,
        (registry.STALE, "completed"),
    )
    close_out_finished_sessions(conn, ev.session_id, ctx)
    close_out_gone(conn, ctx)
    from . import state as project_state

    project_state.set_values(
        conn,
        {"last_session_id": ev.session_id, "last_session_source": source},
        ctx.now,
        f"SessionStart ({source}) of session {ev.session_id} (event {applied.event_id})",
    )
    # The same session going on (resume): what its last SessionEnd abandoned is open again.
    ladder.reopen_abandoned(conn, ev.session_id)
    failed_paths_become_learnings(conn, ev, ctx)


def failed_paths_become_learnings(conn: apsw.Connection, ev: Event, ctx: "Context") -> None:
    """A failed path still relevant when another session starts is a project `learning`
    (each new session it is relevant to strengthens the same memory)."""
    # Each with the last failure of its ladder: the learning is marked once that is fixed.
    found = conn.execute(
        "SELECT f.id, f.approach, f.reason_failed, f.file_path, f.session_id,"
        " (SELECT max(x.id) FROM error_log x WHERE x.session_id = f.session_id"
        "  AND instr(coalesce(f.context, ''), '; ladder ' || x.ladder_key || '; ') > 0)"
        " FROM failed_paths f WHERE f.still_relevant = 1"
        " AND (f.expires_at IS NULL OR f.expires_at > ?1)"
        " AND coalesce(f.session_id, '') != ?2 ORDER BY f.created_at DESC LIMIT 5",
        (ctx.now, ev.session_id),
    ).fetchall()
    if not found:
        return
    from . import memories

    for failed_id, approach, reason, file_path, session_id, error_id in found:
        where = f" (file {file_path})" if file_path else ""
        memories.add(
            conn,
            f"An approach that failed before{where}: {approach}. Why: {reason}",
            "learning",
            "project",
            ctx.now,
            tags=["failed-path", *([str(file_path)] if file_path else [])],
            source="learned",
            session_id=as_opt_text(session_id),
            key=f"failed-path|{failed_id}",
            error_id=error_id if isinstance(error_id, int) else None,
        )


def close_out_finished_sessions(conn: apsw.Connection, current: str, ctx: "Context") -> None:
    """Agents left running by sessions that ended (a Ctrl+C kill sends no SubagentStop).

    Only sessions whose end was recorded: a session that merely looks silent by this hook's
    wall clock may be live on a host whose clock is behind ours (a shared project folder), or
    our clock may have jumped. Silence is judged by the daemon, which also measures it on its
    own monotonic clock (see `staleness.sweep`).
    """
    ended = conn.execute(
        "SELECT DISTINCT a.session_id FROM agent_registry a JOIN sessions s USING (session_id)"
        " WHERE a.status = 'running' AND a.session_id != ?1 AND s.status = 'ended'",
        (current,),
    ).fetchall()
    for (found,) in ended:
        session_id = as_text(found)
        reason = f"session {session_id[:8]} ended without the agent stopping"
        registry.close_out_session(conn, session_id, ctx.now, reason)


def close_out_gone(conn: apsw.Connection, ctx: "Context") -> None:
    """Agents whose Claude Code process is gone (killed, crashed): a main thread's session
    ends with its agents, and a subagent of an earlier process of a resumed session is stale.
    The background sweep does the same after a grace period; this runs before SessionStart
    says anything, so a session started a second after a kill is never told they are live."""
    from . import liveness
    from .readings import CLAUDE_EXITED

    # Main threads first: their sessions end with every agent of them, a subagent included
    # (Claude Code exited); only then is a subagent left whose session went on in another.
    gone = sorted(liveness.gone_agents(conn), key=lambda found: not found[2])
    for agent_id, session_id, is_main in gone:
        if is_main:
            end_session(conn, session_id, ctx.now, CLAUDE_EXITED)
            registry.close_out_session(conn, session_id, ctx.now, CLAUDE_EXITED)
        else:
            reason = "its Claude Code process exited (the session went on in another)"
            registry.transition(  # a no-op for one its session's end closed out above
                conn, agent_id, registry.STALE, reason, ctx.now, (registry.RUNNING,)
            )


def record_claude_process(
    conn: apsw.Connection,
    session_id: str,
    process: "tuple[int, int, str] | None",
    known_only: bool = True,
) -> None:
    """The Claude Code process that runs the session's hooks (core/processes.py): the daemon
    ends the session as soon as it is gone. `known_only`: an unknown one changes nothing."""
    if process is None and known_only:
        return
    pid, started, space = process or (None, None, None)
    conn.execute(
        "UPDATE sessions SET claude_pid = ?2, claude_started_ticks = ?3, claude_pid_space = ?4"
        " WHERE session_id = ?1 AND (claude_pid IS NOT ?2 OR claude_started_ticks IS NOT ?3"
        " OR claude_pid_space IS NOT ?4)",  # unchanged: no page written
        (session_id, pid, started, space),
    )


def end_session(conn: apsw.Connection, session_id: str, now: float, reason: str) -> None:
    conn.execute(
        "UPDATE sessions SET status = 'ended', ended_at = ?2, end_reason = ?3"
        " WHERE session_id = ?1 AND status = 'active'",
        (session_id, now, reason),
    )


def on_user_prompt(conn: apsw.Connection, ev: Event, ctx: "Context", applied: "Applied") -> None:
    # Each turn names the process too: a session begun before it was recorded gets one.
    record_claude_process(conn, ev.session_id, ctx.claude_process)
    prompt = ev.text_of("prompt")
    # Claude Code also submits background-task notifications as prompts: not the user's task.
    if prompt is not None and not prompt.lstrip().startswith(NOT_USER_PROMPTS):
        conn.execute(
            "INSERT INTO prompts (session_id, prompt_id, prompt, submitted_at) VALUES (?,?,?,?)",
            (ev.session_id, ev.text_of("prompt_id"), prompt[:PROMPT_CAP], ctx.now),
        )
        # the main agent's task is what the user asked last
        registry.set_main_task(conn, ev.session_id, prompt[:PROMPT_CAP])
    applied.count("prompts")


def on_pre_tool_use(conn: apsw.Connection, ev: Event, ctx: "Context", applied: "Applied") -> None:
    heartbeat(conn, ev, ctx, tool_use=True)
    if ev.text_of("tool_name") in AGENT_TOOLS and ev.text_of("tool_use_id"):
        background = ev.get("run_in_background")
        conn.execute(
            "INSERT INTO agent_launches (tool_use_id, session_id, description, prompt,"
            " subagent_type, background, launched_at, parent_agent_id)"
            " VALUES (?,?,?,?,?,?,?,?) ON CONFLICT (tool_use_id) DO NOTHING",
            (
                ev.text_of("tool_use_id"),
                ev.session_id,
                ev.text_of("description"),
                _cap(ev.text_of("task_prompt"), PROMPT_CAP),
                ev.text_of("subagent_type"),
                None if background is None else int(bool(background)),
                ctx.now,
                ev.text_of("agent_id"),
            ),
        )


def on_post_tool_use(conn: apsw.Connection, ev: Event, ctx: "Context", applied: "Applied") -> None:
    heartbeat(conn, ev, ctx)
    applied.count("tool_calls")
    failed = response_error(ev)
    if failed:
        applied.count("tool_failures")
        record_failure(conn, ev, ctx, failed)
    else:
        ladder.resolve_on_success(conn, ev, ctx.root, ctx.now)
    tool = ev.text_of("tool_name")
    if tool in EDIT_TOOLS:
        claim_file(conn, ev, ctx, applied, changed=not failed)
    elif tool in AGENT_TOOLS and ev.text_of("response_agent_id"):
        link_agent_launch(conn, ev, ctx)
    elif tool == "Bash" and not failed:
        observe_command(conn, ev, ctx, applied)


def on_skill_shell_command(
    conn: apsw.Connection, ev: Event, ctx: "Context", applied: "Applied"
) -> None:
    """Before a skill's inline shell command (PreSkillShellCommand, Claude Code 2.1.332): a
    sign of life of its agent, and its claim on each file the command names as written
    (core/shell_writes.py), made before it runs, as no later event of its own reports it."""
    heartbeat(conn, ev, ctx, tool_use=True)
    applied.count("skill_shell_commands")
    for path in skill_command_files(ev, ctx.root):
        registry.claim(
            conn,
            ev.session_id,
            ev.text_of("agent_id"),
            path,
            ev.text_of("tool_name") or "Bash",
            ctx.now,
            ctx.lease_seconds,
            applied.event_id,
        )


def skill_command_files(ev: Event, root: str) -> "list[str]":
    """The files a skill's shell command names as written, relative to the project."""
    return command_files(ev.text_of("command"), ev.text_of("cwd"), root)


def command_files(command: str | None, cwd: str | None, root: str) -> "list[str]":
    """The files `command`, run in `cwd`, names as written, relative to the project."""
    if not command:
        return []
    from .shell_writes import written_paths

    base = cwd or root
    paths = []
    for named in written_paths(command):
        path = relative_to_root(root, named if named.startswith("/") else f"{base}/{named}")
        if path not in paths:
            paths.append(path)
    return paths


def observe_command(conn: apsw.Connection, ev: Event, ctx: "Context", applied: "Applied") -> None:
    """A test or lint command that ran through becomes the project's test or lint command."""
    from . import facts
    from . import state as project_state

    command = ev.text_of("command")
    kind = facts.classify_command(command) if command else None
    if command and kind:
        agent = ev.text_of("agent_id") or "the main thread"
        project_state.set_values(
            conn,
            {f"{kind}_command": " ".join(command.split())[:500]},
            ctx.now,
            f"Bash tool call {ev.text_of('tool_use_id')} by {agent} in session {ev.session_id}"
            f" (event {applied.event_id})",
        )


def on_post_tool_use_failure(
    conn: apsw.Connection, ev: Event, ctx: "Context", applied: "Applied"
) -> None:
    heartbeat(conn, ev, ctx)
    applied.count("tool_calls")
    applied.count("tool_failures")
    record_failure(conn, ev, ctx, ev.text_of("error") or "")
    if ev.text_of("tool_name") in AGENT_TOOLS:  # the Agent call itself failed
        launched = conn.execute(
            "SELECT agent_id FROM agent_launches WHERE tool_use_id = ? AND agent_id IS NOT NULL",
            (ev.text_of("tool_use_id"),),
        ).fetchall()
        # An interruption (the user stopped it, or Claude Code died under it and wrote its
        # placeholder) cut the agent off: it did not fail.
        cut_off = ev.get("is_interrupt") in (True, 1)
        status = registry.STALE if cut_off else "failed"
        how = "Agent call interrupted" if cut_off else "Agent tool failed"
        for (agent_id,) in launched:
            reason = f"{how}: {(ev.text_of('error') or '').strip()[:200]}"
            registry.transition(
                conn, as_text(agent_id), status, reason, ctx.now, (registry.RUNNING, registry.STALE)
            )


def on_subagent_start(conn: apsw.Connection, ev: Event, ctx: "Context", applied: "Applied") -> None:
    agent_id = ev.text_of("agent_id")
    if not agent_id:
        return
    agent_type = ev.text_of("agent_type")
    if not registry.register(conn, agent_id, ev.session_id, agent_type, ctx.now, "SubagentStart"):
        # Known already (a tool event or a SubagentStop came first): it is a real agent.
        registry.confirm_started(conn, agent_id, agent_type, ctx.now)
    applied.count("subagents")
    linked = conn.execute("SELECT 1 FROM agent_launches WHERE agent_id = ?", (agent_id,)).fetchall()
    if not linked:  # not named by PostToolUse(Agent) yet (a foreground agent, or a race)
        _guess_link(conn, ev.session_id, agent_id, agent_type)


def link_agent_launch(conn: apsw.Connection, ev: Event, ctx: "Context") -> None:
    """PostToolUse(Agent) names the agent it launched: the definitive link."""
    agent_id = ev.text_of("response_agent_id") or ""
    tool_use_id = ev.text_of("tool_use_id") or ""
    conn.execute(
        "INSERT INTO agent_launches (tool_use_id, session_id, description, prompt, subagent_type,"
        " launched_at, parent_agent_id) VALUES (?,?,?,?,?,?,?)"
        " ON CONFLICT (tool_use_id) DO NOTHING",
        (
            tool_use_id,
            ev.session_id,
            ev.text_of("description"),
            _cap(ev.text_of("task_prompt"), PROMPT_CAP),
            ev.text_of("subagent_type"),
            ctx.now,
            ev.text_of("agent_id"),
        ),
    )
    background = ev.text_of("response_status") == "async_launched"
    conn.execute(
        "UPDATE agent_launches SET background = ?2 WHERE tool_use_id = ?1",
        (tool_use_id, int(background)),
    )
    agent_type = ev.text_of("subagent_type") or "general-purpose"
    registry.register(conn, agent_id, ev.session_id, agent_type, ctx.now, "Agent tool launched it")
    _link(conn, tool_use_id, agent_id)
    if ev.text_of("response_status") == "completed":
        registry.transition(
            conn,
            agent_id,
            "completed",
            "Agent tool returned",
            ctx.now,
            (registry.RUNNING, registry.STALE),
        )


def _link(conn: apsw.Connection, tool_use_id: str, agent_id: str) -> None:
    """PostToolUse(Agent) named the agent of this launch: a confirmed link. An agent that had
    been guessed onto this launch at its SubagentStart is moved to the next pending one."""
    displaced = conn.execute(
        "SELECT agent_id FROM agent_launches WHERE tool_use_id = ?1 AND agent_id != ?2",
        (tool_use_id, agent_id),
    ).fetchall()
    conn.execute(
        "UPDATE agent_launches SET agent_id = NULL WHERE agent_id = ?1 AND tool_use_id != ?2",
        (agent_id, tool_use_id),
    )
    conn.execute(
        "UPDATE agent_launches SET agent_id = ?2, confirmed = 1 WHERE tool_use_id = ?1",
        (tool_use_id, agent_id),
    )
    registry.describe(conn, agent_id, tool_use_id)
    for (displaced_id,) in displaced:
        other = as_text(displaced_id)
        registry.describe(conn, other, None)
        found = conn.execute(
            "SELECT session_id, agent_type FROM agent_registry WHERE id = ?", (other,)
        ).fetchall()
        if found:
            _guess_link(conn, as_text(found[0][0]), other, as_opt_text(found[0][1]))


def _guess_link(
    conn: apsw.Connection, session_id: str, agent_id: str, agent_type: str | None
) -> None:
    """At SubagentStart nothing says which Agent call started this agent: take the oldest
    pending launch of its type. PostToolUse(Agent) confirms or corrects it (see `_link`)."""
    launch = conn.execute(
        "SELECT tool_use_id FROM agent_launches WHERE session_id = ? AND agent_id IS NULL"
        " AND coalesce(subagent_type, 'general-purpose') = coalesce(?, 'general-purpose')"
        " ORDER BY launched_at, rowid LIMIT 1",
        (session_id, agent_type),
    ).fetchall()
    if launch:
        conn.execute(
            "UPDATE agent_launches SET agent_id = ?2, confirmed = 0 WHERE tool_use_id = ?1",
            (launch[0][0], agent_id),
        )
        registry.describe(conn, agent_id, as_opt_text(launch[0][0]))


def on_subagent_stop(conn: apsw.Connection, ev: Event, ctx: "Context", applied: "Applied") -> None:
    agent_id = ev.text_of("agent_id")
    if not agent_id:
        return
    message = _cap(ev.text_of("last_assistant_message"), MESSAGE_CAP)
    # No SubagentStart and no tool calls: one of Claude Code's internal helpers (compaction
    # summariser, recap...). Recorded, never shown as a running agent.
    registry.register(
        conn,
        agent_id,
        ev.session_id,
        ev.text_of("agent_type"),
        ctx.now,
        NO_START,
        status="completed",
        internal=True,
    )
    registry.record_stop(conn, agent_id, message, ctx.now)
    # A stale agent that stops properly did finish after all; a finished one stays finished.
    registry.transition(
        conn, agent_id, "completed", "SubagentStop", ctx.now, (registry.RUNNING, registry.STALE)
    )


def heartbeat(conn: apsw.Connection, ev: Event, ctx: "Context", tool_use: bool = False) -> None:
    """Any tool event is a sign of life of the agent that made it (a subagent, or main)."""
    what = f"{ev.name} {ev.text_of('tool_name') or ''}".strip()
    registry.heartbeat(
        conn,
        ev.session_id,
        ev.text_of("agent_id"),
        ev.text_of("agent_type"),
        ctx.now,
        ctx.lease_seconds,
        what,
        tool_use,
    )


def claim_file(
    conn: apsw.Connection, ev: Event, ctx: "Context", applied: "Applied", changed: bool
) -> None:
    """A Write/Edit: the acting agent claims the file and, when the edit went through, has
    changed it (agent_registry.files_changed)."""
    target = ev.text_of("file_path") or ev.text_of("notebook_path")
    if not target:
        return
    path = relative_to_root(ctx.root, target)
    agent_id = ev.text_of("agent_id")
    registry.claim(
        conn,
        ev.session_id,
        agent_id,
        path,
        ev.text_of("tool_name"),
        ctx.now,
        ctx.lease_seconds,
        applied.event_id,
    )
    # An edit that reaches us after its agent finished (a late hook, or one filled in from the
    # transcript afterwards: services/reconcile) leaves no live claim behind.
    registry.release_if_finished(conn, ev.session_id, agent_id, ctx.now)
    if changed:
        registry.add_changed_file(conn, agent_id or ev.session_id, path)
    applied.count("file_edits")


def record_failure(conn: apsw.Connection, ev: Event, ctx: "Context", error: str) -> None:
    ladder.record_failure(conn, ev, ctx.root, ctx.now, error, ctx.number("failed_path_ttl_days"))


def response_error(ev: Event) -> str | None:
    """A failure reported inside a successful tool call's response ({"error"} or
    {"success": false}), as NotebookEdit and the Task tools do."""
    error = ev.text_of("response_error")
    if error:
        return error
    if ev.get("response_success") == 0:
        return f"{ev.text_of('tool_name')} reported success: false"
    return None


def on_pre_compact(conn: apsw.Connection, ev: Event, ctx: "Context", applied: "Applied") -> None:
    state = gather(conn, ev.session_id, ctx.now)
    state["git"] = ctx.prepared
    save_snapshot(conn, ev.session_id, "pre_compact", ev.text_of("trigger"), state, ctx.now)


def on_post_compact(conn: apsw.Connection, ev: Event, ctx: "Context", applied: "Applied") -> None:
    summary = {"compact_summary": _cap(ev.text_of("compact_summary"), 20000)}
    save_snapshot(conn, ev.session_id, "post_compact", ev.text_of("trigger"), summary, ctx.now)
    applied.count("compactions")


def on_session_end(conn: apsw.Connection, ev: Event, ctx: "Context", applied: "Applied") -> None:
    conn.execute(
        "UPDATE sessions SET status = 'ended', ended_at = ?2, end_reason = ?3"
        " WHERE session_id = ?1",
        (ev.session_id, ctx.now, ev.text_of("reason")),
    )
    state = gather(conn, ev.session_id, ctx.now)  # before the close-out below
    reason = f"session ended ({ev.text_of('reason') or 'no reason given'})"
    registry.close_out_session(conn, ev.session_id, ctx.now, reason)
    ladder.abandon_open(conn, ev.session_id, ctx.now)
    from . import state as project_state

    project_state.set_values(
        conn,
        {"last_ended_session_id": ev.session_id, "last_end_reason": ev.text_of("reason")},
        ctx.now,
        f"SessionEnd of session {ev.session_id} (event {applied.event_id})",
    )
    save_snapshot(conn, ev.session_id, "session_end", ev.text_of("reason"), state, ctx.now)


def save_snapshot(
    conn: apsw.Connection,
    session_id: str,
    kind: str,
    trigger: str | None,
    content: "Any",
    now: float,
) -> None:
    import json

    from .redact import redact_json

    text = redact_json(conn, json.dumps(content, ensure_ascii=False))
    conn.execute(
        "INSERT INTO context_snapshots (session_id, snapshot_type, trigger, created_at, content,"
        " timestamp) VALUES (?1, ?2, ?3, ?4, ?5, datetime(?4, 'unixepoch'))",
        (session_id, kind, trigger, now, text),
    )


def _cap(text: str | None, limit: int) -> str | None:
    return text if text is None or len(text) <= limit else text[:limit] + "...[truncated]"


def prune_snapshots(conn: apsw.Connection, old_sessions: str, before: float) -> int:
    """Drop the snapshots of old sessions (`old_sessions`: a query of their ids, taking
    `before` as ?1) except each session's last one; returns how many went."""
    conn.execute(
        f"DELETE FROM context_snapshots WHERE session_id IN ({old_sessions}) AND id NOT IN"
        " (SELECT max(id) FROM context_snapshots GROUP BY session_id)",
        (before,),
    )
    return conn.changes()
