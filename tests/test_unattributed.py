"""Payloads without a session id (issue 44, part 2): other tools' hooks (Cursor sends a
`conversation_id`, Codex nothing) reach the same hook commands. Their events are stored,
unattributed and with the reason, and make no session: `status`, `sessions` and `agents` never
list one, no daemon starts for it, and `doctor` counts them. Through the hook process and the
installed CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import (
    daemons_of,
    database_at_version,
    fixture,
    query,
    run_cli,
    run_hook,
    web_pages,
)

from claude_session.core import db

CODEX_START = {"hook_event_name": "SessionStart", "source": "startup", "model": "gpt-5-codex"}
CODEX_TOOL = {
    "hook_event_name": "PreToolUse",
    "tool_name": "shell",
    "tool_input": {"command": ["bash", "-lc", "ls"]},
    "turn_id": "t-1",
}
CURSOR_SHELL = {
    "hook_event_name": "beforeShellExecution",
    "conversation_id": "668320d2-2fd8-4888-b33c-2a466fec86e7",
    "generation_id": "a06d5d1c-2ff1-4c6f-8a1d-7cbb4f8b0c21",
    "command": "npm test",
    "workspace_roots": [],
}
CURSOR_REASON = "no session_id (Cursor's conversation_id 668320d2-2fd8-4888-b33c-2a466fec86e7)"
DAEMON_ON = {"CLAUDE_SESSION_NO_DAEMON": ""}  # a hook may start the daemon, as in real use


def foreign(project: Path) -> None:
    """A Codex-shaped session start and tool call, and a Cursor-shaped shell command, each sent
    to the hook installed for the Claude Code event it stands for."""
    for event, payload in (
        ("SessionStart", CODEX_START),
        ("PreToolUse", CODEX_TOOL),
        ("PreToolUse", CURSOR_SHELL),
    ):
        done = run_hook(event, payload | {"cwd": str(project)}, project, env=DAEMON_ON)
        assert done.stdout == ""  # no answer: nothing of ours is said to another tool


def cli_json(project: Path, *args: str) -> Any:
    done = run_cli(project, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def doctor_rows(project: Path) -> dict[str, dict[str, Any]]:
    """`doctor --json` by check (it exits 1 here: no hooks are installed in a test project)."""
    done = run_cli(project, "doctor", "--json")
    return {row["check"]: row for row in json.loads(done.stdout)}


def test_other_tools_events_are_stored_unattributed_and_make_no_session(
    project: Path, reap_daemons: None
) -> None:
    foreign(project)
    assert query(
        project, "SELECT session_id, hook_event_name, unattributed FROM events ORDER BY id"
    ) == [
        ("", "SessionStart", "no session_id"),
        ("", "PreToolUse", "no session_id"),
        ("", "beforeShellExecution", CURSOR_REASON),
    ]
    assert query(project, "SELECT session_id, note FROM hook_events ORDER BY id") == [
        (None, "unattributed: no session_id"),
        (None, "unattributed: no session_id"),
        (None, f"unattributed: {CURSOR_REASON}"),
    ]
    for table in ("sessions", "agent_registry", "session_metrics", "project_state"):
        assert query(project, f"SELECT count(*) FROM {table}") == [(0,)], table
    assert daemons_of(project) == []  # none started for a session that is none

    status = cli_json(project, "status")
    assert status["now"]["live_agents"] == [] and status["sessions"] == []
    assert not [p for p in status["now"]["problems"] if "daemon" in p], status["now"]["problems"]
    assert cli_json(project, "sessions") == [] and cli_json(project, "agents") == []
    text = run_cli(project, "status").stdout
    assert "live agents: none" in text and "unknown" not in text
    [listing] = web_pages(str(project), "")  # the web page's sessions
    assert "unknown" not in listing and "668320d2" not in listing

    events = cli_json(project, "events")
    assert [(e["session_id"], e["unattributed"]) for e in events] == [
        (None, "no session_id"),
        (None, "no session_id"),
        (None, CURSOR_REASON),
    ]
    doctor = doctor_rows(project)
    row = doctor["events without a session id"]
    assert row["ok"] and row["detail"].startswith(
        "3 events arrived without a session id (other tools' payloads?): stored unattributed"
    )


def test_a_claude_code_session_beside_them_is_the_only_one(project: Path) -> None:
    start = fixture("SessionStart.startup", project)
    run_hook("SessionStart", start, project)
    foreign(project)
    session = start["session_id"]
    run_hook("PreToolUse", fixture("PreToolUse.Bash", project) | {"session_id": session}, project)
    assert [s["session_id"] for s in cli_json(project, "sessions")] == [session]
    assert {a["session_id"] for a in cli_json(project, "agents")} == {session}
    status = cli_json(project, "status")
    assert [s["session_id"] for s in status["sessions"]] == [session]
    [listing] = web_pages(str(project), "")
    assert session[:8] in listing and "unknown" not in listing
    counted = query(
        project,
        "SELECT sum(CAST(value AS REAL)) FROM session_metrics WHERE session_id = ?"
        " AND key = 'count'",
        (session,),
    )
    assert counted == [(2.0,)]  # its own two events, none of the others'
    doctor = doctor_rows(project)
    assert doctor["events without a session id"]["detail"].startswith("3 events arrived")


def test_doctor_says_none_when_every_event_named_its_session(project: Path) -> None:
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    doctor = doctor_rows(project)
    assert doctor["events without a session id"]["detail"] == "none: every event named its session"


def test_events_filed_under_the_invented_session_are_marked_on_upgrade(tmp_path: Path) -> None:
    """Before version 31 such events went to a session invented as 'unknown': the migration
    marks them as what they were, so that doctor counts them too."""
    path = str(tmp_path / "v30.db")
    old = database_at_version(path, 30)
    for n, session in enumerate(("unknown", "a-real-session")):
        old.execute(
            "INSERT INTO events (dedup_key, received_at, session_id, hook_event_name, payload,"
            " payload_bytes) VALUES (?, 1, ?, 'Stop', '{}', 2)",
            (f"k{n}", session),
        )
    old.close()
    conn = db.connect(path)
    assert conn.execute("SELECT session_id, unattributed FROM events ORDER BY id").fetchall() == [
        ("unknown", "no session_id (filed under an invented session 'unknown' before version 31)"),
        ("a-real-session", None),
    ]
    plan = " ".join(
        str(r[-1])
        for r in conn.execute(
            "EXPLAIN QUERY PLAN SELECT count(*) FROM events WHERE unattributed IS NOT NULL"
        )
    )
    assert "events_unattributed" in plan  # counted through its index, never a pass over the log


def test_prune_takes_the_old_ones_and_keeps_the_recent(project: Path) -> None:
    """They belong to no session that could end, so they go by their own age: those that
    arrived before `--older-than` (30 days by default), with their audit rows."""
    foreign(project)
    conn = db.connect(str(project / ".claude-session.db"))
    conn.execute("UPDATE events SET received_at = received_at - 90 * 86400 WHERE id <= 2")
    conn.close()
    plan = cli_json(project, "prune", "--dry-run")["would_remove"]["rows"]
    assert (plan["events"], plan["hook_events"]) == (2, 2)
    removed = cli_json(project, "prune", "--yes")["rows_removed"]
    assert (removed["events"], removed["hook_events"]) == (2, 2)
    assert query(project, "SELECT hook_event_name FROM events") == [("beforeShellExecution",)]
    assert query(project, "SELECT count(*) FROM hook_events") == [(1,)]
