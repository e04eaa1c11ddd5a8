"""`claude-session watch`, run as a person runs it: the installed command in a real terminal
(a detached tmux pane of 80x24), while real hooks record a session into the project; and
`watch --once` (`--json`) for scripts."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, fixture, query, run_hook
from rich.cells import cell_len

CLI = str(Path(PYTHON).parent / "claude-session")
SESSION = "560819af-56fc-4528-be0a-32a24d1aa819"
AGENT = "a026341fa5086f41e"
HOSTILE_TYPE = "\x1b[2J[red]x[/red]"  # a screen clear and rich markup, as an agent type
SHOWN_TYPE = "\\x1b[2J[red]x[/red]"  # how the view must show it
_ids = iter(range(1, 10_000))


def event(project: Path, name: str, **changes: Any) -> dict[str, Any]:
    payload = fixture(name, project) | {"session_id": SESSION}
    if "tool_use_id" in payload:
        payload["tool_use_id"] = f"toolu_w{next(_ids)}"
    for key in ("agent_id", "agent_type"):
        payload.pop(key, None)
    return payload | changes


def record_start(project: Path) -> None:
    run_hook("SessionStart", event(project, "SessionStart.startup"), project)


def record_work(project: Path) -> None:
    """A subagent of a hostile type launched and started, its Write, then a failing Bash."""
    launch = event(project, "PreToolUse.Agent")
    launch["tool_input"] |= {"subagent_type": HOSTILE_TYPE, "description": "write the greeter"}
    run_hook("PreToolUse", launch, project)
    start = event(project, "SubagentStart", agent_id=AGENT, agent_type=HOSTILE_TYPE)
    run_hook("SubagentStart", start, project)
    for name in ("PreToolUse.Write", "PostToolUse.Write"):
        write = event(project, name, agent_id=AGENT, agent_type=HOSTILE_TYPE)
        write["tool_input"]["file_path"] = str(project / "src" / "greeter.py")
        run_hook(name.split(".")[0], write, project)
    run_hook("PostToolUseFailure", event(project, "PostToolUseFailure.Bash"), project)


class Pane:
    """A detached tmux session of its own (its own server socket), 80x24."""

    def __init__(self, name: str, command: str) -> None:
        self.base = ["tmux", "-L", name, "-f", "/dev/null"]
        self.env = {k: v for k, v in os.environ.items() if k != "TMUX"}  # not nested
        subprocess.run(
            [*self.base, "new-session", "-d", "-s", "w", "-x", "80", "-y", "24", command],
            check=True,
            timeout=30,
            env=self.env,
        )

    def text(self) -> str:
        """The screen as shown, wrapped lines joined (so an over-long line stays one line)."""
        done = subprocess.run(
            [*self.base, "capture-pane", "-p", "-J", "-t", "w"],
            capture_output=True,
            text=True,
            timeout=30,
            env=self.env,
        )
        return done.stdout if done.returncode == 0 else ""

    def wait_for(self, *needles: str, seconds: float = 20.0) -> str:
        deadline = time.monotonic() + seconds
        screen = ""
        while time.monotonic() < deadline:
            screen = self.text()
            if all(n in screen for n in needles):
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{needles} not on the screen after {seconds}s:\n{screen}")

    def keys(self, *keys: str) -> None:
        subprocess.run(
            [*self.base, "send-keys", "-t", "w", *keys], check=True, timeout=30, env=self.env
        )

    def close(self) -> None:
        subprocess.run([*self.base, "kill-server"], capture_output=True, timeout=30, env=self.env)


@pytest.fixture
def pane(project: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    """`watch` running in tmux on `project` (which has a database); the exit code lands in a
    file when it ends."""
    assert shutil.which("tmux"), "tmux is required (./install.sh --dev installs it)"
    record_start(project)
    exit_file = tmp_path / "exit"
    env = {
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
        "CLAUDE_SESSION_STATE_DIR": os.environ["CLAUDE_SESSION_STATE_DIR"],
    }
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    # `trap true INT`: the shell outlives the Ctrl+C to write down how `watch` exited
    command = (
        f"trap true INT; env {exports} {shlex.quote(CLI)} --project {shlex.quote(str(project))}"
        f" watch --interval 0.2; echo $? > {shlex.quote(str(exit_file))}; sleep 30"
    )
    view = Pane(f"cs-watch-{os.getpid()}-{time.monotonic_ns()}", command)
    try:
        yield view, exit_file
    finally:
        view.close()


def test_watch_shows_agents_claims_and_errors_as_they_arrive(pane: Any, project: Path) -> None:
    view, exit_file = pane
    first = view.wait_for("agents (1)", "main", "open errors: none")
    assert "greeter.py" not in first
    record_work(project)
    # redrawn on the change (PRAGMA data_version), well before the 5 s re-read
    screen = view.wait_for("agents (2)", "src/greeter.py", "open errors (1)", "1/4", seconds=4.5)
    lines = screen.splitlines()
    assert lines, screen
    # nothing wider than the terminal (wrapped lines are joined, so they would show here)
    assert max(cell_len(line) for line in lines) <= 80, screen
    # the hostile type is shown escaped: no markup applied, no escape sent
    assert SHOWN_TYPE in screen, screen
    assert "\x1b" not in screen
    # the live subagent, its task and age; the claim; the error with its ladder step
    agent_line = next(line for line in lines if AGENT[:10] in line)
    assert "live" in agent_line and "write the greeter" in agent_line
    assert "ago" in agent_line or "now" in agent_line
    error_line = next(line for line in lines if "1/4" in line)
    assert "nonexistent_mod" in error_line
    # what it shows is what the database holds
    assert query(project, "SELECT file_path FROM file_claims") == [("src/greeter.py",)]
    assert query(project, "SELECT count(*) FROM error_log") == [(1,)]
    # Ctrl+C ends it cleanly
    view.keys("C-c")
    assert exit_code(exit_file) == "0"


def test_q_quits_and_gives_the_terminal_back(pane: Any) -> None:
    view, exit_file = pane
    view.wait_for("agents (1)")
    view.keys("q")
    assert exit_code(exit_file) == "0"
    # the alternate screen is left: the shell's screen is back, without the view
    assert "agents (1)" not in view.wait_for("")


def exit_code(exit_file: Path) -> str:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if exit_file.exists() and exit_file.read_text().strip():
            break
        time.sleep(0.1)
    return exit_file.read_text().strip() if exit_file.exists() else "still running"


def test_once_piped_prints_whole_lines_and_json_holds_the_same(project: Path) -> None:
    """Off a terminal `--once` prints every column and every cell whole, whatever COLUMNS
    says (a script or a file reads it); on one it fits the screen (the tmux tests)."""
    record_start(project)
    record_work(project)
    env = dict(os.environ, COLUMNS="80", LINES="24")
    shown = subprocess.run(
        [CLI, "--project", str(project), "watch", "--once"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    header, *rest = shown.stdout.splitlines()
    assert header.endswith(str(project)), header  # the path whole
    assert "…" not in shown.stdout and "q or Ctrl+C" not in shown.stdout
    agent_line = next(line for line in rest if AGENT in line)  # the id whole, not its start
    assert "write the greeter" in agent_line
    assert "silent" in shown.stdout and "files" in shown.stdout  # every column
    assert SHOWN_TYPE in shown.stdout and "\x1b" not in shown.stdout
    assert "src/greeter.py" in shown.stdout
    as_json = subprocess.run(
        [CLI, "--project", str(project), "watch", "--once", "--json", "--session", "5608"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert as_json.returncode == 0, as_json.stderr
    data = json.loads(as_json.stdout)
    assert [a["agent"] for a in data["agents"]][:1] in ([SESSION], [AGENT])
    assert {a["agent"] for a in data["agents"]} == {SESSION, AGENT}
    assert all(a["state"] == "running" for a in data["agents"])
    assert [a["type"] for a in data["agents"] if a["agent"] == AGENT] == [HOSTILE_TYPE]
    assert [(c["file_path"], c["agent"]) for c in data["claims"]] == [("src/greeter.py", AGENT)]
    assert [(e["attempts"], e["step"]) for e in data["open_errors"]] == [(1, "1/4")]
    other = subprocess.run(
        [CLI, "--project", str(project), "watch", "--once", "--json", "--session", "ffff"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert json.loads(other.stdout)["agents"] == []
    live_json = subprocess.run(
        [CLI, "--project", str(project), "watch", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert live_json.returncode == 2 and "--json needs --once" in live_json.stderr


def test_no_database_is_one_clear_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [CLI, "--project", str(tmp_path), "watch", "--once"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1
    assert "no claude-session database at" in done.stderr
    assert not (tmp_path / ".claude-session.db").exists()  # and it made none
