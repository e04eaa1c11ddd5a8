"""Issue 32's first day, as a user meets it: claude-session installed from the wheel into a
fresh venv, one real Claude Code 2.1.330 session with a subagent (scripted Messages API on
loopback), then the commands a new user runs, piped as a script or `| cat` reads them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import WheelInstall, query, wait_for
from fake_api import FakeAnthropic
from test_e2e_claude import claude_binary, run_claude
from test_e2e_cost import Agents, usage

from claude_session.services.background import daemon_control

pytestmark = pytest.mark.e2e


def test_a_first_day_from_the_wheel(tmp_path: Path, wheel_install: WheelInstall) -> None:
    project, home, empty = tmp_path / "project", tmp_path / "home", tmp_path / "home" / "empty"
    project.mkdir()
    empty.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    env = {
        **os.environ,
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "COLUMNS": "80",
    }

    def cli(*args: str, cwd: Path = project, code: int = 0) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [wheel_install.cli, *args], cwd=cwd, capture_output=True, text=True, env=env,
            stdin=subprocess.DEVNULL, timeout=120,
        )  # fmt: skip
        assert done.returncode == code, (args, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
        return done

    # a non-interactive install leaves the paid judge off and says how to turn it on
    installed = cli("install")
    said = " ".join((installed.stdout + installed.stderr).split())
    assert "the judge (checks finished tasks) is off" in said and "judge_events=" in said
    settings = {
        s["key"]: s["value"] for s in json.loads(cli("config", "--json").stdout)["settings"]
    }
    assert settings["judge_events"] in ("", [])
    try:
        with FakeAnthropic(Agents(project), usage) as api:
            run_claude(claude_binary(), project, home, api, "TASK-DAY: write files")
        assert wait_for(lambda: len(query(project, "SELECT 1 FROM transcript_files")) >= 2, 30)
    finally:
        daemon_control.stop(str(project))
    session = query(project, "SELECT session_id FROM sessions")[0][0]

    # sessions: the one session, ended, with its prompt, tools and cost
    (row,) = json.loads(cli("sessions", "--json").stdout)
    assert row["session_id"] == session and row["state"] == "ended"
    assert row["prompts"] == 1 and row["tool_calls"] >= 2 and row["cost_usd"] > 0
    # agents --session: an ended session's agents, its subagent among them
    agents = json.loads(cli("agents", "--session", session[:8], "--json").stdout)
    assert any(a["agent"] != session for a in agents), agents
    # piped: whole lines, the project's paths unbroken, no fold at COLUMNS
    status = cli("status").stdout
    assert any(str(project) in line for line in status.splitlines())
    watched = cli("watch", "--once").stdout
    assert "…" not in watched and "q or Ctrl+C" not in watched
    assert watched.splitlines()[0].endswith(str(project))
    # statusline --json as every other command; prune with nothing to prune exits 0 piped
    assert isinstance(json.loads(cli("statusline", "--json", code=0).stdout), dict)
    cli("prune", "--yes")
    # diff of the whole session: the files the agents wrote
    last = query(project, "SELECT max(frame_no) FROM frames WHERE session_id = ?", (session,))
    changed = json.loads(cli("diff", f"{session}:1", f"{session}:{last[0][0]}", "--json").stdout)
    assert {"a.txt", "sub.txt"} <= {f["path"] for f in changed["files"]["stat"]}
    # a fork, listed and removed
    forked = json.loads(cli("fork", f"{session}:{last[0][0]}", "--json").stdout)
    assert (Path(forked["path"]) / "sub.txt").read_text() == "sub\n"
    assert [f["exists"] for f in json.loads(cli("fork", "--list", "--json").stdout)] == [True]
    cli("fork", "--remove", forked["path"], "--yes")
    assert not Path(forked["path"]).exists()
    # memory: a fact by default, trusted yes
    cli("memory", "add", "the tests run with ./test.sh")
    shown = json.loads(cli("memory", "list", "--json").stdout)
    assert [(m["category"], m["trusted"]) for m in shown] == [("fact", 1)]
    assert "trusted yes" in " ".join(cli("memory", "show", "1").stdout.split())
    # reads in a folder without a database (under HOME) make none, there or at home
    for args in (["status"], ["memory", "list"], ["memory", "search", "x"], ["agents"]):
        cli(*args, cwd=empty, code=0 if args[0] == "memory" else 1)
    assert not [p for p in home.rglob(".claude-session.db*")], list(home.rglob("*.db*"))
