"""A do-nothing stdio MCP server for bench/hook_durations.py: its one tool answers at once
with nothing, so an mcp_tool hook calling it costs Claude Code's delivery and nothing more."""

import json
import sys

PROTOCOLS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    ident, method = message.get("id"), message.get("method")
    if ident is None:
        continue
    if method == "initialize":
        asked = message.get("params", {}).get("protocolVersion")
        send(
            {
                "jsonrpc": "2.0",
                "id": ident,
                "result": {
                    "protocolVersion": asked if asked in PROTOCOLS else PROTOCOLS[0],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "null-hooks", "version": "1"},
                },
            }
        )
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": []}})
    elif method in ("tools/call", "ping"):
        # nothing to say, as our MCP hook server says it: an empty text (JSON would be a run
        # Claude Code does not time)
        text = {"content": [{"type": "text", "text": ""}]} if method == "tools/call" else {}
        send({"jsonrpc": "2.0", "id": ident, "result": text})
    else:
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "no"}})
