"""The MCP hook server (runtime/mcp_transport.py): the receiving end of the mcp_tool transport,
started as Claude Code starts it (`<python> -I -S <pkg>/mcp_hook_server.py`, pipes, the hooks'
environment with CLAUDE_PROJECT_DIR, in the project), spoken to in newline-delimited
JSON-RPC, its calls filled in the way Claude Code fills an mcp_tool hook's `input`.

What it must do: answer the MCP handshake and never list its tool; record each call
as the command hook records the same payload (same rows, same answer, transport 'mcp');
refuse another install's calls, honour the disable and drop switches; outlive any garbage on
its stdin; answer every call of a burst; hand events to the new code after an upgrade in
place. The payload's round trip through the `${field}` strings is a pure function, checked
on every recorded fixture and on generated payloads."""

from __future__ import annotations

import hashlib
import json
import os
import queue
import re
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import apsw
import pytest
from conftest import (
    FIXTURES,
    PYTHON,
    ROOT,
    capture_lock,
    count,
    fixture,
    hook_env,
    log_file,
    query,
    run_cli,
    run_hook,
    wait_for,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from claude_session.core import hook_payload, mcp_hook_input
from claude_session.runtime import mcp_transport
from claude_session.services.setup import installer
from claude_session.services.snapshots import capture, capture_control, workspace

SESSION = "560819af-56fc-4528-be0a-32a24d1aa819"  # the recorded fixtures' session
AGENT = "a026341fa5086f41e"  # the recorded SubagentStart's agent
PACKAGE = installer.package_folder()
NAMES = sorted(p.stem for p in FIXTURES.glob("*.json"))
SCRATCH = apsw.Connection(":memory:")


def read_back(arguments: dict[str, object]) -> dict[str, Any]:
    """The payload the server reads from a call, both ways: `payload_from` (into Python's
    objects) and `payload_bytes` (the JSON text the server applies, made without them) must
    read alike."""
    back = mcp_hook_input.payload_from(arguments)
    text = mcp_hook_input.payload_bytes(arguments, lambda t: mcp_transport._valid_json(SCRATCH, t))
    assert json.loads(text) == back
    return back


TOOL = installer.HOOK_TOOL  # what install's mcp_tool hooks call


# --- filling an mcp_tool hook's input as Claude Code does ------------------------------------


def as_text(value: Any) -> str:
    """One payload field as Claude Code 2.1.330 substitutes `${field}`: a string as it is, a
    number or boolean as its (JavaScript) text, an object or array as its JSON text, a
    missing or null field as ""."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):  # String(5.0) is "5" in JavaScript
        return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def filled(payload: dict[str, Any], install: str | None = None) -> dict[str, object]:
    """The `input` our installed mcp_tool hook carries, filled in from `payload`."""
    template: dict[str, str] = installer.mcp_handler(str(payload.get("hook_event_name")))["input"]
    arguments: dict[str, object] = {
        name: re.sub(r"\$\{(\w+)\}", lambda m: as_text(payload.get(m.group(1))), value)
        for name, value in template.items()
    }
    if install is not None:
        arguments[mcp_hook_input.INSTALL_ARGUMENT] = install
    return arguments


def without_empty(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload less its null and "" top-level fields: Claude Code substitutes both as "",
    as it does a missing field, so they cannot come back (they are read as missing)."""
    return {k: v for k, v in payload.items() if v is not None and v != ""}


# --- the server, as Claude Code runs it -------------------------------------------------------


class Server:
    """One MCP hook server process: JSON-RPC lines in, answers read on a thread of their own."""

    def __init__(
        self, project: Path, argv: list[str] | None = None, install: str = PACKAGE, **env: str
    ) -> None:
        self.install = install
        self.stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed on exit)
        self.process = subprocess.Popen(
            argv or installer.mcp_hook_server_argv(PYTHON),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=hook_env(project, **env),
            cwd=project,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.next_id = 1
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(b"")  # stdout closed

    def __enter__(self) -> Server:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.stderr.close()

    def write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.write(json.dumps(message).encode() + b"\n")

    def answer(self, timeout: float = 60) -> dict[str, Any]:
        """The next line the server writes, which must be one JSON-RPC message."""
        line = self.lines.get(timeout=timeout)
        assert line, f"the server closed its stdout; stderr: {self.errors()}"
        assert line.endswith(b"\n")
        message = json.loads(line)
        assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", line
        return message

    def request(self, method: str, params: Any = None, ident: Any = None) -> dict[str, Any]:
        """Send a request and read the very next line: it must be this request's answer."""
        if ident is None:
            ident, self.next_id = self.next_id, self.next_id + 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        answer = self.answer()
        assert answer["id"] == ident, answer
        return answer

    def initialize(self) -> dict[str, Any]:
        """The handshake as an MCP client opens it."""
        params = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "claude-code", "version": "2.1.330"},
        }
        result: dict[str, Any] = self.request("initialize", params)["result"]
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    def hook(
        self, payload: dict[str, Any], install: str | None = None, tool: str = TOOL
    ) -> dict[str, Any]:
        """One mcp_tool hook call, as Claude Code makes it: the tool result."""
        arguments = filled(payload, install or self.install)
        answer = self.request("tools/call", {"name": tool, "arguments": arguments})
        result: dict[str, Any] = answer["result"]
        return result

    def call(self, arguments: dict[str, object]) -> dict[str, Any]:
        """A hook call with arguments as given (already filled in)."""
        answer = self.request("tools/call", {"name": TOOL, "arguments": arguments})
        result: dict[str, Any] = answer["result"]
        return result

    def close(self, seconds: float = 10) -> int:
        """Stdin closed, as at the end of the session: the exit status."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(seconds)

    def errors(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode("utf-8", "replace")


def text_of(result: dict[str, Any]) -> str:
    """A tool result's one text block (what Claude Code takes as the hook's output)."""
    assert [block["type"] for block in result["content"]] == ["text"], result
    return str(result["content"][0]["text"])


def start_session(project: Path) -> None:
    """SessionStart, as installed: a command hook (the server carries no SessionStart)."""
    assert "SessionStart" not in installer.MCP_EVENTS
    start = fixture("SessionStart.startup", project) | {"session_id": SESSION}
    run_hook("SessionStart", start, project)


def audit(project: Path) -> list[tuple[Any, ...]]:
    return query(project, "SELECT event_type, outcome, transport FROM hook_events ORDER BY id")


# --- 1. the handshake -------------------------------------------------------------------------


def test_the_handshake_lists_no_tool_and_answers_each_request_in_turn(project: Path) -> None:
    with Server(project) as server:
        result = server.initialize()
        assert result["serverInfo"]["name"] == installer.MCP_HOOK_SERVER == "claude-session-hooks"
        assert result["protocolVersion"] == "2025-06-18"  # the client's, which it supports
        assert result["capabilities"] == {"tools": {}}
        # a version it does not know: one it does
        other = server.request("initialize", {"protocolVersion": "1999-01-01"})["result"]
        assert other["protocolVersion"] in mcp_transport.PROTOCOLS

        # the model is offered nothing: the tool is for hooks only, and named so (Claude Code
        # lists it among the tools used in a compaction's summary)
        assert server.request("tools/list")["result"] == {"tools": []}
        assert TOOL == mcp_transport.HOOK_TOOL == "called_by_claude_code_not_the_model"
        unknown = server.request("tools/call", {"name": "Bash", "arguments": {"command": "ls"}})
        assert unknown["result"]["isError"] is True
        assert "Bash" in text_of(unknown["result"])
        missing = server.request("resources/list", {})
        assert missing["error"]["code"] == -32601
        assert "result" not in missing

        # notifications get no answer: the next line is the next request's answer
        server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}})
        server.send({"jsonrpc": "2.0", "method": "no/such/notification"})
        assert server.request("ping", ident=0) == {"jsonrpc": "2.0", "id": 0, "result": {}}
        assert server.request("ping", ident="text-id")["result"] == {}
        assert server.close() == 0
        assert server.lines.get(timeout=5) == b""  # nothing more was said
        assert server.errors() == ""
    assert not (project / ".claude-session.db").exists()  # a handshake records nothing


# --- 2. the payload through `${field}` strings and back ---------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_every_recorded_payload_comes_back_from_its_filled_in_input(name: str) -> None:
    recorded = json.loads((FIXTURES / f"{name}.json").read_text())
    arguments = filled(recorded)
    assert arguments[mcp_hook_input.INSTALL_ARGUMENT] == PACKAGE
    carried = set(hook_payload.fields_of(recorded["hook_event_name"]))
    assert set(recorded) <= carried, "a field the mcp_tool hook cannot carry"
    assert read_back(arguments) == without_empty(recorded)


def recorded_streams() -> list[tuple[str, dict[str, Any]]]:
    """Every hook payload of the recorded sessions' streams, named by file and line."""
    found = []
    for path in (FIXTURES / "session-stream.jsonl", FIXTURES / "transcripts" / "hooks.jsonl"):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip():
                found.append((f"{path.name}:{number}", json.loads(line)))
    return found


STREAMS = recorded_streams()


@pytest.mark.parametrize("payload", [p for _, p in STREAMS], ids=[n for n, _ in STREAMS])
def test_every_payload_of_the_recorded_streams_comes_back(payload: dict[str, Any]) -> None:
    """The payloads of whole recorded sessions, each event as Claude Code sent it: every field
    is one the mcp_tool hook carries (a field core/hook_payload.py does not list is lost on the
    way)."""
    carried = set(hook_payload.fields_of(payload["hook_event_name"]))
    assert set(payload) - carried == set(), payload["hook_event_name"]
    assert read_back(filled(payload)) == without_empty(payload)


def test_null_and_empty_fields_of_the_recordings_are_the_only_loss() -> None:
    """What the round trip cannot keep, across all recordings: a null or "" top-level field
    (Claude Code substitutes it as "", like a missing one) comes back missing."""
    lost: dict[str, Any] = {}
    for name in NAMES:
        recorded = json.loads((FIXTURES / f"{name}.json").read_text())
        back = mcp_hook_input.payload_from(filled(recorded))
        lost |= {f"{name}.{k}": v for k, v in recorded.items() if k not in back}
    assert lost == {"PreCompact.custom_instructions": None, "SubagentStop.agent_type": ""}


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=10,
)
LOOKS_LIKE_JSON = st.sampled_from(['{"a":1}', "[1, 2]", "true", "12", "null", '"q"', "{"])
BY_KIND = {
    hook_payload.TEXT: st.text(min_size=1) | LOOKS_LIKE_JSON,
    hook_payload.JSON: st.dictionaries(st.text(), JSON_VALUES, max_size=4)
    | st.lists(JSON_VALUES, max_size=4),
    hook_payload.NUMBER: st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False),
    hook_payload.FLAG: st.booleans(),
}
PAYLOADS = st.fixed_dictionaries(
    {}, optional={name: BY_KIND[kind] for name, kind in hook_payload.FIELDS.items()}
)


@settings(max_examples=200, deadline=None)
@given(payload=PAYLOADS)
def test_generated_payloads_of_known_fields_come_back_unchanged(payload: dict[str, Any]) -> None:
    """Every field of a kind its name promises, text that looks like JSON in a text field
    included (it stays a string)."""
    back = read_back(filled(payload))
    assert back == payload
    for name, value in payload.items():
        assert type(back[name]) is type(value) or isinstance(value, float)  # 5.0 comes as 5


def test_the_known_ambiguity_of_a_json_field_holding_a_string() -> None:
    """A JSON-kind field whose value is a *string* reaches the server as that string itself:
    when it looks like a JSON object or array it comes back as one (the known ambiguity, which
    no recorded payload has); other strings stay strings."""
    payload = {
        "hook_event_name": "PostToolUse",
        "tool_response": '{"looks": "like an object"}',
        "tool_input": "[1, 2]",
        "mcp_server": "plain text",
        "effort": "{not json",
    }
    back = read_back(filled(payload))
    assert back["tool_response"] == {"looks": "like an object"}  # was a string: now an object
    assert back["tool_input"] == [1, 2]  # was a string: now a list
    assert back["mcp_server"] == "plain text"
    assert back["effort"] == "{not json"
    # while the same text in a text field stays text
    text_field = read_back(filled({"error": '{"looks": "like an object"}'}))
    assert text_field == {"error": '{"looks": "like an object"}'}


def test_unknown_fields_and_other_arguments_are_not_part_of_the_payload() -> None:
    arguments = {
        "hook_event_name": "Stop",
        "not_a_field": "x",
        mcp_hook_input.INSTALL_ARGUMENT: PACKAGE,
        "session_id": "",
        "duration_ms": "12",
    }
    assert read_back(dict(arguments)) == {
        "hook_event_name": "Stop",
        "duration_ms": 12,
    }


# --- 3. recording through the server ----------------------------------------------------------


def failure_answer(text: str) -> str:
    value = json.loads(text)
    assert value["hookSpecificOutput"]["hookEventName"] == "PostToolUseFailure"
    return str(value["hookSpecificOutput"]["additionalContext"])


def test_events_through_the_server_are_recorded_and_answered_as_by_the_command_hooks(
    tmp_path: Path,
) -> None:
    """The same session into two projects: through the MCP hook server in one, through the
    command hooks in the other. The same rows, the same answers; the audit rows say how."""
    by_server, by_command = tmp_path / "mcp", tmp_path / "command"
    steps = ["PreToolUse.Write", "PostToolUse.Write", "PostToolUseFailure.Bash"]
    answers: dict[Path, list[str]] = {}
    for project in (by_server, by_command):
        project.mkdir()
        start_session(project)
    with Server(by_server) as server:
        server.initialize()
        got = []
        for name in steps:
            if name == "PostToolUse.Write":
                (by_server / "hello.py").write_text("print('hi')\n")
            result = server.hook(fixture(name, by_server))
            assert "isError" not in result, result
            got.append(text_of(result))
        answers[by_server] = got
        assert server.close() == 0
        assert server.errors() == ""
    got = []
    for name in steps:
        if name == "PostToolUse.Write":
            (by_command / "hello.py").write_text("print('hi')\n")
        got.append(run_hook(name.split(".")[0], fixture(name, by_command), by_command).stdout)
    answers[by_command] = got

    # the answers: nothing before and after the Write, the same guidance after the failure
    assert answers[by_server][:2] == ["", ""] == [a.strip() for a in answers[by_command][:2]]
    guidance = failure_answer(answers[by_server][2])
    assert guidance == failure_answer(answers[by_command][2])
    assert "python3 -c 'import nonexistent_mod'" in guidance
    assert "No module named 'nonexistent_mod'" in guidance

    calls = "SELECT tool_use_id, agent_id, tool_name, input_summary, status FROM tool_calls"
    rows = sorted(query(by_server, calls))
    assert [(r[0], r[1], r[2], r[4]) for r in rows] == [
        ("toolu_000006", SESSION, "Write", "succeeded"),
        ("toolu_000010", SESSION, "Bash", "failed"),
    ]
    assert rows == sorted(query(by_command, calls))
    assert audit(by_server) == [
        ("SessionStart", "stored", "process"),
        ("PreToolUse", "stored", "mcp"),
        ("PostToolUse", "stored", "mcp"),
        ("PostToolUseFailure", "stored", "mcp"),
    ]
    assert {row[2] for row in audit(by_command)} == {"process"}
    # the stored payloads are the payloads Claude Code sent, field for field
    for name in steps:
        stored = query(
            by_server,
            "SELECT payload FROM events WHERE hook_event_name = ? AND tool_use_id = ?",
            (name.split(".")[0], fixture(name)["tool_use_id"]),
        )
        assert [json.loads(p) for (p,) in stored] == [fixture(name, by_server)]
    errors = "SELECT tool_use_id, count(*) FROM error_log GROUP BY tool_use_id"
    assert query(by_server, errors) == query(by_command, errors) == [("toolu_000010", 1)]


def test_a_conflict_warning_comes_back_as_the_command_hook_gives_it(tmp_path: Path) -> None:
    """A subagent holds hello.py; the main agent's Edit of it is warned, through the server
    exactly as through the command hook."""
    by_server, by_command = tmp_path / "mcp", tmp_path / "command"
    warned: dict[Path, str] = {}
    for project in (by_server, by_command):
        project.mkdir()
        start_session(project)
        (project / "hello.py").write_text("print('hi')\n")
        subagent = fixture("SubagentStart", project)
        by_agent = [
            fixture(name, project) | {"agent_id": AGENT, "agent_type": "general-purpose"}
            for name in ("PreToolUse.Edit", "PostToolUse.Edit")
        ]
        mine = fixture("PreToolUse.Edit", project) | {"tool_use_id": "toolu_main_edit"}
        if project == by_server:
            with Server(project) as server:
                server.initialize()
                for payload in (subagent, *by_agent):
                    assert text_of(server.hook(payload)) == ""
                warned[project] = text_of(server.hook(mine))
                assert server.close() == 0
        else:
            for payload in (subagent, *by_agent):
                run_hook(payload["hook_event_name"], payload, project)
            warned[project] = run_hook("PreToolUse", mine, project).stdout
    assert warned[by_server], "no warning through the server"
    assert json.loads(warned[by_server]) == json.loads(warned[by_command])
    assert AGENT in warned[by_server] and "hello.py" in warned[by_server]
    claims = "SELECT agent_id, file_path, released_at IS NULL FROM file_claims ORDER BY id"
    assert query(by_server, claims) == query(by_command, claims) == [(AGENT, "hello.py", 1)]


def test_the_hooks_of_an_earlier_install_still_call_the_tool_by_its_old_name(
    project: Path,
) -> None:
    """Hooks written before the tool was renamed call `hook`: served the same until `install`
    writes them again (an upgrade in place keeps the settings as they were)."""
    start_session(project)
    with Server(project) as server:
        server.initialize()
        for name in ("PreToolUse.Write", "PostToolUse.Write"):
            result = server.hook(fixture(name, project), tool="hook")
            assert "isError" not in result, result
        other = server.hook(fixture("PreToolUse.Bash", project), tool="hooks")
        assert other["isError"] is True and "'hooks'" in text_of(other)
        assert server.close() == 0
    assert audit(project) == [
        ("SessionStart", "stored", "process"),
        ("PreToolUse", "stored", "mcp"),
        ("PostToolUse", "stored", "mcp"),
    ]


# --- 4. refusals and switches -----------------------------------------------------------------


def test_a_call_written_by_another_install_is_refused_and_logged(project: Path) -> None:
    start_session(project)
    elsewhere = "/opt/another/site-packages/claude_session"
    with Server(project) as server:
        server.initialize()
        result = server.hook(fixture("PreToolUse.Write", project), install=elsewhere)
        assert result["isError"] is True
        assert "another install" in text_of(result) and elsewhere in text_of(result)
        # an argument-less call (no install named) is refused the same way
        bare = server.request("tools/call", {"name": TOOL, "arguments": {}})["result"]
        assert bare["isError"] is True
        assert server.close() == 0
    assert query(project, "SELECT hook_event_name FROM events") == [("SessionStart",)]
    assert count(project, "hook_events") == 1
    logged = log_file(project).read_text()
    assert "MCP hook server" in logged and elsewhere in logged and "another install" in logged


def test_disabled_answers_nothing_and_records_nothing(project: Path) -> None:
    start_session(project)
    with Server(project, CLAUDE_SESSION_DISABLED="1") as server:
        server.initialize()
        for name in ("PreToolUse.Write", "PostToolUseFailure.Bash"):
            result = server.hook(fixture(name, project))
            assert result == {"content": [{"type": "text", "text": ""}]}
        assert server.close() == 0
    assert count(project, "events") == 1
    assert count(project, "hook_events") == 1


def test_dropped_events_are_not_recorded_and_the_others_are(project: Path) -> None:
    start_session(project)
    with Server(project, CLAUDE_SESSION_DROP_EVENTS="PreToolUse") as server:
        server.initialize()
        assert text_of(server.hook(fixture("PreToolUse.Write", project))) == ""
        assert text_of(server.hook(fixture("PostToolUse.Write", project))) == ""
        assert server.close() == 0
    assert query(project, "SELECT hook_event_name FROM events ORDER BY id") == [
        ("SessionStart",),
        ("PostToolUse",),
    ]
    assert audit(project)[1:] == [("PostToolUse", "stored", "mcp")]


# --- 5. bad input -----------------------------------------------------------------------------

GARBAGE = [
    b"not json at all\n",
    b"[1, 2, 3]\n",
    b'[{"jsonrpc": "2.0", "id": 90, "method": "ping"}]\n',  # a batch: not served
    b'"a string"\n',
    b"\n",
    b"   \n",
    b"{}\n",
    b"\xff\xfe\x00\x9f garbage\n",
    b'{"jsonrpc": "2.0", "id": 91, "method": "ping", "x": "\xff"}\n',  # invalid UTF-8
    b'{"jsonrpc": "2.0", "id": 92, "method": "ping"',  # cut off: the newline comes next
    b"\n",
    b'{"jsonrpc": "2.0", "id": 93, "method": "tools/call", "params": []}\n',
    b'{"jsonrpc": "2.0", "id": 94, "method": "tools/call", "params": {"name": "hook",'
    b' "arguments": "not an object"}}\n',
]
TOO_DEEP = b"[" * 100_000 + b"]" * 100_000 + b"\n"  # deeper than Python's json parser goes


def test_garbage_on_stdin_never_stops_the_server(project: Path) -> None:
    start_session(project)
    with Server(project) as server:
        server.initialize()
        for line in GARBAGE:
            server.write(line)
        # the garbage with an id and a method is answered (refused, never a crash); hook
        # calls are answered by the workers, so maybe after the ping sent next
        server.send({"jsonrpc": "2.0", "id": "after", "method": "ping"})
        answered: dict[Any, dict[str, Any]] = {}
        while set(answered) != {93, 94, "after"}:
            message = server.answer()
            assert message["id"] in (93, 94, "after"), message
            answered[message["id"]] = message
        assert answered[93]["result"]["isError"] is True
        assert answered[94]["result"]["isError"] is True  # no install named: refused
        # and a real call still works
        result = server.hook(fixture("PostToolUseFailure.Bash", project))
        assert "nonexistent_mod" in failure_answer(text_of(result))
        assert server.close() == 0
        assert "Traceback" not in server.errors()
    assert audit(project)[1:] == [("PostToolUseFailure", "stored", "mcp")]


def test_a_line_nested_too_deep_does_not_stop_the_server(project: Path) -> None:
    """JSON deeper than Python's parser goes (RecursionError, not ValueError) is garbage like
    any other: the server must go on answering."""
    with Server(project) as server:
        server.initialize()
        server.write(TOO_DEEP)
        assert server.request("ping", ident="after")["result"] == {}
        assert server.close() == 0
        assert "Traceback" not in server.errors()


def capped_server_argv(tmp_path: Path, cap: int) -> list[str]:
    """The server with a smaller line cap (MAX_LINE_BYTES is read when each line is): a
    script that sets it, then serves as mcp_hook_server.py does."""
    script = tmp_path / "capped_mcp_hook_server.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from claude_session.runtime import mcp_transport\n"
        f"mcp_transport.MAX_LINE_BYTES = {cap}\n"
        "mcp_transport.main()\n"
    )
    return [PYTHON, "-I", str(script)]


def test_a_line_over_the_cap_is_skipped_and_logged(project: Path, tmp_path: Path) -> None:
    start_session(project)
    cap = 4096
    with Server(project, argv=capped_server_argv(tmp_path, cap)) as server:
        server.initialize()
        long = fixture("PreToolUse.Write", project)
        long["tool_input"]["content"] = "x" * (3 * cap)
        arguments = filled(long, PACKAGE)
        call = {"jsonrpc": "2.0", "id": 50, "method": "tools/call"}
        call["params"] = {"name": TOOL, "arguments": arguments}
        server.send(call)
        # no answer for it: the next line answers the ping
        assert server.request("ping", ident=51)["result"] == {}
        result = server.hook(fixture("PostToolUseFailure.Bash", project))
        assert "nonexistent_mod" in failure_answer(text_of(result))
        assert server.close() == 0
    assert [r[0] for r in audit(project)] == ["SessionStart", "PostToolUseFailure"]
    assert f"an MCP message of {cap + 1} bytes was not read" in log_file(project).read_text()


def test_a_two_megabyte_payload_is_applied(project: Path) -> None:
    """Under the real 64 MB cap, a big call is an ordinary one."""
    assert mcp_transport.MAX_LINE_BYTES == 64 * 1024 * 1024
    start_session(project)
    big = fixture("PostToolUse.Write", project)
    content = "line of a big file\n" * (2 * 1024 * 1024 // 19)
    big["tool_input"]["content"] = big["tool_response"]["content"] = content
    with Server(project) as server:
        server.initialize()
        assert text_of(server.hook(big)) == ""
        assert server.close() == 0
    assert audit(project)[1:] == [("PostToolUse", "stored", "mcp")]
    assert query(project, "SELECT tool_name, status FROM tool_calls") == [("Write", "succeeded")]


def test_hostile_text_the_command_hook_records_is_recorded_through_the_server_too(
    tmp_path: Path,
) -> None:
    """Payloads Claude Code can send: an error cut in the middle of an emoji (a lone UTF-16
    surrogate, which JSON carries as an escape) and a tool input nested deeper than Python's
    json parser goes. The command hook records both; so must the server."""
    depth = 3000  # json.dumps cannot even write it: the JSON text is spliced in

    def deep_tool_input(project: Path) -> str:
        given = fixture("PreToolUse.Bash", project)["tool_input"]
        return json.dumps(given)[:-1] + ', "nested": ' + "[" * depth + "]" * depth + "}"

    by_server, by_command = tmp_path / "mcp", tmp_path / "command"
    for project in (by_server, by_command):
        project.mkdir()
        start_session(project)
    lone = fixture("PostToolUseFailure.Bash", by_command)
    lone["error"] = "Exit code 1\ncut mid emoji \ud83d"
    run_hook("PostToolUseFailure", lone, by_command)  # as JSON.stringify writes it: \ud83d
    deep = fixture("PreToolUse.Bash", by_command) | {"tool_use_id": "toolu_deep"}
    deep["tool_input"] = "__DEEP__"
    raw = json.dumps(deep).replace('"__DEEP__"', deep_tool_input(by_command))
    run_hook("PreToolUse", raw, by_command)
    with Server(by_server) as server:
        server.initialize()
        lone = fixture("PostToolUseFailure.Bash", by_server)
        lone["error"] = "Exit code 1\ncut mid emoji \ud83d"
        server.hook(lone)
        deep = fixture("PreToolUse.Bash", by_server) | {"tool_use_id": "toolu_deep"}
        arguments = filled(deep, PACKAGE) | {"tool_input": deep_tool_input(by_server)}
        server.call(arguments)
        assert server.close() == 0
    for project in (by_server, by_command):  # a hook that found the database busy spooled
        assert run_cli(project, "ingest").returncode == 0
    recorded = "SELECT hook_event_name FROM events ORDER BY id"
    expected = [("SessionStart",), ("PostToolUseFailure",), ("PreToolUse",)]
    assert query(by_command, recorded) == expected
    assert query(by_server, recorded) == expected
    calls = "SELECT tool_use_id, status FROM tool_calls WHERE tool_use_id = 'toolu_000010'"
    assert query(by_server, calls) == query(by_command, calls) == [("toolu_000010", "failed")]


# --- 6. many calls at once --------------------------------------------------------------------


def test_fifty_calls_sent_at_once_are_all_answered_and_recorded(project: Path) -> None:
    start_session(project)
    calls = 50
    with Server(project) as server:
        server.initialize()
        batch = b""
        for n in range(calls):
            payload = fixture("PreToolUse.Bash", project) | {"tool_use_id": f"toolu_burst{n:02}"}
            payload["tool_input"] = {"command": f"echo {n}", "description": f"step {n}"}
            message = {"jsonrpc": "2.0", "id": 1000 + n, "method": "tools/call"}
            message["params"] = {"name": TOOL, "arguments": filled(payload, PACKAGE)}
            batch += json.dumps(message).encode() + b"\n"
        server.write(batch)  # back to back, no answer awaited
        answers = [server.answer() for _ in range(calls)]
        assert sorted(a["id"] for a in answers) == [1000 + n for n in range(calls)]
        assert all(a["result"] == {"content": [{"type": "text", "text": ""}]} for a in answers)
        started = time.monotonic()
        assert server.close(seconds=10) == 0
        assert time.monotonic() - started < 5
        assert server.errors() == ""
    assert count(project, "events", "hook_event_name = 'PreToolUse'") == calls
    assert count(project, "hook_events", "transport = 'mcp' AND outcome = 'stored'") == calls
    assert query(
        project, "SELECT count(DISTINCT tool_use_id), min(status), max(status) FROM tool_calls"
    ) == [(calls, "running", "running")]


def test_a_backlog_of_frames_larger_than_one_capture_gets_exact_snapshots(project: Path) -> None:
    """Snapshots on: many tool calls answered while no capture may run (the test holds its
    lock), then one capture process catches up in batches (services/snapshots/capture.py), and every
    frame's snapshot is the work tree as it was right after its own tool, byte for byte."""
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / "keep.txt").write_text("kept\n")
    start_session(project)
    assert wait_for(lambda: count(project, "vcs_tags", "status = 'pending'") == 0, 30)
    calls = capture.CAPTURE_BATCH + 44
    expected: dict[str, dict[str, bytes]] = {}
    lock = capture_lock(project)
    assert lock is not None
    try:
        with Server(project) as server:
            server.initialize()
            for n in range(calls):
                path = project / f"src/f{n % 7}.py"
                write = {"file_path": str(path), "content": f"N = {n}\n"}
                pre = fixture("PreToolUse.Write", project) | {"session_id": SESSION}
                pre |= {"tool_use_id": f"toolu_backlog{n:03}", "tool_input": write}
                assert server.hook(pre)["content"][0]["text"] == ""
                path.parent.mkdir(exist_ok=True)
                path.write_text(write["content"])
                post = (
                    fixture("PostToolUse.Write", project) | pre | {"hook_event_name": "PostToolUse"}
                )
                server.hook(post)
                expected[pre["tool_use_id"]] = tree_now(project)
            assert server.close() == 0
        assert count(project, "vcs_tags", "status = 'pending'") >= calls
    finally:
        os.close(lock)
    capture_control.ensure_running(str(project))
    assert wait_for(lambda: count(project, "vcs_tags", "status = 'pending'") == 0, 120)
    rows = query(
        project,
        "SELECT t.tool_use_id, v.snapshot_commit, v.status, coalesce(v.note, '') FROM tool_calls t"
        " JOIN vcs_tags v ON v.session_id = t.session_id AND v.frame_no = t.frame_no"
        " WHERE t.tool_use_id LIKE 'toolu_backlog%'",
    )
    assert len(rows) == calls
    env = {**os.environ, "GIT_DIR": workspace.snapshot_dir(str(project))}
    for use, commit, status, note in rows:
        assert status == "captured" and "may hold" not in note, (use, note)
        listing = subprocess.run(
            ["git", "ls-tree", "-r", "-z", commit], env=env, capture_output=True, check=True
        ).stdout
        blobs = {}
        for line in filter(None, listing.split(b"\0")):
            meta, _, name = line.partition(b"\t")
            blobs[name.decode()] = meta.split()[2].decode()
        assert blobs == expected[use], use


def tree_now(project: Path) -> dict[str, str]:
    """Each file of the work tree (ours and .git left out) -> its git blob id."""
    out = {}
    for path in sorted(project.rglob("*")):
        name = path.relative_to(project).as_posix()
        if path.is_file() and not name.startswith((".git", ".claude-session")):
            data = path.read_bytes()
            out[name] = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    return out


def test_a_closed_stdin_ends_an_idle_server_at_once(project: Path) -> None:
    with Server(project) as server:
        server.initialize()
        started = time.monotonic()
        assert server.close(seconds=10) == 0
        assert time.monotonic() - started < 3


# --- 7. an upgrade in place -------------------------------------------------------------------


def test_after_an_upgrade_in_place_events_go_to_a_hook_process_of_the_new_code(
    project: Path, tmp_path: Path
) -> None:
    """An install of its own (a copy of the package), so that its hook runtime's time can
    change under a running server without touching this checkout."""
    install = tmp_path / "install" / "claude_session"
    shutil.copytree(Path(PACKAGE), install, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    hookrt = install / "runtime" / "hookrt.py"

    def fingerprint() -> str:
        code = "from claude_session.runtime import relay; print(relay.fingerprint())"
        done = subprocess.run(
            [
                PYTHON,
                "-I",
                "-S",
                "-c",
                f"import sys; sys.path.insert(0, {str(install.parent)!r}); {code}",
            ],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        return done.stdout.strip()

    start_session(project)
    argv = [PYTHON, "-I", "-S", str(install / "mcp_hook_server.py")]
    with Server(project, argv=argv, install=str(install)) as server:
        server.initialize()
        assert text_of(server.hook(fixture("PreToolUse.Write", project))) == ""
        before = fingerprint()
        assert str(install) in before
        written = hookrt.stat()
        os.utime(hookrt, ns=(written.st_atime_ns, written.st_mtime_ns + 5_000_000_000))
        assert fingerprint() != before
        # this install's own calls only: the checkout's are refused as before
        assert server.hook(fixture("PostToolUse.Write", project), install=PACKAGE)["isError"]
        result = server.hook(fixture("PostToolUseFailure.Bash", project))
        assert "nonexistent_mod" in failure_answer(text_of(result))
        assert server.close() == 0
        assert "Traceback" not in server.errors()
    assert audit(project) == [
        ("SessionStart", "stored", "process"),
        ("PreToolUse", "stored", "mcp"),
        ("PostToolUseFailure", "stored", "process"),  # by the hook process of the new code
    ]
    assert count(project, "events") == 3


def test_sessions_hooking_at_once_have_each_event_stored_once_and_answered(
    project: Path,
) -> None:
    """Six sessions' servers on one project, each sending as fast as it is answered: their
    events are stored in group commits (core/group_commit.py), each once, none left posted,
    and each failure answered with its own session's guidance."""
    from claude_session.core import group_commit

    sessions = [f"group-{n}" for n in range(6)]
    for session in sessions:
        start = fixture("SessionStart.startup", project) | {"session_id": session}
        run_hook("SessionStart", start, project)
    answers: dict[str, list[str]] = {}
    failures: list[BaseException] = []

    def work(session: str) -> None:
        got: list[str] = []
        try:
            with Server(project) as server:
                server.initialize()
                for n in range(8):
                    tool = f"{session}-{n}"
                    for name in ("PreToolUse.Bash", "PostToolUseFailure.Bash"):
                        payload = fixture(name, project) | {"session_id": session}
                        payload["tool_use_id"] = tool
                        payload["tool_input"] = {"command": f"python3 -c 'import {session[-1]}x'"}
                        result = server.hook(payload)
                        assert "isError" not in result, result
                        got.append(text_of(result))
                assert server.close() == 0
                assert server.errors() == ""
        except BaseException as exc:  # reported below, in the test's thread
            failures.append(exc)
        answers[session] = got

    threads = [threading.Thread(target=work, args=(s,)) for s in sessions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not failures, failures
    per_session = query(
        project,
        "SELECT e.session_id, count(*), count(DISTINCT e.id), min(h.outcome), max(h.outcome)"
        " FROM events e JOIN hook_events h ON h.event_id = e.id"
        " WHERE e.hook_event_name != 'SessionStart' GROUP BY e.session_id ORDER BY 1",
    )
    assert per_session == [(s, 16, 16, "stored", "stored") for s in sessions]
    assert os.listdir(group_commit.inbox_dir(str(project))) == []
    for session in sessions:
        said = [a for a in answers[session] if a]
        assert said, session
        assert all(f"import {session[-1]}x" in a for a in said), said
    ladders = query(
        project, "SELECT session_id, count(*) FROM error_log GROUP BY session_id ORDER BY 1"
    )
    assert ladders == [(s, 8) for s in sessions]
