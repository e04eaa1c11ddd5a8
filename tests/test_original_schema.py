"""The original design's schema is the public contract: queries written against it, run on a
recorded real Claude Code session played through the real hooks, return the right rows."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, fixture, query, run_hook, stream, write_config

from claude_session.core import db
from claude_session.services.setup import installer

# The original design, table by table: every column must exist under this name.
ORIGINAL = {
    "project_state": ("key", "value", "updated_at"),
    "agent_registry": (
        "id",
        "session_id",
        "agent_type",
        "task_description",
        "spawn_time",
        "end_time",
        "status",
        "files_changed",
    ),
    "file_claims": ("id", "session_id", "agent_id", "file_path", "operation", "timestamp"),
    "session_metrics": ("id", "session_id", "event_type", "key", "value", "timestamp"),
    "failed_paths": (
        "id",
        "session_id",
        "file_path",
        "approach",
        "reason_failed",
        "context",
        "still_relevant",
        "timestamp",
    ),
    "error_log": (
        "id",
        "session_id",
        "task_id",
        "agent_id",
        "file_path",
        "error_category",
        "error_message",
        "attempt_number",
        "resolution",
        "timestamp",
    ),
    "context_snapshots": ("id", "session_id", "snapshot_type", "content", "timestamp"),
    "llm_verdicts": (
        "id",
        "session_id",
        "hook_event",
        "task_id",
        "verdict_json",
        "decision",
        "reason",
        "timestamp",
    ),
    "hook_events": (
        "id",
        "session_id",
        "timestamp",
        "event_type",
        "dispatcher",
        "payload_summary",
        "exit_code",
        "duration_ms",
    ),
}
TEXT_TIME = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")
RECORDED = "560819af-56fc-4528-be0a-32a24d1aa819"  # the recorded session with the subagent
LIVE = "7d1f3c2e-5a4b-4c3d-8e2f-1a0b9c8d7e6f"  # the session this test adds
PROMPT_ID = "b7c1d2e3-f4a5-4b6c-8d7e-9f0a1b2c3d4e"
FIXER = "a7f00d5e0c0ffee42"
TOKEN = "ghp_" + "Z" * 36  # a GitHub token in the prompt: never stored
PYTEST = "pytest -q tests/test_parser.py"
APPROACH = "python3 tools/migrate.py --in-place"  # no check: a failed path at attempt 3
BLOCK = {"decision": "block", "reason": "the parser still accepts letters", "confidence": 0.9}


def test_a_new_database_has_every_original_table_and_column(tmp_path: Path) -> None:
    """As tools list them: PRAGMA table_info, which does not show generated columns."""
    conn = db.connect(str(tmp_path / "fresh.db"))
    for table, columns in ORIGINAL.items():
        found = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        assert set(columns) <= found, (table, set(columns) - found)


def live(project: Path, name: str, **changes: Any) -> dict[str, Any]:
    """A recorded payload moved into the added session, in the added user turn."""
    return fixture(name, project) | {"session_id": LIVE, "prompt_id": PROMPT_ID} | changes


def play(project: Path, tmp_path: Path) -> int:
    """The recorded stream, then a session of our own: a command failing three times, a
    subagent editing files, a plugin-delivered hook and a TaskCompleted the judge blocks.
    Returns how many hook runs there were."""
    judge = tmp_path / "judge.py"
    judge.write_text(f"import sys\nsys.stdin.read()\nprint({json.dumps(json.dumps(BLOCK))})\n")
    config = {"judge_command": f"{sys.executable} {judge}", "judge_events": "TaskCompleted"}
    write_config(project, config)
    runs = 0
    for payload in stream(project):
        run_hook(payload["hook_event_name"], payload, project)
        runs += 1
    own = [
        live(project, "SessionStart.startup"),
        live(project, "UserPromptSubmit", prompt=f"Make the parser strict\nwith {TOKEN}"),
    ]
    for attempt in (1, 2, 3):
        failure = live(project, "PostToolUseFailure.Bash", tool_use_id=f"toolu_fail{attempt}")
        failure["tool_input"] = {"command": PYTEST, "description": "run the tests"}
        failure["error"] = (
            "Exit code 1\nF\nFAILED tests/test_parser.py::test_strict - assert 'x' is rejected\n"
            "1 failed in 0.04s"
        )
        failure["duration_ms"] = 100 * attempt
        own.append(failure)
    own.append(live(project, "SubagentStart", agent_id=FIXER))
    for n, (tool, path) in enumerate(
        [("Edit", "src/parser.py"), ("Edit", "src/parser.py"), ("Write", "src/rules.py")]
    ):
        edit = live(project, f"PostToolUse.{tool}", tool_use_id=f"toolu_fix{n}")
        edit |= {"agent_id": FIXER, "agent_type": "general-purpose"}
        edit["tool_input"]["file_path"] = str(project / path)
        own.append(edit)
    own.append(live(project, "PostToolUse.Edit", tool_use_id="toolu_main_edit"))
    own.append(
        live(project, "SubagentStop", agent_id=FIXER, agent_type="general-purpose")
        | {"last_assistant_message": "Parser fixed."}
    )
    for payload in own:
        run_hook(payload["hook_event_name"], payload, project)
    runs += len(own)
    # A hook delivered by a plugin: Claude Code gives it CLAUDE_PLUGIN_ROOT.
    plugin = {"CLAUDE_PLUGIN_ROOT": str(tmp_path / "plugin")}
    run_hook("Stop", live(project, "Stop"), project, env=plugin)
    # TaskCompleted through the installed command: the judge's block is exit 2.
    task = {
        "session_id": LIVE,
        "transcript_path": "/tmp/t.jsonl",
        "cwd": str(project),
        "hook_event_name": "TaskCompleted",
        "task_id": "3",
        "task_subject": "Make the parser strict",
    }
    done = installer.run_hook_command(
        installer.hook_command("TaskCompleted"), json.dumps(task).encode(), project, timeout=60
    )
    assert done.returncode == 2 and "the parser still accepts letters" in done.stderr
    return runs + 2


def test_queries_written_against_the_original_schema(project: Path, tmp_path: Path) -> None:
    runs = play(project, tmp_path)

    agents = {
        row[0]: row[1:]
        for row in query(
            project, "SELECT id, task_description, status, files_changed FROM agent_registry"
        )
    }
    assert agents["a026341fa5086f41e"] == ("SUBTASK-B: read hello.py", "completed", "[]")
    assert agents[RECORDED] == ("TASK-A: write hello.py and run it", "completed", '["hello.py"]')
    # the subagent's edits, each file once, in order; the main thread's own edit on its row
    assert agents[FIXER][1:] == ("completed", '["src/parser.py","src/rules.py"]')
    assert agents[LIVE][0].startswith("Make the parser strict\nwith [REDACTED:github_token")
    assert agents[LIVE][2] == '["hello.py"]'
    times = query(project, "SELECT spawn_time, end_time FROM agent_registry WHERE id = ?", (FIXER,))
    assert all(TEXT_TIME.match(t) for t in times[0])

    errors = query(
        project,
        "SELECT error_category, error_message, attempt_number, resolution, task_id, timestamp"
        " FROM error_log ORDER BY id",
    )
    assert [e[0] for e in errors] == ["runtime", "test", "test", "test"]
    assert errors[0][2:5] == (1, "abandoned", "f488a35e-814d-45c0-9de3-7bc46145606e")
    assert "No module named 'nonexistent_mod'" in errors[0][1]
    assert [e[2:5] for e in errors[1:]] == [
        (1, None, PROMPT_ID),
        (2, None, PROMPT_ID),
        (3, "escalated_research", PROMPT_ID),
    ]
    assert all("FAILED tests/test_parser.py::test_strict" in e[1] for e in errors[1:])
    assert all(TEXT_TIME.match(e[5]) for e in errors)

    # a check failing three times is an error to fix and re-run, never a failed path (the
    # failed_paths columns are checked at the end, on a real approach failing three times)
    assert query(project, "SELECT count(*) FROM failed_paths") == [(0,)]

    verdicts = query(
        project, "SELECT hook_event, decision, reason, verdict_json, task_id FROM llm_verdicts"
    )
    assert len(verdicts) == 1
    hook_event, decision, reason, verdict_json, task_id = verdicts[0]
    assert (hook_event, decision, reason, task_id) == (
        "TaskCompleted",
        "block",
        "the parser still accepts letters",
        "3",
    )
    assert json.loads(verdict_json) == BLOCK

    audit = query(
        project,
        "SELECT event_type, dispatcher, payload_summary, exit_code, duration_ms, timestamp"
        " FROM hook_events ORDER BY id",
    )
    assert len(audit) == runs  # every hook run
    assert all(TEXT_TIME.match(row[5]) and row[4] > 0 for row in audit)
    summaries = [row[2] for row in audit]
    assert all(0 < len(s) <= 200 and "\n" not in s for s in summaries)
    assert not any(TOKEN in s for s in summaries)
    for expected in (
        "SessionStart startup",
        "prompt: TASK-A: write hello.py and run it",
        "Write hello.py",
        "Bash: python3 hello.py",
        "Agent: sub work",
        "SubagentStart general-purpose a026341fa5086f41e",
        "SubagentStop internal a05c61e3e9b018f84",
        "PreCompact manual",
        f"Bash: {PYTEST}",
        "Edit src/parser.py",
        "TaskCompleted 3: Make the parser strict",
    ):
        assert expected in summaries, expected
    assert audit[-1][:2] == ("TaskCompleted", "settings") and audit[-1][3] == 2  # its own row
    assert [row[:2] for row in audit if row[1] != "settings"] == [("Stop", "plugin")]
    assert [row[0] for row in audit if row[3] != 0] == ["TaskCompleted"]

    metrics = dict(
        ((event_type, key), value)
        for event_type, key, value in query(
            project,
            "SELECT event_type, key, value FROM session_metrics WHERE session_id = ?",
            (LIVE,),
        )
    )
    assert metrics[("PostToolUseFailure", "count")] == "3"
    assert metrics[("PostToolUseFailure", "tool_failures")] == "3"
    assert metrics[("PostToolUseFailure", "duration_ms")] == "600"
    assert metrics[("PostToolUse", "count")] == "4"
    assert metrics[("PostToolUse", "file_edits")] == "4"
    assert metrics[("UserPromptSubmit", "prompts")] == "1"
    assert metrics[("SubagentStart", "subagents")] == "1"
    rows = query(project, "SELECT key, value FROM session_metrics")
    assert ("compactions", "1") in rows and all(value.isdigit() for _, value in rows)

    snapshots = query(project, "SELECT snapshot_type, content, timestamp FROM context_snapshots")
    assert {"pre_compact", "post_compact", "session_end"} <= {s[0] for s in snapshots}
    assert all(isinstance(json.loads(s[1]), dict) and TEXT_TIME.match(s[2]) for s in snapshots)

    claims = query(project, "SELECT file_path, operation, timestamp FROM file_claims ORDER BY id")
    assert [c[:2] for c in claims] == [
        ("hello.py", "Edit"),
        ("src/parser.py", "Edit"),
        ("src/rules.py", "Write"),
        ("hello.py", "Edit"),
    ]
    state = dict(query(project, "SELECT key, value FROM project_state"))
    assert state["last_session_id"] == LIVE and state["last_session_source"] == "startup"
    assert state["last_ended_session_id"] == RECORDED
    assert all(
        TEXT_TIME.match(t) for (t,) in query(project, "SELECT updated_at FROM project_state")
    )

    # `status` shows the same numbers the rows hold.
    shown = subprocess.run(
        [
            str(Path(PYTHON).parent / "claude-session"),
            "--project",
            str(project),
            "status",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    session = next(s for s in json.loads(shown.stdout)["sessions"] if s["session_id"] == LIVE)
    assert (session["tool_calls"], session["tool_failures"], session["file_edits"]) == (7, 3, 4)
    assert session["events"] == sum(int(v) for (_, key), v in metrics.items() if key == "count")

    # an approach (not a check) failing three times, in a session of its own
    for attempt in (1, 2, 3):
        failure = fixture("PostToolUseFailure.Bash", project) | {
            "session_id": "approach-session",
            "tool_use_id": f"toolu_approach{attempt}",
        }
        failure["tool_input"] = {"command": APPROACH, "description": "migrate"}
        failure["error"] = "Exit code 1\nModuleNotFoundError: No module named 'yaml'"
        run_hook("PostToolUseFailure", failure, project)
    failed = query(
        project,
        "SELECT approach, reason_failed, context, still_relevant, timestamp FROM failed_paths",
    )
    assert len(failed) == 1 and failed[0][0] == APPROACH and failed[0][3] == 1
    gist = "Exit code 1: ModuleNotFoundError: No module named 'yaml'"
    assert failed[0][1] == gist  # the error's gist
    assert "failed 3 times" in failed[0][2] and TEXT_TIME.match(failed[0][4])


@pytest.mark.parametrize(
    ("name", "changes", "summary"),
    [
        (
            "PreToolUse.Bash",
            {"tool_input": {"command": "npm test\n  -- --watch"}},
            "Bash: npm test -- --watch",
        ),
        ("PostToolUse.Edit", {}, "Edit hello.py"),
        ("PreToolUse.Bash", {"tool_name": "Grep", "tool_input": {"pattern": "TODO"}}, "Grep: TODO"),
        ("UserPromptSubmit", {"prompt": "x" * 300}, "prompt: " + "x" * 77 + "..."),
        ("SessionEnd", {}, "SessionEnd other"),
        ("PostCompact", {}, "PostCompact manual"),
    ],
)
def test_payload_summary_is_one_short_line(
    project: Path, name: str, changes: dict[str, Any], summary: str
) -> None:
    payload = fixture(name, project) | changes
    run_hook(payload["hook_event_name"], payload, project)
    assert query(project, "SELECT payload_summary FROM hook_events") == [(summary,)]


def test_a_duplicate_delivery_is_audited_but_counted_once(project: Path) -> None:
    payload = fixture("PostToolUse.Edit", project)
    for _ in range(2):
        run_hook("PostToolUse", payload, project)
    assert query(project, "SELECT count(*), count(DISTINCT payload_summary) FROM hook_events") == [
        (2, 1)
    ]
    assert query(
        project,
        "SELECT value FROM session_metrics WHERE event_type = 'PostToolUse' AND key = 'count'",
    ) == [("1",)]
    files = query(project, "SELECT files_changed FROM agent_registry")
    assert files == [('["hello.py"]',)]  # the same edit delivered twice: listed once
