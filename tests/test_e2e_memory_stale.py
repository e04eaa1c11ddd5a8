"""A memory an agent adds through the MCP tool, about a file, with the real Claude Code CLI
2.1.330 against a scripted Messages API: the next session edits the file, and the session
after it is told the memory is possibly stale, naming the file and the agent that changed it.
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

FACT = "E2E-STALE-FACT: config.py keeps DEBUG off"
ADD = "mcp__claude-session__add_memory"


class Agent:
    """Session 1 reads config.py and remembers a fact about it; session 2 edits it; session 3
    only answers. Every request is kept, by phase."""

    def __init__(self, project: Path) -> None:
        self.project = project
        self.phase = "remember"
        self.bodies: dict[str, list[dict[str, Any]]] = {}

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        if is_compaction(body):
            return [text("<summary>nothing</summary>")]
        self.bodies.setdefault(self.phase, []).append(body)
        used = [b for b in _blocks(body.get("messages") or []) if b.get("type") == "tool_use"]
        path = str(self.project / "config.py")
        plans = {
            "remember": [
                tool("Read", file_path=path),
                tool(ADD, text=FACT, category="fact", files=["config.py"]),
            ],
            "edit": [
                tool("Read", file_path=path),
                tool("Edit", file_path=path, old_string="False", new_string="True"),
            ],
        }
        plan = plans.get(self.phase, [])
        return [plan[len(used)]] if len(used) < len(plan) else [text("Done.")]


def test_an_agents_memory_about_a_file_is_given_stale_once_another_session_edits_it(
    tmp_path: Path, wheel_install: WheelInstall
) -> None:
    binary = claude_binary()
    project, home = tmp_path / "project", tmp_path / "home"
    for folder in (project, home):
        folder.mkdir()
    (project / "config.py").write_text("DEBUG = False\n")
    env = {
        **os.environ,
        "HOME": str(home),
        "PATH": f"{Path(binary).parent}:{os.environ['PATH']}",
        "DISABLE_AUTOUPDATER": "1",
    }

    def cs(*args: str) -> str:
        done = subprocess.run(
            [wheel_install.cli, "--project", str(project), *args],
            capture_output=True,
            text=True,
            env=env,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    cs("install", "--mcp", "--claude", str(binary))
    model = Agent(project)
    try:
        with FakeAnthropic(model) as api:
            first = run_claude(binary, project, home, api, "TASK-1: remember what config.py does")
            model.phase = "edit"
            second = run_claude(binary, project, home, api, "TASK-2: turn DEBUG on")
            model.phase = "look"
            run_claude(binary, project, home, api, "TASK-3: what do you know?")
    finally:
        daemon_control.stop(str(project))
    assert (project / "config.py").read_text() == "DEBUG = True\n"

    # The MCP tool's answer named the file; the memory says where it came from.
    results = [
        b
        for body in model.bodies["remember"]
        for b in _blocks(body.get("messages") or [])
        if b.get("type") == "tool_result"
    ]
    answer = json.dumps(results[-1], ensure_ascii=False)
    assert "config.py" in answer and "stored" in answer
    shown = json.loads(cs("memory", "show", "1", "--json"))
    assert (shown["source"], shown["session_id"], shown["turn_no"]) == (
        "agent",
        first["session_id"],
        1,
    )
    assert shown["tool_use_id"].startswith("toolu_e2e") and shown["files_inferred"] == 0
    (file,) = shown["files"]
    assert (file["path"], file["state"]) == ("config.py", "changed")
    assert file["changed_by"]["session_id"] == second["session_id"]

    # Session 2 was given it as fact (the file was as recorded then); session 3 marked stale.
    before = json.dumps(model.bodies["edit"][0], ensure_ascii=False)
    assert f"- [fact, project] {FACT}" in before
    after = json.dumps(model.bodies["look"][0], ensure_ascii=False)
    assert f"- [fact, project] {FACT}" not in after
    assert f"- [fact, project, POSSIBLY STALE] {FACT}" in after
    assert "possibly stale: config.py changed since it was recorded" in after
    assert f"edited by the main agent of session {second['session_id'][:8]} (Edit, " in after
    stale = json.loads(cs("memory", "list", "--stale", "--json"))
    assert [m["id"] for m in stale] == ["1"]
