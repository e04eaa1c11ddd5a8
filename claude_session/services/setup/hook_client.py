"""Talking to the MCP hook server (runtime/mcp_transport.py) as Claude Code does, and finding its
registration: for `doctor`, which times every installed hook, whatever its transport."""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import IO, Any

from ...core import mcp_hook_input
from . import installer

REPLY_SECONDS = 30.0


class McpHookError(Exception):
    """The server did not start, answer, or answered something else."""


class McpHookClient:
    """One MCP hook server started over pipes for `project`, as a session's Claude Code starts
    it. `call` sends one hook payload and gives back (answer text, failed, seconds)."""

    def __init__(self, project: Path, extra_env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            installer.mcp_hook_server_argv(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=project,
            env=installer.hook_environment(project, extra_env),
        )
        self.next_id = 0
        self.install = installer.package_folder()
        self._request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})

    def call(self, payload: dict[str, Any]) -> tuple[str, bool, float]:
        arguments = mcp_hook_input.arguments_for(payload, self.install)
        started = time.perf_counter()
        result = self._request("tools/call", {"name": installer.HOOK_TOOL, "arguments": arguments})
        seconds = time.perf_counter() - started
        content = result.get("content") or [{}]
        text = str(content[0].get("text", "")) if isinstance(content[0], dict) else ""
        return text, bool(result.get("isError")), seconds

    def close(self) -> int:
        """Close its stdin as Claude Code does at the end of a session; its exit status."""
        if self.process.stdin:
            self.process.stdin.close()
        try:
            return self.process.wait(REPLY_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()

    def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        line = json.dumps(
            {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        )
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        try:
            stdin.write(line.encode() + b"\n")
            stdin.flush()
        except OSError as exc:
            raise McpHookError(f"the MCP hook server is gone: {exc}") from exc
        answer = _read_line(stdout)
        if not answer:
            raise McpHookError(f"the MCP hook server ended (exit {self.process.poll()})")
        message = json.loads(answer)
        if "result" not in message:
            raise McpHookError(f"the MCP hook server refused {method}: {message.get('error')}")
        result: dict[str, Any] = message["result"]
        return result


def _read_line(stream: IO[bytes]) -> bytes:
    """One answer line, or b"" when none comes within REPLY_SECONDS (a hung server)."""
    ready, _, _ = select.select([stream], [], [], REPLY_SECONDS)
    return stream.readline() if ready else b""


def registration(root: Path, install_scope: str) -> dict[str, Any] | None:
    """The MCP hook server's entry in `~/.claude.json` as `install` registers it (the project's
    entry for a local-scope registration, the top level for a user one), or None."""
    home = Path(os.environ.get("HOME") or Path.home())
    try:
        config = json.loads((home / ".claude.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict):
        return None
    if install_scope == "user":
        servers = config.get("mcpServers")
    else:
        project = config.get("projects", {}).get(str(root))
        servers = project.get("mcpServers") if isinstance(project, dict) else None
    found = servers.get(installer.MCP_HOOK_SERVER) if isinstance(servers, dict) else None
    return found if isinstance(found, dict) else None
