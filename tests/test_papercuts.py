"""Issue 32's paper cuts, each as a user meets it: the installed CLI, piped, and --json."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import AGENTS, BUSY_SESSION, run_cli


def test_sessions_lists_the_sessions(finished: Path) -> None:
    done = run_cli(finished, "sessions", "--wide")
    assert done.returncode == 0, done.stderr
    assert BUSY_SESSION[:8] in done.stdout
    for column in ("session", "state", "started", "prompts", "compacts", "forks"):
        assert column in done.stdout
    rows = json.loads(run_cli(finished, "sessions", "--json").stdout)
    (row,) = rows
    assert row["session_id"] == BUSY_SESSION
    assert row["state"] == "ended"
    assert row["prompts"] == 1 and row["compactions"] == 1 and row["forks"] == 0
    assert {"started_at", "ended_at", "tool_calls", "cost_usd"} <= row.keys()
    streamed = json.loads(run_cli(finished, "sessions", "--all", "--json").stdout)
    assert [r["session_id"] for r in streamed] == [BUSY_SESSION]
    assert run_cli(finished, "sessions", "--limit", "1").returncode == 0


def test_agents_of_a_named_ended_session(finished: Path) -> None:
    done = run_cli(finished, "agents", "--session", BUSY_SESSION[:8])
    assert done.returncode == 0, done.stderr
    assert "none" not in done.stdout.split("\n")[0]
    rows = json.loads(run_cli(finished, "agents", "--session", BUSY_SESSION, "--json").stdout)
    assert set(AGENTS) <= {row["agent"] for row in rows}
    # without a session named, the ended session's agents stay hidden, as before
    assert json.loads(run_cli(finished, "agents", "--json").stdout) == []
