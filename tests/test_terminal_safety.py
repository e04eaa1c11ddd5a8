"""Recorded text is hostile: what the CLI prints can never drive the reader's terminal (escape
sequences, OSC 8 links, BEL, C1 controls, carriage returns, bidi overrides) nor be taken for rich
markup (`[/tmp]` once crashed `status`; `[link=...]` rendered a live link)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import PYTHON, fixture, hook_argv, hook_env, run_hook, write_config

CLI = str(Path(PYTHON).parent / "claude-session")
SESSION = "560819af-56fc-4528-be0a-32a24d1aa819"
HOSTILE = (
    "cat [/tmp] [link=https://evil.example]click[/link] [bold red]x"
    "\x1b]8;;https://evil.example\x07here\x1b]8;;\x07 \x1b[2J\x1b[31mred\rback \x9b31m"
    " \u202eevil\u202c \x07bell"
)
RAW = ["\x1b]8;;https://evil", "\x1b[2J", "\x1b[31m", "\x07", "\x9b", "\r", "\u202e"]


@pytest.fixture
def hostile_project(project: Path, tmp_path: Path) -> Path:
    judge = tmp_path / "judge.sh"
    reason = json.dumps({"decision": "block", "reason": HOSTILE})
    judge.write_text(f"#!/bin/sh\ncat >/dev/null\ncat <<'EOF'\n{reason}\nEOF\n")
    judge.chmod(judge.stat().st_mode | stat.S_IEXEC)
    write_config(project, {"judge_command": str(judge), "judge_events": "TaskCompleted"})
    prompt = fixture("UserPromptSubmit", project) | {"session_id": SESSION, "prompt": HOSTILE}
    run_hook("UserPromptSubmit", prompt, project)
    for i in range(3):
        failure = fixture("PostToolUseFailure.Bash", project) | {"session_id": SESSION}
        failure["tool_use_id"] = f"toolu_hostile_{i}"
        failure["tool_input"]["command"] = HOSTILE
        failure["error"] = "Exit code 1\n" + HOSTILE
        run_hook("PostToolUseFailure", failure, project)
    write = fixture("PostToolUse.Write", project) | {"session_id": SESSION}
    write["tool_input"]["file_path"] = str(project / "[link=https://evil.example]a\x1b[2J.py")
    run_hook("PostToolUse", write, project)
    done = {
        "session_id": SESSION,
        "hook_event_name": "TaskCompleted",
        "cwd": str(project),
        "task_id": "t1",
        "task_subject": HOSTILE,
    }
    blocked = subprocess.run(
        hook_argv("TaskCompleted"),
        input=json.dumps(done).encode(),
        capture_output=True,
        env=hook_env(project),
        timeout=60,
    )
    assert blocked.returncode == 3  # the judge's deliberate block (the shell guard makes it 2)
    compacted = fixture("SessionStart.compact", project) | {"session_id": SESSION}
    run_hook("SessionStart", compacted, project)  # a restore in the injection log
    return project


COMMANDS = [
    ["status"],
    ["events", "--payload"],
    ["agents", "--all"],
    ["claims", "--all"],
    ["errors"],
    ["failed-paths"],
    ["verdicts"],
    ["restore", "--session", SESSION],
    ["restore", "--session", SESSION, "--preview"],
    ["restore", "--session", SESSION, "--all"],
]


@pytest.mark.parametrize("terminal", [False, True], ids=["piped", "terminal"])
@pytest.mark.parametrize("args", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_recorded_text_is_printed_escaped_never_raw(
    hostile_project: Path, args: list[str], terminal: bool
) -> None:
    env = dict(os.environ, COLUMNS="200")
    if terminal:
        env["FORCE_COLOR"] = "1"  # rich believes it writes to a terminal: styles, links...
    for fmt in ([], ["--json"]) if args[0] != "restore" else ([],):
        done = subprocess.run(
            [CLI, "--project", str(hostile_project), *args, *fmt],
            capture_output=True,
            env=env,
            timeout=60,
        )
        out = done.stdout.decode("utf-8", "replace")
        assert done.returncode == 0, done.stderr.decode()
        assert "Traceback" not in done.stderr.decode()
        for raw in RAW:
            assert raw not in out, f"{args} {fmt}: raw {raw!r} reached the terminal"
        if not fmt and args[0] in ("agents", "errors", "failed-paths", "verdicts", "restore"):
            assert "[/tmp]" in out or "[link=" in out, f"{args}: markup was interpreted"


def test_the_hooks_own_messages_never_carry_a_payloads_controls_raw(
    tmp_path: Path, isolated_state: Path
) -> None:
    """A hook's error message quotes the payload (here a cwd that does not exist): on stderr,
    which Claude Code shows, and in the log, which `cat` shows, its controls are escaped."""
    payload = fixture("PostToolUse.Edit") | {"cwd": f"{tmp_path}/{HOSTILE}"}
    result = run_hook("PostToolUse", payload, None, hook_env(None))
    assert result.returncode == 0 and result.stdout == ""
    assert "missing" in result.stderr  # the message is there, quoting the path
    log = (isolated_state / "claude-session.log").read_text()
    assert "missing" in log
    for text in (result.stderr, log):
        found = [raw for raw in RAW if raw in text]
        assert not found, found
