"""A scripted stand-in for the Anthropic Messages API on 127.0.0.1, for end-to-end tests.

The real Claude Code CLI is pointed at it with ANTHROPIC_BASE_URL. Each request with tools is
a turn of the main conversation or of a subagent; the `script` callable decides what the model
"says" (text and tool calls) from the request body. Requests without tools (compaction
summaries, titles) get plain text. Every request body is kept for assertions.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Block = dict[str, Any]
Script = Callable[[dict[str, Any]], list[Block]]
Usage = Callable[[int], dict[str, int]]  # response number (0, 1, ...) -> its usage

_ids = itertools.count(1)


def text(value: str) -> Block:
    return {"type": "text", "text": value}


def tool(name: str, **tool_input: Any) -> Block:
    return {
        "type": "tool_use",
        "id": f"toolu_e2e{next(_ids):06d}",
        "name": name,
        "input": tool_input,
    }


class FakeAnthropic:
    """Start with `with FakeAnthropic(script) as api:`; `api.url` is the base URL."""

    def __init__(self, script: Script, usage: Usage | None = None) -> None:
        self.script = script
        self.usage = usage
        self.usages: list[dict[str, int]] = []  # what each response said it used, in order
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                path = self.path.split("?")[0]
                with owner.lock:
                    owner.requests.append({"path": path, "body": body})
                if path.endswith("/count_tokens"):
                    self._json({"input_tokens": 100})
                    return
                if not path.endswith("/v1/messages"):
                    self._json({})
                    return
                if body.get("tools"):
                    # Not under the lock: a script may wait for another agent's request.
                    blocks = owner.script(body)
                else:
                    blocks = [text("Summary: the session wrote and edited files and ran tools.")]
                self._stream(body, blocks)

            def do_GET(self) -> None:
                self._json({})

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def _json(self, value: Any) -> None:
                data = json.dumps(value).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, body: dict[str, Any], blocks: list[Block]) -> None:
                used = None
                if owner.usage is not None:
                    with owner.lock:
                        used = owner.usage(len(owner.usages))
                        owner.usages.append(used)
                events = sse_events(body.get("model") or "claude-test", blocks, used)
                data = "".join(
                    f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events
                ).encode()
                self.send_response(200)
                self.send_header("request-id", f"req_e2e{next(_ids):06d}")
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeAnthropic:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def message_requests(self) -> list[dict[str, Any]]:
        with self.lock:
            return [r["body"] for r in self.requests if r["path"].endswith("/v1/messages")]


def sse_events(
    model: str, blocks: list[Block], usage: dict[str, int] | None = None
) -> list[dict[str, Any]]:
    """The stream of one response; `usage` (input, output, cache tokens) defaults to 100 in,
    20 out."""
    usage = usage or {"input_tokens": 100, "output_tokens": 20}
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": f"msg_e2e{next(_ids):06d}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            },
        }
    ]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            {"type": "content_block_start", "index": index, "content_block": start},
            {"type": "content_block_delta", "index": index, "delta": delta},
            {"type": "content_block_stop", "index": index},
        ]
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        },
        {"type": "message_stop"},
    ]
    return events


def request_text(body: dict[str, Any]) -> str:
    """Everything the model was shown in a request, as one string (for assertions)."""
    return json.dumps(body, ensure_ascii=False)


def is_compaction(body: dict[str, Any]) -> bool:
    """Claude Code's summary request for /compact (it still carries the tools)."""
    last = last_user_text(body)
    return "Respond with TEXT ONLY" in last or "summary of the conversation" in last


def last_user_text(body: dict[str, Any]) -> str:
    """Text of the last user message (prompt or tool results): Claude Code 2.1.330 may put a
    system-role message (its reminders, hook contexts) after it."""
    users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
    if not users:
        return ""
    content = users[-1].get("content")
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
