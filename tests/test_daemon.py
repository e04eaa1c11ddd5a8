"""The daemon: its sweep on controllable clocks, and its life as a real process
(single instance by flock, kill -9 and restart, stop, idle exit, lazy start by SessionStart)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import apsw
import pytest
from conftest import (
    PYTHON,
    count,
    daemons_of,
    fixture,
    hook_env,
    log_file,
    query,
    run_hook,
    spool_a_stop,
    spooled,
    wait_for,
)
from inproc import Recorder
from test_coordination import SESSION, agent_status, edit, set_config, start_agent
from test_faults import hold_write_lock
from test_transcripts import AGENT, PROMPT, assistant, start, user, write
from test_transcripts import SESSION as SESSION_T

from claude_session.core import db
from claude_session.services.background import daemon_control, sweeps

CLI = str(Path(PYTHON).parent / "claude-session")
MIN = 60.0


class Clocks:
    def __init__(self) -> None:
        self.wall = time.time()
        self.mono = 1000.0

    def advance(self, seconds: float, wall_only: bool = False) -> None:
        self.wall += seconds
        if not wall_only:
            self.mono += seconds


def new_daemon(project: Path, clocks: Clocks) -> sweeps.Daemon:
    worker = sweeps.Daemon(str(project), clock=lambda: clocks.wall, mono=lambda: clocks.mono)
    worker.reload_config()
    return worker


def test_sweep_marks_a_silent_agent_stale_and_releases_its_claims(project: Path) -> None:
    start_agent(project, "a1", "slow work")
    edit(project, "a1")
    clocks = Clocks()
    worker = new_daemon(project, clocks)
    assert worker.sweep() == []
    clocks.advance(5 * MIN)
    run_hook(
        "UserPromptSubmit", fixture("UserPromptSubmit", project) | {"session_id": SESSION}, project
    )
    assert worker.sweep() == []  # silent 5 min: not yet
    clocks.advance(6 * MIN, wall_only=False)
    verdicts = worker.sweep()
    assert [(v.kind, v.target) for v in verdicts] == [("agent", "a1")]
    status, reason = agent_status(project, "a1")
    assert status == "aborted_stale" and reason.startswith("silent for 1")
    assert query(project, "SELECT release_reason FROM file_claims WHERE agent_id = 'a1'") == [
        (reason,)
    ]
    assert agent_status(project, SESSION)[0] == "running"  # the main thread is not touched


def test_sweep_survives_a_forward_clock_jump(project: Path) -> None:
    start_agent(project, "a1", "work")
    clocks = Clocks()
    worker = new_daemon(project, clocks)
    worker.sweep()
    clocks.advance(6 * 3600, wall_only=True)
    assert worker.sweep() == []
    assert agent_status(project, "a1")[0] == "running"


def test_sweep_closes_out_a_gone_session_but_never_a_live_one(project: Path) -> None:
    start_agent(project, "quiet-agent", "work", session="quiet")
    clocks = Clocks()
    worker = new_daemon(project, clocks)
    worker.sweep()
    clocks.advance(61 * MIN)
    start_agent(project, "busy-agent", "work", session="busy")  # real time: just now
    conn = db.connect(str(project / ".claude-session.db"))
    conn.execute(
        "UPDATE sessions SET last_activity_at = ? WHERE session_id = 'busy'", (clocks.wall,)
    )
    conn.execute(
        "UPDATE agent_registry SET last_seen_at = ? WHERE id = 'busy-agent'", (clocks.wall,)
    )
    conn.close()
    verdicts = worker.sweep()
    assert [(v.kind, v.target) for v in verdicts] == [("session", "quiet")]
    assert agent_status(project, "quiet-agent")[0] == "aborted_stale"
    assert "session gone: no event for 61 min" in agent_status(project, "quiet-agent")[1]
    assert agent_status(project, "busy-agent")[0] == "running"


def test_sweep_releases_expired_claims(project: Path) -> None:
    set_config(project, claim_lease_minutes=1)
    start_agent(project, "a1", "work")
    edit(project, "a1")
    clocks = Clocks()
    clocks.advance(2 * MIN)
    new_daemon(project, clocks).sweep()
    assert query(project, "SELECT release_reason FROM file_claims") == [("lease expired",)]


def test_ten_simultaneous_starts_leave_one_daemon(project: Path, reap_daemons: None) -> None:
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    starts = [
        subprocess.Popen(
            [CLI, "--project", str(project), "daemon", "start"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(10)
    ]
    for proc in starts:
        assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    # losers start late (0.5 s), retry the lock for up to 0.5 s, then exit: on a loaded
    # machine that takes a while, so wait for the count to settle at one
    assert wait_for(lambda: len(daemons_of(project)) == 1, seconds=10)
    assert daemon_control.running_pid(str(project)) == daemons_of(project)[0]


def test_kill_9_and_restart_lose_nothing_then_stop(project: Path, reap_daemons: None) -> None:
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    subprocess.run([CLI, "--project", str(project), "daemon", "start"], check=True)
    pid = daemon_control.running_pid(str(project))
    assert pid
    os.kill(pid, signal.SIGKILL)
    assert wait_for(lambda: not daemon_control.is_running(str(project)))
    # events while it is down: hooks never depend on it
    run_hook("UserPromptSubmit", fixture("UserPromptSubmit", project), project)
    holder = hold_write_lock(project, 7)
    try:
        run_hook("PostToolUse", fixture("PostToolUse.Edit", project), project)  # -> spool
    finally:
        holder.kill()
        holder.wait()
    assert len(spooled(project)) == 1
    subprocess.run([CLI, "--project", str(project), "daemon", "start"], check=True)
    assert wait_for(lambda: not spooled(project))  # the restarted daemon ingests the spool
    assert count(project, "events") == 3 and count(project, "file_claims") == 1
    done = subprocess.run(
        [CLI, "--project", str(project), "daemon", "stop"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "daemon stopped" in done.stdout
    assert not daemon_control.is_running(str(project)) and not daemons_of(project)


def test_running_daemon_marks_stale_in_real_time_and_idles_out(
    project: Path, reap_daemons: None
) -> None:
    set_config(
        project,
        stale_after_minutes=0.02,
        sweep_interval_seconds=0.2,
        session_idle_minutes=0.05,
        # The session is closed out once the daemon has watched it idle for 3 s from its first
        # sweep; the idle exit must come after that even when the daemon starts slowly.
        daemon_idle_exit_minutes=0.05,
    )
    start_agent(project, "a1", "goes quiet")
    subprocess.run([CLI, "--project", str(project), "daemon", "start"], check=True)
    assert wait_for(lambda: agent_status(project, "a1")[0] == "aborted_stale")
    assert "silent for" in agent_status(project, "a1")[1]
    # the session goes quiet too: closed out, then nothing live, then the daemon exits itself
    assert wait_for(lambda: not daemon_control.is_running(str(project)), seconds=30)
    assert query(project, "SELECT status FROM sessions") == [("ended",)]
    assert "idle exit" in log_file(project).read_text()


def test_session_start_hook_starts_the_daemon_without_waiting(
    project: Path, reap_daemons: None
) -> None:
    result = run_hook(
        "SessionStart",
        fixture("SessionStart.startup", project),
        project,
        env={"CLAUDE_SESSION_NO_DAEMON": ""},
    )
    assert result.seconds < 1.0
    assert wait_for(lambda: daemon_control.is_running(str(project)))
    pid = daemon_control.running_pid(str(project))
    again = run_hook(
        "SessionStart",
        fixture("SessionStart.resume", project),
        project,
        env={"CLAUDE_SESSION_NO_DAEMON": ""},
    )
    assert again.returncode == 0 and daemon_control.running_pid(str(project)) == pid


def test_autostart_can_be_turned_off(project: Path) -> None:
    set_config(project, daemon_autostart=False)
    run_hook(
        "SessionStart",
        fixture("SessionStart.startup", project),
        project,
        env={"CLAUDE_SESSION_NO_DAEMON": ""},
    )
    time.sleep(0.5)
    assert not daemon_control.is_running(str(project)) and not daemons_of(project)


def test_checkpoint_keeps_the_wal_bounded_once_a_long_reader_closes(project: Path) -> None:
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    path = str(project / ".claude-session.db")
    # The workspace snapshot of that SessionStart is written by a process of its own: let it
    # finish, or its commit lands in the middle of the checkpoints below.
    assert wait_for(lambda: not query(project, "SELECT 1 FROM vcs_tags WHERE status = 'pending'"))
    reader = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM events").fetchall()  # holds a snapshot
    writer = db.connect(path)
    blob = "x" * 2000
    with db.Immediate(writer):
        for i in range(10_000):
            writer.execute(
                "INSERT INTO events (dedup_key, received_at, session_id, hook_event_name,"
                " payload, payload_bytes) VALUES (?, 0, 's', 'Stop', ?, 1)",
                (f"bulk{i}", json.dumps({"blob": blob})),
            )
    wal = Path(path + "-wal")
    assert wal.stat().st_size > db.JOURNAL_SIZE_LIMIT  # grew past the limit under the reader
    worker = sweeps.Daemon(str(project))
    worker.checkpoint()  # a reader is open: nothing may be lost, nothing blocks
    reader.execute("COMMIT")
    reader.close()
    worker.checkpoint()
    run_hook("Stop", fixture("Stop", project), project)  # the next write restarts the WAL
    assert wal.stat().st_size <= db.JOURNAL_SIZE_LIMIT
    assert count(project, "events") == 10_002


def test_daemon_moves_a_corrupt_database_aside_and_replays_the_spool(project: Path) -> None:
    path = project / ".claude-session.db"
    garbage = b"this is not a database" * 400
    path.write_bytes(garbage)
    run_hook("UserPromptSubmit", fixture("UserPromptSubmit", project), project)  # -> spool
    assert len(spooled(project)) == 1
    worker = sweeps.Daemon(str(project))
    worker.pass_once()
    moved = list(project.glob(".claude-session.db.corrupt-*"))
    assert len(moved) == 1 and moved[0].read_bytes() == garbage  # kept, never deleted
    assert not spooled(project) and count(project, "prompts") == 1  # a fresh one, replayed
    status = json.loads(
        subprocess.run(
            [CLI, "--project", str(project), "status", "--json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert status["database"]["moved_aside"] == [str(moved[0])]
    assert "moved aside" in log_file(project).read_text()


def test_daemon_never_moves_a_busy_database(project: Path) -> None:
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    holder = hold_write_lock(project, 3)
    try:
        worker = sweeps.Daemon(str(project))
        assert worker.quarantine() is False
    finally:
        holder.kill()
    assert not list(project.glob(".claude-session.db.corrupt-*"))


def test_a_write_lock_held_past_the_busy_timeout_is_waited_out(
    project: Path, reap_daemons: None
) -> None:
    """Another process holds BEGIN IMMEDIATE for 7 s, past the 5 s busy timeout, while an event
    waits in the spool: the daemon's write fails, and it went on running (it used to exit on
    the BusyError), says so once in the log, and takes the event in once the lock is free."""
    set_config(project, sweep_interval_seconds=0.2)
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    subprocess.run([CLI, "--project", str(project), "daemon", "start"], check=True)
    pid = daemon_control.running_pid(str(project))
    assert pid is not None
    held = db.BUSY_TIMEOUT_MS / 1000 + 2
    holder = hold_write_lock(project, held)
    started = time.monotonic()
    spool_a_stop(project)  # the daemon sees it arrive and tries to write it: locked
    assert holder.wait(held + 10) == 0
    waited = time.monotonic() - started
    assert daemon_control.running_pid(str(project)) == pid  # alive, the same process
    stops = "SELECT count(*) FROM events WHERE hook_event_name = 'Stop'"
    assert wait_for(lambda: query(project, stops) == [(1,)] and not spooled(project), 30)
    assert waited >= db.BUSY_TIMEOUT_MS / 1000

    def status() -> Any:
        return json.loads(Path(daemon_control.status_path(str(project))).read_text())

    def through() -> bool:  # the pass that took the event in has ended: its status written
        now = status()
        return now["events_ingested"] >= 1 and "waiting_for_write_lock_since" not in now

    assert wait_for(through, 30), status()
    assert status()["pid"] == pid
    logged = log_file(project).read_text()
    assert logged.count("holds the database's write lock") == 1, logged
    assert "the write lock is free again" in logged and "stopped by" not in logged


def test_stop_right_after_a_session_start_leaves_no_daemon(
    project: Path, reap_daemons: None
) -> None:
    """The SessionStart hook starts the daemon half a second late; a `daemon stop` in that half
    second still wins: the daemon that was on its way gives up."""
    run_hook(
        "SessionStart",
        fixture("SessionStart.startup", project),
        project,
        env={"CLAUDE_SESSION_NO_DAEMON": ""},
    )
    stopped = subprocess.run(
        [str(Path(PYTHON).parent / "claude-session"), "--project", str(project), "daemon", "stop"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert stopped.returncode == 0, stopped.stderr
    time.sleep(daemon_control.START_DELAY_SECONDS + 2.0)
    assert not daemon_control.is_running(str(project))
    assert daemons_of(project) == []
    # a later session starts it again
    run_hook(
        "SessionStart",
        fixture("SessionStart.resume", project),
        project,
        env={"CLAUDE_SESSION_NO_DAEMON": ""},
    )
    assert wait_for(lambda: daemon_control.is_running(str(project)))


def test_a_foreground_daemon_run_killed_takes_its_daemon_with_it(project: Path) -> None:
    """`daemon run` runs the daemon as its child: a SIGTERM (`kill`) or SIGHUP (a
    closed terminal) sent to it is passed on, so the daemon never runs on
    orphaned (as it did after every test that stopped a `daemon run`)."""
    command = str(Path(PYTHON).parent / "claude-session")
    for signum in (signal.SIGTERM, signal.SIGHUP):
        foreground = subprocess.Popen(
            [command, "--project", str(project), "daemon", "run"],
            env=hook_env(project),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert wait_for(lambda: daemon_control.is_running(str(project)), 30)
            assert daemons_of(project)
            foreground.send_signal(signum)
            foreground.wait(30)
            assert wait_for(lambda: not daemons_of(project), 15), daemons_of(project)
        finally:
            foreground.kill()
            foreground.wait(30)


def test_an_appended_transcript_line_is_read_without_waiting_for_the_sweep(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon watches the live sessions' transcript folders: a line Claude Code appends
    (to the main transcript, or a subagent's in a folder made after the daemon started) is
    read at once, with the sweep's timer far away; a folder that disappears is dropped from
    the watch, nothing more."""
    set_config(project, sweep_interval_seconds=3600)
    config = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    main = config / "projects" / "-tmp-project" / f"{SESSION_T}.jsonl"
    recorder = Recorder(project)
    try:
        start(recorder, main)
    finally:
        recorder.close()
    write(main, [user(PROMPT, 1), assistant("msg_1", 2)])

    def status() -> dict[str, Any]:
        return dict(json.loads(Path(daemon_control.status_path(str(project))).read_text()))

    def read(messages: int) -> bool:
        """Whether the daemon has read that many messages, as its status file says (polled so:
        a look at the database would wake the daemon by itself)."""
        try:
            return bool(status()["transcript_messages"] >= messages)
        except (OSError, ValueError):
            return False

    def quiet() -> None:
        """Until the daemon has made no pass for 2 s: only what comes next can wake it."""
        sweeps = -1
        while status()["sweeps"] != sweeps:
            sweeps = status()["sweeps"]
            time.sleep(2)

    stop = threading.Event()
    worker = threading.Thread(target=sweeps.run, args=(str(project), stop))
    worker.start()
    try:
        assert wait_for(lambda: read(1))  # the first pass
        quiet()
        write(main, [assistant("msg_2", 3)])
        assert wait_for(lambda: read(2), seconds=10)
        quiet()
        subagent = main.parent / SESSION_T / "subagents" / f"agent-{AGENT}.jsonl"
        write(subagent, [assistant("msg_sub", 4)])  # the folders come after the daemon
        assert wait_for(lambda: read(3), seconds=10)
        quiet()
        write(subagent, [assistant("msg_sub_2", 5)])
        assert wait_for(lambda: read(4), seconds=10)
        quiet()
        shutil.rmtree(main.parent / SESSION_T)
        write(main, [assistant("msg_3", 6)])
        assert wait_for(lambda: read(5), seconds=10)
        assert worker.is_alive()
    finally:
        stop.set()
        worker.join(timeout=10)
    assert not worker.is_alive()
    logged = log_file(project).read_text() if log_file(project).exists() else ""
    assert "internal error" not in logged
    found = query(project, "SELECT message_id FROM message_usage ORDER BY message_id")
    assert [m for (m,) in found] == ["msg_1", "msg_2", "msg_3", "msg_sub", "msg_sub_2"]


def test_a_transcript_folder_that_cannot_be_watched_leaves_it_to_the_sweep(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A watch that cannot start on a transcript folder (gone, no inotify watch left) is tried
    once more, then the daemon watches the project's own files alone for a while."""
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    gone = str(project.parent / "gone")
    monkeypatch.setattr(sweeps.Daemon, "transcript_folders", lambda self: (gone,))
    stop = threading.Event()
    worker = threading.Thread(target=sweeps.run, args=(str(project), stop))
    worker.start()
    try:
        logged = log_file(project)
        assert wait_for(lambda: logged.exists() and "cannot watch" in logged.read_text())
        assert worker.is_alive()
    finally:
        stop.set()
        worker.join(timeout=10)
    assert not worker.is_alive()
    assert "internal error" not in log_file(project).read_text()
