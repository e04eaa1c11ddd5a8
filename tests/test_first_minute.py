"""The first minute after `install` (issue 44, part 4): the hooks are installed, no session has
run, so there is no database yet. Every read command says the hooks are installed and wait for
the first session, and exits 0 (under --json one object that says so); a command that needs a
record to act on, or asks for one thing by name, fails saying the same; with no hooks anywhere
the hint to install stays, exit 1. `watch`, started in a terminal of its own as the README
says, waits for the database and then watches. Through the installed CLI and the hook process.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import PYTHON, fixture, hook_env, run_cli, run_hook
from every_command import NO_DATABASE, NOT_RUN, OWN_WAY, RUNS, SLOW_RUNS

CLI = str(Path(PYTHON).parent / "claude-session")
WAITING = "claude-session: hooks installed, waiting for the first session"

# Every command of tests/every_command.py that reads the record, with arguments: each answers
# "waiting for the first session", exit 0.
READS: dict[str, list[str]] = {
    "agents": ["agents"],
    "claims": ["claims"],
    "cost": ["cost"],
    "errors": ["errors", "--all"],
    "events": ["events"],
    "failed-paths": ["failed-paths"],
    "fork": ["fork", "--list"],
    "hooks": ["hooks"],
    "restore": ["restore", "--preview"],
    "sessions": ["sessions", "--all"],
    "state history": ["state", "history"],
    "state list": ["state", "list"],
    "status": ["status"],
    "timeline": ["timeline"],
    "verdicts": ["verdicts"],
    "watch": ["watch", "--once"],
}
# Reads whose answer stands without the project's database (the user's global memories): the
# waiting line is on stderr, before what they show.
GLOBAL_TOO = {
    "memory list": ["memory", "list"],
    "memory search": ["memory", "search", "x"],
    "memory export": ["memory", "export"],
}
# Commands that need a record to act on, or ask for one thing by name: nothing recorded is
# their failure (exit 1), said as such, not "install the hooks".
NOTHING_YET: dict[str, list[str]] = {
    "state get": ["state", "get", "task"],
    "memory show": ["memory", "show", "1"],
    "diff": ["diff", "1", "2"],
    "revert": ["revert", "1", "--dry-run"],
    "prune": ["prune", "--dry-run"],
    "ingest": ["ingest"],
}
# The rest, and why they are not first-minute reads: they write (and make the database), read
# something else than the record, or need a setting first.
OTHERS = {
    "fail": "records a failed path: a write makes the database",
    "memory add": "a write",
    "memory import": "a write",
    "memory edit": "a write to a memory that cannot exist yet (not found, exit 1)",
    "memory forget": "the same",
    "memory accept": "the same",
    "memory outcome": "the same",
    "memory verify": "the same",
    "state set": "a write",
    "state unset": "a write",
    "export-otel": "needs an OpenTelemetry endpoint configured before anything",
}


def test_every_command_is_sorted_here() -> None:
    """A command added later is given its first-minute behaviour here, or a reason."""
    named = set(RUNS) | set(SLOW_RUNS)
    sorted_here = set(READS) | set(GLOBAL_TOO) | set(NOTHING_YET) | set(OTHERS)
    elsewhere = set(NO_DATABASE) | set(OWN_WAY) | set(NOT_RUN)
    assert named - elsewhere == sorted_here, named - elsewhere ^ sorted_here


@pytest.fixture
def installed(project: Path, tmp_path: Path) -> tuple[Path, Path]:
    """`install` run in a scratch project (its own home folder): the hooks in the project's
    settings.local.json, no session yet, so no database."""
    home = tmp_path / "home"
    home.mkdir()
    done = run_cli(project, "install", HOME=str(home))
    assert done.returncode == 0, done.stderr
    assert not (project / ".claude-session.db").exists()
    return project, home


def cli(project: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(project, *args, HOME=str(home), COLUMNS="1000")


@pytest.mark.parametrize("name", sorted(READS))
def test_after_install_every_read_waits_for_the_first_session(
    installed: tuple[Path, Path], name: str
) -> None:
    project, home = installed
    done = cli(project, home, *READS[name])
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == WAITING and done.stderr == ""
    assert (
        lines[1]
        == f"hooks: {project}/.claude/settings.local.json (the project's personal settings)"
    )
    assert lines[2].startswith(f"start Claude Code in {project} ")
    assert "claude-session install" not in done.stdout
    as_json = cli(project, home, *READS[name], "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout) == {
        "waiting_for_first_session": True,
        "project": str(project),
        "database": str(project / ".claude-session.db"),
        "hooks_installed_in": f"{project}/.claude/settings.local.json"
        " (the project's personal settings)",
    }
    assert not (project / ".claude-session.db").exists()  # a read made none


@pytest.mark.parametrize("name", sorted(GLOBAL_TOO))
def test_after_install_the_global_memories_are_shown_while_waiting(
    installed: tuple[Path, Path], name: str
) -> None:
    project, home = installed
    done = cli(project, home, *GLOBAL_TOO[name])
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith(
        "claude-session: hooks installed, waiting for the first session: global memories only"
    )


@pytest.mark.parametrize("name", sorted(NOTHING_YET))
def test_after_install_what_needs_a_record_says_nothing_is_recorded_yet(
    installed: tuple[Path, Path], name: str
) -> None:
    project, home = installed
    done = cli(project, home, *NOTHING_YET[name])
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith(
        "Error: nothing recorded yet: the hooks are installed and wait for the first session"
    ), done.stderr
    assert "claude-session install" not in done.stderr
    assert not (project / ".claude-session.db").exists()


class Terminal:
    """`claude-session watch` with a pseudo-terminal for its output, as in a terminal of its
    own: what it draws is read as it comes."""

    def __init__(self, project: Path, home: Path) -> None:
        self.controller, terminal = os.openpty()
        env = hook_env(project, HOME=str(home), COLUMNS="100", LINES="30", TERM="xterm")
        self.proc = subprocess.Popen(
            [CLI, "--project", str(project), "watch", "--interval", "0.1"],
            stdin=subprocess.DEVNULL,
            stdout=terminal,
            stderr=terminal,
            env=env,
        )
        os.close(terminal)
        self.seen = b""

    def wait_for(self, needle: bytes, seconds: float = 30.0) -> bytes:
        deadline = time.monotonic() + seconds
        while needle not in self.seen and time.monotonic() < deadline:
            ready, _, _ = select.select([self.controller], [], [], 0.1)
            if ready:
                try:
                    self.seen += os.read(self.controller, 65536)
                except OSError:
                    break
        assert needle in self.seen, self.seen.decode("utf-8", "replace")[-2000:]
        return self.seen

    def interrupt(self) -> int:
        """Ctrl+C, as the terminal sends it: SIGINT; the exit code."""
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout=30)
        finally:
            os.close(self.controller)


def test_watch_started_before_the_first_session_waits_then_watches(
    installed: tuple[Path, Path],
) -> None:
    project, home = installed
    view = Terminal(project, home)
    try:
        view.wait_for(b"waiting for the first session\xe2\x80\xa6 (q or Ctrl+C to quit)")
        time.sleep(0.5)  # still waiting, not gone: nothing to watch is no error
        assert view.proc.poll() is None
        assert b"agents (" not in view.seen
        run_hook("SessionStart", fixture("SessionStart.startup", project), project)
        view.wait_for(b"agents (1)")  # the database the hook made, watched as usual
    finally:
        code = view.interrupt()
    assert code == 0


def test_ctrl_c_while_watch_waits_exits_0(installed: tuple[Path, Path]) -> None:
    project, home = installed
    view = Terminal(project, home)
    try:
        view.wait_for(b"waiting for the first session\xe2\x80\xa6")
    finally:
        code = view.interrupt()
    assert code == 0
    assert not (project / ".claude-session.db").exists()


def test_status_in_the_first_minute_as_a_user_sees_it(
    installed: tuple[Path, Path], tmp_path: Path
) -> None:
    """The exact lines of `status` right after `install` (the lead's note quotes them); then
    the first hook's session. A folder with no hooks at all keeps the hint to install them,
    exit 1: the command cannot do what was asked and the user has a step to take."""
    project, home = installed
    done = cli(project, home, "status")
    assert done.returncode == 0 and done.stdout == (
        f"{WAITING}\n"
        f"hooks: {project}/.claude/settings.local.json (the project's personal settings)\n"
        f"start Claude Code in {project} (if it is running, restart it or open /hooks): its"
        f" first event creates {project}/.claude-session.db\n"
    )
    bare = tmp_path / "bare"
    bare.mkdir()
    done = cli(bare, home, "status")
    assert done.returncode == 1 and done.stdout == ""
    assert "install the hooks with `claude-session install`" in done.stderr
    assert "waiting" not in done.stderr
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    done = cli(project, home, "status")
    assert done.returncode == 0 and "waiting" not in done.stdout
    assert "live agents: 1" in done.stdout
