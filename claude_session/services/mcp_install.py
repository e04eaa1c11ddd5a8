"""Registering the MCP server with Claude Code at user scope (`claude mcp add -s user`).

User scope, because a project-scope `.mcp.json` server waits for the user's approval while a
user-scope one connects at once (checked in the real CLI 2.1.330). The command is this
install's interpreter by absolute path; the server finds the project in `CLAUDE_PROJECT_DIR`.
Before registering, the server is started once and asked to `initialize`, so a command that
cannot serve is never written.
"""

from __future__ import annotations

import json
import subprocess
import sys

from .plugin import ClaudeError, _claude, _tail

NAME = "claude-session"
PROBE_SECONDS = 30.0


def server_argv(python: str | None = None) -> list[str]:
    # -P: Claude Code starts it in the project, which is never put on sys.path (a planted
    # `claude_session` folder there is not what runs).
    return [python or sys.executable, "-P", "-m", "claude_session.services.mcp_server"]


def probe(argv: list[str]) -> str | None:
    """Start the server and ask it to initialize; None when it answers, else why not."""
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "claude-session-install", "version": "1"},
        },
    }
    try:
        done = subprocess.run(
            argv,
            input=json.dumps(request) + "\n",
            capture_output=True,
            text=True,
            timeout=PROBE_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the server did not start: {exc}"
    for line in done.stdout.splitlines():
        try:
            answer = json.loads(line)
        except ValueError:
            continue
        if isinstance(answer, dict) and answer.get("id") == 1 and "result" in answer:
            return None
    return "the server did not answer initialize: " + (done.stderr.strip()[-300:] or "no output")


def register(claude: str, python: str | None = None) -> list[str]:
    """`claude mcp add -s user claude-session -- <python> -m ...`; returns the command."""
    argv = server_argv(python)
    problem = probe(argv)
    if problem:
        raise ClaudeError(f"MCP server not registered: {problem}")
    _claude(claude, "mcp", "remove", "-s", "user", NAME)  # replace an older registration
    done = _claude(claude, "mcp", "add", "-s", "user", NAME, "--", *argv)
    if done.returncode != 0:
        raise ClaudeError(f"claude mcp add failed: {_tail(done)}")
    return argv


def unregister(claude: str) -> bool:
    done = _claude(claude, "mcp", "remove", "-s", "user", NAME)
    return done.returncode == 0
