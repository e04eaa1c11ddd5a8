"""What the OpenTelemetry export must never carry, store or print, and what it must never read
without a limit (SECURITY.md): a git remote's credentials in the resource, whatever they hold;
anything typed or run in a span when content is off (errors, paths, descriptions, prompts,
commands, status reasons); a backend's answer past MAX_ANSWER_BYTES; an endpoint's
`user:password@` in the database or in `status`; a header's literal secret in
`.claude-session.json` without a word (and the file is 0600)."""

from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import fixture, query, run_cli, run_hook
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from inproc import Recorder
from otlp_receiver import Receiver
from test_otel_export import NOW, recorded, session  # noqa: F401 (the fixtures)

from claude_session.core import db
from claude_session.services import config_file
from claude_session.services.telemetry import otel_export, otel_spans, otel_wire

# A remote's own parts are drawn from lowercase ASCII, digits and `.-/_`; what authenticates
# holds at least one character outside it (upper case, non-ASCII), and may hold any of the
# characters that end a naive match. So no character outside the plain set may survive.
PLAIN = "abcdefghijklmnopqrstuvwxyz0123456789"
SECRET_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ" + "/@:%+=!$&'()*,;~" + "éü密🔑ß" + "abc019"
NOT_PLAIN = set("ABCDEFGHIJKLMNOPQRSTUVWXYZéü密🔑ß")

words = st.text(PLAIN, min_size=1, max_size=8)
secrets = st.tuples(st.sampled_from(sorted(NOT_PLAIN)), st.text(SECRET_CHARS, max_size=20)).map(
    lambda pair: pair[0] + pair[1]
)
query_secrets = st.tuples(secrets, st.text(SECRET_CHARS + "?#", max_size=10)).map("".join)
hosts = st.lists(words, min_size=1, max_size=3).map(lambda parts: ".".join(parts) + ".example")
paths = st.lists(words, min_size=1, max_size=3).map("/".join)


@st.composite
def remotes(draw: st.DrawFn) -> tuple[str, str, str]:
    """(remote URL, its host, its path): a URL (https, http, ssh, git) with userinfo
    (`user:password@` or a token alone) and maybe a token in its query, or scp-like
    `user@host:path`."""
    host, path = draw(hosts), draw(paths)
    user = draw(st.one_of(secrets, words))
    userinfo = draw(st.sampled_from([f"{user}:", f"{user}", ""])) + draw(secrets)
    if draw(st.booleans()):
        return f"{userinfo}@{host}:{path}.git", host, path
    scheme = draw(st.sampled_from(["https", "http", "ssh", "git"]))
    port = draw(st.sampled_from(["", ":8443", ":22"]))
    query = draw(st.sampled_from(["", "?access_token=", "?private_token=", "?x=1&sig="]))
    query += draw(query_secrets) if query else ""
    return f"{scheme}://{userinfo}@{host}{port}/{path}.git{query}", host, path


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(remotes())
@example(("A:A://@0.example:0.git", "0.example", "0"))  # scp-like, a password holding `://`
def test_no_credential_of_a_remote_url_survives(remote: tuple[str, str, str]) -> None:
    url, host, path = remote
    kept = config_file.safe_url(url)
    assert not set(kept) & NOT_PLAIN, (url, kept)
    assert host in kept and path in kept, (url, kept)  # what says where is kept


def test_a_password_holding_a_query_mark_is_not_kept_either() -> None:
    """`?` or `#` in a password cannot be told from a query holding `@`: nothing is kept."""
    for url in ("https://u:pa?ss@h.example/p.git", "https://u:p#w@h.example/p?t=x@y"):
        kept = config_file.safe_url(url)
        assert kept == "https://", (url, kept)


@pytest.mark.parametrize("password", ["pa/ss", "p@ss", "a:b@c/d", "%2F%40", "s3cr\u00e9t/@x"])
def test_the_resource_never_carries_a_remote_password(recorded: Recorder, password: str) -> None:  # noqa: F811
    """As sent: the real git's remote, read for the resource, through the real exporter."""
    subprocess.run(["git", "init", "-q"], cwd=recorded.root, check=True)
    remote = f"https://someone:{password}SECRETPART@example.com/team/app.git"
    subprocess.run(["git", "remote", "add", "origin", remote], cwd=recorded.root, check=True)
    receiver = Receiver()
    try:
        where = otel_export.target({"otel_endpoint": receiver.endpoint}, environ={})
        assert where is not None
        send = otel_export.sender(recorded.root, where)
        assert otel_export.export_pass(recorded.conn, where, send, NOW, 3600).sent == 7
    finally:
        receiver.stop()
    resource_attrs = receiver.spans[0].resource
    assert resource_attrs["vcs.repository.url.full"] == "https://example.com/team/app.git"
    assert "SECRETPART" not in json.dumps(resource_attrs) and "someone" not in str(resource_attrs)


# -- content off: nothing typed or run in any span ----------------------------------------------

HOSTILE = {
    "prompt": "PROMPT-q7 read /home/victim/PLANS-x1.txt",
    "command": "deploy --password CMDPW-k3 /srv/private/CMDPATH-z9",
    "bash_description": "BASHDESC-r5",
    "bash_error": "Exit code 1\nERRTEXT-m2: cannot open /home/victim/ERRPATH-w8/key.pem",
    "agent_description": "AGENTDESC-p4 /opt/AGENTDESCPATH-v6",
    "agent_prompt": "AGENTPROMPT-j2 look in /var/AGENTPROMPTPATH-c3",
    "agent_error": "AGENTERR-n5 denied on /home/victim/AGENTERRPATH-b7/.ssh/id_rsa",
}


def test_with_content_off_no_recorded_content_reaches_any_span(project: Path) -> None:
    """A session recorded by the real hook processes, with hostile text in a prompt, a Bash
    command and its failure, and an Agent call that failed (its error text and the paths in
    it go into the agent's status reason): built as spans with content off (the default),
    none of it is in any name, attribute, event or status; with content on it is there."""
    sid = "privacy-session"

    def send(name: str, **more: Any) -> None:
        payload = fixture(name, project) | {"session_id": sid} | more
        assert run_hook(payload["hook_event_name"], payload, project).returncode == 0

    send("SessionStart.startup")
    send("UserPromptSubmit", prompt=HOSTILE["prompt"])
    bash_input = {"command": HOSTILE["command"], "description": HOSTILE["bash_description"]}
    send("PreToolUse.Bash", tool_input=bash_input, tool_use_id="toolu_b1")
    send(
        "PostToolUseFailure.Bash",
        tool_input=bash_input,
        tool_use_id="toolu_b1",
        error=HOSTILE["bash_error"],
    )
    agent_input = {
        "description": HOSTILE["agent_description"],
        "prompt": HOSTILE["agent_prompt"],
        "subagent_type": "general-purpose",
    }
    send("PreToolUse.Agent", tool_input=agent_input, tool_use_id="toolu_a1")
    send("SubagentStart", agent_id="agent-priv-1")
    failure = fixture("PostToolUseFailure.Bash", project) | {"session_id": sid}
    failure |= {"tool_name": "Agent", "tool_input": agent_input, "tool_use_id": "toolu_a1"}
    failure["error"] = HOSTILE["agent_error"]
    assert run_hook("PostToolUseFailure", failure, project).returncode == 0
    send("SessionEnd")
    # What was recorded holds the hostile text: an agent failed with it as its reason.
    [(status, reason)] = query(
        project, "SELECT status, status_reason FROM agent_registry WHERE id = 'agent-priv-1'"
    )
    assert status == "failed" and "AGENTERRPATH-b7" in reason
    assert query(project, "SELECT count(*) FROM error_log WHERE session_id = ?", (sid,))[0][0] >= 2
    markers = [
        "PROMPT-q7",
        "PLANS-x1",
        "CMDPW-k3",
        "CMDPATH-z9",
        "BASHDESC-r5",
        "ERRTEXT-m2",
        "ERRPATH-w8",
        "AGENTDESC-p4",
        "AGENTDESCPATH-v6",
        "AGENTPROMPT-j2",
        "AGENTPROMPTPATH-c3",
        "AGENTERR-n5",
        "AGENTERRPATH-b7",
        str(project),
    ]

    def everything(content: bool) -> str:
        conn = db.connect(str(project / ".claude-session.db"))
        try:
            spans = otel_spans.session_spans(conn, sid, content=content)
        finally:
            conn.close()
        assert len(spans) >= 4  # session, turn, the Bash call, the Agent call, its agent
        said = []
        for span in spans:
            said += [span.name, json.dumps(span.attributes), str(span.error)]
            said += [e.name + json.dumps(e.attributes) for e in span.events]
        for sdk in otel_wire.to_sdk(spans, None):  # as the exporter sends it
            said += [str(sdk.status.description), json.dumps(dict(sdk.attributes or {}))]
        return "\n".join(said)

    without = everything(content=False)
    assert [m for m in markers if m in without] == []
    assert "failed" in without  # the agent's failure is still told: its status, no text
    with_content = everything(content=True)
    assert "AGENTERRPATH-b7" in with_content and "PROMPT-q7" in with_content


# -- the backend's answer is read up to a limit -------------------------------------------------

HUGE = 1_300_000_000  # what a backend answered in the field: 1.3 GB


class HugeAnswer:
    """A loopback HTTP server answering every POST with a 1.3 GB body, streamed; it counts
    what it could write before the client stopped reading."""

    def __init__(self) -> None:
        self.written = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(HUGE))
                self.end_headers()
                chunk = b"\0" * (1 << 20)
                try:
                    while outer.written < HUGE:
                        self.wfile.write(chunk)
                        outer.written += len(chunk)
                except OSError:
                    pass  # the client stopped reading

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_huge_answer_is_read_no_further_than_the_limit(recorded: Recorder) -> None:  # noqa: F811
    server = HugeAnswer()
    try:
        where = otel_export.target({"otel_endpoint": server.endpoint}, environ={})
        assert where is not None
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        send = otel_export.sender(recorded.root, where)
        done = otel_export.export_pass(recorded.conn, where, send, NOW, 3600)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    finally:
        server.stop()
    assert done.sent == 0 and done.error  # failed, not crashed
    [(error, failures)] = recorded.rows("SELECT last_error, failures FROM otel_export")
    assert error and failures == 1
    assert recorded.rows("SELECT count(*) FROM otel_sent") == [(0,)]
    # Read no further than the limit (plus what the kernel's socket buffers took).
    assert server.written < 64 * (1 << 20), server.written
    assert peak - before < 200 * (1 << 20), (before, peak)


# -- credentials in the configuration: never stored or printed raw --------------------------------


def test_an_endpoints_credentials_are_neither_stored_nor_shown(
    recorded: Recorder,  # noqa: F811
) -> None:
    receiver = Receiver()
    try:
        port = receiver.endpoint.rsplit(":", 1)[1]
        with_creds = f"http://someone:PW-s3cr3t@127.0.0.1:{port}"
        where = otel_export.target({"otel_endpoint": with_creds}, environ={})
        assert where is not None
        send = otel_export.sender(recorded.root, where)
        assert otel_export.export_pass(recorded.conn, where, send, NOW, 3600).sent == 7
        receiver.stop()  # a failure: its error is stored too
        otel_export.export_pass(recorded.conn, where, send, NOW + 60, 3600)
    finally:
        receiver.stop()
    stored = recorded.rows("SELECT endpoint, last_error FROM otel_export")
    assert stored[0][0] == f"http://127.0.0.1:{port}/v1/traces"
    assert "PW-s3cr3t" not in json.dumps(stored) and "someone" not in json.dumps(stored)
    # `status` as a user runs it, with the endpoint configured with credentials.
    config = Path(recorded.root) / ".claude-session.json"
    config.write_text(json.dumps({"otel_endpoint": with_creds}))
    done = run_cli(Path(recorded.root), "trust", "--yes")
    assert done.returncode == 0, done.stderr
    for args in (("status", "--json"), ("status",), ("doctor",), ("config",)):
        shown = run_cli(Path(recorded.root), *args)
        assert "PW-s3cr3t" not in shown.stdout + shown.stderr, args
        assert "someone" not in shown.stdout + shown.stderr, args
    told = json.loads(run_cli(Path(recorded.root), "status", "--json").stdout)["otel"]
    assert told["endpoint"] == f"http://127.0.0.1:{port}/v1/traces"


def test_a_literal_header_secret_is_warned_about_and_the_file_is_0600(project: Path) -> None:
    config = project / ".claude-session.json"
    config.write_text("{}\n")
    os.chmod(config, 0o644)  # an older file, readable by all: tightened when we rewrite it
    assert run_cli(project, "trust", "--yes").returncode == 0
    literal = run_cli(project, "config", "--set", "otel_headers=authorization=Bearer sk-LIT-9x")
    assert literal.returncode == 0, literal.stderr
    assert "authorization holds a literal value" in literal.stderr
    assert "${NAME}" in literal.stderr
    assert "sk-LIT-9x" not in literal.stdout + literal.stderr  # the table hides it too
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert json.loads(config.read_text())["otel_headers"] == "authorization=Bearer sk-LIT-9x"
    named = run_cli(project, "config", "--set", "otel_headers=authorization=Bearer ${OTEL_TOKEN}")
    assert named.returncode == 0, named.stderr
    assert "warning" not in named.stderr
    assert "${OTEL_TOKEN}" in named.stdout
    creds = run_cli(project, "config", "--set", "otel_endpoint=http://u:PW-e9@localhost:4318")
    assert creds.returncode == 0, creds.stderr
    assert "otel_endpoint: credentials in the URL" in creds.stderr
    assert "PW-e9" not in creds.stdout + creds.stderr
    assert stat.S_IMODE(config.stat().st_mode) == 0o600


def test_a_huge_grpc_answer_is_refused_at_the_limit(recorded: Recorder) -> None:  # noqa: F811
    """Over gRPC the limit is the channel's maximum receive message length: a loopback gRPC
    server answering a 2 MB Export response (under gRPC's default 4 MB: taken without ours)
    fails the export, recorded, instead of being read."""
    from concurrent import futures

    import grpc
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )

    answered = []

    def export(request: ExportTraceServiceRequest, context: Any) -> ExportTraceServiceResponse:
        answer = ExportTraceServiceResponse()
        answer.partial_success.error_message = "x" * (2 << 20)
        answered.append(len(answer.SerializeToString()))
        return answer

    handler = grpc.method_handlers_generic_handler(
        "opentelemetry.proto.collector.trace.v1.TraceService",
        {
            "Export": grpc.unary_unary_rpc_method_handler(
                export,
                request_deserializer=ExportTraceServiceRequest.FromString,
                response_serializer=ExportTraceServiceResponse.SerializeToString,
            )
        },
    )
    server = grpc.server(futures.ThreadPoolExecutor(2))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        values = {"otel_endpoint": f"http://127.0.0.1:{port}", "otel_protocol": "grpc"}
        where = otel_export.target(values, environ={})
        assert where is not None and where.protocol == "grpc"
        send = otel_export.sender(recorded.root, where)
        done = otel_export.export_pass(recorded.conn, where, send, NOW, 3600)
    finally:
        server.stop(None)
    assert answered and answered[0] > otel_wire.MAX_ANSWER_BYTES  # it did answer that much
    assert done.sent == 0 and done.error
    [(error, failures)] = recorded.rows("SELECT last_error, failures FROM otel_export")
    assert error and failures == 1
    assert recorded.rows("SELECT count(*) FROM otel_sent") == [(0,)]
