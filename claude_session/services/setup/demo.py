"""`claude-session demo`: play a recorded real session through the real hook scripts.

The session was recorded from Claude Code 2.1.330 (two sessions: one with a `/compact`, one
that writes, edits, fails a command and runs a subagent). The hooks are installed into a
scratch project as `install` writes them, and each event goes through the command written
there, as a subprocess.
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
    """Install the hooks into the scratch project as `install` does, then send every recorded
    event through the command written there; returns each payload with what it did. The
    project is then what `install` leaves (`status` and `doctor` find its hooks; a `claude`
    started in a kept one records)."""
    path = installer.hooks_settings_path("project", project)
    installer.write_ours(path, {})
    written = dict(installer.ours(installer.read_settings(path)))
    played = []
    for payload in recorded_events(project):
        event = payload["hook_event_name"]
        handler = written.get(event)
        command = str(handler["command"]) if handler else installer.hook_command(event)
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


def remove(scratch: Path, project: Path, timeout: float = 10.0) -> bool:
    """Delete the scratch folder once nothing writes into it any more: the hooks' workspace
    capture runs as a process of its own, a moment after its hook, and a folder deleted under
    it would be left half there. True when the folder is gone."""
    import shutil
    import time

    from ...core import db
    from ...core.paths import db_path
    from ..snapshots import capture_control

    deadline = time.monotonic() + timeout
    try:
        conn = db.connect(db_path(str(project)), create=False)
    except db.DatabaseError:
        conn = None
    if conn is not None:
        try:
            capture_control.wait_for_pending(conn, str(project), timeout)
        finally:
            conn.close()
    while capture_control.is_running(str(project)) and time.monotonic() < deadline:
        time.sleep(0.05)
    # A capture spawned by the last hook may still be in its start delay: it would find the
    # folder gone and log so, making it again. Delete, give it a second, delete again.
    settled = 0
    deadline = max(deadline, time.monotonic() + 3)
    while settled < 2 and time.monotonic() < deadline:
        shutil.rmtree(scratch, ignore_errors=True)
        settled = settled + 1 if not scratch.exists() else 0
        time.sleep(0.5)
    return not scratch.exists()
