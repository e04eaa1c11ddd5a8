"""Nothing missing from the record, with the real Claude Code CLI 2.1.330: its PreToolUse and
PostToolUse hooks dropped by `CLAUDE_SESSION_DROP_EVENTS` (they exit 0 unrecorded, as lost
hooks would), the tool calls are filled in from the transcripts the CLI wrote
(services/cost/reconcile.py), each with its tool and status, once."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import WheelInstall, count, query
from fake_api import FakeAnthropic
from test_e2e_claude import claude_binary, claude_env
from test_e2e_timetravel import Agents

from claude_session.core import db
from claude_session.services.cost import reconcile

pytestmark = pytest.mark.e2e

JSON = ("--output-format", "json")
SKIP = ("--dangerously-skip-permissions",)


def test_real_claude_code_with_tool_hooks_dropped_is_completed_from_its_transcripts(
    tmp_path: Path, wheel_install: WheelInstall
) -> None:
    """The real CLI runs test_e2e_timetravel's session with PreToolUse and PostToolUse dropped
    by the switch; its transcripts then give back every tool call, with its name and status."""
    binary = claude_binary()
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    (project / "app.py").write_text("VALUE = 1\n")
    (project / "old.txt").write_text("old\n")
    subprocess.run(
        [wheel_install.cli, "--project", str(project), "install"], check=True, capture_output=True
    )
    with FakeAnthropic(Agents(project)) as api:
        env = claude_env(home, api.url) | {
            "CLAUDE_SESSION_DROP_EVENTS": "PreToolUse,PostToolUse",
            "CLAUDE_SESSION_NO_DAEMON": "1",  # nothing reconciles but this test
        }
        done = subprocess.run(
            [str(binary), "-p", "TASK-TT: change the project", *JSON, *SKIP],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    session = json.loads(done.stdout)["session_id"]
    assert (project / "sub.txt").read_text() == "from sub\n"  # the session did its work
    assert count(project, "events", "hook_event_name IN ('PreToolUse', 'PostToolUse')") == 0
    assert count(project, "events", "hook_event_name = 'SubagentStart'") == 1  # not dropped

    (main,) = (home / ".claude" / "projects").glob(f"*/{session}.jsonl")
    files = {None: main} | {
        p.stem.removeprefix("agent-"): p for p in main.with_suffix("").glob("subagents/*.jsonl")
    }
    assert len(files) == 2
    parsed = {
        agent: [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for agent, path in files.items()
    }
    expected = {}
    for agent, entries in parsed.items():
        statuses = {
            b["tool_use_id"]: "failed" if b.get("is_error") else "succeeded"
            for e in entries
            if e.get("type") == "user" and isinstance(e["message"]["content"], list)
            for b in e["message"]["content"]
            if b.get("type") == "tool_result"
        }
        for e in entries:
            if e.get("type") == "assistant":
                for b in e["message"]["content"]:
                    if b.get("type") == "tool_use":
                        expected[b["id"]] = (b["name"], statuses[b["id"]], agent or session)
    assert sorted(name for name, _, _ in expected.values()) == [
        "Agent",
        "Bash",
        "Edit",
        "Write",
        "Write",
    ]

    conn = db.connect(str(project / ".claude-session.db"))
    try:
        added = sum(
            reconcile.fill(conn, str(project), session, agent, entries)
            for agent, entries in parsed.items()
        )
        assert added == 2 * len(expected)
        assert (
            sum(
                reconcile.fill(conn, str(project), session, agent, entries)
                for agent, entries in parsed.items()
            )
            == 0
        )
    finally:
        conn.close()
    found = query(project, "SELECT tool_use_id, tool_name, status, agent_id FROM tool_calls")
    assert {row[0]: tuple(row[1:]) for row in found} == expected
    assert set(
        query(
            project,
            "SELECT h.note FROM hook_events h JOIN events e ON e.id = h.event_id"
            " WHERE e.hook_event_name IN ('PreToolUse', 'PostToolUse')",
        )
    ) == {(reconcile.NOTE,)}
    assert count(project, "events", "hook_event_name = 'SubagentStart'") == 1
    assert query(
        project, "SELECT agent_id, file_path, edits FROM file_claims ORDER BY file_path"
    ) == [
        ("main", "app.py", 1),
        ("main", "config.py", 1),
        (next(a for a in parsed if a), "sub.txt", 1),
    ]
