"""`claude-session hooks` against the real Claude Code CLI 2.1.330 and a scripted Messages
API: our hooks installed (mcp_tool, which Claude Code times on every run) beside another
plugin's command hooks in .claude/settings.json (one that prints, which Claude Code times; a
silent Stop hook, which only the Stop summary times). Every figure `hooks --json` gives is
the one the transcript's own lines give, read here from the file directly."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

import pytest
from conftest import query, run_cli
from fake_api import FakeAnthropic, text, tool
from test_e2e_claude import _blocks, claude_binary, run_claude
from test_e2e_transport import install_mcp, new_home

from claude_session.core import hook_contract
from claude_session.services.background import daemon_control

pytestmark = pytest.mark.e2e

OTHER = "echo other-plugin-was-here"
SILENT = "cat >/dev/null"
TIMED = ("hook_success", "hook_non_blocking_error", "hook_cancelled", "hook_error_during_execution")


def script(project: Path) -> Any:
    def answer(body: dict[str, Any]) -> list[dict[str, Any]]:
        used = [b for b in _blocks(body.get("messages") or []) if b.get("type") == "tool_use"]
        plan = [
            tool("Write", file_path=str(project / "a.txt"), content="a\n"),
            tool("Bash", command="cat a.txt", description="read it back"),
        ]
        return [plan[len(used)]] if len(used) < len(plan) else [text("Done.")]

    return answer


def from_transcript(path: Path) -> dict[tuple[str, str], list[float | None]]:
    """(command, event) -> durations, as Claude Code's lines give them (None: a run it wrote
    without a time, an mcp_tool hook that answered JSON): a Stop hook's run is the Stop
    summary's (its attachment with the same toolUseID is the same run)."""
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    summaries = {
        e["toolUseID"] for e in lines if e.get("type") == "system"
        and e.get("subtype") == "stop_hook_summary"
    }  # fmt: skip
    found: dict[tuple[str, str], list[float | None]] = {}
    for e in lines:
        a = e.get("attachment") or {}
        if e.get("type") == "attachment" and a.get("type") in TIMED:
            if a["hookEvent"] == "Stop" and a.get("toolUseID") in summaries:
                continue
            ms = a.get("durationMs")
            found.setdefault((a["command"], a["hookEvent"]), []).append(
                None if ms is None else float(ms)
            )
        if e.get("type") == "system" and e.get("subtype") == "stop_hook_summary":
            for info in e["hookInfos"]:
                found.setdefault((info["command"], "Stop"), []).append(float(info["durationMs"]))
    return found


def test_hooks_report_equals_what_the_transcript_says(project: Path) -> None:
    binary = claude_binary()
    home = new_home(project)
    install_mcp(project, home, binary)
    other = {
        "hooks": {
            "PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": OTHER}]}],
            "Stop": [{"hooks": [{"type": "command", "command": SILENT}]}],
        }
    }
    (project / ".claude" / "settings.json").write_text(json.dumps(other))
    try:
        with FakeAnthropic(script(project)) as api:
            result = run_claude(binary, project, home, api, "TASK-HOOKS: write and read")
    finally:
        daemon_control.stop(str(project))
    session = result["session_id"]
    transcript = Path(query(project, "SELECT transcript_path FROM sessions")[0][0])
    expected = from_transcript(transcript)
    ours = hook_contract.HOOK_RUN_NAME
    # what this test stands on: Claude Code timed our mcp_tool hooks, the printing hook, and
    # the silent one at Stop alone
    assert (OTHER, "PreToolUse") in expected and (SILENT, "Stop") in expected
    assert (ours, "PreToolUse") in expected and (ours, "Stop") in expected

    env = {"CLAUDE_CONFIG_DIR": str(home / ".claude")}
    done = run_cli(project, "hooks", "--session", session, "--json", "--all", **env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    rows = {(r["command"], r["event"]): r for r in report["rows"]}
    assert set(expected) <= set(rows)
    for key, given in expected.items():
        row = rows[key]
        durations = [d for d in given if d is not None]
        ordered = sorted(durations)
        assert row["measured"] == len(durations), key
        assert row["runs"] == len(given), key
        assert row["unmeasured"] == len(given) - len(durations), key
        if not durations:
            assert row["total_ms"] is None, key
            continue
        assert row["total_ms"] == pytest.approx(sum(durations)), key
        assert row["median_ms"] == pytest.approx(statistics.median(durations)), key
        assert row["p90_ms"] == ordered[math.ceil(0.9 * len(ordered)) - 1], key
        assert row["max_ms"] == max(durations), key
        assert row["ours"] is (key[0] == ours), key
    total = sum(sum(d for d in given if d is not None) for given in expected.values())
    assert report["total"]["total_ms"] == pytest.approx(total)
    assert report["wall_time_ms"] > 0
    assert report["total"]["share"] == pytest.approx(total / report["wall_time_ms"])
    # our command hooks (SessionStart, SessionEnd: no mcp_tool there) ran, Claude Code timed
    # none of them: counted from our own records, never given a time
    untimed = {r["event"]: r for r in report["rows"] if r["ours"] and not r["measured"]}
    assert "SessionStart" in untimed and untimed["SessionStart"]["total_ms"] is None
    # the session has one turn: the turn's report is the session's, without SessionStart's
    done = run_cli(project, "hooks", "--session", session, "--turn", "1", "--json", **env)
    assert done.returncode == 0, done.stderr
    turn = {(r["command"], r["event"]): r for r in json.loads(done.stdout)["rows"]}
    assert turn[(OTHER, "PreToolUse")]["runs"] == len(expected[(OTHER, "PreToolUse")])
    # status says the same total for the latest session, by the same clock
    done = run_cli(project, "status", "--json", **env)
    assert done.returncode == 0, done.stderr
    told = json.loads(done.stdout)["hook_time"]
    assert told["session_id"] == session and told["clock"] == report["clock"]
    assert told["total_ms"] == pytest.approx(total)
    # people's table: the other plugin named, ours marked
    done = run_cli(project, "hooks", "--session", session, COLUMNS="200", **env)
    assert done.returncode == 0, done.stderr
    assert OTHER in done.stdout and "yes" in done.stdout
