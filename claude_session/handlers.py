"""The one table from event name to what a hook does for it.

Each Handler has up to four steps (see the class). Events not in the table are stored as they
came and answered with nothing.
"""

import os

import apsw

from . import ladder, registry, store
from .event import Event

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

Answer = dict  # the JSON object a hook prints (a plain dict: `typing` stays off the hot path)

# Every event of the hooks contract (Claude Code 2.1.240 docs, seen in 2.1.330).
EVENTS: tuple[str, ...] = (
    "SessionStart",
    "Setup",
    "InstructionsLoaded",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "MessageDisplay",
    "PreToolUse",
    "PermissionRequest",
    "PermissionDenied",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Notification",
    "SubagentStart",
    "SubagentStop",
    "TaskCreated",
    "TaskCompleted",
    "Stop",
    "StopFailure",
    "TeammateIdle",
    "ConfigChange",
    "CwdChanged",
    "DirectoryAdded",
    "FileChanged",
    "WorktreeCreate",
    "WorktreeRemove",
    "PreCompact",
    "PostCompact",
    "Elicitation",
    "ElicitationResult",
    "SessionEnd",
)


class Handler:
    """What a hook does for one event, step by step; every step is optional."""

    __slots__ = ("after", "answer", "busy_timeout_ms", "prepare", "record")

    def __init__(
        self,
        record: "Callable[[apsw.Connection, Event, store.Context], None] | None" = None,
        *,
        prepare: "Callable[[str], Any] | None" = None,
        after: "Callable[[store.Context], None] | None" = None,
        answer: "Callable[[apsw.Connection, Event, store.Context], Answer | None] | None" = None,
        busy_timeout_ms: int = 5000,
    ) -> None:
        self.record = record  # derived state, inside the event's transaction
        self.prepare = prepare  # slow outside work, before the transaction (git)
        self.after = after  # side effects once the event is stored (starting the daemon)
        self.answer = answer  # the JSON object for stdout, read after the transaction
        self.busy_timeout_ms = busy_timeout_ms


def capture_git(root: str) -> "dict[str, Any]":
    from . import gitstate  # imported here: only PreCompact pays for subprocess

    return gitstate.capture(root)


def answer_session_start(
    conn: apsw.Connection, ev: Event, ctx: store.Context
) -> "dict[str, Any] | None":
    """Put the recorded state back in front of the model (compaction) or what was left open."""
    source = ev.text_of("source")
    if source != "compact" and not _anything_open(conn, ctx.now):
        return None  # the common start: nothing to say, and `context` need not even load
    from . import context

    if source == "compact":
        text: str | None = context.for_compaction(conn, ev.session_id, ctx.now)
    else:
        text = context.for_new_session(conn, ev.session_id, source, ctx.now)
    if not text:
        return None
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}


def _anything_open(conn: apsw.Connection, now: float) -> bool:
    """A cheap superset of what `context.for_new_session` may report."""
    return bool(
        conn.execute(
            "SELECT EXISTS (SELECT 1 FROM failed_paths WHERE still_relevant = 1"
            "  AND (expires_at IS NULL OR expires_at > ?1))"
            " OR EXISTS (SELECT 1 FROM error_log WHERE category != 'interrupt'"
            f"  AND {ladder.UNFIXED})"
            " OR EXISTS (SELECT 1 FROM agent_registry WHERE status = 'running'"
            "  AND is_main = 0 AND is_internal = 0)",
            (now,),
        ).fetchall()[0][0]
    )


def start_daemon(ctx: store.Context) -> None:
    """Start the project's background process if it is not running (detached, not waited for)."""
    if ctx.config["daemon_autostart"] and not os.environ.get("CLAUDE_SESSION_NO_DAEMON"):
        from . import daemon_control

        daemon_control.ensure_running(ctx.root)


def answer_pre_tool_use(
    conn: apsw.Connection, ev: Event, ctx: store.Context
) -> "dict[str, Any] | None":
    """Before a Write/Edit: name any other live agent holding the file (warn, or deny)."""
    if ev.text_of("tool_name") not in store.EDIT_TOOLS:
        return None
    target = ev.text_of("file_path") or ev.text_of("notebook_path")
    if not target:
        return None
    from .paths import relative_to_root

    path = relative_to_root(ctx.root, target)
    if ctx.config["escalation_deny_edits"]:
        blocked = ladder.blocked_file(conn, ev.session_id, path)
        if blocked:
            from .errors import gist

            reason = (
                f"claude-session: edits to {path} are refused after {blocked[0]} failed attempts"
                f" ({gist(blocked[1])}). Stop and ask the user how to proceed."
            )
            return _pre_tool_use({"permissionDecision": "deny", "permissionDecisionReason": reason})
    holders = registry.conflicts(conn, ev.session_id, ev.text_of("agent_id"), path, ctx.now)
    if not holders:
        return None
    lines = [f"claude-session: {path} is being changed by another live agent."]
    for agent, session, touched, tool, edits, agent_type, description, task in holders[:3]:
        who = "the main thread" if agent == registry.MAIN else f"subagent {agent}"
        who += f" ({agent_type})" if agent_type and agent != registry.MAIN else ""
        if session != ev.session_id:
            who += f" of session {str(session)[:8]}"
        about = f' "{description}"' if description else ""
        doing = f", working on: {' '.join(str(task).split())[:300]}" if task else ""
        minutes = max(0, int((ctx.now - touched) // 60))
        lines.append(
            f"- {who}{about}{doing}; it last changed this file {minutes} min ago"
            f" ({tool}, {edits} edit{'s' if edits != 1 else ''})."
        )
    lines.append(
        "Two agents editing one file overwrite each other's work: leave this file to that agent"
        " or coordinate first, and re-read the file right before any edit."
    )
    text = "\n".join(lines)
    if ctx.config["conflict_policy"] == "deny":
        return _pre_tool_use({"permissionDecision": "deny", "permissionDecisionReason": text})
    return _pre_tool_use({"additionalContext": text})


def _pre_tool_use(output: "Answer") -> "Answer":
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", **output}}


def answer_failure(conn: apsw.Connection, ev: Event, ctx: store.Context) -> "Answer | None":
    """After a failure: the ladder's guidance for the model, and from attempt 4 for the user."""
    if ev.name == "PostToolUse" and not store.response_error(ev):
        return None  # the common case: a success, nothing to say
    found = ladder.latest_for_call(conn, ev.text_of("tool_use_id"))
    if not found:
        return None
    attempt, category, command, tool, file_path, error_text = found
    if category == "interrupt":
        return None
    from . import errors

    what = str(command or f"{tool} {file_path or ''}".strip())
    gist = errors.gist(str(error_text or ""))
    text = errors.guidance(attempt, what, gist, file_path)
    answer: Answer = {"hookSpecificOutput": {"hookEventName": ev.name, "additionalContext": text}}
    if attempt >= errors.USER_AT:
        answer["systemMessage"] = errors.user_message(attempt, what, gist)
    return answer


class ExitBlock:
    """A deliberate, configured block that the event only takes as exit code 2 with the
    reason on stderr (TaskCompleted); `hookrt` turns it into exactly that."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def answer_judge(
    conn: apsw.Connection, ev: Event, ctx: store.Context
) -> "Answer | ExitBlock | None":
    """At the configured events, a judge checks the work is done; a block makes the agent go on."""
    wanted = {e.strip() for e in str(ctx.config["judge_events"]).split(",")}
    if ev.name not in wanted or ev.get("stop_hook_active") in (1, True):
        return None  # not configured, or already going on because of a block: no loop
    if os.environ.get("CLAUDE_SESSION_NO_JUDGE"):
        return None  # doctor and demo runs: never start a (paid) judge on sample data
    from . import judge

    verdict = judge.judge(conn, ev, ctx.config, ctx.now)
    if verdict.decision != "block":
        return None  # allowed, or the judge failed: fail open (recorded)
    reason = f"claude-session judge: the work is not done yet. {verdict.reason}"
    exit_code = 2 if ev.name == "TaskCompleted" else 0
    from .db import Immediate

    with Immediate(conn):  # the audit row says how this hook run really ended
        conn.execute(
            "UPDATE hook_events SET exit_code = ?3, note = 'blocked by the judge' WHERE id ="
            " (SELECT max(id) FROM hook_events WHERE session_id = ?1 AND hook_event_name = ?2)",
            (ev.session_id, ev.name, exit_code),
        )
    if ev.name == "TaskCompleted":
        return ExitBlock(reason)
    return {"decision": "block", "reason": reason}


HANDLERS: dict[str, Handler] = {
    "SessionStart": Handler(
        store.on_session_start, after=start_daemon, answer=answer_session_start
    ),
    "UserPromptSubmit": Handler(store.on_user_prompt),
    "PreToolUse": Handler(store.on_pre_tool_use, answer=answer_pre_tool_use),
    "PostToolUse": Handler(store.on_post_tool_use, answer=answer_failure),
    "PostToolUseFailure": Handler(store.on_post_tool_use_failure, answer=answer_failure),
    "SubagentStart": Handler(store.on_subagent_start),
    "PreCompact": Handler(store.on_pre_compact, prepare=capture_git),
    "TaskCompleted": Handler(answer=answer_judge),
    "Stop": Handler(answer=answer_judge),
    "SubagentStop": Handler(store.on_subagent_stop, answer=answer_judge),
    "PostCompact": Handler(store.on_post_compact),
    # SessionEnd hooks share a 1.5 s budget unless settings raise it: give up on a lock sooner.
    "SessionEnd": Handler(store.on_session_end, busy_timeout_ms=1000),
}
DEFAULT = Handler()
