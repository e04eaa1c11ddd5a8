"""Cost with the real Claude Code CLI 2.1.330 against a scripted Messages API whose responses
each report other token counts: after a session with a subagent, `claude-session cost` (from
the installed wheel) gives Claude Code's own total to the cent, the tokens the API reported,
and the split between the main thread and the subagent, read from the transcripts."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import WheelInstall, installed_project, query, wait_for, web_pages, wheel_cli
from fake_api import FakeAnthropic, is_compaction, text, tool
from test_e2e_claude import _blocks, _has_prompt, claude_binary, run_claude

from claude_session.core.figures import usd
from claude_session.services.background import daemon_control
from claude_session.services.cost import costs

pytestmark = pytest.mark.e2e

SUBTASK = "SUBTASK-COST: write sub.txt"


class Agents:
    """Main: Write a.txt, a subagent that writes sub.txt, then an answer."""

    def __init__(self, project: Path) -> None:
        self.project = project

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        messages = body.get("messages") or []
        if is_compaction(body):
            return [text("<summary>work</summary>")]
        if _has_prompt(messages, SUBTASK):
            if any(b.get("type") == "tool_result" for b in _blocks(messages)):
                return [text("wrote sub.txt")]
            return [tool("Write", file_path=str(self.project / "sub.txt"), content="sub\n")]
        used = [b["name"] for b in _blocks(messages) if b.get("type") == "tool_use"]
        plan = [
            tool("Write", file_path=str(self.project / "a.txt"), content="a\n"),
            tool(
                "Agent",
                description="write sub",
                prompt=SUBTASK,
                subagent_type="general-purpose",
                run_in_background=False,
            ),
        ]
        return [plan[len(used)]] if len(used) < len(plan) else [text("Done.")]


def usage(n: int) -> dict[str, int]:
    """Each response its own counts, so a message counted twice or lost shows."""
    return {
        "input_tokens": 100 + 7 * n,
        "output_tokens": 20 + 3 * n,
        "cache_read_input_tokens": 1000 * n,
        "cache_creation_input_tokens": 50 + 11 * n,
    }


def cost_state(transcript: Path) -> dict[str, Any]:
    states = [
        entry
        for line in transcript.read_text().splitlines()
        if line.strip() and (entry := json.loads(line)).get("type") == "cost-state"
    ]
    assert states, f"no cost-state in {transcript}"
    return states[-1]


def run_session(
    tmp_path: Path, wheel_install: WheelInstall, script: Callable[[Path], Any], prompt: str
) -> tuple[Path, Path, FakeAnthropic]:
    """One real Claude Code session in a new git project, the hooks installed from the wheel;
    returns once the daemon (started by the hooks, under the session's HOME) has read the main
    and the subagent's transcripts."""
    binary = claude_binary()
    project, home = installed_project(tmp_path, wheel_install)
    try:
        with FakeAnthropic(script(project), usage) as api:
            run_claude(binary, project, home, api, prompt)
        assert wait_for(lambda: len(query(project, "SELECT 1 FROM transcript_files")) >= 2, 30), (
            "the daemon read no transcript"
        )
    finally:
        daemon_control.stop(str(project))
    return project, home, api


def test_cost_of_a_real_session_with_a_subagent(
    tmp_path: Path, wheel_install: WheelInstall
) -> None:
    project, home, api = run_session(tmp_path, wheel_install, Agents, "TASK-COST: write files")
    assert (project / "sub.txt").read_text() == "sub\n"
    session = query(project, "SELECT session_id FROM turns")[0][0]
    transcript = Path(query(project, "SELECT transcript_path FROM sessions")[0][0])
    claude_code = cost_state(transcript)

    def cost(*args: str) -> Any:
        done = subprocess.run(
            [wheel_install.cli, "--project", str(project), "cost", *args, "--json"],
            capture_output=True,
            text=True,
            env={**os.environ, "CLAUDE_CONFIG_DIR": str(home / ".claude")},
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    by_turn = cost("--session", session)
    assert by_turn["by"] == "turn"
    total = by_turn["total"]
    assert round(total["cost_usd"], 2) == round(claude_code["totalCostUSD"], 2)
    assert total["cost_usd"] == pytest.approx(claude_code["totalCostUSD"], abs=1e-9)
    assert by_turn["claude_code_total_usd"] == pytest.approx(claude_code["totalCostUSD"])
    assert by_turn["price_table_models"] == []
    returned = {
        "input_tokens": "input_tokens",
        "output_tokens": "output_tokens",
        "cache_read_tokens": "cache_read_input_tokens",
        "cache_creation_tokens": "cache_creation_input_tokens",
    }
    for ours, api_name in returned.items():
        assert total[ours] == sum(u[api_name] for u in api.usages), ours
    assert total["messages"] == len(api.usages)
    assert [r["source"] for r in by_turn["rows"]] == ["claude_code"]

    by_agent = {r["agent"]: r for r in cost("--session", session, "--by", "agent")["rows"]}
    registered = query(project, "SELECT id FROM agent_registry WHERE is_main = 0")
    assert len(registered) == 1
    subagent = registered[0][0]
    assert set(by_agent) == {"main", subagent}
    assert by_agent[subagent]["type"] == "general-purpose"
    assert by_agent["main"]["messages"] == 3 and by_agent[subagent]["messages"] == 2
    assert sum(r["cost_usd"] for r in by_agent.values()) == pytest.approx(
        claude_code["totalCostUSD"], abs=1e-9
    )
    # the model Claude Code billed, and its figure, carried by the messages exactly
    by_model = {r["model"]: r for r in cost("--session", session, "--by", "model")["rows"]}
    for model, figures in claude_code["modelUsage"].items():
        assert by_model[model]["cost_usd"] == pytest.approx(figures["costUSD"], abs=1e-9)
        assert by_model[model]["input_tokens"] == figures["inputTokens"]
    tools = {r["tool"]: r for r in cost("--session", session, "--by", "tool")["rows"]}
    assert {"Write", "Agent"} <= set(tools) and tools["Write"]["calls"] == 2


FAILING = "python3 -c 'import module_that_is_not_there'"


class WithDeadEnd(Agents):
    """As Agents, then the same failing command three times (the ladder's third step records
    the approach as failed), then an answer: the session ends with the error abandoned."""

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        messages = body.get("messages") or []
        if is_compaction(body) or _has_prompt(messages, SUBTASK):
            return super().__call__(body)
        used = [b["name"] for b in _blocks(messages) if b.get("type") == "tool_use"]
        if len(used) < 2:
            return super().__call__(body)
        if used.count("Bash") < 3:
            return [tool("Bash", command=FAILING, description="try the import")]
        return [text("Done, except the import.")]


def test_a_real_session_shows_its_cost_per_turn_subagent_and_dead_end_everywhere(
    tmp_path: Path, wheel_install: WheelInstall
) -> None:
    """The real CLI: a Write, a subagent, three failures of one command. Every surface a person
    looks at (cost, errors, status, the status line, the web page) shows the same figures, and
    the dead end's tokens are exactly those of the responses between its first failure and its
    last (the answer after the last failure is not the dead end's)."""
    prompt = "TASK-COST: write files, try the import"
    project, home, api = run_session(tmp_path, wheel_install, WithDeadEnd, prompt)
    cli = wheel_cli(wheel_install, project, home)

    session = query(project, "SELECT session_id FROM turns")[0][0]
    transcript = Path(query(project, "SELECT transcript_path FROM sessions")[0][0])
    total = cost_state(transcript)["totalCostUSD"]
    assert len(api.usages) == 8  # Write, Agent, the subagent's two, three Bash, the answer
    by_turn = json.loads(cli("cost", "--session", session, "--json"))
    assert by_turn["total"]["cost_usd"] == pytest.approx(total, abs=1e-9)
    [turn] = by_turn["rows"]
    assert turn["cost_usd"] == pytest.approx(total, abs=1e-9)
    assert turn["result_text"] == "Done, except the import."

    def tokens(n: int) -> int:
        return sum(api.usages[n].values())

    # the dead end: from the first failure (after response 4 asked for it) to the third
    # (after response 6): the two retries' responses
    errors = json.loads(cli("errors", "--json"))
    assert errors and all(e["tool_name"] == "Bash" for e in errors)
    climb = {e["tokens"] for e in errors}
    assert climb == {tokens(5) + tokens(6)}, (climb, api.usages)
    assert all(0 < e["cost_usd"] < total for e in errors)
    dead = by_turn["dead_ends"]
    assert dead["tokens"] == tokens(5) + tokens(6)
    assert 0 < dead["share"] < 1 and dead["cost_usd"] == pytest.approx(dead["share"] * total)
    failed = json.loads(cli("failed-paths", "--all", "--json"))
    assert failed and all(f["tokens"] == tokens(5) + tokens(6) for f in failed), failed

    # status, the status line and the web page say the same total
    status = json.loads(cli("status", "--json"))
    assert status["cost"]["cost_usd"] == pytest.approx(total, abs=1e-9)
    shown = usd(total)
    assert shown in cli("status")
    line = cli("statusline", stdin=json.dumps({"session_id": session, "cwd": str(project)}))
    assert line.startswith(f"cs: ${total:.2f} · ") and len(line.rstrip("\n")) <= 80, line
    agents = {a["agent"]: a for a in json.loads(cli("agents", "--all", "--json"))}
    assert sum(a["cost_usd"] for a in agents.values()) == pytest.approx(total, abs=1e-9)
    [html] = web_pages(str(project), f"session/{session[:8]}")
    assert f"cost {shown} · " in html and 'class="cost-chart"' in html


TOKEN_NAMES = {
    "input_tokens": "inputTokens",
    "output_tokens": "outputTokens",
    "cache_read_tokens": "cacheReadInputTokens",
    "cache_creation_tokens": "cacheCreationInputTokens",
}


def test_tokens_per_model_equal_claude_codes_own_after_a_compaction(
    tmp_path: Path, wheel_install: WheelInstall
) -> None:
    """The real CLI: a Write and a subagent, `/compact` (Claude Code's summariser, a request
    no transcript line holds), then another prompt. Our tokens per model equal the modelUsage
    of the CLI's own JSON result, field by field; the summariser's share is a row of its own,
    labelled, with its cost (not spread over the responses); and `cost` warns about no
    transcript (the summariser's was never written)."""
    binary = claude_binary()
    project, home = installed_project(tmp_path, wheel_install)
    try:
        with FakeAnthropic(Agents(project), usage) as api:
            first = run_claude(binary, project, home, api, "TASK-COST: write files")
            session = first["session_id"]
            compacted = run_claude(binary, project, home, api, "/compact", "--resume", session)
            summaries = [i for i, b in enumerate(api.message_requests()) if is_compaction(b)]
            last = run_claude(binary, project, home, api, "go on", "--resume", session)
        assert compacted.get("local_command") == "compact" and len(summaries) == 1
        assert wait_for(lambda: len(query(project, "SELECT 1 FROM transcript_files")) >= 3, 30)
    finally:
        daemon_control.stop(str(project))
    own = last["modelUsage"]  # Claude Code's totals for the whole session (resumes included)
    assert set(own) and sum(u["inputTokens"] for u in own.values()) == sum(
        u["input_tokens"] for u in api.usages
    )
    summariser = api.usages[summaries[0]]  # what the compaction request used
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(home / ".claude"), "COLUMNS": "200"}

    def cost(*args: str) -> tuple[Any, str]:
        done = subprocess.run(
            [wheel_install.cli, "--project", str(project), "cost", *args],
            capture_output=True,
            text=True,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        return (json.loads(done.stdout) if "--json" in args else done.stdout), done.stderr

    by_model, warnings = cost("--session", session, "--by", "model", "--json")
    rows = {r["model"]: r for r in by_model["rows"]}
    assert set(rows) == set(own), (rows, own)
    for model, figures in own.items():
        for ours, theirs in TOKEN_NAMES.items():
            assert rows[model][ours] == figures[theirs], (model, ours, rows[model], figures)
        assert rows[model]["cost_usd"] == pytest.approx(figures["costUSD"], abs=1e-9)
    assert by_model["transcripts"]["missing"] == [], by_model["transcripts"]
    assert "transcript(s)" not in warnings, warnings

    # every session at once (the rollups) says the same
    every, _ = cost("--by", "model", "--json")
    for model, figures in own.items():
        row = next(r for r in every["rows"] if r["model"] == model)
        assert {k: row[k] for k in TOKEN_NAMES} == {k: figures[v] for k, v in TOKEN_NAMES.items()}

    # the summariser's request is a row of its own, with exactly its tokens, and its cost
    by_agent, _ = cost("--session", session, "--by", "agent", "--json")
    agents = {r["agent"]: r for r in by_agent["rows"]}
    helper = agents[costs.UNATTRIBUTED]
    assert helper["type"] == costs.HELPER_TYPE
    assert {k: helper[k] for k in TOKEN_NAMES} == {
        ours: summariser[api_name] for ours, api_name in returned_names().items()
    }
    assert helper["messages"] == 0 and helper["cost_usd"] > 0
    total = sum(u["costUSD"] for u in own.values())
    assert sum(r["cost_usd"] for r in agents.values()) == pytest.approx(total, abs=1e-9)
    read = {r["agent"]: r for r in agents.values() if r["agent"] != costs.UNATTRIBUTED}
    assert sum(r["messages"] for r in read.values()) == len(api.usages) - 1

    # the same on the screen: the row is there, no warning about a transcript
    shown, warnings = cost("--session", session, "--by", "agent")
    assert costs.UNATTRIBUTED in shown and costs.HELPER_TYPE in shown, shown
    assert "transcript(s)" not in shown + warnings, shown + warnings
    shown, warnings = cost()
    assert "transcript(s)" not in shown + warnings, shown + warnings


def returned_names() -> dict[str, str]:
    return {
        "input_tokens": "input_tokens",
        "output_tokens": "output_tokens",
        "cache_read_tokens": "cache_read_input_tokens",
        "cache_creation_tokens": "cache_creation_input_tokens",
    }
