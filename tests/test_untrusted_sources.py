"""The one trust rule covers the reader and the exporter: a database that came with a clone
names transcripts (another project's, or a planted file) that are never read, and none of its
sessions goes to the user's OpenTelemetry backend. The same steps on the user's own database
read and send, so each test can fail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import clone_database, fixture, query, run_cli, run_hook
from otlp_receiver import Receiver

SESSION = "untrusted-source-1"


def recorded(project: Path, transcript: Path) -> None:
    """A session through the real hooks whose transcript holds a response with its usage and
    another project's prompt."""
    for name in ("SessionStart.startup", "UserPromptSubmit", "Stop", "SessionEnd"):
        payload = fixture(name, project) | {"session_id": SESSION}
        payload["transcript_path"] = str(transcript)
        run_hook(payload["hook_event_name"], payload, project)
    transcript.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        {"type": "user", "uuid": "u1", "sessionId": SESSION, "promptId": "p1",
         "timestamp": "2026-11-27T05:00:00.000Z",
         "message": {"role": "user", "content": "OTHER-PROJECT-SECRET-PROMPT"}},
        {"type": "assistant", "uuid": "a1", "sessionId": SESSION,
         "timestamp": "2026-11-27T05:00:01.000Z",
         "message": {"id": "msg_1", "type": "message", "role": "assistant",
                     "model": "claude-opus-4-5", "content": [{"type": "text", "text": "ok"}],
                     "usage": {"input_tokens": 1234, "output_tokens": 56}}},
    ]  # fmt: skip
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))


def cloned(project: Path, into: Path) -> Path:
    """The database as a clone carries it: a copy, never made here."""
    clone_database(project, into)
    return into


@pytest.fixture
def pair(tmp_path: Path, config: Path) -> tuple[Path, Path]:
    own = tmp_path / "own"
    own.mkdir()
    recorded(own, config / "projects" / "-own" / f"{SESSION}.jsonl")
    return own, cloned(own, tmp_path / "clone")


def test_an_untrusted_database_names_no_transcript_we_read(
    pair: tuple[Path, Path], config: Path
) -> None:
    own, clone = pair
    env = {"CLAUDE_CONFIG_DIR": str(config)}
    for args in (["status", "--json"], ["cost", "--json"], ["timeline"]):
        done = run_cli(clone, *args, **env)
        assert done.returncode == 0, done.stderr
        assert "OTHER-PROJECT-SECRET-PROMPT" not in done.stdout + done.stderr
    assert query(clone, "SELECT count(*) FROM message_usage") == [(0,)]
    assert query(clone, "SELECT count(*) FROM transcript_files") == [(0,)]
    # the user's own database, the same steps: read
    assert run_cli(own, "cost", "--json", **env).returncode == 0
    assert query(own, "SELECT sum(input_tokens) FROM message_usage") == [(1234,)]


def test_an_untrusted_database_is_never_exported(pair: tuple[Path, Path]) -> None:
    own, clone = pair
    receiver = Receiver()
    try:
        for project in (clone, own):
            done = run_cli(project, "config", "--set", f"otel_endpoint={receiver.endpoint}")
            assert done.returncode == 0, done.stderr
        refused = run_cli(clone, "export-otel", "--since", "30d")
        assert refused.returncode != 0 and "not created by claude-session" in refused.stderr
        status = json.loads(run_cli(clone, "status", "--json").stdout)
        assert "nothing is exported" in status["otel"]["refused"]
        assert not receiver.spans
        sent = run_cli(own, "export-otel", "--since", "30d")
        assert sent.returncode == 0, sent.stderr
        assert receiver.spans  # the user's own database goes out
    finally:
        receiver.stop()
