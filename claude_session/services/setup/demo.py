"""`claude-session demo`: play a recorded real session through the real hook scripts.

The events were recorded from Claude Code 2.1.330: two sessions, one with a `/compact`, one
that writes, edits, fails a command and runs a subagent. That second session is then compacted
too, by three composed events: the first session's recorded PreCompact, SessionStart (compact)
and PostCompact payloads, unchanged but for their session and prompt ids (each such line says
so in its `_composed` key, taken off before it is sent), so that the block SessionStart puts
back holds real work. The scratch project is a git repository with one commit, so the block's
git state is true, and the recorded Write and Edit calls change its files before their
PostToolUse is sent, as Claude Code's tools did when they were recorded. The hooks are
installed into it as `install` writes them, and each event goes through the command written
there, as a subprocess.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

from ...core import usergit
from . import installer

RECORDED_PROJECT = "/home/dev/project"
RECORDED_HOME = "/home/dev"
COMPOSED = "_composed"  # on a line made from recorded payloads, not recorded as it is: why
# The scratch repository's one commit: its author and date fixed, so its HEAD is the same
# on every machine (and a machine without a git identity can commit).
GIT_IDENTITY = {"user.name": "claude-session demo", "user.email": "demo@claude-session.invalid"}
GIT_DATE = "2026-11-20T12:00:00+00:00"


def recorded_events(project: Path) -> Iterator[dict[str, Any]]:
    """The payloads as sent, with the recording's paths moved into `project`; the composed
    ones keep their `_composed` key (`play` takes it off)."""
    text = resources.files("claude_session.data").joinpath("demo-session.jsonl").read_text()
    text = text.replace(RECORDED_PROJECT, str(project)).replace(RECORDED_HOME, str(project.parent))
    for line in text.splitlines():
        if line.strip():
            yield json.loads(line)


class NoRepository(Exception):
    """The scratch project could not be made a git repository (no git, or git failed)."""


def make_repository(project: Path) -> None:
    """`project` as a git repository with one commit (a README), as the project of a real
    session is: PreCompact's git state then has a branch and a HEAD to tell. NoRepository
    says why not."""

    (project / "README.md").write_text("# demo\n\nA scratch project for `claude-session demo`.\n")
    # Claude Code's personal settings, where the demo installs the hooks, are not the project's.
    (project / ".gitignore").write_text(".claude/settings.local.json\n")
    dated = {"GIT_AUTHOR_DATE": GIT_DATE, "GIT_COMMITTER_DATE": GIT_DATE}
    steps = [
        ["init", "--quiet"],
        ["symbolic-ref", "HEAD", "refs/heads/main"],
        *(["config", key, value] for key, value in GIT_IDENTITY.items()),
        ["add", "README.md", ".gitignore"],
        ["-c", "commit.gpgsign=false", "commit", "--quiet", "--no-verify", "-m", "demo: start"],
    ]
    for args in steps:
        status, _, said = usergit.run(str(project), args, timeout=30, dated=dated)
        if status == usergit.NOT_INSTALLED:
            raise NoRepository(f"the demo needs git for its scratch project: {said}")
        if status != 0:
            said = said.strip()[:300] or f"exit status {status}"
            step = next(a for a in args if not a.startswith("-") and "=" not in a)
            raise NoRepository(f"the demo's scratch project: git {step} failed: {said}")


def play(project: Path) -> list[tuple[dict[str, Any], installer.HookRun]]:
    """Make the scratch project a git repository, install the hooks into it as `install`
    does, then send every event through the command written there; returns each payload
    (a composed one with its `_composed` key) with what it did. The project is then what
    `install` leaves (`status` and `doctor` find its hooks; a `claude` started in a kept one
    records)."""
    make_repository(project)
    path = installer.hooks_settings_path("project", project)
    installer.write_ours(path, {})
    written = dict(installer.ours(installer.read_settings(path)))
    played = []
    for payload in recorded_events(project):
        event = payload["hook_event_name"]
        handler = written.get(event)
        command = str(handler["command"]) if handler else installer.hook_command(event)
        if event == "PostToolUse":
            carry_out(project, payload)
        sent = {key: value for key, value in payload.items() if key != COMPOSED}
        run = installer.run_hook_command(
            command,
            json.dumps(sent).encode(),
            project,
            extra_env={
                "CLAUDE_SESSION_NO_DAEMON": "1",
                "CLAUDE_SESSION_NO_JUDGE": "1",
            },  # a scratch project needs none
        )
        played.append((payload, run))
    return played


def carry_out(project: Path, payload: dict[str, Any]) -> None:
    """What a recorded Write or Edit did to its file (inside `project` only), done again before
    its PostToolUse is sent: the frames and the git state then hold the file as it was."""
    tool, given = payload.get("tool_name"), payload.get("tool_input") or {}
    path = Path(str(given.get("file_path", "")))
    if tool not in ("Write", "Edit") or not path.is_relative_to(project):
        return
    if tool == "Write":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(str(given.get("content", "")))
    elif path.exists():
        old, new = str(given.get("old_string", "")), str(given.get("new_string", ""))
        text = path.read_text()
        changed = text.replace(old, new) if given.get("replace_all") else text.replace(old, new, 1)
        path.write_text(changed)


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
