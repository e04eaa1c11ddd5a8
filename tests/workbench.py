"""A recorded session driven in-process for the revert tests: real files in a real project,
real hook events applied through `events.apply` (the fast layer, tests/inproc.py), and each
workspace snapshot taken at once by the capture process's own function, as the background
capture process would take it. Tools really change the files; the user changes them too."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import fixture
from inproc import Recorder

from claude_session.services.snapshots import capture
from claude_session.services.timetravel import revert

GIT_ENV = {"GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@e", "GIT_COMMITTER_NAME": "u"}
GIT_ENV |= {"GIT_COMMITTER_EMAIL": "u@e", "GIT_CONFIG_NOSYSTEM": "1"}


def git(root: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV, "GIT_CONFIG_GLOBAL": os.devnull}
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode("utf-8", "replace")


class Workbench:
    """One session in a project; `tool_*` change files as the agent named would."""

    def __init__(self, root: Path, session: str = "wb-session-0001") -> None:
        self.root = root
        self.session = session
        self.rec = Recorder(root, now=time.time())  # reverts are recorded at the real time
        self.calls = 0
        self.started = False
        # False: snapshots are taken only by `capture()` (or a revert), later, as when the
        # next tool starts before the background capture has run.
        self.eager = True

    def send(self, name: str, agent: str | None = None, **changes: Any) -> None:
        payload = fixture(name, self.root) | {"session_id": self.session, "cwd": str(self.root)}
        payload.pop("agent_id", None)
        payload.pop("agent_type", None)
        if agent is not None:
            payload |= {"agent_id": agent, "agent_type": "general-purpose"}
        payload |= changes
        self.rec.now = max(self.rec.now + 0.001, time.time())
        self.rec.send(payload)
        if self.eager:
            self.capture()

    def capture(self) -> None:
        """What the background capture process does once it runs."""
        capture.capture_pending(self.rec.conn, str(self.root))

    def start(self) -> None:
        self.send("SessionStart.startup")
        self.started = True

    def prompt(self, text: str = "go on") -> None:
        """A new turn: its snapshot takes whatever the user changed since the last one."""
        self.send("UserPromptSubmit", prompt=text)

    def subagent(self, agent: str) -> None:
        self.send("SubagentStart", agent_id=agent, agent_type="general-purpose")

    def _tool(
        self, tool: str, tool_input: dict[str, Any], change: Callable[[], None], agent: str | None
    ) -> None:
        self.calls += 1
        use = f"toolu_wb_{self.calls:05d}"
        self.send(f"PreToolUse.{tool}", agent, tool_use_id=use, tool_input=tool_input)
        change()
        self.send(f"PostToolUse.{tool}", agent, tool_use_id=use, tool_input=tool_input)

    def write(self, path: str, content: bytes, agent: str | None = None) -> None:
        """The Write tool: the file it names, and nothing else."""
        full = self.root / path

        def change() -> None:
            if full.is_dir() and not full.is_symlink():
                shutil.rmtree(full)
            elif full.is_symlink() or (
                full.exists() and not (full.is_file() and os.access(full, os.W_OK))
            ):
                full.unlink()  # a link is replaced, never written through; a fifo would block
            full.parent.mkdir(parents=True, exist_ok=True)
            full.write_bytes(content)

        text = content.decode("utf-8", "replace")
        self._tool("Write", {"file_path": str(full), "content": text}, change, agent)

    def bash(self, command: str, change: Callable[[], None], agent: str | None = None) -> None:
        """The Bash tool: whatever `change` does to the project."""
        self._tool("Bash", {"command": command, "description": command}, change, agent)

    def revert(self, address: str, force: bool = False, **kw: Any) -> dict[str, Any]:
        todo = revert.plan(self.rec.conn, str(self.root), address, **kw)
        return revert.execute(self.rec.conn, str(self.root), todo, force=force)

    def undo(self, force: bool = False) -> dict[str, Any]:
        todo = revert.plan_undo(self.rec.conn, str(self.root))
        return revert.execute(self.rec.conn, str(self.root), todo, force=force)

    def frames(self) -> list[tuple[int, str, str | None]]:
        return [
            (int(n), str(k), a)
            for n, k, a in self.rec.rows(
                "SELECT frame_no, kind, agent_id FROM frames WHERE session_id = ?"
                " ORDER BY frame_no",
                (self.session,),
            )
        ]

    def last_frame(self) -> int:
        return self.frames()[-1][0]

    def close(self) -> None:
        self.rec.close()


def tree(root: Path) -> dict[str, tuple[str, int, bytes]]:
    """Every file, folder and link of the project but its .git and our database, byte for
    byte: (kind, mode, content or link target). Names are raw bytes, decoded losslessly."""
    out: dict[str, tuple[str, int, bytes]] = {}
    base = os.fsencode(root)
    for dirpath, dirnames, filenames in os.walk(base):
        relative = os.path.relpath(dirpath, base)
        if relative == b".":
            dirnames[:] = [d for d in dirnames if d != b".git"]
        for name in [*dirnames, *filenames]:
            full = os.path.join(dirpath, name)
            rel = os.fsdecode(os.path.normpath(os.path.join(relative, name)))
            if rel.startswith(".claude-session.db"):
                continue
            info = os.lstat(full)
            if os.path.islink(full):
                out[rel] = ("link", 0, os.readlink(full))
            elif os.path.isdir(full):
                out[rel] = ("dir", info.st_mode & 0o7777, b"")
            elif os.path.isfile(full):
                try:
                    with open(full, "rb") as f:
                        out[rel] = ("file", info.st_mode & 0o7777, f.read())
                except PermissionError:  # no one may read it: its inode stands for it
                    out[rel] = ("file", info.st_mode & 0o7777, b"unreadable %d" % info.st_ino)
            else:
                out[rel] = ("other", info.st_mode & 0o7777, b"")
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
    return out


def reads_anything(folder: Path) -> bool:
    """Whether this process reads a file of mode 000 (root with CAP_DAC_OVERRIDE does)."""
    probe = folder / "mode-000-probe"
    probe.write_text("x")
    probe.chmod(0)
    try:
        probe.read_text()
        return True
    except PermissionError:
        return False
    finally:
        probe.unlink()


def rerun_without_reading_anything(test_id: str, **env: str) -> None:
    """Run one test again in pytest with root's power to read any file dropped from the
    bounding set (setpriv), so that mode 000 means unreadable, as for any user."""
    setpriv = shutil.which("setpriv")
    assert setpriv, "setpriv (util-linux) is needed to drop root's file-reading capabilities"
    drop = "--bounding-set=-dac_override,-dac_read_search"
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test_id]
    done = subprocess.run(
        [setpriv, drop, *pytest],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        cwd=Path(__file__).parent.parent,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
