"""Cost by the accounting rule with the real Claude Code CLI 2.1.332 (2.1.330 behaves the same:
checked by hand, and its cost-state is asserted by tests/test_e2e_cost.py) against a
scripted Messages API whose every response reports 5-minute and 1-hour cache writes and a
request id, as the real API does:

1. a session's first process is killed (SIGKILL) while it waits for its second response: the
   first response is in the transcript and in no cost-state;
2. `--resume` runs two more: Claude Code's own figure is theirs alone (it lost the first);
3. `--resume --fork-session` runs two more in a fork: Claude Code's figure for the fork is
   cumulative (its parent's last, then its own).

`claude-session cost` (the installed wheel) gives each session what it spent, response by
response at Claude Code's prices (the 1-hour writes at twice the input price): the parent all
three of its responses, the fork its own two, the status line the same."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import WheelInstall, installed_project, query, wait_for, wheel_cli
from fake_api import FakeAnthropic, text, tool
from test_e2e_claude import claude_binary, claude_env, run_claude

from claude_session.core import prices
from claude_session.services.background import daemon_control

pytestmark = pytest.mark.e2e

MODEL = "claude-opus-5-5"  # Claude Code's default model; its prices are in our table


def usage(n: int) -> dict[str, Any]:
    """Each response its own counts, with a 5-minute / 1-hour split of its cache writes."""
    five, hour = 40 + 3 * n, 200 + 7 * n
    return {
        "input_tokens": 100 + n,
        "output_tokens": 20 + n,
        "cache_read_input_tokens": 1000 * n,
        "cache_creation_input_tokens": five + hour,
        "cache_creation": {"ephemeral_5m_input_tokens": five, "ephemeral_1h_input_tokens": hour},
    }


def price(used: dict[str, Any]) -> float:
    """What Claude Code bills for one response of MODEL."""
    found, _ = prices.lookup(MODEL)
    assert found is not None
    counts = {
        "input_tokens": used["input_tokens"],
        "output_tokens": used["output_tokens"],
        "cache_read_tokens": used["cache_read_input_tokens"],
        "cache_creation_tokens": used["cache_creation_input_tokens"],
        "cache_1h_tokens": used["cache_creation"]["ephemeral_1h_input_tokens"],
    }
    return prices.cost(found, counts)


class Script:
    """A Write, then an answer; in the first process the second request never returns."""

    def __init__(self, project: Path) -> None:
        self.project = project
        self.hang = threading.Event()  # set once the hanging request came
        self.release = threading.Event()

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        messages = body.get("messages") or []
        last = json.dumps(messages[-1]) if messages else ""
        if "HANG" in json.dumps(messages) and "tool_result" in last and not self.hang.is_set():
            self.hang.set()
            self.release.wait(60)
            return [text("too late")]
        if "tool_result" in last:
            return [text("done")]
        name = f"f{len(messages)}-{time.monotonic_ns()}.txt"
        return [tool("Write", file_path=str(self.project / name), content="x\n")]


def test_a_kill_a_resume_and_a_fork_cost_what_each_spent(
    tmp_path: Path, wheel_install: WheelInstall
) -> None:
    binary = claude_binary("2.1.332")
    project, home = installed_project(tmp_path, wheel_install)
    script = Script(project)
    try:
        with FakeAnthropic(script, usage) as api:
            flags = ["--output-format", "json", "--dangerously-skip-permissions"]
            first = subprocess.Popen(
                [str(binary), "-p", "HANG: write a file", *flags],
                cwd=project,
                env=claude_env(home, api.url),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            assert script.hang.wait(120), "the first process never sent its second request"
            killed = len(api.usages)  # the responses it got: the Write only
            first.kill()
            first.wait(30)
            session = query(project, "SELECT session_id FROM sessions")[0][0]
            resumed = run_claude(binary, project, home, api, "write more", "--resume", session)
            after_resume = len(api.usages)
            fork = run_claude(
                binary, project, home, api, "write in a fork", "--resume", session,
                "--fork-session",
            )  # fmt: skip
            after_fork = len(api.usages)
            script.release.set()  # its answer, to a dead process, counts for no one
        assert killed == 1 and after_resume - killed == 2 and after_fork - after_resume == 2
        forked = fork["session_id"]
        assert forked != session and resumed["session_id"] == session
        assert wait_for(
            lambda: len(query(project, "SELECT DISTINCT session_id FROM transcript_files")) == 2,
            60,
        ), "the daemon read no transcript of the fork"
    finally:
        daemon_control.stop(str(project))
    spent = [price(u) for u in api.usages[:after_fork]]
    parent_truth = spent[0] + spent[1] + spent[2]
    fork_truth = spent[3] + spent[4]
    # Claude Code's own figures: the resumed process lost the killed one's response, the fork
    # carries its parent's whole cost
    assert resumed["total_cost_usd"] == pytest.approx(spent[1] + spent[2], abs=1e-9)
    assert fork["total_cost_usd"] == pytest.approx(spent[1] + spent[2] + fork_truth, abs=1e-9)

    cli = wheel_cli(wheel_install, project, home)
    for sid, truth, messages in ((session, parent_truth, 3), (forked, fork_truth, 2)):
        found = json.loads(cli("cost", "--session", sid, "--json"))
        total = found["total"]
        assert total["cost_usd"] == pytest.approx(truth, abs=1e-9), (sid, total, spent)
        assert total["messages"] == messages
        assert total["estimated"] is False and found["estimated_models"] == []
        line = cli("statusline", stdin=json.dumps({"session_id": sid, "cwd": str(project)}))
        assert line.startswith(f"cs: ${truth:.2f} · "), line
        # Claude Code's live figure for a resumed or forked session is not its own: not shown
        live = {"session_id": sid, "cwd": str(project), "cost": {"total_cost_usd": 99.0}}
        assert "$99" not in cli("statusline", stdin=json.dumps(live))
    every = json.loads(cli("cost", "--json"))
    rows = {r["session_id"]: r["cost_usd"] for r in every["rows"]}
    assert rows == {session: pytest.approx(parent_truth), forked: pytest.approx(fork_truth)}
    assert every["total"]["cost_usd"] == pytest.approx(parent_truth + fork_truth, abs=1e-9)
    # the killed process's response, in no cost-state, priced from the table: 1-hour writes at
    # twice the input price
    killed_row = query(
        project,
        "SELECT cost_usd, cost_source, cache_1h_tokens FROM message_usage WHERE session_id = ?"
        " ORDER BY at LIMIT 1",
        (session,),
    )[0]
    assert killed_row[1] == "price_table" and killed_row[2] == 200
    assert killed_row[0] == pytest.approx(spent[0], abs=1e-12)
    copies = query(project, "SELECT owner FROM response_copies WHERE session_id = ?", (forked,))
    assert copies and {c[0] for c in copies} == {session}
