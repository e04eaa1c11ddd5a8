"""`claude-session demo`: play a recorded real session through the real hook scripts.

The session was recorded from Claude Code 2.1.330 (two sessions: one with a `/compact`, one
that writes, edits, fails a command and runs a subagent). Each event goes through the hook
command `install` would write, as a subprocess, into a scratch project.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

from . import installer

RECORDED_PROJECT = "/home/dev/project"
RECORDED_HOME = "/home/dev"


def recorded_events(project: Path) -> Iterator[dict[str, Any]]:
    """The recorded payloads, with the recording's paths moved into `project`."""
    text = resources.files("claude_session.data").joinpath("demo-session.jsonl").read_text()
    text = text.replace(RECORDED_PROJECT, str(project)).replace(RECORDED_HOME, str(project.parent))
    for line in text.splitlines():
        if line.strip():
            yield json.loads(line)


def play(project: Path) -> list[tuple[dict[str, Any], installer.HookRun]]:
    """Send every recorded event through its hook; returns each payload with what it did."""
    played = []
    for payload in recorded_events(project):
        command = installer.hook_command(payload["hook_event_name"])
        run = installer.run_hook_command(
            command,
            json.dumps(payload).encode(),
            project,
            extra_env={
                "CLAUDE_SESSION_NO_DAEMON": "1",
                "CLAUDE_SESSION_NO_JUDGE": "1",
            },  # a scratch project needs none
        )
        played.append((payload, run))
    return played
