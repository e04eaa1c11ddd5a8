"""The one Request every transport builds (runtime/request.py): its wire form keeps every field,
read by name; another version is refused; and each transport's path hands `hookrt.process`
the fields it was given. The relay's end to end (a daemon running) is in tests/test_relay.py."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, fixture, hook_env, query

from claude_session.core import db, mcp_hook_input
from claude_session.core.effects import IngestSpool
from claude_session.runtime import effects, hookrt, mcp_transport
from claude_session.runtime import request as wire
from claude_session.runtime.request import Refused, Request
from claude_session.services.setup import installer

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def full_request(**changes: Any) -> Request:
    """A Request with every field set, to values that are easy to get wrong: a payload with
    newlines, spaces and bytes that are not UTF-8; text with a byte that is not UTF-8 either."""
    fields: dict[str, Any] = {
        "why_short": "stdin left open after the payload",
        "root_hint": "/tmp/a project/with spaces \udcff",
        "dispatcher": "plugin",
        "transport": "relay",
        "traceparent": TRACEPARENT,
        "claude_process": (4242, 987654321, "pid:[4026531836]"),
        "daemon_missed": True,
    }
    fields.update(changes)
    return Request(
        "PostToolUse",
        b'{"a": "b"}\n\xff\x00 CSR2 x=1\n',
        1764230000.123456,
        12345.678901234,
        "0123456789abcdef01234567",
        **fields,
    )


def read(data: bytes) -> tuple[Request, dict[str, bytes]]:
    head, _, body = data.partition(b"\n")
    fields = wire.split(wire.sizes(head), body)
    return wire.decode(fields), fields


def test_every_field_survives_the_wire() -> None:
    sent = full_request()
    got, fields = read(wire.encode(sent, install="1.0|/pkg|5", environment="PATH=/bin", root="/p"))
    assert got == sent
    for name in Request.__slots__:
        assert getattr(got, name) == getattr(sent, name), name
    assert (fields["install"], fields["environment"], fields["root"]) == (
        b"1.0|/pkg|5",
        b"PATH=/bin",
        b"/p",
    )


def test_empty_fields_come_back_as_none() -> None:
    sent = Request("Stop", b"", 1.5, 2.5, "ab" * 12)
    got, _ = read(wire.encode(sent))
    assert got == sent
    assert (got.why_short, got.root_hint, got.dispatcher, got.transport) == (None,) * 4
    assert (got.traceparent, got.claude_process, got.daemon_missed) == (None, None, False)


def test_fields_are_read_by_their_names_not_their_places() -> None:
    """Another order, and a field this version does not know: the same Request."""
    sent = full_request()
    head, _, body = wire.encode(sent).partition(b"\n")
    fields = wire.split(wire.sizes(head), body)
    fields["from_a_later_version"] = b"ignored"
    names = list(reversed(fields))
    shuffled = b" ".join([wire.HEAD] + [b"%s=%d" % (n.encode(), len(fields[n])) for n in names])
    got, _ = read(shuffled + b"\n" + b"".join(fields[n] for n in names))
    assert got == sent


@pytest.mark.parametrize(
    ("head", "why"),
    [
        # the positional format of earlier installs: 12 lengths
        (b"CSR1 " + b" ".join([b"1"] * 12), "request version 1 not served (this is 2)"),
        (b"CSR3 event_hint=4", "request version 3 not served (this is 2)"),
        (b"GET / HTTP/1.0", "not a relay request"),
        (b"CSR2 event_hint=x", "malformed request head"),
        (b"CSR2 a-b=1", "malformed request head"),
    ],
)
def test_other_versions_and_garbage_are_refused(head: bytes, why: str) -> None:
    with pytest.raises(Refused, match=why.replace("(", r"\(").replace(")", r"\)")):
        wire.sizes(head)


def test_a_request_without_what_it_needs_is_refused() -> None:
    data = wire.encode(full_request())
    head, _, body = data.partition(b"\n")
    with pytest.raises(Refused, match="does not match its head"):
        wire.split(wire.sizes(head), body + b"x")
    fields = wire.split(wire.sizes(head), body)
    for needed in ("raw", "received_at", "started_clock", "delivery_id"):
        without = dict(fields)
        del without[needed]
        with pytest.raises(Refused):
            wire.decode(without)
    with pytest.raises(Refused):
        wire.decode(fields | {"received_at": b"soon"})


def test_a_malformed_claude_process_is_none() -> None:
    fields = wire.split(*_parts(wire.encode(full_request())))
    for bad in (b"12", b"x 1 pid", b"1 2 ", b"1 x pid"):
        assert wire.decode(fields | {"claude_process": bad}).claude_process is None


def _parts(data: bytes) -> tuple[list[tuple[str, int]], bytes]:
    head, _, body = data.partition(b"\n")
    return wire.sizes(head), body


def test_the_command_path_stores_every_field(project: Path) -> None:
    """The hook process's path (no daemon): what the Request says is what is stored."""
    session = fixture("SessionStart.startup", project)
    sent = Request(
        "SessionStart",
        json.dumps(session).encode(),
        time.time(),
        time.perf_counter(),
        os.urandom(12).hex(),
        root_hint=str(project),
        dispatcher="plugin",
        transport="process",
        traceparent=TRACEPARENT,
        claude_process=(os.getpid(), 123456, "pid:[1]"),
    )
    outcome = hookrt.Outcome()
    hookrt.process(outcome, sent)
    outcome.finish()
    assert outcome.code == 0
    assert query(
        project, "SELECT dedup_key, received_at, traceparent FROM events WHERE id = 1"
    ) == [
        (
            f"{session['session_id']}|SessionStart|delivery:{sent.delivery_id}",
            sent.received_at,
            TRACEPARENT,
        )
    ]
    assert query(project, "SELECT started_at, dispatcher, transport FROM hook_events") == [
        (sent.received_at, "plugin", "process")
    ]
    assert query(
        project, "SELECT claude_pid, claude_started_ticks, claude_pid_space FROM sessions"
    ) == [(os.getpid(), 123456, "pid:[1]")]


def test_the_mcp_path_hands_process_a_request_of_the_call(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The MCP hook server's path: the call's fields become the Request's payload (one JSON text,
    which reads as the payload), with the server's project, process and transport."""
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    monkeypatch.setattr(db, "serialize_writers", lambda lock: None)  # this process is pytest's
    given: list[Request] = []
    monkeypatch.setattr(hookrt, "process", lambda outcome, request, **_: given.append(request))
    server = mcp_transport.McpHookServer(lambda data: None)
    server.claude_process = (4242, 99, "pid:[7]")
    try:
        _call_twice(server, project, given)
    finally:
        for _ in server.workers:
            server.calls.put(None)
        server.after.put(None)


def _call_twice(server: mcp_transport.McpHookServer, project: Path, given: list[Request]) -> None:
    for name in ("SessionStart.startup", "PostToolUse.Edit"):
        payload = fixture(name, project)
        arguments: dict[str, object] = dict(
            mcp_hook_input.arguments_for(payload, installer.package_folder())
        )
        received_at, clock = time.time(), time.perf_counter()
        text, failed, outcome = server.hook(arguments, received_at, clock)
        assert (text, failed) == ("", False) and outcome is not None
        request = given[-1]
        assert json.loads(request.raw) == {k: v for k, v in payload.items() if v not in (None, "")}
        assert request.event_hint == payload["hook_event_name"]
        assert (request.received_at, request.started_clock) == (received_at, clock)
        assert len(request.delivery_id) == 24
        assert (request.root_hint, request.transport) == (os.path.realpath(project), "mcp")
        assert request.claude_process == (
            (4242, 99, "pid:[7]") if name.startswith("SessionStart") else None
        )
        assert (request.why_short, request.dispatcher, request.traceparent) == (None,) * 3
    assert given[0].delivery_id != given[1].delivery_id


# --- side effects after the answer, on every path ---------------------------------------------

AFTER_THE_ANSWER = """
import os, sys
from claude_session.runtime import effects, hookrt, relay
original = hookrt.process
def process(outcome, request, **handles):
    original(outcome, request, **handles)
    outcome.out = '{"answer": 1}'
carry_out = effects.carry_out
def side_effect(effect, root, conn):
    with open(sys.argv[1], "w") as f:
        f.write(str(os.fstat(1).st_size))  # how much of the answer is out by now
    carry_out(effect, root, conn)
hookrt.process = process
effects.carry_out = side_effect
relay.main("PostToolUse", lambda: None)
"""


def test_a_hook_process_writes_its_answer_before_its_side_effects(
    project: Path, tmp_path: Path
) -> None:
    marker, out = tmp_path / "seen", tmp_path / "stdout"
    with out.open("wb") as stdout:
        done = subprocess.run(
            [PYTHON, "-c", AFTER_THE_ANSWER, str(marker)],
            input=json.dumps(fixture("PostToolUse.Edit", project)).encode(),
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=hook_env(project, CLAUDE_SESSION_NO_RELAY="1"),
            cwd=tmp_path,
            timeout=60,
        )
    assert (done.returncode, done.stderr) == (0, b"")
    assert out.read_text() == '{"answer": 1}'
    assert marker.read_text() == str(len('{"answer": 1}'))


def test_the_hook_server_replies_before_the_side_effects(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    monkeypatch.setattr(db, "serialize_writers", lambda lock: None)  # this process is pytest's
    written: list[bytes] = []
    seen: list[int] = []

    def process(outcome: hookrt.Outcome, request: Request, **_: Any) -> None:
        outcome.root = str(project)
        outcome.effects.append(IngestSpool())

    def carry_out(*_: Any) -> None:
        seen.append(len(written))

    monkeypatch.setattr(hookrt, "process", process)
    monkeypatch.setattr(effects, "carry_out", carry_out)
    server = mcp_transport.McpHookServer(written.append)
    try:
        arguments = mcp_hook_input.arguments_for(
            fixture("PostToolUse.Edit", project), installer.package_folder()
        )
        server.calls.put((1, 7, dict(arguments), time.time(), time.perf_counter()))
        deadline = time.monotonic() + 10
        while not seen and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        for _ in server.workers:
            server.calls.put(None)
        server.after.put(None)
    assert seen == [1]  # the reply was out when the side effect ran
    assert json.loads(written[0])["id"] == 7
