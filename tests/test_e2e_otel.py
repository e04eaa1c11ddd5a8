"""OpenTelemetry export end to end: the real Claude Code CLI 2.1.330 runs sessions with a
subagent and a failing command through our hooks (installed as a user installs them), the
daemon those hooks start sends each session to a real backend, Arize Phoenix,
started by the test (tests/otel_backend.py), and the traces are read back through Phoenix's
own API: one trace a session, the span tree, the attributes, tokens and cost as our database
has them. The backend is stopped between two sessions and started again: the second one
arrives once it is back, nothing is lost, nothing is sent twice."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import CLI, query, run_cli, wait_for
from fake_api import FakeAnthropic, text, tool
from otel_backend import OtelBackend
from test_e2e_claude import claude_binary
from test_e2e_transport import Session, debug_lines, install_mcp, new_home, run_session

from claude_session.core import db
from claude_session.core.paths import db_path
from claude_session.services.telemetry import otel_spans

pytestmark = pytest.mark.e2e


def send_to(project: Path, home: Path, backend: OtelBackend) -> None:
    """`claude-session config --set otel_endpoint=...`, as a user turns the export on (and a
    short delay: the test's sessions are seconds long)."""
    for pair in (f"otel_endpoint={backend.otlp_http_endpoint}", "otel_export_delay_seconds=1"):
        done = run_cli(project, "config", "--set", pair, HOME=str(home))
        assert done.returncode == 0, done.stderr


def built(project: Path, session: str) -> list[otel_spans.Span]:
    """The spans our rows make for the session now, as the daemon builds them."""
    conn = db.connect(db_path(str(project)), create=False)
    try:
        return otel_spans.session_spans(conn, session, content=False)
    finally:
        conn.close()


def spans_of(backend: OtelBackend, session: str) -> list[dict[str, Any]]:
    """Our spans of the session (Claude Code's own spans, when on, carry session.id too)."""
    return [
        s
        for s in backend.spans()
        if s["attributes"].get("session.id") == session and not s["name"].startswith("claude_code.")
    ]


def export_state(project: Path, home: Path) -> dict[str, Any]:
    done = run_cli(project, "status", "--json", HOME=str(home))
    assert done.returncode == 0, done.stderr
    shown: dict[str, Any] = json.loads(done.stdout)["otel"]
    return shown


class Second:
    """A second session: one Write, then a failing Bash, then done."""

    def __init__(self, project: Path) -> None:
        self.project = project

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        done = sum(
            1
            for m in body.get("messages") or []
            if isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"
        )
        if done == 0:
            return [tool("Write", file_path=str(self.project / "two.txt"), content="2\n")]
        if done == 1:
            return [tool("Bash", command="false", description="fail on purpose")]
        return [text("Second session done.")]


@pytest.mark.usefixtures("reap_daemons")
def test_real_sessions_arrive_in_a_real_backend_outage_included(project: Path) -> None:
    binary = claude_binary()
    home = new_home(project)
    install_mcp(project, home, binary)
    with OtelBackend(project.parent / "backend") as backend:
        send_to(project, home, backend)
        # 1. A session with a subagent and a failing command, the backend up.
        model = Session(project)
        with FakeAnthropic(model) as api:
            first = run_session(binary, project, home, api, "TASK-OTEL: make hello.py")
        assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
        one = json.loads(first.stdout)["session_id"]
        assert backend.wait_for_spans(
            lambda spans: any(s["name"] == "claude_session.session" for s in spans), 90
        ), export_state(project, home)

        # 2. The backend goes down; a second session ends while it is down.
        backend.stop()
        with FakeAnthropic(Second(project)) as api:
            second = run_session(binary, project, home, api, "TASK-OTEL-2: write two.txt")
        assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-2000:]
        two = json.loads(second.stdout)["session_id"]
        assert wait_for(lambda: export_state(project, home).get("last_error"), 90)
        assert export_state(project, home)["failures"] >= 1

        # 3. Back up: the second session arrives, the first is not sent again.
        backend.start()
        assert backend.wait_for_spans(
            lambda spans: any(
                s["name"] == "claude_session.session" and s["attributes"]["session.id"] == two
                for s in spans
            ),
            180,
        ), export_state(project, home)
        state = export_state(project, home)
        assert state["last_error"] is None and state["failures"] == 0

        for session in (one, two):
            check_trace(project, backend, session)
        total = sum(len(built(project, s)) for s in (one, two))
        assert state["spans_sent"] == total  # each span sent once, the outage included
        stored = spans_of(backend, one) + spans_of(backend, two)
        assert len(stored) == len({s["span_id"] for s in stored}) == total


def check_trace(project: Path, backend: OtelBackend, session: str) -> None:
    """The session's spans in the backend are the ones our rows make: one trace, the tree,
    the tool calls with their status, the subagent under its Agent call, the tokens."""
    stored = {s["span_id"]: s for s in spans_of(backend, session)}
    expected = built(project, session)
    assert len(stored) == len(expected)
    assert {s["trace_id"] for s in stored.values()} == {f"{otel_spans.trace_id(session):032x}"}
    for span in expected:
        got = stored[f"{span.span_id:016x}"]
        assert got["name"] == span.name
        assert got["parent_id"] == (None if span.parent_id is None else f"{span.parent_id:016x}")
        assert got["status_code"] == ("ERROR" if span.error else "OK")
        for key, value in span.attributes.items():
            if isinstance(value, float):
                assert got["attributes"][key] == pytest.approx(value), key
            else:
                assert got["attributes"][key] == value, key
    calls = query(
        project,
        "SELECT tool_use_id, tool_name, status FROM tool_calls WHERE session_id = ?",
        (session,),
    )
    by_call = {
        s["attributes"]["gen_ai.tool.call.id"]: s
        for s in stored.values()
        if "gen_ai.tool.call.id" in s["attributes"]
    }
    assert {c[0] for c in calls} == set(by_call)
    for tool_use_id, name, status in calls:
        assert by_call[tool_use_id]["name"] == f"execute_tool {name}"
        assert by_call[tool_use_id]["attributes"]["claude_session.tool.status"] == status
    assert any(c[2] == "failed" for c in calls)
    agents = [s for s in stored.values() if s["name"].startswith("invoke_agent ")]
    for agent in agents:  # under the Agent call that launched it
        assert stored[agent["parent_id"]]["name"] == "execute_tool Agent"
    tokens = query(
        project,
        "SELECT sum(input_tokens), sum(output_tokens) FROM message_usage WHERE session_id = ?",
        (session,),
    )[0]
    [root] = [s for s in stored.values() if s["parent_id"] is None]
    assert root["attributes"]["gen_ai.usage.input_tokens"] == tokens[0] > 0
    assert root["attributes"]["gen_ai.usage.output_tokens"] == tokens[1] > 0


CLAUDE_TRACES = {  # what a team sets for Claude Code's own traces (docs/guides/opentelemetry.md)
    "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
    "CLAUDE_CODE_ENHANCED_TELEMETRY_BETA": "1",
    "OTEL_TRACES_EXPORTER": "otlp",
    "OTEL_METRICS_EXPORTER": "none",
    "OTEL_LOGS_EXPORTER": "none",
    "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
    # Claude Code passes TRACEPARENT to its hooks with its traces on against its own API; with
    # another ANTHROPIC_BASE_URL (a gateway, this test's scripted API) only when asked to.
    "CLAUDE_CODE_PROPAGATE_TRACEPARENT": "1",
}


@pytest.mark.usefixtures("reap_daemons")
def test_with_claude_codes_traces_on_our_spans_hang_under_its_own(project: Path) -> None:
    """Command hooks see TRACEPARENT when Claude Code's traces are on: our turn goes under
    its `claude_code.interaction` span, our tool calls under its spans of the same calls,
    in its trace; our session span links to them. Both arrive in the same backend."""
    binary = claude_binary()
    home = new_home(project)
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_PROJECT_DIR"} | {"HOME": str(home)}
    done = subprocess.run(
        [CLI, "--project", str(project), "install", "--transport", "command"],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with OtelBackend(project.parent / "backend") as backend:
        send_to(project, home, backend)
        traces = CLAUDE_TRACES | {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": backend.otlp_http_endpoint}
        model = Session(project)
        with FakeAnthropic(model) as api:
            # The tests' CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC turns its telemetry off.
            quiet = ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",)
            prompt = "TASK-JOIN: make hello.py"
            first = run_session(binary, project, home, api, prompt, drop=quiet, **traces)
        assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
        session = json.loads(first.stdout)["session_id"]
        assert backend.wait_for_spans(
            lambda spans: any(s["name"] == "claude_session.session" for s in spans), 90
        ), export_state(project, home)
        every = {s["span_id"]: s for s in backend.spans()}
    # Claude Code's spans carry session.id too (the join): ours are the ids our rows make.
    made = {f"{span.span_id:016x}" for span in built(project, session)}
    ours = {k: s for k, s in every.items() if k in made}
    assert len(ours) == len(made)
    theirs = {k: s for k, s in every.items() if k not in ours}
    told = debug_lines(project, "[3P telemetry]")
    assert any(s["name"] == "claude_code.interaction" for s in theirs.values()), told
    [turn] = [s for s in ours.values() if s["name"] == "turn 1"]
    parent = theirs[turn["parent_id"]]
    assert parent["name"] == "claude_code.interaction"
    assert parent["trace_id"] == turn["trace_id"]
    tools = [s for s in ours.values() if s["name"].startswith("execute_tool ")]
    under = [s for s in tools if s["parent_id"] in theirs]
    assert under, [(s["name"], s["parent_id"]) for s in tools]
    for call in tools:
        assert call["trace_id"] == turn["trace_id"]
    [root] = [s for s in ours.values() if s["name"] == "claude_session.session"]
    assert root["trace_id"] != turn["trace_id"]
