"""What each zero-spawn hook transport of Claude Code carries, shown with the real CLI.

`python bench/transport_probe.py` runs short scripted sessions of the real Claude Code CLI
(tests/fake_api.py stands in for the Messages API) whose hooks go to receivers started here,
which log every delivery and answer with a marker the model's next request must carry:

- `mcp`: an `mcp_tool` hook on every event, calling the tool `hook` of a small stdio MCP server
  (registered with `claude mcp add -s local`) that lists only another tool;
- `http`: an `http` hook on every event, to a loopback HTTP receiver, with a header;
- `mcp-down` / `http-down`: the same with the receiver gone (a server that exits at once, a
  closed port): does the session still finish, and what does Claude Code say;
- `mcp-slow` / `http-slow`: a receiver that sleeps past the hook's `timeout` (1 s) once;
- `http-proxy`: the http hook with `HTTP_PROXY` set to a logging proxy and no `NO_PROXY`:
  does a loopback hook go through the proxy?

It prints, per scenario: which events arrived and in what order, which fields came (the whole
payload, or only the ones named), whether the answers reached the model, the session's exit
code and wall time, and Claude Code's own words from its debug log. The findings are written
up in docs/design.md ("Hooks without a process").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fake_api import FakeAnthropic, text, tool  # noqa: E402

EVENTS = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "SubagentStart",
    "SubagentStop",
    "Stop",
    "SessionEnd",
]
FIELDS = [
    "hook_event_name",
    "session_id",
    "cwd",
    "tool_name",
    "tool_input",
    "tool_response",
    "duration_ms",
    "agent_id",
    "stop_hook_active",
    "no_such_field",
]
MARK = "PROBE-ANSWER"

MCP_SERVER = r"""
import json, os, sys, time
log = open(os.environ["PROBE_LOG"], "a")
mode = os.environ.get("PROBE_MODE", "")
if mode == "down":
    sys.exit(3)
slept = False
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    log.write(json.dumps({"t": time.time(), "msg": msg}) + "\n"); log.flush()
    mid, method = msg.get("id"), msg.get("method")
    if mid is None:
        continue
    if method == "initialize":
        version = msg["params"]["protocolVersion"]
        send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": version,
              "capabilities": {"tools": {}}, "serverInfo": {"name": "probe", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [{"name": "listed",
              "description": "a listed tool", "inputSchema": {"type": "object"}}]}})
    elif method == "tools/call":
        event = msg["params"]["arguments"].get("hook_event_name")
        if mode == "slow" and event == "PreToolUse" and not slept:
            slept = True
            time.sleep(3)
        answer = {}
        if event in ("PreToolUse", "UserPromptSubmit"):
            answer = {"hookSpecificOutput": {"hookEventName": event,
                      "additionalContext": os.environ["PROBE_MARK"] + "-" + event}}
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text",
              "text": json.dumps(answer)}]}})
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no"}})
"""


def claude_binary() -> Path:
    from test_e2e_claude import claude_binary as found

    return found()


class Receiver:
    """A loopback HTTP hook receiver (or a logging proxy): logs each request, answers."""

    def __init__(self, slow: bool = False) -> None:
        self.log: list[dict[str, Any]] = []
        self.slow = slow
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    payload = json.loads(body)
                except ValueError:
                    payload = {}
                owner.log.append(
                    {
                        "t": time.time(),
                        "path": self.path,
                        "headers": dict(self.headers),
                        "payload": payload,
                    }
                )
                event = payload.get("hook_event_name")
                if owner.slow and event == "PreToolUse" and len(owner.log) < 4:
                    time.sleep(3)
                answer: dict[str, Any] = {}
                if event in ("PreToolUse", "UserPromptSubmit"):
                    answer = {
                        "hookSpecificOutput": {
                            "hookEventName": event,
                            "additionalContext": f"{MARK}-{event}",
                        }
                    }
                data = json.dumps(answer).encode()
                try:
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # Claude Code gave up waiting (the slow scenario)

            def do_CONNECT(self) -> None:
                """As a proxy: a hook tunnelled through us is logged, then refused."""
                owner.log.append(
                    {
                        "t": time.time(),
                        "path": self.path,
                        "headers": {},
                        "payload": {"hook_event_name": f"CONNECT {self.path}"},
                    }
                )
                self.send_response(403)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def script(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Two Bash calls (one failing), a subagent with one Bash call, then done."""
    messages = body["messages"]
    sub = "SUBTASK" in json.dumps(messages[0])
    made = sum(1 for m in messages if m["role"] == "assistant")
    if sub:
        return (
            [tool("Bash", command="echo sub", description="sub")]
            if made < 1
            else [text("sub done")]
        )
    plan = [
        tool("Bash", command="echo one", description="one"),
        tool("Bash", command="cat no_such_file.yaml", description="fails"),
        tool("Agent", description="sub", prompt="SUBTASK: echo", subagent_type="general-purpose"),
    ]
    return [plan[made]] if made < len(plan) else [text("all done")]


def run(scenario: str, binary: Path) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix=f"probe-{scenario}-"))
    home, project = work / "home", work / "project"
    (project / ".claude").mkdir(parents=True)
    home.mkdir()
    log = work / "mcp.log"
    transport, _, variant = scenario.partition("-")
    receiver = None
    extra_env: dict[str, str] = {}
    if transport == "mcp":
        server = work / "server.py"
        server.write_text(MCP_SERVER)
        handler: dict[str, Any] = {
            "type": "mcp_tool",
            "server": "probe",
            "tool": "hook",
            "input": {name: f"${{{name}}}" for name in FIELDS},
            "timeout": 1,
        }
    else:
        receiver = Receiver(slow=variant == "slow")
        url = receiver.url + "/hook"
        if variant == "down":
            receiver.close()
        if variant == "proxy":
            proxy = receiver
            receiver = Receiver()
            url = receiver.url + "/hook"
            extra_env = {"HTTP_PROXY": proxy.url, "http_proxy": proxy.url}
        handler = {
            "type": "http",
            "url": url,
            "headers": {"X-Probe-Secret": "s3cret"},
            "timeout": 1,
        }
    settings = {"hooks": {event: [{"hooks": [handler]}] for event in EVENTS}}
    (project / ".claude" / "settings.local.json").write_text(json.dumps(settings))
    with FakeAnthropic(script) as api:
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(home),
            "ANTHROPIC_BASE_URL": api.url,
            "ANTHROPIC_API_KEY": "sk-ant-probe",
            "IS_SANDBOX": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "PROBE_LOG": str(log),
            "PROBE_MODE": variant,
            "PROBE_MARK": MARK,
            "NO_PROXY": "127.0.0.1" if variant != "proxy" else "",
            **extra_env,
        }
        if variant == "proxy":
            env["NO_PROXY"] = api.url.split("//")[1].split(":")[0] + ":" + api.url.rsplit(":", 1)[1]
        if transport == "mcp":
            subprocess.run(
                [
                    str(binary),
                    "mcp",
                    "add",
                    "-s",
                    "local",
                    "probe",
                    "--",
                    sys.executable,
                    str(work / "server.py"),
                ],
                cwd=project,
                env=env,
                check=True,
                capture_output=True,
                timeout=120,
            )
        started = time.perf_counter()
        done = subprocess.run(
            [
                str(binary),
                "-p",
                "go",
                "--output-format",
                "json",
                "--dangerously-skip-permissions",
                "--debug-file",
                str(work / "debug.log"),
            ],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        wall = time.perf_counter() - started
        requests = [r["body"] for r in api.requests]
    deliveries: list[dict[str, Any]] = []
    if transport == "mcp" and log.exists():
        for line in log.read_text().splitlines():
            msg = json.loads(line)["msg"]
            if msg.get("method") == "tools/call":
                deliveries.append({"payload": msg["params"].get("arguments", {})})
    elif receiver is not None:
        deliveries = receiver.log
        receiver.close()
    seen = json.dumps(requests)
    debug = (
        (work / "debug.log").read_text(errors="replace") if (work / "debug.log").exists() else ""
    )
    words = sorted(
        {
            line.split("] ", 1)[-1][:160]
            for line in debug.splitlines()
            if ("mcp_tool" in line or "HTTP hook" in line or "Hook " in line)
            and ("WARN" in line or "ERROR" in line)
        }
    )
    found: dict[str, Any] = {
        "scenario": scenario,
        "exit": done.returncode,
        "result": (json.loads(done.stdout).get("result") if done.stdout.strip() else None),
        "wall_s": round(wall, 2),
        "events": [d["payload"].get("hook_event_name") for d in deliveries],
        # the PostToolUse of the first Bash call: which fields came with a value
        "fields": sorted(k for k, v in deliveries[2]["payload"].items() if v not in ("", None))
        if len(deliveries) > 2
        else [],
        "answers_reached_model": sorted(
            e for e in ("PreToolUse", "UserPromptSubmit") if f"{MARK}-{e}" in seen
        ),
        "tool_offered_to_model": sorted(
            {
                t.get("name", "")
                for r in requests
                for t in r.get("tools", [])
                if "probe" in t.get("name", "")
            }
        ),
        "claude_code_said": words[:8],
    }
    if transport == "http" and deliveries:
        found["headers"] = sorted(deliveries[0]["headers"])
    if variant == "proxy" and extra_env:
        found["through_proxy"] = len(proxy.log)
        proxy.close()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    every = ["mcp", "http", "mcp-down", "http-down", "mcp-slow", "http-slow", "http-proxy"]
    parser.add_argument("scenarios", nargs="*", default=every, choices=every)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    binary = claude_binary()
    results = [run(s, binary) for s in args.scenarios]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for r in results:
        print(f"== {r['scenario']}: exit {r['exit']}, {r['wall_s']} s, result {r['result']!r}")
        for key in (
            "events",
            "fields",
            "answers_reached_model",
            "tool_offered_to_model",
            "headers",
            "through_proxy",
            "claude_code_said",
        ):
            if key in r:
                print(f"   {key}: {r[key]}")


if __name__ == "__main__":
    main()
