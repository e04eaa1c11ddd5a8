"""A sample of generated histories through the real Claude Code CLI 2.1.330: each one a
sequence, drawn from a seed, of sessions that run a command that fails or passes, fix or break
the file it depends on, compact (twice in a row too), resume, or are killed in the middle of a
step; the scripted model plays it. Every statement claude-session puts before the model is
checked when the model reads it against what Claude Code really sent and what really happens
when the command is run again (tests/truth.py): zero false, and none no rule can read.

The fast tier checks hundreds of histories through the hook entry (tests/histories.py); this
is the proof that the same hold with the real client's payloads, transcripts and timing.
"""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import WheelInstall, wait_for
from fake_api import FakeAnthropic, is_compaction, text, tool
from test_e2e_truth import Scenario, _latest_prompt, _results

pytestmark = pytest.mark.e2e

COMMAND = "python3 migrate.py"
GOOD, BAD = "print('migrated')\n", "raise SystemExit('bad row 7')\n"
STEPS = ("run", "run", "fix", "break", "compact", "compact twice", "kill", "resume")


def plan(seed: int, length: int = 7) -> list[str]:
    """One history: what each `claude -p` of it does, in order."""
    chosen = random.Random(seed)
    return ["run", *(chosen.choice(STEPS) for _ in range(length - 1))]


class Player:
    """The scripted model: each prompt names its step; a step's tool calls, then a word."""

    def __init__(self, s: Scenario) -> None:
        self.s = s
        self.path = str(s.project / "migrate.py")

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        if is_compaction(body):
            return [text("<summary>The migration was run and its file changed.</summary>")]
        self.s.truth.read(body, "main")
        step = _latest_prompt(body)
        calls = {
            "HISTORY: run": [lambda: tool("Bash", command=COMMAND, description="migrate")],
            "HISTORY: fix": [lambda: tool("Write", file_path=self.path, content=GOOD)],
            "HISTORY: break": [lambda: tool("Write", file_path=self.path, content=BAD)],
            "HISTORY: kill": [lambda: tool("Bash", command="sleep 30", description="long")],
        }.get(step, [])
        turn = _results({"messages": _this_turn(body)})
        return [calls[turn]()] if turn < len(calls) else [text("Done.")]


def _this_turn(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages from the prompt of the turn under way on (a resumed conversation carries
    the earlier turns, their tool results with them)."""
    messages = body.get("messages") or []
    for i in range(len(messages) - 1, -1, -1):
        content = messages[i].get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if messages[i].get("role") == "user" and any(
            b.get("type") == "text" and str(b.get("text", "")).startswith("HISTORY:")
            for b in blocks or []
        ):
            return messages[i:]
    return messages


@pytest.mark.parametrize("seed", [1, 2])
def test_a_generated_history_with_the_real_cli_is_told_only_the_truth(
    tmp_path: Path, wheel_install: WheelInstall, seed: int
) -> None:
    s = Scenario(tmp_path, wheel_install, "command")
    (s.project / "migrate.py").write_text(BAD)
    s.truth.runnable.add(COMMAND)
    steps = plan(seed)
    session: str | None = None
    gone: str | None = None  # a killed session, to resume
    try:
        with FakeAnthropic(Player(s)) as api:
            for step in steps:
                resume = ["--resume", session] if session else []
                if step == "resume" and gone:
                    s.run(api, "HISTORY: resume", "--resume", gone)
                    session, gone = gone, None
                elif step.startswith("compact") and session:
                    for _ in range(2 if step == "compact twice" else 1):
                        s.run(api, "/compact", *resume)
                elif step == "kill":
                    process = s.claude(api, "HISTORY: kill", *resume)
                    assert wait_for(lambda: _sleeping(s), 120)
                    session = _latest_session(s)
                    s.truth.processes[session] = process
                    os.kill(process.pid, signal.SIGKILL)
                    process.wait(30)
                    gone, session = session, None
                    time.sleep(1)
                else:
                    name = step if step in ("run", "fix", "break") else "run"
                    found = s.run(api, f"HISTORY: {name}", *resume)
                    session = str(found["session_id"])
    finally:
        s.stop()
    shown = f"history {steps}:\n{s.report()}"
    assert not s.truth.false(), shown
    assert s.truth.count() > 0, shown
    print(f"\n[seed {seed}] {steps}: {s.truth.count()} statements checked, 0 false")
    print(s.report())


def _sleeping(s: Scenario) -> bool:
    return any(
        e["hook_event_name"] == "PreToolUse"
        and (e["tool_input"] or {}).get("command") == "sleep 30"
        for e in s.tap.sent()
    )


def _latest_session(s: Scenario) -> str:
    starts = [e for e in s.tap.sent() if e["hook_event_name"] == "SessionStart"]
    return str(starts[-1]["session_id"])
