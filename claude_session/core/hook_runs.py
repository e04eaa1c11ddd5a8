"""The hook runs Claude Code timed (table hook_runs), read from its transcripts by
services/cost/hook_lines.py: the one writer of that table.

A command string is the user's (or another plugin's): it can hold a secret or terminal escapes.
It is stored redacted, its control characters escaped and cut to COMMAND_CHARS, so nothing that
shows it (the CLI, the status line, the web page, OTel) can leak or drive a terminal with it.
"""

from __future__ import annotations

from typing import Any

import apsw

from . import hook_contract, redact
from .terminal import escape_controls

COMMAND_CHARS = 300
# A command longer than this is not redacted and cut, but named by its length alone: a secret
# cut in half at the cut would not be recognised, and redacting megabytes on the agent's say-so
# (it can write to a transcript too) is not worth it. Settings' commands are far shorter.
COMMAND_READ = 4096
NAME_CHARS = 100  # an event's or a hook's name (hookName: "PreToolUse:<tool>")
# Claude Code's attachment types that time a hook run (hook_success, ...) as our outcomes. The
# others (hook_additional_context, hook_blocking_error, hook_system_message, ...) carry no
# duration; they come beside a timed one or not at all.
TIMED = {
    "hook_success": "success",
    "hook_non_blocking_error": "non_blocking_error",
    "hook_cancelled": "cancelled",
    "hook_error_during_execution": "error",
}
SUMMARY = "stop_summary"
# The events whose hooks a stop_hook_summary lists: a timed attachment of theirs with the same
# toolUseID is the same run, counted once (the summary's).
STOP_EVENTS = ("Stop", "SubagentStop")


def is_ours(command: str) -> bool:
    """Whether a run's command is one of claude-session's hooks: an mcp_tool hook named
    SERVER/TOOL, or a command hook ending with the marker `install` writes."""
    return command == hook_contract.HOOK_RUN_NAME or command.rstrip().endswith(hook_contract.MARKER)


def shown_command(command: str) -> str:
    """The command as stored and shown: secrets redacted, control characters escaped, cut."""
    if len(command) > COMMAND_READ:
        return f"(a command of {len(command):,} characters, not shown)"
    text = escape_controls(redact.redact(command))
    return text if len(text) <= COMMAND_CHARS else text[: COMMAND_CHARS - 1] + "…"


def shown_name(name: object) -> str | None:
    """An event's or hook's name as stored: control characters escaped, cut."""
    if name is None:
        return None
    text = escape_controls(redact.redact(str(name)[: NAME_CHARS * 4]))
    return text if len(text) <= NAME_CHARS else text[: NAME_CHARS - 1] + "…"


def forget_file(conn: apsw.Connection, path: str) -> None:
    """A transcript read again from 0 (truncated or replaced): its runs are read again too."""
    conn.execute("DELETE FROM hook_runs WHERE path = ?", (path,))


def record(
    conn: apsw.Connection, path: str, session_id: str, agent_id: str, runs: list[dict[str, Any]]
) -> int:
    """Store runs (keys: line_end, item, prompt_id, event, hook_name, command, outcome,
    tool_use_id, duration_ms, at; the command as Claude Code wrote it). A line read twice is
    one row. A Stop hook's run appears both as a timed attachment and in the stop summary
    with the same toolUseID: the summary's rows stand, the attachment's are dropped."""
    stored = 0
    for run in runs:
        command = str(run["command"])
        event = shown_name(run["event"]) or "?"
        tool_use_id = run.get("tool_use_id")
        summary = run["outcome"] == SUMMARY
        if summary and tool_use_id is not None:
            conn.execute(
                "DELETE FROM hook_runs WHERE session_id = ? AND tool_use_id = ?"
                " AND outcome != ? AND event IN (?, ?)",
                (session_id, tool_use_id, SUMMARY, *STOP_EVENTS),
            )
        elif event in STOP_EVENTS and tool_use_id is not None:
            seen = conn.execute(
                "SELECT 1 FROM hook_runs WHERE session_id = ? AND tool_use_id = ?"
                " AND outcome = ? LIMIT 1",
                (session_id, tool_use_id, SUMMARY),
            ).fetchall()
            if seen:
                continue
        conn.execute(
            "INSERT OR IGNORE INTO hook_runs (path, line_end, item, session_id, agent_id,"
            " prompt_id, event, hook_name, command, ours, outcome, tool_use_id, duration_ms, at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                path,
                int(run["line_end"]),
                int(run.get("item") or 0),
                session_id,
                agent_id,
                run.get("prompt_id"),
                event,
                shown_name(run.get("hook_name")),
                shown_command(command),
                int(is_ours(command)),
                run["outcome"],
                tool_use_id,
                None if run.get("duration_ms") is None else float(run["duration_ms"]),
                run.get("at"),
            ),
        )
        stored += conn.changes()
    return stored
