"""Registering our MCP servers with Claude Code: the memory server at user scope (`claude mcp
add -s user`), and the MCP hook server of the mcp_tool transport (runtime/mcp_transport.py) at
local scope for a project install (the project's entry in ~/.claude.json: private to this
user, no approval asked, nothing written into the project), user scope for a user install.

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
from pathlib import Path
from typing import Any

from ...core import hook_contract
from . import installer
from .plugin import ClaudeError, output_tail, run_claude

NAME = hook_contract.MCP_SERVER
PROBE_SECONDS = 30.0


def server_argv(python: str | None = None) -> list[str]:
    # -P: Claude Code starts it in the project, which is never put on sys.path (a planted
    # `claude_session` folder there is not what runs).
    return [python or sys.executable, "-P", "-m", "claude_session.mcp_server"]


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
    run_claude(claude, "mcp", "remove", "-s", "user", NAME)  # replace an older registration
    done = run_claude(claude, "mcp", "add", "-s", "user", NAME, "--", *argv)
    if done.returncode != 0:
        raise ClaudeError(f"claude mcp add failed: {output_tail(done)}")
    return argv


def unregister(claude: str) -> bool:
    done = run_claude(claude, "mcp", "remove", "-s", "user", NAME)
    return done.returncode == 0


# Where an organization's policy lives (Linux, macOS): it may forbid MCP servers of our own.
MANAGED_SETTINGS = (
    Path("/etc/claude-code/managed-settings.json"),
    Path("/Library/Application Support/ClaudeCode/managed-settings.json"),
)


def policy_problem(paths: tuple[Path, ...] = MANAGED_SETTINGS) -> str | None:
    """Why the organization's managed settings would not let the MCP hook server connect, or None:
    only managed servers allowed (or a managed-mcp.json beside them, whose servers alone
    load), MCP kept to plugins, an allow list that admits it neither by name nor (when it
    lists commands) by command, or a deny list naming it or its command."""
    argv = installer.mcp_hook_server_argv()
    for path in paths:
        if (path.parent / "managed-mcp.json").exists():
            return f"{path.parent / 'managed-mcp.json'} makes its MCP servers the only ones"
        try:
            managed = json.loads(path.read_text())
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as exc:
            return f"the managed settings {path} could not be read ({exc})"
        if not isinstance(managed, dict):
            continue
        if managed.get("allowManagedMcpServersOnly") is True:
            return f"{path} allows only the organization's own MCP servers"
        strict = managed.get("strictPluginOnlyCustomization")
        if strict is True or (isinstance(strict, list) and "mcp" in strict):
            return f"{path} allows MCP servers from plugins only"
        allowed = managed.get("allowedMcpServers")
        if isinstance(allowed, list) and not _admits(allowed, argv):
            name = installer.MCP_HOOK_SERVER
            return f"{path} has an allowedMcpServers list that does not admit {name}"
        denied = managed.get("deniedMcpServers")
        if isinstance(denied, list) and _names(denied, argv):
            return f"{path} denies the MCP server {installer.MCP_HOOK_SERVER}"
    return None


def _names(entries: list[Any], argv: list[str]) -> bool:
    """An entry names our server: by its name, or by its exact command."""
    return any(
        isinstance(e, dict)
        and (e.get("serverName") == installer.MCP_HOOK_SERVER or e.get("serverCommand") == argv)
        for e in entries
    )


def _admits(entries: list[Any], argv: list[str]) -> bool:
    """An allow list with command entries admits a stdio server by its command only."""
    if any(isinstance(e, dict) and "serverCommand" in e for e in entries):
        return any(isinstance(e, dict) and e.get("serverCommand") == argv for e in entries)
    return _names(entries, argv)


def mcp_hook_server_scope(install_scope: str) -> str:
    return "user" if install_scope == "user" else "local"


def register_hooks(claude: str, root: Path, install_scope: str) -> list[str]:
    """Register the MCP hook server for the project (local scope) or every project (user scope),
    after checking it answers `initialize`; returns the command."""
    argv = installer.mcp_hook_server_argv()
    problem = probe(argv)
    if problem:
        raise ClaudeError(f"MCP hook server not registered: {problem}")
    scope = mcp_hook_server_scope(install_scope)
    run_claude(claude, "mcp", "remove", "-s", scope, installer.MCP_HOOK_SERVER, cwd=root)
    done = run_claude(
        claude, "mcp", "add", "-s", scope, installer.MCP_HOOK_SERVER, "--", *argv, cwd=root
    )
    if done.returncode != 0:
        raise ClaudeError(f"claude mcp add failed: {output_tail(done)}")
    return argv


def unregister_hooks(claude: str, root: Path, install_scope: str) -> bool:
    scope = mcp_hook_server_scope(install_scope)
    done = run_claude(claude, "mcp", "remove", "-s", scope, installer.MCP_HOOK_SERVER, cwd=root)
    return done.returncode == 0
