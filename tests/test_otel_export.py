"""Sessions as OpenTelemetry traces (services/telemetry/otel_spans.py,
services/telemetry/otel_export.py): the span tree a session makes, what content goes out (nothing
typed or run, unless asked, and then redacted), and the export itself through the SDK's real
OTLP/HTTP exporter to a receiver on loopback (tests/otlp_receiver.py) that decodes the wire format:
every span once, nothing lost while the backend is down, nothing sent twice after it returns, the
lag and the last error told, a cloned configuration never obeyed, and the daemon
sending on its own. The same against a real backend (Arize Phoenix): tests/test_otel_backend.py.

The session is tests/test_cost_surfaces.py's (a Write, an Agent call whose subagent writes,
transcripts with Claude Code's cost figures), plus a failing Bash whose error holds a secret
and a compaction."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import apsw
import pytest
from conftest import CLI, hook_env, run_cli, wait_for
from inproc import Recorder
from otel_backend import OtelBackend
from otlp_receiver import Receiver
from test_cost_surfaces import SECRET, session  # noqa: F401 (the session fixture)
from test_transcripts import AGENT, SESSION, T0

from claude_session.services.telemetry import otel_export, otel_spans

FAILED_BASH = "toolu_bash_fail"
NOW = T0 + 3600  # long after the session: every span is due


@pytest.fixture
def recorded(session: Recorder) -> Recorder:  # noqa: F811 (the fixture it extends)
    rec = session
    rec.now = T0 + 10.2
    bash = {"tool_name": "Bash", "tool_use_id": FAILED_BASH, "session_id": SESSION}
    command = {"command": f"deploy --token {SECRET}", "description": "deploy"}
    rec.send(bash | {"hook_event_name": "PreToolUse", "tool_input": command, "cwd": rec.root})
    rec.now = T0 + 10.4
    failure = {"hook_event_name": "PostToolUseFailure", "tool_input": command, "cwd": rec.root}
    rec.send(bash | failure | {"error": f"Exit code 1\nauth failed for {SECRET}"})
    rec.now = T0 + 10.6
    compact = {"hook_event_name": "PreCompact", "trigger": "manual", "session_id": SESSION}
    rec.send(compact | {"custom_instructions": "", "cwd": rec.root})
    rec.now = T0 + 12
    rec.send({"hook_event_name": "SessionEnd", "reason": "other", "session_id": SESSION})
    return rec


def by_key(spans: list[otel_spans.Span]) -> dict[str, otel_spans.Span]:
    return {s.key: s for s in spans}


def test_a_session_is_one_trace_with_its_turns_tools_and_subagent_nested(
    recorded: Recorder,
) -> None:
    spans = otel_spans.session_spans(recorded.conn, SESSION, content=False)
    found = by_key(spans)
    assert set(found) == {
        "session",
        "turn:1",
        "tool:toolu_w1",
        "tool:toolu_agent1",
        f"agent:{AGENT}",
        "tool:toolu_sw",
        f"tool:{FAILED_BASH}",
    }
    assert {s.trace_id for s in spans} == {otel_spans.trace_id(SESSION)}
    session_span = found["session"]
    assert session_span.parent_id is None and spans[0] is session_span
    parent = {key: s.parent_id for key, s in found.items()}
    assert parent["turn:1"] == session_span.span_id
    assert parent["tool:toolu_w1"] == found["turn:1"].span_id
    assert parent[f"tool:{FAILED_BASH}"] == found["turn:1"].span_id
    assert parent[f"agent:{AGENT}"] == found["tool:toolu_agent1"].span_id  # under its launch
    assert parent["tool:toolu_sw"] == found[f"agent:{AGENT}"].span_id
    assert found[f"agent:{AGENT}"].name == "invoke_agent general-purpose"
    assert found["tool:toolu_sw"].name == "execute_tool Write"
    assert found["tool:toolu_sw"].attributes["gen_ai.tool.call.id"] == "toolu_sw"
    # Times are the rows' own.
    assert found["tool:toolu_w1"].start == T0 + 3 and found["tool:toolu_w1"].end == T0 + 4
    assert session_span.start == T0 and session_span.end == T0 + 12
    # The failure: an error status, and its step on the ladder as an event.
    bash = found[f"tool:{FAILED_BASH}"]
    assert bash.error and bash.attributes["claude_session.tool.status"] == "failed"
    [failure] = bash.events
    assert failure.name == "claude_session.failure"
    assert failure.attributes["claude_session.failure.attempt"] == 1
    assert failure.attributes["claude_session.failure.resolution"] == "abandoned"  # at the end
    assert [e.name for e in session_span.events] == ["claude_session.compaction"]
    # Ids come from the rows: built again, the same.
    again = otel_spans.session_spans(recorded.conn, SESSION, content=False)
    assert [(s.key, s.span_id, s.parent_id) for s in again] == [
        (s.key, s.span_id, s.parent_id) for s in spans
    ]


def test_tokens_and_cost_are_the_stores_figures(recorded: Recorder) -> None:
    found = by_key(otel_spans.session_spans(recorded.conn, SESSION, content=False))
    rows = recorded.rows(
        "SELECT agent_id, sum(input_tokens), sum(output_tokens), sum(cost_usd)"
        " FROM message_usage WHERE session_id = ? GROUP BY agent_id",
        (SESSION,),
    )
    total_in = sum(r[1] for r in rows)
    total_cost = sum(r[3] for r in rows)
    session_attrs = found["session"].attributes
    assert session_attrs["gen_ai.usage.input_tokens"] == total_in > 0
    assert session_attrs["claude_session.cost_usd"] == pytest.approx(total_cost, abs=1e-5)
    [agent] = [r for r in rows if r[0] == AGENT]
    agent_attrs = found[f"agent:{AGENT}"].attributes
    assert agent_attrs["gen_ai.usage.output_tokens"] == agent[2] > 0
    assert agent_attrs["claude_session.cost_usd"] == pytest.approx(agent[3], abs=1e-5)
    turn_in = recorded.rows(
        "SELECT sum(input_tokens) FROM message_usage m JOIN turns t ON t.id = m.turn_id"
        " WHERE t.session_id = ? AND t.turn_no = 1",
        (SESSION,),
    )[0][0]
    assert found["turn:1"].attributes["gen_ai.usage.input_tokens"] == turn_in > 0


def test_content_is_left_out_unless_asked_and_redacted_when_it_is(recorded: Recorder) -> None:
    def everything(spans: list[otel_spans.Span]) -> str:
        parts = []
        for s in spans:
            parts.append(json.dumps(s.attributes))
            parts += [json.dumps(e.attributes) for e in s.events]
        return "\n".join(parts)

    without = everything(otel_spans.session_spans(recorded.conn, SESSION, content=False))
    for typed in ("make it configurable", "deploy --token", "src/config.py", "auth failed"):
        assert typed not in without
    with_content = everything(otel_spans.session_spans(recorded.conn, SESSION, content=True))
    assert "make it configurable" in with_content and "deploy --token" in with_content
    assert "auth failed" in with_content
    assert SECRET not in with_content and SECRET[:20] not in with_content


def target(receiver: Receiver | Drip, **more: Any) -> otel_export.Target:
    values: dict[str, object] = {"otel_endpoint": receiver.endpoint} | more
    where = otel_export.target(values, environ={})
    assert where is not None
    return where


def export(rec: Recorder, where: otel_export.Target, now: float) -> otel_export.Pass:
    send = otel_export.sender(rec.root, where)
    return otel_export.export_pass(rec.conn, where, send, now, idle_seconds=3600)


def test_every_span_reaches_the_backend_once_with_ids_tree_and_resource(
    recorded: Recorder,
) -> None:
    receiver = Receiver()
    try:
        where = target(receiver, otel_headers="x-team-key=${TEAM_KEY}")
        assert where.endpoint == receiver.endpoint + "/v1/traces"
        done = export(recorded, where, NOW)
        assert done.error is None and done.sent == 7
        assert export(recorded, where, NOW + 60).sent == 0  # nothing twice
    finally:
        receiver.stop()
    spans = otel_spans.session_spans(recorded.conn, SESSION, content=False)
    got = receiver.by_id()
    assert len(receiver.spans) == len(got) == len(spans)
    for span in spans:
        arrived = got[f"{span.span_id:016x}"]
        assert arrived.trace_id == f"{span.trace_id:032x}"
        assert arrived.parent_id == (None if span.parent_id is None else f"{span.parent_id:016x}")
        assert arrived.name == span.name
        assert arrived.start_ns == round(span.start * 1e6) * 1000
        assert arrived.attributes == span.attributes
        assert arrived.status_code == (2 if span.error else 1)  # ERROR, OK
        assert arrived.resource["service.name"] == "claude-session"
        assert arrived.resource["claude_session.project"] == os.path.basename(recorded.root)
    assert recorded.rows("SELECT session_id, spans FROM otel_sessions") == [(SESSION, 7)]
    assert recorded.rows("SELECT count(*) FROM otel_sent") == [(0,)]  # done: its rows went
    assert recorded.rows("SELECT spans_sent, failures, last_error FROM otel_export") == [
        (7, 0, None)
    ]


def test_a_backend_down_loses_nothing_doubles_nothing_and_says_so(recorded: Recorder) -> None:
    receiver = Receiver()
    where = target(receiver)
    receiver.refusing = True
    try:
        failed = export(recorded, where, NOW)
        assert failed.sent == 0 and failed.error and failed.waiting == 7
        assert "did not take them: Service Unavailable" in failed.error  # why, not just "no"
        state = recorded.rows(
            "SELECT failures, last_error IS NOT NULL, next_attempt_at FROM otel_export"
        )[0]
        assert state[0] == 1 and state[1] and state[2] > NOW
        told = otel_export.status(recorded.conn, recorded.root, NOW + 1)
        assert told is None  # the project's configuration says nothing: off for status
        tried = receiver.requests  # the SDK's exporter itself retries a 503 a few times
        assert export(recorded, where, NOW + 1).sent == 0
        assert receiver.requests == tried  # backing off: not even tried
        receiver.stop()  # down for good, then back on the same port
        closed = export(recorded, where, state[2] + 1).error
        assert closed and "did not take them: connection refused" in closed
        receiver.refusing = False
        receiver.start()
        later = recorded.rows("SELECT next_attempt_at FROM otel_export")[0][0]
        done = export(recorded, where, later + 1)
        assert done.error is None and done.sent == 7
    finally:
        receiver.stop()
    assert len(receiver.spans) == len({s.span_id for s in receiver.spans}) == 7
    assert recorded.rows("SELECT failures, last_error FROM otel_export") == [(0, None)]


def test_a_live_session_sends_what_has_ended_and_the_rest_when_it_ends(tmp_path: Path) -> None:
    (tmp_path / "live").mkdir()
    rec = Recorder(tmp_path / "live")
    receiver = Receiver()
    try:
        base = {"session_id": "live-1", "cwd": rec.root}
        rec.send(base | {"hook_event_name": "SessionStart", "source": "startup"})
        rec.advance(1)
        rec.send(base | {"hook_event_name": "UserPromptSubmit", "prompt": "go"})
        call = {"tool_name": "Bash", "tool_use_id": "toolu_live1", "tool_input": {"command": "ls"}}
        rec.send(base | call | {"hook_event_name": "PreToolUse"})
        rec.advance(1)
        rec.send(base | call | {"hook_event_name": "PostToolUse", "tool_response": {}})
        running = {"tool_name": "Bash", "tool_use_id": "toolu_live2"}
        rec.send(base | running | {"hook_event_name": "PreToolUse", "tool_input": {}})
        where = target(receiver, otel_export_delay_seconds=5.0)
        assert export(rec, where, rec.now + 1).sent == 0  # ended too recently
        first = export(rec, where, rec.now + 10)
        assert first.sent == 1  # the finished call; the turn, the running call and the session wait
        assert [s.name for s in receiver.spans] == ["execute_tool Bash"]
        rec.advance(2)
        rec.send(base | running | {"hook_event_name": "PostToolUse", "tool_response": {}})
        rec.send(base | {"hook_event_name": "Stop", "last_assistant_message": "done"})
        rec.send(base | {"hook_event_name": "SessionEnd", "reason": "other"})
        second = export(rec, where, rec.now + 10)
        assert second.sent == 3  # the second call, the turn, then the session
        names = [s.name for s in receiver.spans]
        assert sorted(names) == sorted(
            ["execute_tool Bash", "execute_tool Bash", "turn 1", "claude_session.session"]
        )
        assert names[-1] == "claude_session.session"
    finally:
        receiver.stop()
        rec.close()


def test_a_cloned_configuration_never_sends_anything(project: Path) -> None:
    """An otel_endpoint in a `.claude-session.json` that came with the repository is data:
    the configuration is not trusted, so export stays off (it would send the user's work to
    whoever wrote it)."""
    from claude_session.services import config_file

    receiver = Receiver()
    try:
        (project / ".claude-session.json").write_text(
            json.dumps({"otel_endpoint": receiver.endpoint})
        )
        loaded = config_file.load_or_defaults(str(project))
        assert any(p.startswith("untrusted") for p in loaded.problems)
        assert otel_export.target(loaded.values, environ={}) is None
        done = run_cli(project, "config", "--set", "otel_endpoint=http://127.0.0.1:9")
        assert done.returncode != 0 and "not trusted" in done.stderr
    finally:
        receiver.stop()


def test_the_standard_variables_configure_it_and_can_turn_it_off() -> None:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/",
        "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20${TOKEN},x-b=2",
        "TOKEN": "abc",
    }
    where = otel_export.target({}, environ=env)
    assert where is not None and where.endpoint == "http://collector:4318/v1/traces"
    assert where.headers == {"authorization": "Bearer abc", "x-b": "2"}
    assert where.protocol == "http/protobuf" and where.content is False
    traces = env | {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1/custom"}
    assert otel_export.target({}, environ=traces).endpoint == "http://t:1/custom"  # type: ignore[union-attr]
    grpc = otel_export.target({}, environ=env | {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
    assert grpc is not None and grpc.endpoint == "http://collector:4318/"
    assert otel_export.target({}, environ=env | {"OTEL_SDK_DISABLED": "true"}) is None
    assert otel_export.target({}, environ={}) is None  # off by default
    # Claude Code strips every OTEL_* variable from its hooks' environment: ours get through.
    ours = {
        "CLAUDE_SESSION_OTEL_ENDPOINT": "https://api.example:443",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:1",
    }
    picked = otel_export.target({}, environ=ours | {"CLAUDE_SESSION_OTEL_LOG_CONTENT": "1"})
    assert picked is not None and picked.endpoint == "https://api.example:443/v1/traces"
    assert picked.content is True
    configured = otel_export.target({"otel_endpoint": "http://c:4318"}, environ=ours)
    assert configured is not None and configured.endpoint == "http://c:4318/v1/traces"
    assert otel_export.target({}, environ={"CLAUDE_SESSION_OTEL_ENDPOINT": "file:///x"}) is None


def test_the_background_process_sends_a_recorded_session_and_status_shows_it(
    project: Path,
) -> None:
    """As a user runs it: `config --set otel_endpoint`, the daemon running, real
    hook processes record a session, which it sends on its own; `status --json` tells. A
    session that ended before the export was on is left for `export-otel --since`."""
    from conftest import fixture, query, run_hook

    def record(session_id: str) -> None:
        names = ("SessionStart.startup", "UserPromptSubmit", "PreToolUse.Bash")
        for name in (*names, "PostToolUse.Bash", "Stop", "SessionEnd"):
            payload = fixture(name, project) | {"session_id": session_id}
            if "tool_use_id" in payload:  # a tool call's id is Claude Code's, unique
                payload["tool_use_id"] += session_id
            run_hook(name.split(".")[0], payload, project)

    receiver = Receiver()
    try:
        record("before-the-export")
        # Sessions idle for session_idle_minutes before the export was on are left out.
        pairs = (f"otel_endpoint={receiver.endpoint}", "otel_export_delay_seconds=0.1")
        for pair in (*pairs, "session_idle_minutes=0.02"):
            done = run_cli(project, "config", "--set", pair)
            assert done.returncode == 0, done.stderr
        time.sleep(2)
        daemon = subprocess.Popen(
            [CLI, "--project", str(project), "daemon", "run"],
            env=hook_env(project),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            turned_on = "SELECT count(*) FROM otel_export WHERE enabled_at IS NOT NULL"
            assert wait_for(lambda: query(project, turned_on) == [(1,)], 30)
            record("with-the-export")
            names = lambda: sorted(s.name for s in receiver.spans)  # noqa: E731
            assert wait_for(lambda: "claude_session.session" in names(), 60), names()
            assert names() == ["claude_session.session", "execute_tool Bash", "turn 1"]
            sessions = {s.attributes["session.id"] for s in receiver.spans}
            assert sessions == {"with-the-export"}
            status = run_cli(project, "status", "--json")
            assert status.returncode == 0, status.stderr
            shown = json.loads(status.stdout)["otel"]
            assert shown["endpoint"] == receiver.endpoint + "/v1/traces"
            assert shown["spans_sent"] == 3 and shown["last_error"] is None
        finally:
            daemon.terminate()
            daemon.wait(30)
    finally:
        receiver.stop()


def test_export_otel_sends_history_again_with_the_same_ids(recorded: Recorder) -> None:
    receiver = Receiver()
    try:
        where = target(receiver)
        assert export(recorded, where, NOW).sent == 7
        send = otel_export.sender(recorded.root, where)
        assert otel_export.export_since(recorded.conn, where, send, T0 - 1) == (1, 7)
        ids = [s.span_id for s in receiver.spans]
        assert len(ids) == 14 and len(set(ids)) == 7  # the backend sees the same 7 again
    finally:
        receiver.stop()


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", True),
        ("00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", False),  # not lowercase
        ("00-00000000000000000000000000000000-00f067aa0ba902b7-01", False),  # zero trace id
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", False),  # zero span id
        ("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", False),  # another version
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\n", False),
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0\x1b", False),
        ("", False),
        (None, False),
    ],
)
def test_only_a_well_formed_traceparent_is_kept(given: str | None, kept: bool) -> None:
    """TRACEPARENT is Claude Code's variable, but a hook keeps it only in W3C form: it
    becomes span ids in what we send (and nothing else of it is ever printed)."""
    from claude_session.runtime.hookrt import valid_traceparent

    assert valid_traceparent(given) == (given if kept else None)


def test_the_resource_says_who_and_where_and_the_standard_variable_overrides_it(
    recorded: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    subprocess.run(["git", "init", "-q", "-b", "feature/x"], cwd=recorded.root, check=True)
    subprocess.run(
        [
            "git",
            "remote",
            "add",
            "origin",
            "https://someone:ghp_secret123@example.com/team/app.git",
        ],
        cwd=recorded.root,
        check=True,
    )
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "team=payments,host.name=build-7")
    receiver = Receiver()
    try:
        assert export(recorded, target(receiver), NOW).sent == 7
    finally:
        receiver.stop()
    resource = receiver.spans[0].resource
    assert resource["service.name"] == "claude-session"
    assert resource["vcs.repository.url.full"] == "https://example.com/team/app.git"
    assert resource["vcs.repository.ref.name"] == "feature/x"
    assert resource["team"] == "payments" and resource["host.name"] == "build-7"
    assert "user.name" in resource


def test_export_otel_sends_history_on_demand_as_a_user_runs_it(recorded: Recorder) -> None:
    receiver = Receiver()
    try:
        done = run_cli(
            Path(recorded.root),
            "export-otel",
            "--since",
            "2020-01-01",
            "--json",
            OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == {
            "endpoint": receiver.endpoint + "/v1/traces",
            "sessions": 1,
            "spans": 7,
        }
        assert len({s.span_id for s in receiver.spans}) == 7
        receiver.stop()
        down = run_cli(
            Path(recorded.root),
            "export-otel",
            "--since",
            "2020-01-01",
            OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
        )
        assert down.returncode == 1 and "not sent" in down.stderr
        off = run_cli(Path(recorded.root), "export-otel", "--since", "1d")
        assert off.returncode != 0 and "not configured" in off.stderr
    finally:
        receiver.stop()


def test_spans_over_grpc_reach_a_real_backend(recorded: Recorder, tmp_path: Path) -> None:
    """otel_protocol = grpc: the SDK's gRPC exporter (the otel-grpc extra) to Phoenix's
    OTLP/gRPC port; every span of the recorded session arrives, with our ids."""
    with OtelBackend(tmp_path / "grpc-backend") as backend:
        values = {"otel_endpoint": f"http://{backend.otlp_grpc_endpoint}", "otel_protocol": "grpc"}
        where = otel_export.target(values, environ={})
        assert where is not None and where.protocol == "grpc"
        assert where.endpoint == f"http://{backend.otlp_grpc_endpoint}"
        send = otel_export.sender(recorded.root, where)
        done = otel_export.export_pass(recorded.conn, where, send, NOW, idle_seconds=3600)
        assert done.error is None and done.sent == 7
        assert backend.wait_for_spans(lambda spans: len(spans) >= 7, 30)
        stored = {s["span_id"] for s in backend.spans()}
    made = otel_spans.session_spans(recorded.conn, SESSION, content=False)
    assert stored == {f"{s.span_id:016x}" for s in made}


def test_a_background_process_killed_and_started_again_sends_the_rest_once(
    project: Path,
) -> None:
    """Exactly once across a crash: what the first daemon sent is in the
    database; killed (SIGKILL, no clean-up), the next one sends only the session that
    came after, and nothing of the first again."""
    from conftest import fixture, query, run_hook

    def record(session_id: str) -> None:
        names = ("SessionStart.startup", "UserPromptSubmit", "PreToolUse.Bash")
        for name in (*names, "PostToolUse.Bash", "Stop", "SessionEnd"):
            payload = fixture(name, project) | {"session_id": session_id}
            if "tool_use_id" in payload:
                payload["tool_use_id"] += session_id
            run_hook(name.split(".")[0], payload, project)

    def background() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [CLI, "--project", str(project), "daemon", "run"],
            env=hook_env(project),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its group: `daemon run` and the daemon it runs
        )

    receiver = Receiver()
    first = second = None
    try:
        for pair in (f"otel_endpoint={receiver.endpoint}", "otel_export_delay_seconds=0.1"):
            assert run_cli(project, "config", "--set", pair).returncode == 0
        first = background()
        turned_on = "SELECT count(*) FROM otel_export WHERE enabled_at IS NOT NULL"
        database = project / ".claude-session.db"  # made by the daemon

        def export_on() -> bool:
            try:  # the file appears before its schema: a table not made yet is "not yet"
                return database.exists() and query(project, turned_on) == [(1,)]
            except apsw.SQLError:
                return False

        assert wait_for(export_on, 30)
        record("one")
        assert wait_for(lambda: len(receiver.spans) == 3, 60), receiver.spans
        # killed once the sends are recorded: a kill between a send and its record sends
        # those spans again, with the same ids, which a backend keeps once (otel_export.py)
        sent = "SELECT spans FROM otel_sessions WHERE session_id = 'one'"
        assert wait_for(lambda: query(project, sent) == [(3,)], 30)
        os.killpg(first.pid, signal.SIGKILL)  # both: the daemon dies with it
        first.wait(10)
        record("two")
        second = background()
        assert wait_for(lambda: len(receiver.spans) == 6, 60), [s.name for s in receiver.spans]
        time.sleep(otel_export.EXPORT_EVERY_SECONDS + 1)  # a later pass sends nothing more
        assert len(receiver.spans) == len({s.span_id for s in receiver.spans}) == 6
        assert {s.attributes["session.id"] for s in receiver.spans[3:]} == {"two"}
        assert query(project, "SELECT session_id FROM otel_sessions ORDER BY done_at") == [
            ("one",),
            ("two",),
        ]
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.terminate()
                process.wait(30)
        receiver.stop()


class Drip:
    """A backend on loopback (127.0.0.1 only) that takes the request, then answers one byte
    a second, for as long as it runs: each byte restarts a socket's read timeout, so only a
    deadline over the whole export ends it. `dripping` off: a plain 200 at once."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.dripping = True
        self.dripped = 0  # bytes sent a second apart
        self.requests = 0
        self.stopped = threading.Event()
        self.connections: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            if self.stopped.is_set():
                conn.close()
                return
            self.connections.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            head = b""
            while b"\r\n\r\n" not in head:
                head += conn.recv(65536) or b"\r\n\r\n"
            head, _, body = head.partition(b"\r\n\r\n")
            length = re.search(rb"(?i)content-length: *(\d+)", head)
            while length and len(body) < int(length.group(1)):
                body += conn.recv(65536) or b"x" * int(length.group(1))
            self.requests += 1
            if not self.dripping:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                return
            for byte in b"HTTP/1.1 200 OK\r\nX-Drip: " + b"a" * 100_000:
                if self.stopped.wait(1):
                    return
                conn.sendall(bytes([byte]))
                self.dripped += 1
        except OSError:
            return
        finally:
            conn.close()

    def stop(self) -> None:
        self.stopped.set()
        try:  # wakes the accept blocked on it: a socket closed under it would keep listening
            self.server.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.server.close()
        for conn in self.connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def test_a_backend_that_drips_its_answer_is_cut_at_the_runs_deadline(recorded: Recorder) -> None:
    """The backend takes the request and answers a byte a second: the pass (given 2 s, by
    `otel_export_timeout_seconds`) returns by its deadline, the export is recorded as failed
    with why, nothing as sent, and the next pass after the pause sends all of it once."""
    drip = Drip()
    try:
        where = target(drip, otel_export_timeout_seconds=2)
        assert where.timeout == 2
        send = otel_export.sender(recorded.root, where)
        passes: list[otel_export.Pass] = []
        started = time.monotonic()
        worker = threading.Thread(
            target=lambda: passes.append(
                otel_export.export_pass(recorded.conn, where, send, NOW, idle_seconds=3600)
            ),
            daemon=True,
        )
        worker.start()
        worker.join(30)
        took = time.monotonic() - started
        assert not worker.is_alive(), "the export never returned"
        assert took < 8, took
        (failed,) = passes
        assert drip.dripped >= 1  # the answer was under way, a byte a second
        assert failed.sent == 0 and failed.waiting == 7
        assert failed.error and "took longer than 2 s" in failed.error, failed.error
        state = recorded.rows("SELECT failures, last_error, next_attempt_at FROM otel_export")
        ((failures, error, retry),) = state
        assert failures == 1 and "took longer than 2 s" in error and retry > NOW
        assert recorded.rows("SELECT count(*) FROM otel_sent") == [(0,)]
        assert recorded.rows("SELECT count(*) FROM otel_sessions") == [(0,)]
        drip.dripping = False  # tried again later: the same sender, a fresh exporter
        done = otel_export.export_pass(recorded.conn, where, send, retry + 1, idle_seconds=3600)
        assert done.error is None and done.sent == 7
        assert recorded.rows("SELECT session_id, spans FROM otel_sessions") == [(SESSION, 7)]
    finally:
        drip.stop()


def test_export_otel_returns_by_its_deadline_from_a_dripping_backend(recorded: Recorder) -> None:
    """`claude-session export-otel` against the dripping backend, as a user runs it: one
    line, exit 1, by the deadline the configuration sets (2 s), not never."""
    drip = Drip()
    try:
        root = Path(recorded.root)
        done = run_cli(root, "config", "--set", "otel_export_timeout_seconds=2")
        assert done.returncode == 0, done.stderr
        started = time.monotonic()
        stuck = subprocess.run(
            [CLI, "--project", str(root), "export-otel", "--since", "2020-01-01"],
            capture_output=True,
            text=True,
            env=hook_env(root, OTEL_EXPORTER_OTLP_ENDPOINT=drip.endpoint),
            timeout=30,
        )
        took = time.monotonic() - started
        assert stuck.returncode == 1, stuck.stdout + stuck.stderr
        assert "not sent:" in stuck.stderr and "took longer than 2 s" in stuck.stderr
        assert len(stuck.stderr.strip().splitlines()) == 1, stuck.stderr
        assert took < 15, took
        assert drip.requests >= 1 and drip.dripped >= 1
    finally:
        drip.stop()
