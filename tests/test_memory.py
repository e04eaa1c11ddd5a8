"""Memories: the CLI, export/import round trips, what reaches the model through the real hooks
(SessionStart and UserPromptSubmit, within budget, never twice), and learnings recorded by the
error ladder with their provenance."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

from conftest import PYTHON, fixture, hook_env, query, run_hook, write_config

CLI = str(Path(PYTHON).parent / "claude-session")
SESSION = "mem-session-0001"


def cli(project: Path, *args: str, ok: bool = True, stdin: str | None = None) -> Any:
    done = subprocess.run(
        [CLI, "--project", str(project), *args],
        capture_output=True,
        text=True,
        env=hook_env(project),
        input=stdin,
    )
    if ok:
        assert done.returncode == 0, done.stderr
    return done


def as_json(project: Path, *args: str) -> Any:
    return json.loads(cli(project, *args, "--json").stdout)


def context_of(result: Any) -> str:
    return str(json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"])


def test_add_list_search_show_edit_forget(project: Path) -> None:
    first = as_json(project, "memory", "add", "Use uv, not pip, here", "--category", "preference")
    again = as_json(project, "memory", "add", "use UV not pip here", "--category", "preference")
    assert first == {"id": "1", "new": True}
    assert again == {"id": "1", "new": False}  # the same memory, strengthened
    as_json(
        project,
        "memory",
        "add",
        "The API lives in src/api",
        "--category",
        "fact",
        "--tag",
        "layout",
    )
    glob = as_json(
        project,
        "memory",
        "add",
        "I prefer short commit messages",
        "--category",
        "preference",
        "--scope",
        "global",
    )
    assert glob["id"] == "g1"
    data = Path(os.environ["CLAUDE_SESSION_DATA_DIR"]) / "global.db"
    assert stat.S_IMODE(data.stat().st_mode) == 0o600
    listed = as_json(project, "memory", "list")
    assert [(m["id"], m["strength"]) for m in listed][:1] == [("1", 2)]
    assert {m["id"] for m in listed} == {"1", "2", "g1"}
    found = as_json(project, "memory", "search", "where is the api code?")
    assert found[0]["id"] == "2" and found[0]["tags"] == ["layout"]
    assert as_json(project, "memory", "search", "commit messages")[0]["id"] == "g1"
    shown = as_json(project, "memory", "show", "2")
    assert shown["text"] == "The API lives in src/api" and shown["source"] == "user"
    edited = as_json(project, "memory", "edit", "2", "--text", "The API lives in app/api")
    assert edited["text"] == "The API lives in app/api"
    cli(project, "memory", "forget", "2")
    assert {m["id"] for m in as_json(project, "memory", "list")} == {"1", "g1"}
    missing = cli(project, "memory", "show", "2", ok=False)
    assert missing.returncode == 1 and "no memory '2'" in missing.stderr
    wrong = cli(project, "memory", "add", "x", "--category", "opinion", ok=False)
    assert wrong.returncode == 2 and "opinion" in wrong.stderr


def test_secrets_never_reach_a_memory(project: Path) -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    cli(project, "memory", "add", f"deploy with token {secret}", "--category", "fact")
    raw = (project / ".claude-session.db").read_bytes()
    assert secret.encode() not in raw
    assert "[REDACTED" in as_json(project, "memory", "list")[0]["text"]


def test_export_and_import_round_trip_in_both_formats(project: Path, tmp_path: Path) -> None:
    as_json(
        project,
        "memory",
        "add",
        "Run tests with pytest -q",
        "--category",
        "skill",
        "--tag",
        "tests",
    )
    as_json(
        project,
        "memory",
        "add",
        "Staging is at stage.internal",
        "--category",
        "fact",
        "--tag",
        "ops team",
    )
    as_json(
        project,
        "memory",
        "add",
        "Answer in English",
        "--category",
        "preference",
        "--scope",
        "global",
    )
    for fmt in ("jsonl", "markdown"):
        exported = cli(project, "memory", "export", "--format", fmt).stdout
        other = tmp_path / f"other-{fmt}"
        other.mkdir()
        os.environ["CLAUDE_SESSION_DATA_DIR"] = str(tmp_path / f"data-{fmt}")
        try:
            env_project = other
            done = subprocess.run(
                [CLI, "--project", str(env_project), "memory", "import", "-", "--json"],
                input=exported,
                capture_output=True,
                text=True,
                env=hook_env(env_project),
            )
            assert done.returncode == 0, done.stderr
            assert json.loads(done.stdout) == {
                "imported": 3,
                "already_present": 0,
                "invalid": 0,
                "problems": [],
            }
            again = subprocess.run(
                [CLI, "--project", str(env_project), "memory", "export", "--format", fmt],
                capture_output=True,
                text=True,
                env=hook_env(env_project),
            ).stdout
        finally:
            os.environ["CLAUDE_SESSION_DATA_DIR"] = str(
                Path(os.environ["CLAUDE_SESSION_STATE_DIR"]) / "data"
            )
        # Every field comes back as it was (the source too), and the ids are the same here.
        assert sorted(again.splitlines()) == sorted(exported.splitlines())


def test_memories_reach_the_model_at_start_and_per_prompt_never_twice(project: Path) -> None:
    as_json(
        project, "memory", "add", "Use uv, not pip, in this project", "--category", "preference"
    )
    as_json(
        project,
        "memory",
        "add",
        "Always answer in British English",
        "--category",
        "preference",
        "--scope",
        "global",
    )
    as_json(
        project,
        "memory",
        "add",
        "The flaky test is tests/test_net.py: rerun it once",
        "--category",
        "learning",
        "--tag",
        "tests",
    )
    started = run_hook(
        "SessionStart", fixture("SessionStart.startup", project) | {"session_id": SESSION}, project
    )
    context = context_of(started)
    assert "<claude-session-memories>" in context and "recorded data" in context
    assert "[preference, project] Use uv, not pip, in this project" in context
    assert "[preference, global] Always answer in British English" in context
    assert "flaky" not in context  # a learning waits for a prompt that needs it
    prompt = fixture("UserPromptSubmit", project) | {"session_id": SESSION}
    asked = run_hook(
        "UserPromptSubmit", prompt | {"prompt": "why does the flaky network test fail?"}, project
    )
    assert "tests/test_net.py: rerun it once" in context_of(asked)
    again = run_hook(
        "UserPromptSubmit", prompt | {"prompt": "the flaky network test again"}, project
    )
    assert again.stdout.strip() == ""  # this session already has it
    uses = query(
        project,
        "SELECT how, count(*) FROM memory_uses WHERE session_id = ? GROUP BY how",
        (SESSION,),
    )
    assert dict(uses) == {"session_start": 2, "prompt": 1}
    counted = as_json(project, "memory", "list", "--category", "learning")
    assert counted[0]["use_count"] == 1


def test_the_budget_holds_and_recall_can_be_turned_off(project: Path) -> None:
    for i in range(30):
        as_json(
            project,
            "memory",
            "add",
            f"Preference number {i}: " + "detail " * 20,
            "--category",
            "preference",
        )
    write_config(project, {"memory_budget_chars": 600})
    context = context_of(
        run_hook(
            "SessionStart",
            fixture("SessionStart.startup", project) | {"session_id": SESSION},
            project,
        )
    )
    block = context[context.index("<claude-session-memories>") :]
    assert len(block) <= 600 and block.endswith("</claude-session-memories>")
    write_config(project, {"memory_recall": False})
    quiet = run_hook(
        "SessionStart",
        fixture("SessionStart.startup", project) | {"session_id": "other-1"},
        project,
    )
    assert "claude-session-memories" not in quiet.stdout


def test_an_untrusted_database_gives_no_memories(project: Path) -> None:
    as_json(project, "memory", "add", "Use uv, not pip", "--category", "preference")
    cli(project, "trust", "--revoke")
    started = run_hook(
        "SessionStart", fixture("SessionStart.startup", project) | {"session_id": SESSION}, project
    )
    assert "Use uv" not in started.stdout


def failing(project: Path, tool_use_id: str, command: str) -> dict[str, Any]:
    payload = fixture("PostToolUseFailure.Bash", project) | {
        "session_id": SESSION,
        "tool_use_id": tool_use_id,
    }
    payload["tool_input"] = {"command": command}
    payload["error"] = "Exit code 1\nImportError: cannot import name 'parse' from 'src.util'"
    return payload


def test_a_ladder_resolved_after_failures_becomes_one_learning(project: Path) -> None:
    command = "python3 -m pytest tests/test_util.py"
    for attempt in range(2):
        run_hook("PostToolUseFailure", failing(project, f"f{attempt}", command), project)
    edit = fixture("PostToolUse.Edit", project) | {"session_id": SESSION, "tool_use_id": "fix1"}
    edit["tool_input"] = edit["tool_input"] | {"file_path": str(project / "src" / "util.py")}
    run_hook(
        "PreToolUse",
        fixture("PreToolUse.Edit", project) | {"session_id": SESSION, "tool_use_id": "fix1"},
        project,
    )
    run_hook("PostToolUse", edit, project)
    success = fixture("PostToolUse.Bash", project) | {"session_id": SESSION, "tool_use_id": "ok1"}
    success["tool_input"] = {"command": command}
    run_hook("PostToolUse", success, project)
    learned = as_json(project, "memory", "list", "--category", "learning")
    assert len(learned) == 1
    text = learned[0]["text"]
    assert command in text and "failed 2 times" in text and "cannot import name" in text
    assert "What finally worked" in text and f"Bash: {command}" in text
    assert learned[0]["source"] == "learned" and learned[0]["session_id"] == SESSION
    assert learned[0]["tool_use_id"] == "ok1"
    # The same thing failing and resolving again strengthens the memory, never duplicates it.
    for attempt in range(2):
        run_hook("PostToolUseFailure", failing(project, f"g{attempt}", command), project)
    run_hook("PostToolUse", success | {"tool_use_id": "ok2"}, project)
    again = as_json(project, "memory", "list", "--category", "learning")
    assert len(again) == 1 and again[0]["strength"] == 2 and again[0]["tool_use_id"] == "ok2"


def test_prune_bounds_memories_and_keeps_the_users_own(project: Path) -> None:
    import time

    from inproc import Recorder

    from claude_session.core import db, memories

    as_json(project, "memory", "add", "Keep me: I added this", "--category", "preference")
    recorder = Recorder(project)
    recorder.close()
    conn = db.connect(str(project / ".claude-session.db"))
    with db.Immediate(conn):
        for i in range(50):
            memories.add(
                conn, f"learned thing {i}", "learning", "project", time.time(), source="learned"
            )
        memories.add(
            conn,
            "old session note",
            "context",
            "session",
            time.time() - 90 * 86400,
            session_id="old",
        )
    conn.close()
    write_config(project, {"memory_max_count": 10})
    done = as_json(project, "prune", "--older-than", "30", "--yes")
    assert done["rows_removed"]["memories"] == 42  # the old session note, 41 learned over the cap
    left = as_json(project, "memory", "list", "--limit", "1000")
    assert len(left) == 10 and any(m["text"] == "Keep me: I added this" for m in left)


def test_a_memory_label_is_built_and_read_in_one_place() -> None:
    """`memory list`, the MCP tools and the search answers all show a memory's id as
    core/memories.label gives it, and the CLI reads it back with parse_label."""
    from claude_session.core import answers, memories

    assert memories.label("global", 12) == "g12"
    assert memories.label("project", 12) == "12"
    for scope in ("global", "project"):
        assert memories.parse_label(memories.label(scope, 7)) == (scope, 7)
    assert memories.parse_label("p7") == ("project", 7)
    assert memories.parse_label("twelve") is None
    row = {"id": 3, "category": "fact", "scope": "global", "text": "t", "tags": "[]", "rank": 1}
    assert answers.memory_found("global", row)["id"] == "g3"
