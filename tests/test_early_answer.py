"""The MCP hook server's early answer: an event whose answer cannot depend on the store and that
Claude Code sends beside another (a SubagentStart, a SubagentStop with no judge) is answered
once it is held on disk and stored right after; nothing is lost if the server dies in
between, and an event sent after such an answer is stored after it. The real McpHookServer, in
this process."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest
from conftest import fixture, query, read_envelope

from claude_session.core import db, mcp_hook_input, spool
from claude_session.core.paths import spool_dir
from claude_session.runtime import mcp_transport
from claude_session.services.setup import installer

AGENT = "a026341fa5086f41e"  # the recorded SubagentStart's agent


@pytest.fixture
def server(project: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[mcp_transport.McpHookServer]:
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    monkeypatch.setenv("CLAUDE_SESSION_NO_SNAPSHOTS", "1")  # no capture process from here
    monkeypatch.setenv("CLAUDE_SESSION_NO_DAEMON", "1")
    replies: list[dict[str, Any]] = []
    started = mcp_transport.McpHookServer(lambda data: replies.append(json.loads(data)))
    started.replies = replies  # type: ignore[attr-defined]
    try:
        yield started
    finally:
        for _ in started.workers:
            started.calls.put(None)
        for worker in started.workers:
            worker.join(10)
        started.after.put(None)
        started.side.join(10)
        db.serialize_writers(None)  # the server's lock is this process's: not the next test's


def arguments(payload: dict[str, Any]) -> dict[str, object]:
    return dict(mcp_hook_input.arguments_for(payload, installer.package_folder()))


def stored(project: Path, name: str) -> int:
    try:
        found = query(project, "SELECT count(*) FROM events WHERE hook_event_name = ?", (name,))
    except apsw.Error:  # not made yet, or being made
        return 0
    return int(found[0][0])


def answered_early(project: Path, delivery_id: str) -> dict[str, Any]:
    """The envelope the MCP hook server holds for a SubagentStart it answered early."""
    return {
        "v": 1,
        "delivery_id": delivery_id,
        "received_at": time.time(),
        "event_hint": "SubagentStart",
        "project_root": os.path.realpath(project),
        "reason": "answered early",
        "payload": json.dumps(fixture("SubagentStart", project)),
    }


def held(project: Path) -> list[str]:
    folder = spool.answered_dir(os.path.realpath(project))
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def test_a_subagent_start_is_answered_before_it_is_stored_and_is_stored_after(
    server: mcp_transport.McpHookServer, project: Path
) -> None:
    seen: list[tuple[int, list[str]]] = []

    def answered() -> None:  # what is true at the moment the answer goes out
        seen.append((stored(project, "SubagentStart"), held(project)))

    start = fixture("SubagentStart", project)
    text, failed, outcome = server.hook(
        arguments(start), time.time(), time.perf_counter(), reply_early=answered
    )
    assert (text, failed) == ("", False)
    assert len(seen) == 1
    count, files = seen[0]
    assert count == 0  # answered first ...
    assert len(files) == 1 and files[0].startswith(f"{os.getpid()}-")  # ... while held on disk
    assert stored(project, "SubagentStart") == 1  # ... and stored right after
    assert query(project, "SELECT id, status FROM agent_registry WHERE id = ?", (AGENT,)) == [
        (AGENT, "running")
    ]
    assert held(project) == []
    assert outcome is not None and outcome.out == ""


def test_the_other_events_are_answered_after_they_are_stored(
    server: mcp_transport.McpHookServer, project: Path
) -> None:
    """A failure's guidance and a PreToolUse's check read the store; a successful PostToolUse
    and a Stop come in sequence with the next event: never answered early."""
    early: list[str] = []
    for name in ("PreToolUse.Bash", "PostToolUseFailure.Bash", "PostToolUse.Write", "Stop"):
        payload = fixture(name, project)
        server.hook(
            arguments(payload),
            time.time(),
            time.perf_counter(),
            reply_early=lambda n=name: early.append(n),
        )
    assert early == []
    assert stored(project, "PostToolUseFailure") == 1


def test_an_early_answer_goes_out_once_through_the_protocol(
    server: mcp_transport.McpHookServer, project: Path
) -> None:
    for ident, name in ((7, "SubagentStart"), (8, "SubagentStop")):
        call = {"name": installer.HOOK_TOOL, "arguments": arguments(fixture(name, project))}
        server._dispatch(  # the reading thread's step, as a line from Claude Code makes it
            {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": call},
            time.time(),
            time.perf_counter(),
        )
    deadline = time.monotonic() + 10
    while stored(project, "SubagentStop") == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)
    replies = server.replies  # type: ignore[attr-defined]
    assert sorted(r["id"] for r in replies) == [7, 8]  # one answer each, empty
    assert all(r["result"] == {"content": [{"type": "text", "text": ""}]} for r in replies)
    assert stored(project, "SubagentStart") == stored(project, "SubagentStop") == 1


def test_an_event_sent_after_an_early_answer_is_stored_after_it(
    server: mcp_transport.McpHookServer, project: Path
) -> None:
    """The SubagentStart is answered, then cannot store (another process holds the write lock);
    the subagent's PreToolUse, sent after that answer, is stored after it all the same."""
    server.hook(arguments(fixture("SessionStart.startup", project)), time.time(), 0.0)
    blocker = apsw.Connection(str(project / ".claude-session.db"))
    blocker.execute("BEGIN IMMEDIATE")
    start = fixture("SubagentStart", project)
    pre = fixture("PreToolUse.Read.subagent", project) | {"agent_id": AGENT}
    answered = threading.Event()
    first = threading.Thread(
        target=server._one,
        args=(1, 1, arguments(start), time.time(), time.perf_counter()),
    )
    original = server._reply

    def reply(ident: object, result: dict[str, object]) -> None:
        original(ident, result)
        answered.set()

    server._reply = reply  # type: ignore[method-assign]
    first.start()
    assert answered.wait(10)  # answered while its transaction waits for the lock
    second = threading.Thread(
        target=server._one, args=(2, 2, arguments(pre), time.time(), time.perf_counter())
    )
    second.start()
    time.sleep(0.3)
    blocker.execute("COMMIT")
    blocker.close()
    first.join(10)
    second.join(10)
    order = query(
        project,
        "SELECT hook_event_name FROM events WHERE hook_event_name != 'SessionStart' ORDER BY id",
    )
    assert order == [("SubagentStart",), ("PreToolUse",)]


def test_an_event_answered_by_a_server_that_died_reaches_the_store(
    server: mcp_transport.McpHookServer, project: Path
) -> None:
    """The answer went out and the process died before storing: the held file names a process
    that is gone; the next server of the project moves it into the spool, which stores it."""

    class Died(BaseException):
        pass

    def answered_then_died() -> None:
        raise Died

    start = fixture("SubagentStart", project)
    with pytest.raises(Died):
        server.hook(arguments(start), time.time(), 0.0, reply_early=answered_then_died)
    assert stored(project, "SubagentStart") == 0
    (name,) = held(project)
    folder = spool.answered_dir(os.path.realpath(project))
    gone = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1  # no process has this id
    os.rename(os.path.join(folder, name), os.path.join(folder, f"{gone}-{name.split('-', 1)[1]}"))

    root = os.path.realpath(project)
    assert spool.recover_answered(root) == 1
    assert held(project) == []
    conn = db.connect(str(project / ".claude-session.db"))
    try:
        assert spool.ingest(conn, root) == 1
    finally:
        conn.close()
    assert query(
        project,
        "SELECT e.agent_id, h.outcome FROM events e JOIN hook_events h ON h.event_id = e.id"
        " WHERE e.hook_event_name = 'SubagentStart'",
    ) == [(AGENT, "spooled")]


def test_a_new_server_of_the_project_moves_a_dead_servers_held_events_to_the_spool(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `recover_answered` does, at the start of the next MCP hook server of the project."""
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    root = os.path.realpath(project)
    gone = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1  # no process has this id
    answered_file = spool.hold(root, answered_early(project, "d" * 24))
    folder = os.path.dirname(answered_file)
    os.rename(answered_file, os.path.join(folder, f"{gone}-{'d' * 24}.json"))
    half = os.path.join(folder, f".{gone}-{'e' * 24}.json")  # cut short: never answered
    Path(half).write_text("{")
    started = mcp_transport.McpHookServer(lambda data: None)
    try:
        assert held(project) == []
        (waiting,) = spool.pending(spool_dir(root))
        assert read_envelope(Path(waiting))["delivery_id"] == "d" * 24
    finally:
        for _ in started.workers:
            started.calls.put(None)
        started.after.put(None)
        db.serialize_writers(None)


def test_an_early_answer_that_cannot_be_written_does_not_stop_the_store(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code went away (its end of the pipe closed): the event is stored all the same."""
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    monkeypatch.setenv("CLAUDE_SESSION_NO_SNAPSHOTS", "1")

    def gone(data: bytes) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    started = mcp_transport.McpHookServer(gone)
    try:
        start = fixture("SubagentStart", project)
        started._one(1, 1, arguments(start), time.time(), time.perf_counter())
        assert stored(project, "SubagentStart") == 1
        assert held(project) == []
    finally:
        for _ in started.workers:
            started.calls.put(None)
        started.after.put(None)
        db.serialize_writers(None)


def test_a_dead_servers_held_event_is_counted_and_stored_without_a_new_server(
    project: Path,
) -> None:
    """No session starts in the project again: the spool's ingest (the daemon's,
    `claude-session ingest`) stores a dead server's held event, and until then it is counted
    as waiting (status says so)."""
    root = os.path.realpath(project)
    conn = db.connect(str(project / ".claude-session.db"))
    gone = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1  # no process has this id
    envelope = answered_early(project, "f" * 24)
    answered_file = spool.hold(root, envelope)
    os.rename(
        answered_file, os.path.join(os.path.dirname(answered_file), f"{gone}-{'f' * 24}.json")
    )
    mine = spool.hold(root, envelope | {"delivery_id": "g" * 24})  # this process: alive
    try:
        assert spool.backlog(root) == 1
        assert spool.ingest(conn, root) == 1
        assert spool.backlog(root) == 0 and held(project) == [os.path.basename(mine)]
        assert stored(project, "SubagentStart") == 1
    finally:
        conn.close()
