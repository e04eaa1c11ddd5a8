"""Payloads and pipes no well-behaved client sends: the hook gives up on a silent pipe well
within Claude Code's timeout, and an event that arrived is never silently dropped."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import other_user
from conftest import count, fixture, hook_argv, hook_env, query, read_envelope, run_hook, spooled


def open_pipe_hook(event: str, project: Path, data: bytes) -> tuple[subprocess.Popen[bytes], float]:
    """Start the hook, write `data`, and leave stdin open (never closed)."""
    proc = subprocess.Popen(
        hook_argv(event),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=hook_env(project),
    )
    assert proc.stdin is not None
    proc.stdin.write(data)
    proc.stdin.flush()
    return proc, time.monotonic()


def test_stdin_left_open_with_no_data_gives_up_within_seconds(project: Path) -> None:
    proc, started = open_pipe_hook("UserPromptSubmit", project, b"")
    assert proc.wait(timeout=10) == 0
    assert time.monotonic() - started < 4.5  # the shortest hook timeout we install is 5 s
    assert proc.stdout is not None and proc.stdout.read() == b""


def test_a_whole_payload_on_a_pipe_left_open_is_recorded(project: Path) -> None:
    payload = fixture("UserPromptSubmit", project)
    proc, started = open_pipe_hook("UserPromptSubmit", project, json.dumps(payload).encode())
    assert proc.wait(timeout=10) == 0
    assert time.monotonic() - started < 4.5
    assert count(project, "events") == 1


def test_a_payload_cut_short_on_an_open_pipe_is_spooled_not_dropped(project: Path) -> None:
    text = json.dumps(fixture("UserPromptSubmit", project))
    proc, _ = open_pipe_hook("UserPromptSubmit", project, text[: len(text) // 2].encode())
    assert proc.wait(timeout=10) == 0
    kept = spooled(project)
    assert len(kept) == 1
    envelope = read_envelope(kept[0])
    assert envelope["payload"] == text[: len(text) // 2]
    assert "stdin left open" in envelope["reason"]


def test_a_large_payload_with_a_lone_surrogate_is_stored(project: Path) -> None:
    payload = fixture("PostToolUse.Bash", project)
    text = json.dumps(payload).replace(
        '"stdout": "', '"stdout": "\\ud800 lone \\udfff' + "z" * 400_000, 1
    )
    run_hook("PostToolUse", text, project)
    stored = query(project, "SELECT payload, truncated FROM events")
    assert len(stored) == 1 and stored[0][1] == 1
    assert "\ufffd lone \ufffd" in json.loads(stored[0][0])["tool_response"]["stdout"]


def test_json_nested_thousands_deep_is_stored_as_raw_text(project: Path) -> None:
    payload = fixture("PostToolUse.Bash", project)
    deep = "[" * 5000 + "]" * 5000
    text = json.dumps(payload)[:-1] + f', "deep": {deep}}}'
    run_hook("PostToolUse", text, project)
    stored = query(project, "SELECT session_id, hook_event_name, payload FROM events")
    assert len(stored) == 1
    session_id, name, kept = stored[0]
    assert (session_id, name) == (payload["session_id"], "PostToolUse")
    unparsed = json.loads(kept)["_claude_session_unparsed"]
    assert unparsed["text"].startswith("{") and deep[:100] in unparsed["text"]


def test_home_unset_never_puts_state_in_a_shared_folder() -> None:
    """An unprivileged user with no HOME whose project is gone: per-user state would go to the
    passwd home (`nobody`'s does not exist, so the event is logged as lost), never to a
    guessable folder in /tmp that another user could have prepared. The hook runs from a copy
    of the package nobody can read (tests/other_user.py), wherever this checkout is."""
    import os
    import shutil

    import pytest

    become = other_user.become_nobody()
    if isinstance(become, str):
        pytest.skip(f"cannot run the hook as another user: {become}")
    prefix, switch = become
    interpreter = other_user.runnable_interpreter(prefix, switch)
    if interpreter is None:
        pytest.skip(f"no Python {other_user.VERSION} that nobody can run (looked beside ours)")
    scratch = other_user.scratch_install(interpreter)
    try:
        venv = scratch / "venv"
        entry = venv / f"lib/python{other_user.VERSION}/site-packages/claude_session/hook.py"
        payload = fixture("UserPromptSubmit", None) | {"cwd": "/nonexistent/project"}
        before = set(os.listdir("/tmp"))
        done = subprocess.run(
            [*prefix, str(venv / "bin/python"), "-I", "-S", str(entry), "UserPromptSubmit"],
            input=json.dumps(payload).encode(),
            capture_output=True,
            env={"PATH": "/usr/bin:/bin"},
            cwd="/",
            timeout=30,
            **switch,
        )
        assert done.returncode == 0 and done.stdout == b"", done.stderr
        assert b"Traceback" not in done.stderr
        assert b"event lost" in done.stderr  # said, not silently dropped
        created = {n for n in set(os.listdir("/tmp")) - before if "claude-session" in n}
        assert not created
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def test_clock_skew_never_ends_a_live_session_through_the_hooks(project: Path) -> None:
    """Session B runs on a host whose clock is two hours behind (a shared project folder): its
    rows carry times two hours old by our clock. Session A starting must not end B."""
    import apsw

    start = fixture("SessionStart.startup", project) | {"session_id": "session-b"}
    run_hook("SessionStart", start, project)
    launch = fixture("PreToolUse.Agent", project) | {"session_id": "session-b"}
    run_hook("PreToolUse", launch, project)
    subagent = fixture("SubagentStart", project) | {"session_id": "session-b", "agent_id": "b1"}
    run_hook("SubagentStart", subagent, project)
    conn = apsw.Connection(str(project / ".claude-session.db"))
    conn.execute("UPDATE sessions SET last_activity_at = last_activity_at - 7200")  # B's clock
    conn.execute("UPDATE agent_registry SET last_seen_at = last_seen_at - 7200")
    conn.close()
    run_hook(
        "SessionStart", fixture("SessionStart.startup", project) | {"session_id": "a"}, project
    )
    assert query(project, "SELECT status FROM sessions WHERE session_id = 'session-b'") == [
        ("active",)
    ]
    assert query(project, "SELECT status FROM agent_registry WHERE id = 'b1'") == [("running",)]
