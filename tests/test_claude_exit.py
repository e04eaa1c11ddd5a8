"""A Claude Code killed (SIGKILL, a crash) sends no SessionEnd: its session must end within
seconds, because the daemon watches the process that ran the session's hooks, not only after
minutes of silence. A live session beside it is never touched.

"Claude Code" here is a stand-in process that runs the installed hook commands as its children
through `sh -c`, exactly as Claude Code does, so the hooks find it above them in /proc."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import apsw
import pytest
from conftest import PYTHON, fixture, hook_env, query, wait_for
from test_coordination import agent_status, subagent_event
from test_daemon import MIN, Clocks, new_daemon

from claude_session.core import db, processes
from claude_session.core.staleness import CLAUDE_EXITED
from claude_session.services.background import daemon_control
from claude_session.services.setup import installer

EXIT_BUDGET_SECONDS = 10.0  # from the kill to the session ended, its agents and claims closed

# Reads one job a line (hook command, payload, environment), runs it through `sh -c` as a child
# and answers with its exit code and output: Claude Code's way of running a hook.
STAND_IN = """
import json, subprocess, sys
while True:
    line = sys.stdin.readline()
    if not line:
        break
    job = json.loads(line)
    done = subprocess.run(["/bin/sh", "-c", job["command"]], input=job["payload"].encode(),
                          env=job["env"], cwd=job["cwd"], capture_output=True)
    print(json.dumps([done.returncode, done.stdout.decode(), done.stderr.decode()]), flush=True)
"""


class ClaudeStandIn:
    """A process standing in for Claude Code: each hook is its child `sh -c <installed command>`.
    `shells`: more shells around the command, a launch where Claude Code cannot be told apart."""

    def __init__(self, project: Path, shells: int = 0, **env: str) -> None:
        self.project = project
        self.shells = shells
        self.env = hook_env(project, **env)
        self.process = subprocess.Popen(
            [PYTHON, "-c", STAND_IN],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=project,
            text=True,
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def hook(self, event: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        """Run the installed command for `event`; its JSON answer, if any."""
        assert self.process.stdin is not None and self.process.stdout is not None
        command = installer.hook_command(event, PYTHON)
        for _ in range(self.shells):
            command = f"/bin/sh -c {shlex.quote(command)}; true"  # not the last: no exec
        job = {
            "command": command,
            "payload": json.dumps(payload),
            "env": self.env,
            "cwd": str(self.project),
        }
        self.process.stdin.write(json.dumps(job) + "\n")
        self.process.stdin.flush()
        code, out, err = json.loads(self.process.stdout.readline())
        assert code == 0, err
        return json.loads(out) if out.strip() else None

    def kill(self) -> float:
        """SIGKILL, as a crash or `kill -9` ends it, and reaped (its shell would reap it);
        returns the moment, on the monotonic clock."""
        os.kill(self.pid, signal.SIGKILL)
        self.process.wait(timeout=10)
        return time.monotonic()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)


@pytest.fixture
def stand_ins() -> Any:
    """Makes stand-ins; none outlives the test."""
    made: list[ClaudeStandIn] = []

    def make(project: Path, shells: int = 0, **env: str) -> ClaudeStandIn:
        made.append(ClaudeStandIn(project, shells, **env))
        return made[-1]

    yield make
    for stand_in in made:
        stand_in.close()


def start_session(claude: ClaudeStandIn, session: str) -> None:
    claude.hook(
        "SessionStart", fixture("SessionStart.startup", claude.project) | {"session_id": session}
    )


def edit_event(project: Path, name: str, agent: str | None, session: str, path: str) -> Any:
    payload = subagent_event(project, name, agent, session_id=session)
    payload["tool_input"]["file_path"] = str(project / path)
    return payload


def subagent_at_work(claude: ClaudeStandIn, session: str, agent: str, path: str) -> None:
    """The session launches a subagent, which edits `path` (a claim) and starts a command that
    is still running."""
    project = claude.project
    claude.hook("PreToolUse", subagent_event(project, "PreToolUse.Agent", None, session_id=session))
    start = fixture("SubagentStart", project) | {"session_id": session, "agent_id": agent}
    claude.hook("SubagentStart", start)
    pre = edit_event(project, "PreToolUse.Edit", agent, session, path)
    claude.hook("PreToolUse", pre)
    post = edit_event(project, "PostToolUse.Edit", agent, session, path)
    post["tool_use_id"] = pre["tool_use_id"]
    claude.hook("PostToolUse", post)
    command = subagent_event(project, "PreToolUse.Bash", agent, session_id=session)
    command["tool_input"]["command"] = "sleep 600"
    claude.hook("PreToolUse", command)


def session_end(project: Path, session: str) -> tuple[str, str | None]:
    found = query(
        project, "SELECT status, end_reason FROM sessions WHERE session_id = ?", (session,)
    )
    return found[0][0], found[0][1]


def claims_of(project: Path, agent: str) -> list[tuple[Any, ...]]:
    return query(
        project,
        "SELECT file_path, released_at IS NOT NULL, release_reason FROM file_claims"
        " WHERE agent_id = ?",
        (agent,),
    )


def recorded_process(project: Path, session: str) -> tuple[Any, ...]:
    return query(
        project,
        "SELECT claude_pid, claude_started_ticks FROM sessions WHERE session_id = ?",
        (session,),
    )[0]


def start_ticks(pid: int) -> int:
    """Field 22 of /proc/<pid>/stat, read here independently of the code under test."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])


def assert_closed_out(project: Path, session: str, agent: str, path: str) -> None:
    assert session_end(project, session) == ("ended", CLAUDE_EXITED)
    assert agent_status(project, agent) == ("aborted_stale", CLAUDE_EXITED)
    assert claims_of(project, agent) == [(path, 1, CLAUDE_EXITED)]


def assert_untouched(project: Path, session: str, agent: str, path: str) -> None:
    assert session_end(project, session) == ("active", None)
    assert agent_status(project, agent)[0] == "running"
    assert agent_status(project, session)[0] == "running"  # its main thread
    assert claims_of(project, agent) == [(path, 0, None)]


def test_a_killed_claude_code_is_noticed_within_seconds_once_a_new_session_starts(
    project: Path, reap_daemons: None, stand_ins: Any
) -> None:
    """No daemon ran (as when autostart was off or it had stopped): the next session's
    SessionStart starts one, and that one ends the dead session at once."""
    killed, live = stand_ins(project), stand_ins(project)
    start_session(killed, "s-killed")
    subagent_at_work(killed, "s-killed", "a-killed", "shared.py")
    start_session(live, "s-live")
    subagent_at_work(live, "s-live", "a-live", "other.py")
    assert not daemon_control.is_running(str(project))

    killed_at = killed.kill()
    newcomer = stand_ins(project, CLAUDE_SESSION_NO_DAEMON="")  # hooks start the daemon
    start_session(newcomer, "s-new")
    assert wait_for(
        lambda: session_end(project, "s-killed")[0] == "ended",
        seconds=EXIT_BUDGET_SECONDS - (time.monotonic() - killed_at),
    ), "the killed Claude Code's session is still active"
    took = time.monotonic() - killed_at
    print(f"\nclosed out {took:.2f} s after the kill (daemon started by the next session)")
    assert took < EXIT_BUDGET_SECONDS
    assert_closed_out(project, "s-killed", "a-killed", "shared.py")
    assert agent_status(project, "s-killed") == ("completed", CLAUDE_EXITED)  # its main thread
    assert_untouched(project, "s-live", "a-live", "other.py")
    assert session_end(project, "s-new") == ("active", None)
    # The new session editing the dead agent's file is not warned about it.
    pre = edit_event(project, "PreToolUse.Edit", None, "s-new", "shared.py")
    assert newcomer.hook("PreToolUse", pre) is None


def test_the_daemon_a_killed_claude_code_started_outlives_it_and_ends_its_session(
    project: Path, reap_daemons: None, stand_ins: Any
) -> None:
    """The killed Claude Code's own SessionStart started the daemon (detached): it survives
    the kill and notices by itself. The hooks after the first are relayed through it: the
    process recorded is still the hook's Claude Code, never the daemon's parent."""
    env = {"CLAUDE_SESSION_NO_DAEMON": ""}
    killed, live = stand_ins(project, **env), stand_ins(project, **env)
    start_session(killed, "s-killed")
    status = Path(daemon_control.status_path(str(project)))
    assert wait_for(lambda: status.exists() and json.loads(status.read_text()).get("relay_socket"))
    daemon_pid = daemon_control.running_pid(str(project))
    start_session(live, "s-live")  # relayed
    subagent_at_work(live, "s-live", "a-live", "other.py")
    subagent_at_work(killed, "s-killed", "a-killed", "shared.py")
    assert wait_for(lambda: json.loads(status.read_text()).get("relay_served", 0) >= 6)
    for session, claude in (("s-killed", killed), ("s-live", live)):
        assert recorded_process(project, session) == (claude.pid, start_ticks(claude.pid))

    killed_at = killed.kill()
    assert wait_for(
        lambda: session_end(project, "s-killed")[0] == "ended",
        seconds=EXIT_BUDGET_SECONDS - (time.monotonic() - killed_at),
    ), "the killed Claude Code's session is still active"
    took = time.monotonic() - killed_at
    print(f"\nclosed out {took:.2f} s after the kill (daemon already running)")
    assert_closed_out(project, "s-killed", "a-killed", "shared.py")
    assert_untouched(project, "s-live", "a-live", "other.py")
    assert daemon_control.running_pid(str(project)) == daemon_pid  # the same daemon, alive


def test_a_pid_now_held_by_another_process_counts_as_gone(project: Path, stand_ins: Any) -> None:
    """What a reused pid looks like from /proc: the pid runs, but started at another time."""
    claude, other = stand_ins(project), stand_ins(project)
    start_session(claude, "s-reused")
    subagent_at_work(claude, "s-reused", "a-reused", "shared.py")
    start_session(other, "s-other")
    subagent_at_work(other, "s-other", "a-other", "other.py")
    conn = db.connect(str(project / ".claude-session.db"))
    with db.Immediate(conn):  # as if it had started 1 s later than the Claude Code recorded
        conn.execute(
            "UPDATE sessions SET claude_started_ticks = claude_started_ticks - 100"
            " WHERE session_id = 's-reused'"
        )
    conn.close()

    clocks = Clocks()
    worker = new_daemon(project, clocks)
    assert worker.sweep() == []  # seen gone once: a SessionEnd in flight may still land
    clocks.advance(3)
    verdicts = worker.sweep()
    assert [(v.kind, v.target, v.reason) for v in verdicts] == [
        ("session", "s-reused", CLAUDE_EXITED)
    ]
    assert_closed_out(project, "s-reused", "a-reused", "shared.py")
    assert_untouched(project, "s-other", "a-other", "other.py")


UNUSUAL = processes.MAX_SHELLS + 1  # shells around the hook: its Claude Code cannot be told


def test_a_session_whose_process_cannot_be_known_is_still_closed_by_silence_only(
    project: Path, stand_ins: Any
) -> None:
    """A launch where the hook cannot tell which process is Claude Code records none (as for
    a session begun before processes were recorded): its Claude Code being gone changes
    nothing, silence still ends the session."""
    claude = stand_ins(project, shells=UNUSUAL)
    start_session(claude, "s-unknown")
    subagent_at_work(claude, "s-unknown", "a-unknown", "shared.py")
    assert recorded_process(project, "s-unknown") == (None, None)
    claude.kill()

    clocks = Clocks()
    worker = new_daemon(project, clocks)
    worker.sweep()
    clocks.advance(30)
    assert worker.sweep() == []
    assert_untouched(project, "s-unknown", "a-unknown", "shared.py")
    clocks.advance(61 * MIN)
    verdicts = worker.sweep()
    assert [(v.kind, v.target) for v in verdicts] == [("session", "s-unknown")]
    assert verdicts[0].reason.startswith("session gone: no event for")
    assert agent_status(project, "a-unknown") == ("aborted_stale", verdicts[0].reason)


def test_a_resume_where_the_process_cannot_be_known_forgets_the_dead_one(
    project: Path, stand_ins: Any
) -> None:
    """Killed, then resumed by a launch where the hook cannot tell its Claude Code: the dead
    process recorded before must not end the resumed session."""
    first = stand_ins(project)
    start_session(first, "s-resumed")
    first.kill()
    resumed = stand_ins(project, shells=UNUSUAL)
    resume = fixture("SessionStart.resume", project) | {"session_id": "s-resumed"}
    resumed.hook("SessionStart", resume)
    assert recorded_process(project, "s-resumed") == (None, None)

    clocks = Clocks()
    worker = new_daemon(project, clocks)
    worker.sweep()
    clocks.advance(30)
    assert worker.sweep() == []
    assert session_end(project, "s-resumed") == ("active", None)


KILLED_TASK = "SUBTASK-K: write victim.py, then run the slow command"


class SlowSubagent:
    """The scripted model: the main thread starts a subagent, which writes victim.py (a claim)
    and then runs a command that takes a while; after the kill, every session just answers."""

    def __init__(self, project: Path) -> None:
        self.project = project
        self.killed = False

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        from fake_api import text, tool
        from test_e2e_claude import _blocks, _has_prompt

        messages = body.get("messages") or []
        if self.killed:
            return [text("Nothing to do.")]
        if _has_prompt(messages, KILLED_TASK):
            if not any(b.get("type") == "tool_result" for b in _blocks(messages)):
                victim = str(self.project / "victim.py")
                return [tool("Write", file_path=victim, content="x = 1\n")]
            return [tool("Bash", command="sleep 20", description="a slow command")]
        if not any(b.get("type") == "tool_use" for b in _blocks(messages)):
            return [
                tool(
                    "Agent",
                    description="victim",
                    prompt=KILLED_TASK,
                    subagent_type="general-purpose",
                )
            ]
        return [text("Done.")]


def query_once_made(project: Path, sql: str) -> list[tuple[Any, ...]]:
    """Rows, or none while the first hook is still creating the database (the file exists a
    moment before its tables do)."""
    if not (project / ".claude-session.db").exists():
        return []
    try:
        return query(project, sql)
    except apsw.SQLError as exc:
        if "no such table" not in str(exc):
            raise
        return []


@pytest.mark.e2e
def test_real_claude_code_killed_while_its_subagent_runs_a_command(
    tmp_path: Path, wheel_install: Any
) -> None:
    """kill -9 of the real `claude -p` while its subagent's Bash command runs; a new session
    starts in the project: within seconds the dead session is over, its claim released."""
    from fake_api import FakeAnthropic
    from test_e2e_claude import claude_binary, claude_env

    binary = claude_binary()
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    subprocess.run(
        [wheel_install.cli, "--project", str(project), "install"], check=True, capture_output=True
    )
    model = SlowSubagent(project)
    running = "SELECT session_id, agent_id FROM events WHERE hook_event_name = 'PreToolUse'"
    running += " AND tool_name = 'Bash' AND agent_id IS NOT NULL"
    argv = [str(binary), "-p", "--output-format", "json", "--dangerously-skip-permissions"]
    started: list[subprocess.Popen[bytes]] = []
    try:
        with FakeAnthropic(model) as api:
            env = claude_env(home, api.url)
            quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
            started.append(subprocess.Popen([*argv, "TASK-KILL"], cwd=project, env=env, **quiet))
            assert wait_for(lambda: query_once_made(project, running), seconds=120)
            ((session, agent),) = query(project, running)
            assert recorded_process(project, session) == (
                started[0].pid,
                start_ticks(started[0].pid),
            )

            model.killed = True
            os.kill(started[0].pid, signal.SIGKILL)
            killed_at = time.monotonic()
            started[0].wait(timeout=10)
            started.append(subprocess.Popen([*argv, "hello"], cwd=project, env=env, **quiet))
            assert wait_for(
                lambda: session_end(project, session)[0] == "ended",
                seconds=EXIT_BUDGET_SECONDS - (time.monotonic() - killed_at),
            ), "the killed Claude Code's session is still active"
            took = time.monotonic() - killed_at
            print(f"\nreal CLI: closed out {took:.2f} s after kill -9")
            assert_closed_out(project, session, agent, "victim.py")
            assert started[1].wait(timeout=120) == 0
    finally:
        for process in started:
            if process.poll() is None:
                process.kill()
                process.wait()
        daemon_control.stop(str(project))
