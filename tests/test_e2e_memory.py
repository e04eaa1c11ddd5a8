"""Memories with the real Claude Code CLI 2.1.330 against a scripted Messages API.

A global preference recorded from another project and a fact of this project reach the model
at the start of a real session; the model then calls the MCP server's search tool (registered
by `install --mcp` from the installed wheel, user scope) and receives a learning it found
there; `state history` says who changed what and why.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import WheelInstall
from fake_api import FakeAnthropic, is_compaction, text, tool
from test_e2e_claude import _blocks, claude_binary, run_claude

from claude_session.services.background import daemon_control

pytestmark = pytest.mark.e2e

GLOBAL = "GLOBAL-PREF: answer in British English"
FACT = "PROJECT-FACT: the API lives in app/api"
LEARNING = "LEARNING-DEPLOY: deploys to staging need the VPN up first"
SEARCH = "mcp__claude-session__search_memories"


class Searcher:
    """Ask the MCP server for deploy knowledge, then finish; every request is kept."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        self.bodies.append(body)
        if is_compaction(body):
            return [text("<summary>searched</summary>")]
        used = [b for b in _blocks(body.get("messages") or []) if b.get("type") == "tool_use"]
        if not used:
            return [tool(SEARCH, query="staging deploys vpn", limit=3)]
        return [text("Done.")]


def test_memories_reach_a_real_session_and_the_mcp_search_tool_finds_more(
    tmp_path: Path, wheel_install: WheelInstall
) -> None:
    binary = claude_binary()
    project, other, home = tmp_path / "project", tmp_path / "other", tmp_path / "home"
    for folder in (project, other, home):
        folder.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "PATH": f"{Path(binary).parent}:{os.environ['PATH']}",
        "DISABLE_AUTOUPDATER": "1",
    }

    def cs(root: Path, *args: str) -> str:
        done = subprocess.run(
            [wheel_install.cli, "--project", str(root), *args],
            capture_output=True,
            text=True,
            env=env,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    installed = cs(project, "install", "--mcp", "--claude", str(binary))
    assert "registered the MCP server claude-session (user scope)" in installed
    registered = json.loads((home / ".claude.json").read_text())["mcpServers"]["claude-session"]
    assert registered["command"] == wheel_install.python
    cs(other, "memory", "add", GLOBAL, "--category", "preference", "--scope", "global")
    cs(project, "memory", "add", FACT, "--category", "fact")
    cs(project, "memory", "add", LEARNING, "--category", "learning", "--tag", "deploy")
    cs(project, "state", "set", "deploy_target", "staging")

    model = Searcher()
    try:
        with FakeAnthropic(model) as api:
            run_claude(binary, project, home, api, "TASK-MEM: tell me what you know")
    finally:
        daemon_control.stop(str(project))
    first = json.dumps(model.bodies[0], ensure_ascii=False)
    assert GLOBAL in first and FACT in first  # SessionStart gave both
    assert LEARNING not in first  # not a start memory, and the prompt does not match it
    results = [
        b
        for body in model.bodies[1:]
        for b in _blocks(body.get("messages") or [])
        if b.get("type") == "tool_result"
    ]
    assert results, "the model never got the MCP tool's result"
    got = json.dumps(results[-1], ensure_ascii=False)
    assert LEARNING in got and "not instructions" in got
    history = json.loads(cs(project, "state", "history", "deploy_target", "--json"))
    assert history[0]["new_value"] == "staging"
    assert history[0]["cause"].startswith("claude-session state set (by ")
    learned = json.loads(cs(project, "memory", "list", "--category", "learning", "--json"))
    assert learned[0]["use_count"] >= 1  # found through the tool: counted
