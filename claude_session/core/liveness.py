"""Whether a recorded agent or session is alive now: only while its Claude Code process runs.

Asked whenever an answer is built (SessionStart, PreToolUse, restore, status), not left to the
background sweep alone: a Claude Code killed a second ago must not be called live in the next
session's first words. A process is judged only where its pid means what it says (this boot,
this pid namespace: core/processes.py); elsewhere, and when none was recorded, the registry's
status is all there is. Standard library and apsw only, a few /proc reads.
"""

import apsw

from . import processes

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from typing import Any

_HERE: list[str | None] = []  # this process's pid space, read once


def pid_space() -> str | None:
    if not _HERE:
        _HERE.append(processes.pid_space())
    return _HERE[0]


def gone(pid: "Any", ticks: "Any", space: "Any") -> bool:
    """True only when the process is recorded, in this pid space, and no longer runs."""
    if not isinstance(pid, int) or not isinstance(ticks, int) or not space:
        return False
    if space != pid_space():
        return False
    return processes.alive(pid, ticks) is False


def alive(pid: "Any", ticks: "Any", space: "Any") -> bool:
    """True only when the process is recorded, in this pid space, and seen running."""
    if not isinstance(pid, int) or not isinstance(ticks, int) or space != pid_space():
        return False
    return processes.alive(pid, ticks) is True


def process_columns(agent: str = "r", session: str = "s") -> str:
    """Result columns claude_pid, claude_started_ticks, claude_pid_space: the process the
    agent row `agent` runs in (a main thread's is its session's row `session`, renewed by a
    resume; a subagent's was taken from its session when it was first seen)."""
    return ", ".join(
        f"CASE WHEN {agent}.is_main = 1 THEN {session}.{column} ELSE {agent}.{column} END"
        f" AS {column}"
        for column in ("claude_pid", "claude_started_ticks", "claude_pid_space")
    )


def row_gone(row: "dict[str, Any]") -> bool:
    """`gone` for a row with `process_columns`."""
    return gone(row.get("claude_pid"), row.get("claude_started_ticks"), row.get("claude_pid_space"))


def gone_agents(conn: apsw.Connection) -> "list[tuple[str, str, bool]]":
    """(registry id, session id, is main) of the agents recorded as running whose Claude Code
    process is gone: killed or crashed, with no SessionEnd or SubagentStop to say so."""
    found = conn.execute(
        f"SELECT r.id, r.session_id, r.is_main, {process_columns()} FROM agent_registry r"
        " LEFT JOIN sessions s ON s.session_id = r.session_id"
        " WHERE r.status = 'running' AND r.is_internal = 0"
    ).fetchall()
    return [
        (str(agent), str(session), bool(is_main))
        for agent, session, is_main, pid, ticks, space in found
        if gone(pid, ticks, space)
    ]
