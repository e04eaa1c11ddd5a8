"""The real hook scripts, as subprocesses, on payloads recorded from Claude Code 2.1.330."""

from __future__ import annotations

import json
import shlex
import stat
from pathlib import Path

import pytest
from conftest import FIXTURES, count, fixture, query, run_hook, stream

from claude_session.services.setup import installer


def test_every_installed_command_runs_the_in_package_entry() -> None:
    """One entry inside the package for every event: a wheel always carries it."""
    entry = installer.hook_entry()
    assert entry.is_file() and entry.parent.name == "claude_session"
    for event in installer.installed_events():
        argv = installer.hook_argv(event)
        assert argv[1:] == ["-I", "-S", str(entry), event]
        assert installer.hook_command(event).startswith(shlex.join(argv) + ";")


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.json")))
def test_each_recorded_payload_is_stored_once_with_its_fields(project: Path, name: str) -> None:
    payload = fixture(name, project)
    run_hook(payload["hook_event_name"], payload, project)
    stored = query(
        project,
        "SELECT session_id, hook_event_name, tool_name, tool_use_id, agent_id, payload FROM events",
    )
    assert len(stored) == 1
    session_id, event, tool, tool_use_id, agent_id, text = stored[0]
    assert (session_id, event) == (payload["session_id"], payload["hook_event_name"])
    assert tool == payload.get("tool_name") and tool_use_id == payload.get("tool_use_id")
    assert agent_id == payload.get("agent_id")
    assert json.loads(text) == payload  # nothing to redact here: stored exactly as it came
    audit = query(project, "SELECT event_type, exit_code, outcome, duration_ms FROM hook_events")
    assert audit[0][:3] == (payload["hook_event_name"], 0, "stored") and audit[0][3] > 0


def test_database_is_private_wal_and_created_in_the_project(project: Path) -> None:
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    db = project / ".claude-session.db"
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    assert query(project, "PRAGMA journal_mode")[0][0] == "wal"


def test_project_root_falls_back_to_payload_cwd(project: Path, tmp_path: Path) -> None:
    payload = fixture("UserPromptSubmit", project)
    run_hook("UserPromptSubmit", payload, None, cwd=tmp_path)  # no CLAUDE_PROJECT_DIR
    assert count(project, "events") == 1
    assert not (tmp_path / ".claude-session.db").exists()


def test_claude_project_dir_wins_over_cwd(project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    payload = fixture("UserPromptSubmit", elsewhere)  # cwd: a subfolder Claude cd'd into
    run_hook("UserPromptSubmit", payload, project)
    assert count(project, "events") == 1
    assert not (elsewhere / ".claude-session.db").exists()


def test_recorded_stream_derives_sessions_agents_claims_errors_and_snapshots(project: Path) -> None:
    outputs = {}
    for payload in stream(project):
        result = run_hook(payload["hook_event_name"], payload, project)
        outputs.setdefault(payload["hook_event_name"], []).append(result.json())
    events = stream(project)
    assert count(project, "events") == len(events)
    assert count(project, "hook_events", "outcome = 'stored'") == len(events)

    sessions = dict(query(project, "SELECT session_id, status FROM sessions"))
    assert sessions == {
        "93a0fe30-97e0-463f-b74a-dcf3bfd9a886": "ended",
        "560819af-56fc-4528-be0a-32a24d1aa819": "ended",
    }
    # Real agent: linked to its Agent tool call, completed by SubagentStop.
    agent = query(
        project,
        "SELECT agent_type, status, description, task_description, tool_use_id, is_internal,"
        " tool_uses"
        " FROM agent_registry WHERE id = 'a026341fa5086f41e'",
    )
    assert agent == [
        (
            "general-purpose",
            "completed",
            "sub work",
            "SUBTASK-B: read hello.py",
            "toolu_000014",
            0,
            1,
        )
    ]
    # The two compaction helpers: SubagentStop without SubagentStart, kept apart, never running.
    helpers = query(
        project,
        "SELECT status, is_internal FROM agent_registry WHERE is_main = 0 AND id != ?",
        ("a026341fa5086f41e",),
    )
    assert sorted(helpers) == [("completed", 1), ("completed", 1)]
    # Each session's main thread is an agent too, completed when its session ended.
    mains = query(project, "SELECT id, status FROM agent_registry WHERE is_main = 1")
    assert sorted(mains) == sorted((sid, "completed") for sid in sessions)
    # The main thread wrote then edited hello.py: one claim, two edits, path relative.
    assert query(project, "SELECT file_path, agent_id, edits, operation FROM file_claims") == [
        ("hello.py", "main", 2, "Edit")
    ]
    error = query(
        project,
        "SELECT tool_name, error_category, exit_code, attempt_number, command, resolution"
        " FROM error_log",
    )
    # never fixed: abandoned when its session ended
    assert error == [("Bash", "runtime", 1, 1, "python3 -c 'import nonexistent_mod'", "abandoned")]
    kinds = [
        r[0] for r in query(project, "SELECT snapshot_type FROM context_snapshots ORDER BY id")
    ]
    assert kinds == [
        "session_end",
        "pre_compact",
        "post_compact",
        "session_end",
        "session_end",
        "session_end",
    ]
    prompts = [r[0] for r in query(project, "SELECT prompt FROM prompts ORDER BY id")]
    assert "hello there" in prompts and "TASK-A: write hello.py and run it" in prompts
    compact_answer = outputs["SessionStart"][2]
    assert compact_answer is not None
    assert compact_answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"


def test_compact_session_start_restores_claims_errors_and_task(project: Path) -> None:
    sid = "560819af-56fc-4528-be0a-32a24d1aa819"
    for name in (
        "UserPromptSubmit",
        "PostToolUse.Write",
        "PostToolUseFailure.Bash",
        "PreToolUse.Agent",
        "PostToolUse.Agent",
        "SubagentStart",
    ):
        payload = fixture(name, project)
        payload["session_id"] = sid
        run_hook(payload["hook_event_name"], payload, project)
    pre = fixture("PreCompact", project) | {"session_id": sid}
    assert run_hook("PreCompact", pre, project).stdout == ""  # PreCompact takes no output
    start = fixture("SessionStart.compact", project) | {"session_id": sid}
    answer = run_hook("SessionStart", start, project).json()
    assert answer is not None
    text = answer["hookSpecificOutput"]["additionalContext"]
    assert text.startswith("<claude-session-recorded-state>")
    assert text.endswith("</claude-session-recorded-state>")
    assert "hello there" in text  # the task
    assert "hello.py" in text  # the claimed file
    assert "nonexistent_mod" in text and "failed 1x" in text  # the failed command
    assert "a026341fa5086f41e" in text and "SUBTASK-B" in text  # the live agent and its task
    assert len(text) <= 8000


def test_startup_mentions_what_the_previous_session_left_open(project: Path) -> None:
    run_hook("PostToolUseFailure", fixture("PostToolUseFailure.Bash", project), project)
    fresh = fixture("SessionStart.startup", project)  # another session id
    answer = run_hook("SessionStart", fresh, project).json()
    assert answer is not None
    text = answer["hookSpecificOutput"]["additionalContext"]
    assert "previous session (560819af" in text and "nonexistent_mod" in text


def test_startup_with_nothing_open_answers_nothing(project: Path) -> None:
    assert run_hook("SessionStart", fixture("SessionStart.startup", project), project).stdout == ""


def test_duplicate_delivery_leaves_one_row(project: Path) -> None:
    payload = fixture("PostToolUse.Edit", project)
    run_hook("PostToolUse", payload, project)
    run_hook("PostToolUse", payload, project)
    assert count(project, "events") == 1
    assert count(project, "file_claims") == 1
    assert query(project, "SELECT edits FROM file_claims")[0][0] == 1  # derived state once too
    assert [r[0] for r in query(project, "SELECT outcome FROM hook_events ORDER BY id")] == [
        "stored",
        "duplicate",
    ]


def test_late_tool_event_does_not_resurrect_a_finished_agent(project: Path) -> None:
    stop = fixture("SubagentStop", project) | {
        "agent_id": "a026341fa5086f41e",
        "agent_type": "general-purpose",
    }
    run_hook("SubagentStart", fixture("SubagentStart", project), project)
    run_hook("SubagentStop", stop, project)
    run_hook("PostToolUse", fixture("PostToolUse.Read.subagent", project), project)
    assert query(
        project, "SELECT status FROM agent_registry WHERE id = ?", ("a026341fa5086f41e",)
    ) == [("completed",)]


def test_subagent_edit_claims_for_the_subagent(project: Path) -> None:
    payload = fixture("PostToolUse.Edit", project) | {"agent_id": "a1", "agent_type": "Plan"}
    run_hook("PostToolUse", payload, project)
    assert query(project, "SELECT agent_id, file_path FROM file_claims") == [("a1", "hello.py")]
    assert query(project, "SELECT status, agent_type FROM agent_registry WHERE is_main = 0") == [
        ("running", "Plan")
    ]


def test_file_outside_the_project_is_stored_absolute_and_never_opened(project: Path) -> None:
    payload = fixture("PostToolUse.Write", project)
    payload["tool_input"]["file_path"] = "/etc/passwd"
    run_hook("PostToolUse", payload, project)
    assert query(project, "SELECT file_path FROM file_claims") == [("/etc/passwd",)]


def test_new_database_in_a_git_checkout_stays_out_of_git(project: Path) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    run_hook("PostToolUse", fixture("PostToolUse.Write", project), project)
    status = subprocess.run(
        ["git", "status", "--porcelain", "--ignored=no"],
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert ".claude-session" not in status
    assert (project / ".claude-session.db").exists()
    assert (project / ".git" / "info" / "exclude").read_text().count(".claude-session.db*") == 1
