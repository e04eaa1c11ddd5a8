"""No query on a hook's path scans a table that grows with history: every statement run while
applying a representative set of events (and computing the hooks' answers) on a database with
history is checked with EXPLAIN QUERY PLAN."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import apsw
import pytest
from conftest import fixture
from inproc import Recorder

GROWING = {
    "events",
    "hook_events",
    "error_log",
    "agent_launches",
    "file_claims",
    "agent_registry",
    "prompts",
    "context_snapshots",
    "failed_paths",
    "sessions",
    "agent_transitions",
    "session_metrics",
}


def session_events(root: Path, n: int) -> list[dict[str, Any]]:
    """One session's worth of events: prompts, edits, commands, failures, a subagent."""
    sid = f"session-{n:05d}"
    out: list[dict[str, Any]] = [fixture("SessionStart.startup", root) | {"session_id": sid}]
    out.append(fixture("UserPromptSubmit", root) | {"session_id": sid})
    for i in range(3):
        for name in ("PreToolUse.Edit", "PostToolUse.Edit", "PreToolUse.Bash", "PostToolUse.Bash"):
            payload = fixture(name, root) | {"session_id": sid, "tool_use_id": f"t{n}-{i}-{name}"}
            out.append(payload)
    failure = fixture("PostToolUseFailure.Bash", root) | {"session_id": sid}
    out += [failure | {"tool_use_id": f"f{n}-{i}"} for i in range(3)]
    skill = fixture("PreToolUse.Bash", root) | {"session_id": sid, "tool_use_id": f"k{n}"}
    skill |= {"hook_event_name": "PreSkillShellCommand", "command_name": "stamp"}
    skill |= {"invoked_by": "claude", "tool_input": {"command": "date > stamp.txt"}}
    out.append(skill)  # a skill's inline shell command (2.1.332), ended by the next event
    out.append(fixture("PreToolUse.Agent", root) | {"session_id": sid, "tool_use_id": f"a{n}"})
    out.append(fixture("SubagentStart", root) | {"session_id": sid, "agent_id": f"ag{n}"})
    out.append(fixture("SubagentStop", root) | {"session_id": sid, "agent_id": f"ag{n}"})
    out.append(fixture("PreCompact", root) | {"session_id": sid})
    out.append(fixture("SessionEnd", root) | {"session_id": sid})
    return out


@pytest.fixture
def busy_history(project: Path) -> Recorder:
    os.environ["CLAUDE_SESSION_NO_JUDGE"] = "1"
    recorder = Recorder(project)
    for n in range(120):  # ~3,000 events over 120 sessions
        for payload in session_events(project, n):
            recorder.send(payload)
            recorder.advance(0.5)
    return recorder  # no ANALYZE: a real database has no statistics either


def test_no_hook_query_scans_a_growing_table(busy_history: Recorder) -> None:
    root = Path(busy_history.root)
    seen: list[str] = []

    def trace(cursor: apsw.Cursor, sql: str, bindings: Any) -> bool:
        seen.append(sql)
        return True

    busy_history.conn.exec_trace = trace
    live = session_events(root, 99_999)
    live.insert(2, fixture("SessionStart.compact", root) | {"session_id": "session-99999"})
    for payload in live:
        busy_history.send(payload)
    busy_history.conn.exec_trace = None
    del os.environ["CLAUDE_SESSION_NO_JUDGE"]
    assert_no_scans(busy_history.conn, seen)


def test_no_status_line_query_scans_a_growing_table(busy_history: Recorder) -> None:
    """The status line runs on every assistant message: the same rule as the hooks."""
    from claude_session.core import statusline

    seen: list[str] = []

    def trace(cursor: apsw.Cursor, sql: str, bindings: Any) -> bool:
        seen.append(sql)
        return True

    busy_history.conn.exec_trace = trace
    for session in ("session-00042", None):  # one session, and the whole project
        statusline.summarize(busy_history.conn, session, busy_history.now)
    busy_history.conn.exec_trace = None
    assert sum(" FROM error_log " in sql for sql in seen) == 2
    assert_no_scans(busy_history.conn, seen)


def assert_no_scans(conn: apsw.Connection, statements: list[str]) -> None:
    scans: dict[str, str] = {}
    for sql in set(statements):
        if not sql.lstrip().upper().startswith(("SELECT", "INSERT", "UPDATE", "DELETE", "WITH")):
            continue
        plan = conn.execute(f"EXPLAIN QUERY PLAN {sql}", _nulls(sql)).fetchall()
        for row in plan:
            detail = str(row[-1])
            match = re.match(r"SCAN (\w+)", detail)
            if not match or match.group(1) not in GROWING:
                continue
            if "USING" in detail and "LIMIT" in sql.upper() and "ORDER BY" in sql.upper():
                continue  # walking an index in order, stopped by LIMIT: bounded
            scans[" ".join(sql.split())[:300]] = detail
    assert not scans, "\n".join(f"{d}: {q}" for q, d in scans.items())


def _nulls(sql: str) -> dict[str, None] | tuple[None, ...]:
    numbered = {int(m) for m in re.findall(r"\?(\d+)", sql)}
    if numbered:
        return tuple(None for _ in range(max(numbered)))
    return tuple(None for _ in range(sql.count("?")))


def test_hook_statements_are_compiled_once_not_per_binding(project: Path) -> None:
    """SQLite 3.54 re-plans a statement on every new binding of `column = ?` unless the
    planner's stability guarantee is on: a full compile per execute. The authorizer is called
    only while compiling, so a second session of the same events must call it (almost) never."""
    recorder = Recorder(project)
    compiled = []

    def authorizer(*args: Any) -> int:
        compiled.append(args)
        return apsw.SQLITE_OK

    recorder.conn.authorizer = authorizer  # expires the cache: everything compiles anew
    for n in (1, 2):
        for payload in session_events(project, n):
            recorder.send(payload)
            recorder.advance(0.5)
    warm = len(compiled)
    compiled.clear()
    for payload in session_events(project, 3):
        recorder.send(payload)
        recorder.advance(0.5)
    recorder.conn.authorizer = None
    assert warm > 100  # the first sessions compiled their statements
    assert len(compiled) < 20, len(compiled)
