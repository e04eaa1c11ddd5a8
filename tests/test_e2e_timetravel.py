"""Time travel with the real Claude Code CLI 2.1.330 against a scripted Messages API.

The agent writes a file and edits another; a subagent writes a file of its own; then one Bash
command changes a file with `sed -i`, removes one and creates one. Then, as a user would, from
the installed wheel: `timeline` shows the frames, `diff` shows exactly the Bash command's
changes, `revert` to the frame before the Bash command restores the files byte for byte,
`revert --undo` brings the later state back, and a fork's first session (the real CLI again)
receives the state of the frame it was forked from.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import WheelInstall, capture_lock, query, wait_for
from fake_api import FakeAnthropic, is_compaction, text, tool
from test_e2e_claude import _blocks, _has_prompt, claude_binary, claude_env, run_claude

from claude_session.services.background import daemon_control

pytestmark = pytest.mark.e2e

SUBTASK = "SUBTASK-TT: write sub.txt"
COMMAND = "sed -i 's/VALUE = 2/VALUE = 3/' app.py && rm old.txt && echo made > made.txt"
GIT = {"GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@e", "GIT_COMMITTER_NAME": "u"}
GIT |= {"GIT_COMMITTER_EMAIL": "u@e", "GIT_OPTIONAL_LOCKS": "0"}


class Agents:
    """Main: Write config.py, Edit app.py, a subagent that writes sub.txt, then Bash."""

    def __init__(self, project: Path) -> None:
        self.project = project

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        messages = body.get("messages") or []
        if is_compaction(body):
            return [text("<summary>work</summary>")]
        if _has_prompt(messages, SUBTASK):
            done = any(b.get("type") == "tool_result" for b in _blocks(messages))
            if done:
                return [text("wrote sub.txt")]
            return [tool("Write", file_path=str(self.project / "sub.txt"), content="from sub\n")]
        used = [b["name"] for b in _blocks(messages) if b.get("type") == "tool_use"]
        plan = [
            tool("Write", file_path=str(self.project / "config.py"), content="LIMIT = 10\n"),
            tool(
                "Edit",
                file_path=str(self.project / "app.py"),
                old_string="VALUE = 1",
                new_string="VALUE = 2",
            ),
            tool(
                "Agent",
                description="write sub",
                prompt=SUBTASK,
                subagent_type="general-purpose",
                run_in_background=False,  # in the foreground: "the frame before Bash" is one
            ),
            tool("Bash", command=COMMAND, description="bump, clean up, make"),
        ]
        return [plan[len(used)]] if len(used) < len(plan) else [text("Done.")]


class Forked:
    """The fork's first session: one answer; every request is kept."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        self.bodies.append(body)
        return [text("Continuing from the forked frame.")]


def files_of(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
        and not p.relative_to(root).as_posix().startswith((".git", ".claude-session", ".claude/"))
    }


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args],
        capture_output=True,
        env={**os.environ, **GIT},
        check=True,
        text=True,
    ).stdout


def test_real_session_timeline_diff_revert_undo_and_fork(
    tmp_path: Path, wheel_install: WheelInstall
) -> None:
    binary = claude_binary()
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    (project / "app.py").write_text("VALUE = 1\n")
    (project / "old.txt").write_text("old\n")
    git(project, "init", "-q")
    git(project, "add", ".")
    git(project, "commit", "-qm", "init")
    subprocess.run(
        [wheel_install.cli, "--project", str(project), "install"], check=True, capture_output=True
    )
    git(project, "add", ".")  # the install's .gitignore and settings, as a user commits them
    git(project, "commit", "-qm", "claude-session")
    user_repo = (git(project, "for-each-ref"), git(project, "stash", "list"))
    objects = git(project, "count-objects", "-v")
    try:
        with FakeAnthropic(Agents(project)) as api:
            run_claude(binary, project, home, api, "TASK-TT: change the project")
    finally:
        daemon_control.stop(str(project))
    assert (project / "app.py").read_text() == "VALUE = 3\n"
    assert not (project / "old.txt").exists()
    after_bash = files_of(project)
    assert wait_for(
        lambda: not query(project, "SELECT 1 FROM vcs_tags WHERE status = 'pending'"), 60
    )

    def cli(*args: str) -> Any:
        done = subprocess.run(
            [wheel_install.cli, "--project", str(project), *args, "--json"],
            capture_output=True,
            text=True,
            env={**os.environ, "PATH": "/usr/bin:/bin"},
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    session = query(project, "SELECT session_id FROM turns")[0][0]
    timeline = cli("timeline", session, "--tree")
    frames = timeline["frames"]
    by_tool = {f["summary"].split(":")[0].split(" ")[0]: f for f in frames if f["kind"] == "tool"}
    assert {"Write", "Edit", "Bash"} <= set(by_tool)
    subagent_frames = [f for f in frames if f["agent"] != "main"]
    assert any(f["kind"] == "tool" and f["files"] == ["sub.txt"] for f in subagent_frames)
    assert [a["status"] for a in timeline["subagents"]] == ["completed"]
    bash = next(
        f["frame"] for f in frames if f["kind"] == "tool" and f["summary"].startswith("Bash")
    )
    before = bash - 1
    diff = cli("diff", f"{session}:{before}", f"{session}:{bash}")
    assert sorted(s["path"] for s in diff["files"]["stat"]) == ["app.py", "made.txt", "old.txt"]
    assert "+VALUE = 3" in diff["files"]["diff"]

    done = cli("revert", f"{session}:{before}", "--yes")
    assert sorted((d["action"], d["path"]) for d in done["done"]) == [
        ("created", "old.txt"),
        ("deleted", "made.txt"),
        ("restored", "app.py"),
    ]
    before_bash = files_of(project)
    assert before_bash == {
        "app.py": b"VALUE = 2\n",
        "config.py": b"LIMIT = 10\n",
        "old.txt": b"old\n",
        "sub.txt": b"from sub\n",
    }
    cli("revert", "--undo", "--yes")
    assert files_of(project) == after_bash

    made = cli("fork", f"{session}:{before}", "--label", "retry")
    fork = Path(made["path"])
    assert files_of(fork) == before_bash
    forked = Forked()
    try:
        with FakeAnthropic(forked) as api:
            run_claude(binary, fork, home, api, "TASK-TT-2: go on")
    finally:
        daemon_control.stop(str(fork))
    seen = json.dumps(forked.bodies[0], ensure_ascii=False)
    assert f"from frame {before} of session {session}" in seen
    assert "TASK-TT: change the project" in seen
    assert query(fork, "SELECT label, child_session_id IS NOT NULL FROM branches") == [("retry", 1)]
    # Replay the frame headless with a new prompt: a fork in which `claude -p` runs at once.
    replaying = Forked()
    with FakeAnthropic(replaying) as api:
        replayed = subprocess.run(
            [
                *(wheel_install.cli, "--project", str(project), "replay", f"{session}:{before}"),
                *("--prompt", "TASK-TT-3: try again", "--label", "again", "--json"),
                *("--claude", str(binary), "--", "--dangerously-skip-permissions"),
            ],
            capture_output=True,
            text=True,
            env=claude_env(home, api.url),
            timeout=300,
        )
    assert replayed.returncode == 0, replayed.stdout[-2000:] + replayed.stderr[-2000:]
    result = json.loads(replayed.stdout)
    replay_root = Path(result["path"])
    daemon_control.stop(str(replay_root))
    first = json.dumps(replaying.bodies[0], ensure_ascii=False)
    assert "TASK-TT-3: try again" in first
    assert f"from frame {before} of session {session}" in first
    child = query(replay_root, "SELECT kind, prompt, child_session_id FROM branches")
    assert [(k, p) for k, p, _ in child] == [("replay", "TASK-TT-3: try again")]
    assert (
        query(replay_root, "SELECT count(*) FROM hook_events WHERE session_id = ?", (child[0][2],))[
            0
        ][0]
        >= 3
    )  # SessionStart, UserPromptSubmit, Stop... recorded into the fork
    started = query(project, "SELECT name FROM timeline_events WHERE name = 'ReplayStarted'")
    assert started == [("ReplayStarted",)]
    # The user's own repository: no ref, no stash, no object written by any of this.
    assert (git(project, "for-each-ref"), git(project, "stash", "list")) == user_repo
    assert git(project, "count-objects", "-v") == objects


FIX = "SUBTASK-FIX: fix add() in calc.py"
BUG = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"


class WriteThenFix:
    """Main: Write calc.py, an Agent whose subagent Edits it, then Write notes.txt. In the
    background, notes.txt is written while the subagent's Edit runs (held by a slow PreToolUse
    hook of the user's): the main thread's frame falls between the Edit's start and its end."""

    def __init__(self, project: Path, background: bool) -> None:
        self.project = project
        self.background = background
        self.edit_sent = threading.Event()

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        messages = body.get("messages") or []
        calc = str(self.project / "calc.py")
        if _has_prompt(messages, FIX):
            if any(b.get("type") == "tool_result" for b in _blocks(messages)):
                return [text("fixed add()")]
            self.edit_sent.set()
            return [tool("Edit", file_path=calc, old_string="a - b", new_string="a + b")]
        used = [b["name"] for b in _blocks(messages) if b.get("type") == "tool_use"]
        if len(used) == 2:  # the Agent call is back (at once, in the background)
            assert self.edit_sent.wait(60)
            time.sleep(0.5)  # the Edit's PreToolUse has run; the slow hook still holds it
        plan = [
            tool("Write", file_path=calc, content=BUG),
            tool(
                "Agent",
                description="fix add",
                prompt=FIX,
                subagent_type="general-purpose",
                run_in_background=self.background,
            ),
            tool("Write", file_path=str(self.project / "notes.txt"), content="notes\n"),
        ]
        return [plan[len(used)]] if len(used) < len(plan) else [text("Done.")]


@pytest.mark.parametrize("background", [True, False], ids=["background", "foreground"])
def test_real_subagent_edit_is_its_own_frame_to_diff_and_revert(
    tmp_path: Path, wheel_install: WheelInstall, background: bool
) -> None:
    """The main thread writes calc.py, a subagent fixes it: the subagent's Edit frame holds
    exactly the fix, revert to the frame before brings the main thread's calc.py back, and
    `revert --undo` the fix. The captures run only after the session (held by the test, as a
    capture that is behind on a large project), so every frame's snapshot is built late."""
    binary = claude_binary()
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    git(project, "init", "-q")
    subprocess.run(
        [wheel_install.cli, "--project", str(project), "install"], check=True, capture_output=True
    )
    settings_path = project / ".claude" / "settings.local.json"
    settings = json.loads(settings_path.read_text())
    slow = {"matcher": "Edit", "hooks": [{"type": "command", "command": "sleep 3"}]}
    settings["hooks"]["PreToolUse"].append(slow)
    settings_path.write_text(json.dumps(settings, indent=2))
    lock = capture_lock(project)
    try:
        with FakeAnthropic(WriteThenFix(project, background)) as api:
            run_claude(binary, project, home, api, "TASK-FIX: write calc.py and have it fixed")
    finally:
        os.close(lock)
        daemon_control.stop(str(project))
    assert (project / "calc.py").read_text() == FIXED
    after = files_of(project)
    subprocess.run(
        [wheel_install.python, "-m", "claude_session.services.snapshots.capture", str(project)],
        check=True,
    )
    assert not query(project, "SELECT 1 FROM vcs_tags WHERE status = 'pending'")

    def cli(*args: str) -> Any:
        done = subprocess.run(
            [wheel_install.cli, "--project", str(project), *args, "--json"],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    session = query(project, "SELECT session_id FROM turns")[0][0]
    frames = cli("timeline", session)["frames"]
    agent = query(project, "SELECT id FROM agent_registry WHERE is_main = 0 AND is_internal = 0")
    edit = next(f for f in frames if f["kind"] == "tool" and f["summary"].startswith("Edit"))
    notes = next(f for f in frames if f["kind"] == "tool" and f["files"] == ["notes.txt"])
    assert edit["agent"] == agent[0][0] and edit["files"] == ["calc.py"]
    assert notes["agent"] == "main"
    # in the background, the main thread's frame came while the Edit ran: between the two
    assert (notes["frame"] < edit["frame"]) is background
    before = edit["frame"] - 1
    diff = cli("diff", f"{session}:{before}", f"{session}:{edit['frame']}")
    assert [s["path"] for s in diff["files"]["stat"]] == ["calc.py"]
    assert "-    return a - b\n+    return a + b" in diff["files"]["diff"]
    diff = cli("diff", f"{session}:{notes['frame'] - 1}", f"{session}:{notes['frame']}")
    assert [s["path"] for s in diff["files"]["stat"]] == ["notes.txt"]

    done = cli("revert", f"{session}:{before}", "--yes")
    later = [] if background else [("deleted", "notes.txt")]  # written after the fix
    assert sorted((d["action"], d["path"]) for d in done["done"]) == [
        *later,
        ("restored", "calc.py"),
    ]
    expected = {**after, "calc.py": BUG.encode()}
    assert files_of(project) == {
        p: b for p, b in expected.items() if background or p != "notes.txt"
    }
    cli("revert", "--undo", "--yes")
    assert files_of(project) == after
