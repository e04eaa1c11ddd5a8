"""The hook relay: with the project's daemon running, hooks hand it their payload
and print its answer; whenever it cannot serve (stopped, killed, another install or
environment, garbage on the socket), the hook does the work itself and nothing is lost or
recorded twice."""

from __future__ import annotations

import json
import os
import signal
import socket
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
    hook_argv,
    hook_env,
    query,
    run_hook,
    wait_for,
)

from claude_session.core import db
from claude_session.runtime import relay
from claude_session.runtime.request import Request
from claude_session.services.background import daemon_control

HOOKRT = Path(relay.__file__).with_name("hookrt.py")


def status(project: Path) -> dict[str, Any]:
    path = Path(daemon_control.status_path(str(project)))
    try:
        return json.loads(path.read_text())  # type: ignore[no-any-return]
    except (OSError, ValueError):
        return {}


def start_daemon_process(project: Path, **env: str) -> subprocess.Popen[bytes]:
    """The daemon started exactly as a hook starts it: the hooks' environment."""
    process = subprocess.Popen(
        [PYTHON, "-P", "-m", "claude_session.daemon", "--project", str(project)],
        env=hook_env(project, **env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert wait_for(lambda: status(project).get("relay_socket")), "relay did not start"
    return process


@pytest.fixture
def daemon(project: Path, reap_daemons: None) -> subprocess.Popen[bytes]:
    # The hook needs a database to exist first only for the query helpers below.
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    return start_daemon_process(project)


def failing(project: Path, tool_use_id: str) -> dict[str, Any]:
    payload = fixture("PostToolUseFailure.Bash", project)
    payload["tool_use_id"] = tool_use_id
    return payload


def test_hooks_are_served_by_the_daemon_with_the_same_answers(
    project: Path, tmp_path: Path, daemon: subprocess.Popen[bytes]
) -> None:
    twin = tmp_path / "twin"  # the same events applied by the hooks themselves
    twin.mkdir()
    run_hook("SessionStart", fixture("SessionStart.startup", twin), twin)
    answers = []
    for target, env in ((project, {}), (twin, {"CLAUDE_SESSION_NO_RELAY": "1"})):
        got = []
        for n in range(3):
            done = run_hook("PostToolUseFailure", failing(target, f"fail-{n}"), target, env=env)
            got.append(done.json())
        edit = run_hook("PostToolUse", fixture("PostToolUse.Edit", target), target, env=env)
        got.append(edit.json())
        answers.append(json.loads(json.dumps(got).replace(str(target), "ROOT")))
    assert answers[0] == answers[1]
    assert answers[0][2]["hookSpecificOutput"]["additionalContext"]  # the ladder's 3rd step
    assert wait_for(lambda: status(project).get("relay_served") == 4, seconds=20)
    for target in (project, twin):
        assert count(target, "events", "hook_event_name = 'PostToolUseFailure'") == 3
        assert count(target, "error_log") == count(twin, "error_log") > 0
        assert count(target, "hook_events") == 5  # one audit row per hook run


def test_a_relayed_hook_loads_neither_apsw_nor_the_core(
    project: Path, daemon: subprocess.Popen[bytes]
) -> None:
    done = subprocess.run(
        [PYTHON, "-I", "-S", "-X", "importtime", *hook_argv("PreToolUse")[3:]],
        input=json.dumps(fixture("PreToolUse.Bash", project)).encode(),
        capture_output=True,
        env=hook_env(project),
    )
    assert done.returncode == 0
    modules = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.decode().splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "claude_session.runtime.relay" in modules
    ours = {m for m in modules if m.startswith(("apsw", "claude_session.core"))}
    assert ours <= {"claude_session.core", "claude_session.core.paths"}  # where the socket is
    assert "claude_session.runtime.hookrt" not in modules
    assert wait_for(lambda: status(project).get("relay_served") == 1)


def test_another_environment_is_declined_and_recorded_by_the_hook(
    project: Path, daemon: subprocess.Popen[bytes]
) -> None:
    env = {"CLAUDE_SESSION_NO_SNAPSHOTS": "1"}  # the server was started without it
    run_hook("PostToolUse", fixture("PostToolUse.Edit", project), project, env=env)
    assert count(project, "events", "hook_event_name = 'PostToolUse'") == 1
    assert wait_for(lambda: status(project).get("relay_declined") == 1)
    assert status(project)["relay_last_declined"] == "another environment"
    assert status(project)["relay_served"] == 0


def test_a_stopped_daemon_is_not_waited_for_and_nothing_is_recorded_twice(
    project: Path, daemon: subprocess.Popen[bytes]
) -> None:
    os.kill(daemon.pid, signal.SIGSTOP)
    try:
        done = run_hook("PostToolUseFailure", failing(project, "while-stopped"), project)
        assert done.seconds < relay.ACK_SECONDS  # seen stopped: never waited for
        assert done.json() is not None  # the ladder's answer all the same
        assert count(project, "events", "tool_use_id = 'while-stopped'") == 1
    finally:
        os.kill(daemon.pid, signal.SIGCONT)
    # Resumed, it finds the request the hook gave up on: never applied a second time.
    run_hook("PostToolUse", fixture("PostToolUse.Edit", project), project)
    assert wait_for(lambda: status(project).get("relay_served", 0) >= 1, seconds=20)
    time.sleep(0.5)
    assert count(project, "events", "tool_use_id = 'while-stopped'") == 1
    assert count(project, "error_log", "tool_use_id = 'while-stopped'") == 1


def test_a_killed_daemon_is_replaced_by_the_next_hook(
    project: Path, daemon: subprocess.Popen[bytes]
) -> None:
    os.kill(daemon.pid, signal.SIGKILL)
    daemon.wait()
    assert Path(status(project)["relay_socket"]).exists()  # left behind: nobody listens
    env = {"CLAUDE_SESSION_NO_DAEMON": ""}  # hooks may start the daemon, as for users
    done = run_hook("PostToolUse", fixture("PostToolUse.Edit", project), project, env=env)
    assert done.returncode == 0
    assert count(project, "events", "hook_event_name = 'PostToolUse'") == 1
    assert wait_for(lambda: daemon_control.is_running(str(project)), seconds=10)
    assert wait_for(lambda: status(project).get("pid") not in (None, daemon.pid))
    # the new one serves the hooks of its own environment
    run_hook("PreToolUse", fixture("PreToolUse.Bash", project), project, env=env)
    assert wait_for(lambda: status(project).get("relay_served") == 1)
    assert len(daemons_of(project)) == 1


def test_sixty_four_concurrent_relayed_hooks_lose_nothing(
    project: Path, daemon: subprocess.Popen[bytes]
) -> None:
    env = hook_env(project)
    payloads = []
    for n in range(64):
        payload = fixture("PostToolUse.Bash", project)
        payload["tool_use_id"] = f"burst-{n}"
        payloads.append(json.dumps(payload).encode())
    processes = [
        subprocess.Popen(
            hook_argv("PostToolUse"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        for _ in payloads
    ]
    threads = [
        threading.Thread(target=p.communicate, args=(data,))
        for p, data in zip(processes, payloads, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert [p.wait(60) for p in processes] == [0] * 64
    assert count(project, "events", "tool_use_id LIKE 'burst-%'") == 64
    assert count(project, "hook_events", "event_type = 'PostToolUse'") == 64
    assert wait_for(lambda: status(project).get("relay_served") == 64, seconds=20)


def test_garbage_on_the_socket_is_declined_and_serving_goes_on(
    project: Path, daemon: subprocess.Popen[bytes]
) -> None:
    path = status(project)["relay_socket"]
    for garbage in (b"GET / HTTP/1.0\r\n\r\n", b"CSR1 99999999999 1\n", b"CSR1 1 2 3\nabc", b""):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(10)
            sock.connect(path)
            sock.sendall(garbage)
            sock.shutdown(socket.SHUT_WR)
            answer = sock.recv(100)
            assert not answer.startswith((b"ACK", b"OK")), (garbage, answer)
    run_hook("PreToolUse", fixture("PreToolUse.Bash", project), project)
    assert wait_for(lambda: status(project).get("relay_served") == 1)
    assert daemon.poll() is None


def test_new_code_in_place_retires_the_old_daemon(
    project: Path, daemon: subprocess.Popen[bytes]
) -> None:
    """An upgrade in place: the hook runs the new code; the old server declines and goes."""
    before = HOOKRT.stat()
    os.utime(HOOKRT, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    try:
        run_hook("PreToolUse", fixture("PreToolUse.Bash", project), project)
        assert count(project, "events", "hook_event_name = 'PreToolUse'") == 1
        assert daemon.wait(30) == 0
    finally:
        os.utime(HOOKRT, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert query(project, "SELECT count(*) FROM hook_events")[0][0] == 2


def test_a_package_planted_in_the_project_is_never_what_runs(
    project: Path, reap_daemons: None
) -> None:
    """Claude Code runs hooks in the project, which may be a cloned repository: a
    `claude_session` package planted there must not be what the daemon or the capture process
    (started by the hook, from that folder) import."""
    planted = project / "claude_session"
    (planted / "services" / "snapshots").mkdir(parents=True)
    marker = project.parent / "planted-code-ran"
    code = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    for name in (
        "__init__.py",
        "daemon.py",
        "services/__init__.py",
        "services/snapshots/__init__.py",
        "services/snapshots/capture.py",
    ):
        (planted / name).write_text(code)
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    env = {"CLAUDE_SESSION_NO_DAEMON": ""}
    run_hook("SessionStart", fixture("SessionStart.startup", project), project, env, cwd=project)
    assert wait_for(lambda: status(project).get("relay_socket"), seconds=20)
    run_hook("PostToolUse", fixture("PostToolUse.Write", project), project, env, cwd=project)
    assert wait_for(lambda: status(project).get("relay_served") == 1)
    assert wait_for(lambda: count(project, "vcs_tags", "status = 'pending'") == 0, seconds=20)
    assert count(project, "vcs_tags", "status = 'captured'") >= 1  # the real capture ran
    assert not marker.exists(), marker.read_text()


# Each sender is one process that hands the daemon events through the hooks' own
# client (`relay.deliver`), one after another, without starting a hook process per event.
SENDER = """
import json, os, sys, time
from claude_session.runtime import relay
from claude_session.runtime.request import Request
root = os.environ["CLAUDE_PROJECT_DIR"]
missed = 0
for payload in json.load(sys.stdin):
    raw = json.dumps(payload).encode()
    request = Request("PostToolUse", raw, time.time(), time.perf_counter(), os.urandom(12).hex())
    answered, _ = relay.deliver(root, request)
    missed += answered is None
sys.exit(1 if missed else 0)
"""


def test_relayed_hooks_keep_the_write_ahead_log_bounded(
    project: Path, daemon: subprocess.Popen[bytes]
) -> None:
    """Under 8 writers at once the WAL stays within some thousands of pages at every moment
    (the file keeps its largest size until journal_size_limit cuts it at a restart). Without
    any checkpoint these 2,400 events take it past 60,000 pages; with the checkpoint moved
    after each answer instead of SQLite's own, past 25,000."""
    env = hook_env(project)
    senders = []
    for worker in range(8):
        payloads = []
        for n in range(300):
            payload = fixture("PostToolUse.Edit", project)
            payload["tool_use_id"] = f"wal-{worker}-{n}"
            payload["tool_input"]["file_path"] = str(project / f"src/m{worker}_{n}.py")
            payloads.append(payload)
        sender = subprocess.Popen(
            [PYTHON, "-c", SENDER], env=env, stdin=subprocess.PIPE, cwd=project.parent
        )
        assert sender.stdin is not None
        sender.stdin.write(json.dumps(payloads).encode())
        sender.stdin.close()
        senders.append(sender)
    wal = project / ".claude-session.db-wal"
    largest = 0
    deadline = time.monotonic() + 240
    while any(sender.poll() is None for sender in senders) and time.monotonic() < deadline:
        largest = max(largest, wal.stat().st_size // (4096 + 24))
        time.sleep(0.01)
    assert [sender.wait(240) for sender in senders] == [0] * 8  # every event relayed
    assert count(project, "events", "tool_use_id LIKE 'wal-%'") == 2400
    assert 0 < largest < 12_000, largest  # 3,300 idle, 5,200 with both cores busy


def test_threads_of_one_process_take_turns_on_its_writer_lock(tmp_path: Path) -> None:
    """With no busy timeout, a second writer thread fails at once while the first holds the
    write lock; with the process's writer lock (as the daemon sets it) it waits its
    turn and commits right after the first."""
    path = str(tmp_path / "turns.db")
    setup = apsw.Connection(path)
    setup.execute("PRAGMA journal_mode = WAL").fetchall()
    setup.execute("CREATE TABLE t (writer TEXT)")
    first, second = apsw.Connection(path), apsw.Connection(path)
    for conn in (first, second):
        conn.setbusytimeout(0)
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with db.Immediate(first):
            first.execute("INSERT INTO t VALUES ('first')")
            holding.set()
            release.wait(10)

    def second_writer() -> None:
        with db.Immediate(second):
            second.execute("INSERT INTO t VALUES ('second')")

    holder = threading.Thread(target=hold)
    holder.start()
    assert holding.wait(10)
    with pytest.raises(apsw.BusyError):  # SQLite alone: busy at once
        second_writer()
    release.set()
    holder.join(10)

    db.serialize_writers(threading.RLock())
    try:
        holding.clear()
        release.clear()
        holder = threading.Thread(target=hold)
        holder.start()
        assert holding.wait(10)
        waiter = threading.Thread(target=second_writer)
        waiter.start()
        time.sleep(0.2)
        assert waiter.is_alive()  # waiting for its turn, not failed
        release.set()
        waiter.join(10)
        holder.join(10)
    finally:
        db.serialize_writers(None)
    order = [row[0] for row in setup.execute("SELECT writer FROM t ORDER BY rowid")]
    assert order == ["first", "first", "second"]


# --- the Request over the relay (runtime/request.py) --------------------------------------

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
FULL_SENDER = """
import json, os, sys, time
from claude_session.runtime import relay
from claude_session.runtime.request import Request
request = Request(
    "SessionStart",
    sys.stdin.buffer.read(),
    time.time(),
    time.perf_counter(),
    os.urandom(12).hex(),
    dispatcher="plugin",
    traceparent=sys.argv[1],
    claude_process=(os.getpid(), 123456, "pid:[1]"),
)
answered, missed = relay.deliver(os.environ["CLAUDE_PROJECT_DIR"], request)
print(json.dumps([answered, missed, request.delivery_id, request.received_at, os.getpid()]))
"""


def test_a_relayed_request_keeps_every_field(
    project: Path, daemon: subprocess.Popen[bytes]
) -> None:
    """Sent by the hooks' own client, applied by the daemon: what the Request said is what
    is stored (the delivery id, the times, the dispatcher, the trace, Claude Code's process)."""
    session = fixture("SessionStart.startup", project) | {"session_id": "relayed-session"}
    done = subprocess.run(
        [PYTHON, "-c", FULL_SENDER, TRACEPARENT],
        input=json.dumps(session).encode(),
        capture_output=True,
        env=hook_env(project),
        cwd=project.parent,
        check=True,
    )
    answered, missed, delivery_id, received_at, pid = json.loads(done.stdout)
    assert answered is not None and answered[0] == 0 and missed is False
    assert query(
        project,
        "SELECT dedup_key, received_at, traceparent FROM events WHERE session_id = ?1",
        ("relayed-session",),
    ) == [(f"relayed-session|SessionStart|delivery:{delivery_id}", received_at, TRACEPARENT)]
    assert query(
        project,
        "SELECT started_at, dispatcher, transport FROM hook_events WHERE session_id = ?1",
        ("relayed-session",),
    ) == [(received_at, "plugin", "relay")]
    assert query(
        project,
        "SELECT claude_pid, claude_started_ticks, claude_pid_space FROM sessions"
        " WHERE session_id = ?1",
        ("relayed-session",),
    ) == [(pid, 123456, "pid:[1]")]


def test_a_request_of_another_version_is_declined_and_the_hook_records_it_itself(
    project: Path, daemon: subprocess.Popen[bytes]
) -> None:
    """The positional request of an earlier install, and one of a later version: the daemon
    declines both; a hook whose request is declined does its work itself, once."""
    path = status(project)["relay_socket"]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(path)
        sock.sendall(b"CSR1 " + b" ".join([b"1"] * 12) + b"\n" + b"x" * 12)
        assert sock.recv(100) == b"NO request version 1 not served (this is 2)\n"
    later = (
        "import sys\n"
        "from claude_session.runtime import relay, request\n"
        "request.HEAD = b'CSR9'\n"
        "relay.main('PostToolUse', lambda: None)\n"
    )
    done = subprocess.run(
        [PYTHON, "-c", later],
        input=json.dumps(fixture("PostToolUse.Edit", project)).encode(),
        capture_output=True,
        env=hook_env(project),
        cwd=project.parent,
        timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert count(project, "events", "hook_event_name = 'PostToolUse'") == 1
    assert query(project, "SELECT transport FROM hook_events WHERE event_type = 'PostToolUse'") == [
        ("process",)
    ]
    assert wait_for(lambda: status(project).get("relay_declined") == 2)
    assert status(project)["relay_last_declined"] == "request version 9 not served (this is 2)"
    assert status(project)["relay_served"] == 0
    assert daemon.poll() is None


def test_new_code_in_place_retires_the_daemon_on_a_request_of_another_version(
    project: Path, daemon: subprocess.Popen[bytes]
) -> None:
    """A hook of a later version, after an upgrade in place: the daemon cannot read its request,
    sees its own code replaced, and goes (the next hook starts the new one)."""
    path = status(project)["relay_socket"]
    before = HOOKRT.stat()
    os.utime(HOOKRT, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(10)
            sock.connect(path)
            sock.sendall(b"CSR9 event_hint=4\nStop")
            assert sock.recv(100).startswith(b"NO request version 9")
        assert daemon.wait(30) == 0
    finally:
        os.utime(HOOKRT, ns=(before.st_atime_ns, before.st_mtime_ns))


def old_daemon(path: str, folder: str, heard: list[str]) -> socket.socket:
    """A stand-in for the daemon of an install before request version 2, as its code reads a
    request: `CSR1` and 12 lengths, the install's fingerprint first; the same install folder
    with other code makes it go ("retired"), anything else it declines."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(8)

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(10)
                data = b""
                while b"\n" not in data:
                    data += conn.recv(4096)
                head, _, body = data.partition(b"\n")
                parts = head.split(b" ")
                if (
                    parts[0] != b"CSR1"
                    or not all(p.isdigit() for p in parts[1:])
                    or (len(parts) != 13)
                ):
                    heard.append("declined")
                    conn.sendall(b"NO not a relay request\n")
                    continue
                sizes = [int(p) for p in parts[1:]]
                while len(body) < sum(sizes):
                    body += conn.recv(4096)
                mark = body[: sizes[0]].decode()
                heard.append("retired" if mark.split("|")[1] == folder else "other install")
                conn.sendall(b"NO another install of claude-session\n")

    threading.Thread(target=serve, daemon=True).start()
    return listener


def test_a_daemon_of_an_earlier_version_is_retired_by_the_first_hook_it_declines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "relay.sock")
    heard: list[str] = []
    monkeypatch.setattr(relay, "socket_path", lambda root: path)
    listener = old_daemon(path, relay.fingerprint().split("|")[1], heard)
    try:
        request = Request("Stop", b"{}", time.time(), time.perf_counter(), "ab" * 12)
        assert relay.deliver(str(tmp_path), request) == (None, False)
    finally:
        listener.close()
    assert heard == ["declined", "retired"]
