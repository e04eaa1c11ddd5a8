"""Who runs beside whom: the agent tree, liveness by process, and conflicts decided from both.

Events go through `events.apply` and the hook's own answer step (tests/inproc.py) on recorded
payloads; the Claude Code processes are real processes this test starts and kills.
"""

from __future__ import annotations

import itertools
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import fixture
from inproc import Recorder, as_agent

from claude_session.core import processes, relations
from claude_session.core.readings import CLAUDE_EXITED
from claude_session.services import queries

S1, S2 = "tree-session-0001", "tree-session-0002"
FILE = "shared.py"
_ids = itertools.count(1)


class Run:
    """One project's sessions, fed through the recorder with a clock that moves a second a
    step, as Claude Code would send them."""

    def __init__(self, project: Path) -> None:
        self.project = project
        self.rec = Recorder(project)

    def send(self, name: str, session: str = S1, agent: str | None = None, **changes: Any) -> Any:
        self.rec.advance(1)
        process = changes.pop("process", None)
        payload = as_agent(fixture(name, self.project), session, agent) | changes
        return self.rec.send(payload, process)[1]

    def start(self, session: str = S1, source: str = "startup", process: Any = None) -> Any:
        name = "SessionStart.resume" if source == "resume" else "SessionStart.startup"
        return self.send(name, session, process=process)

    def edit(self, agent: str | None, session: str = S1, path: str = FILE) -> str | None:
        """A Write by `agent` (None: the main thread); what its PreToolUse told it."""
        target = str(self.project / path)
        tool_input = {"file_path": target, "content": "x\n"}
        use = f"toolu_tree_{next(_ids)}"
        answer = self.send(
            "PreToolUse.Write", session, agent, tool_input=tool_input, tool_use_id=use
        )
        self.send("PostToolUse.Write", session, agent, tool_input=tool_input, tool_use_id=use)
        return _context(answer)

    def launch(
        self, agent: str, background: bool | None, session: str = S1, parent: str | None = None
    ) -> None:
        """The Agent call that starts `agent`; a background one returns at once
        (`async_launched`, as Claude Code answers since 2.1.198)."""
        use = f"toolu_tree_{next(_ids)}"
        tool_input: dict[str, Any] = {
            "description": f"work of {agent}",
            "prompt": f"fix {FILE}",
            "subagent_type": "general-purpose",
        }
        if background is not None:
            tool_input["run_in_background"] = background
        self.send("PreToolUse.Agent", session, parent, tool_input=tool_input, tool_use_id=use)
        self.send("SubagentStart", session, agent_id=agent, agent_type="general-purpose")
        if background:
            response = fixture("PostToolUse.Agent")["tool_response"] | {"agentId": agent}
            self.send(
                "PostToolUse.Agent",
                session,
                parent,
                tool_input=tool_input,
                tool_use_id=use,
                tool_response=response,
            )

    def contested(self) -> dict[str, list[tuple[str, str]]]:
        return relations.contested(self.rec.conn, self.rec.now)

    def rows(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        return self.rec.rows(sql, params)


def _context(answer: Any) -> str | None:
    if not answer:
        return None
    output = answer["hookSpecificOutput"]
    return output.get("additionalContext") or output.get("permissionDecisionReason")


@pytest.fixture
def run(tmp_path: Path) -> Iterator[Run]:
    project = tmp_path / "project"
    project.mkdir()
    found = Run(project)
    yield found
    found.rec.close()


@pytest.fixture
def claude() -> Iterator[Any]:
    """Stand-ins for Claude Code processes: each a real process, killed with SIGKILL when the
    test says so; returns (pid, start ticks, pid space) as a hook records them."""
    started: list[subprocess.Popen[bytes]] = []

    def spawn() -> tuple[subprocess.Popen[bytes], tuple[int, int, str]]:
        proc = subprocess.Popen(["sleep", "120"])
        started.append(proc)
        space = processes.pid_space()
        assert space is not None, "this test needs /proc"
        return proc, (proc.pid, processes._stat(proc.pid)[3], space)

    yield spawn
    for proc in started:
        proc.kill()
        proc.wait()


def kill(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait()


@pytest.mark.parametrize("background", [False, True, None])
def test_a_file_handed_to_a_child_is_delegation_not_a_conflict(
    run: Run, background: bool | None
) -> None:
    """The main thread writes the file, then launches a subagent (foreground, background, or
    Claude Code's default) to fix it: the subagent is not told to leave it to the main thread,
    and nothing shows the file as contested."""
    run.start()
    assert run.edit(None) is None
    run.launch("a-child", background)
    assert run.edit("a-child") is None
    assert run.edit("a-child") is None
    assert run.contested() == {}
    claims = queries.claims(run.rec.conn)
    assert len(claims) == 2 and not any(c["contested"] for c in claims)
    parent, bg = run.rows("SELECT parent_id, background FROM agent_registry WHERE id = 'a-child'")[
        0
    ]
    assert parent == S1
    assert bg == (1 if background else (0 if background is False else None))


def test_a_parent_editing_beside_its_background_child_is_warned_and_so_is_the_child(
    run: Run,
) -> None:
    run.start()
    run.launch("bg-child", True)
    assert run.edit("bg-child") is None  # the parent never touched it: nothing to warn of
    warned = run.edit(None)
    assert warned is not None
    assert "your background subagent bg-child (general-purpose)" in warned
    assert "wait for its result" in warned
    warned = run.edit("bg-child")  # the parent changed it after the launch: a real conflict
    assert warned is not None
    assert "your parent, the main thread, still working" in warned
    assert "re-read the file right before any edit" in warned
    assert sorted(run.contested()[FILE]) == [(S1, "bg-child"), (S1, "main")]


def test_siblings_on_one_file_are_warned_and_the_parent_that_handed_it_over_is_not(
    run: Run,
) -> None:
    run.start()
    run.edit(None)
    run.launch("sib-a", True)
    run.launch("sib-b", True)
    assert run.edit("sib-a") is None
    warned = run.edit("sib-b")
    assert warned is not None
    assert "a sibling subagent, subagent sib-a (general-purpose)" in warned
    assert "main thread" not in warned  # the parent handed the file over before either ran
    assert "report back to your parent" in warned
    assert sorted(run.contested()[FILE]) == [(S1, "sib-a"), (S1, "sib-b")]


def test_a_foreground_child_that_never_said_it_stopped_does_not_warn_its_parent(
    run: Run,
) -> None:
    """A parent acts again only once its foreground child is done: a claim that child left
    (its SubagentStop lost) is no conflict for the parent."""
    run.start()
    run.launch("fg-child", False)
    run.edit("fg-child")
    assert run.edit(None) is None
    assert run.contested() == {}


def test_another_sessions_agent_is_named_as_such(run: Run) -> None:
    run.start(S1)
    run.launch("other-agent", True, S1)
    run.edit("other-agent", S1)
    run.start(S2)
    warned = run.edit(None, S2)
    assert warned is not None
    assert "subagent other-agent (general-purpose) of session tree-ses" in warned
    assert "another Claude Code session" in warned


def test_claude_code_killed_mid_subagent_then_a_new_session_a_second_later(
    run: Run, claude: Any
) -> None:
    """Nothing of the killed session is called live: its subagent and main thread are not under
    'Live subagents', the main thread is never called a subagent, and the session is reported
    as interrupted with the exact command that resumes it."""
    first, first_process = claude()
    run.start(S1, process=first_process)
    run.send("UserPromptSubmit", S1, prompt="fix the parser", process=first_process)
    run.launch("long-runner", True, S1)
    run.send("PreToolUse.Bash", S1, "long-runner", tool_input={"command": "sleep 600"})
    run.edit("long-runner", S1)
    kill(first)
    # before any new session: the answers built now already know (no sweep has run)
    agents = {a["agent"]: a["state"] for a in queries.agents(run.rec.conn)}
    assert agents == {S1: queries.EXITED, "long-runner": queries.EXITED}
    assert run.edit(None, S2) is None  # a dead holder is no conflict
    second, second_process = claude()
    text = _context(run.start(S2, process=second_process))
    assert text is not None
    assert "Live subagents" not in text
    assert "long-runner" not in text.split("## Sessions that never ended")[0]
    assert f"{S1} never ended: interrupted (Claude Code exited without ending it" in text
    assert f"`claude --resume {S1}` in {run.project}" in text
    assert run.rows("SELECT status, end_reason FROM sessions WHERE session_id = ?", (S1,)) == [
        ("ended", CLAUDE_EXITED)
    ]
    states = dict(run.rows("SELECT id, status FROM agent_registry WHERE session_id = ?", (S1,)))
    assert states == {S1: "completed", "long-runner": "aborted_stale"}
    kill(second)


def test_a_resumed_session_leaves_its_earlier_processs_subagents_behind(
    run: Run, claude: Any
) -> None:
    first, first_process = claude()
    run.start(S1, process=first_process)
    run.launch("old-runner", True, S1)
    kill(first)
    second, second_process = claude()
    run.start(S1, source="resume", process=second_process)
    states = dict(run.rows("SELECT id, status FROM agent_registry WHERE session_id = ?", (S1,)))
    assert states == {S1: "running", "old-runner": "aborted_stale"}
    kill(second)


def test_a_session_running_beside_is_named_and_a_dead_one_is_not(run: Run, claude: Any) -> None:
    first, first_process = claude()
    run.start(S1, process=first_process)
    run.send("UserPromptSubmit", S1, prompt="refactor the parser", process=first_process)
    second, second_process = claude()
    text = _context(run.start(S2, process=second_process))
    assert text is not None
    section = text.split("## Other sessions running in this project now")[1]
    assert S1 in section and "refactor the parser" in section
    kill(first)
    third, third_process = claude()
    text = _context(run.start("tree-session-0003", process=third_process)) or ""
    beside = text.split("## Other sessions running in this project now")[1].split("##")[0]
    assert S2 in beside and S1 not in beside  # S2 still runs; S1's Claude Code is gone
    assert f"{S1} never ended: interrupted" in text
    kill(second)
    kill(third)
