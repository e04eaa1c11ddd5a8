"""Errors judged by what happened next: a failure whose files changed since is to be re-run,
never a dead end, whatever its class; the same command (or a check over the same files)
passing anywhere in the session resolves its ladder and its failed approaches.

Recorded payloads through `events.apply` (tests/inproc.py), read back as the model gets them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import fixture
from inproc import Recorder, as_agent

from claude_session.core import context

SESSION = "outcome-session-1"
CHECK = "python3 -c 'import m; assert m.f() == 2'"


def traceback(root: Path) -> str:
    return (
        "Exit code 1\nTraceback (most recent call last):\n"
        '  File "<string>", line 1, in <module>\n'
        f'  File "{root}/m.py", line 2, in f\n    assert x == 2\nAssertionError'
    )


class Session:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.rec = Recorder(root)
        self.send("SessionStart.startup")
        self.send("UserPromptSubmit", prompt="make f return 2")

    def send(self, name: str, agent: str | None = None, **changes: Any) -> Any:
        self.rec.advance(1)
        return self.rec.send(as_agent(fixture(name, self.root), SESSION, agent) | changes)[1]

    def fail(self, command: str, error: str, agent: str | None = None) -> None:
        self.send("PostToolUseFailure.Bash", agent, tool_input={"command": command}, error=error)

    def passes(self, command: str, agent: str | None = None) -> None:
        self.send("PostToolUse.Bash", agent, tool_input={"command": command})

    def write(self, path: str, agent: str | None = None) -> None:
        tool_input = {"file_path": str(self.root / path), "content": "def f():\n    return 2\n"}
        self.send("PostToolUse.Write", agent, tool_input=tool_input)

    def subagent(self, agent: str) -> None:
        self.send("SubagentStart", agent_id=agent, agent_type="general-purpose")

    def restored(self) -> str:
        return context.for_compaction(self.rec.conn, SESSION, self.rec.now)

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        return self.rec.rows(sql)


def section(text: str, title: str) -> str:
    if f"## {title}" not in text:
        return ""
    return text.split(f"## {title}")[1].split("\n## ")[0].split("</claude-session")[0]


DEAD_ENDS = "Failed approaches: do not repeat these"
OPEN = "Open errors (not yet fixed)"
RERUN = "To re-run: files they depend on changed since they last failed"


@pytest.fixture
def session(tmp_path: Path) -> Session:
    root = tmp_path / "project"
    root.mkdir()
    return Session(root)


def test_a_failing_command_whose_file_a_subagent_changed_is_to_rerun_not_a_dead_end(
    session: Session,
) -> None:
    for _ in range(3):
        session.fail(CHECK, traceback(session.root))
    category, at_fault = session.rows("SELECT error_category, file_path FROM error_log")[0]
    assert (category, at_fault) == ("runtime", "m.py")  # not a "check" to the classifier
    before = session.restored()
    assert "python3 -c" in section(before, DEAD_ENDS)
    assert "python3 -c" in section(before, OPEN)
    session.subagent("fixer")
    session.write("m.py", "fixer")
    after = session.restored()
    assert section(after, DEAD_ENDS) == ""
    assert section(after, OPEN) == ""
    rerun = section(after, RERUN)
    assert "m.py changed since by subagent fixer (Write)" in rerun
    assert rerun.count("re-run to confirm") == 1  # the error; its failed approach is not said again


def test_a_change_to_another_file_leaves_a_runtime_failure_as_it_was(session: Session) -> None:
    for _ in range(3):
        session.fail(CHECK, traceback(session.root))
    session.write("unrelated.py")
    text = session.restored()
    assert "python3 -c" in section(text, DEAD_ENDS)
    assert "python3 -c" in section(text, OPEN)
    assert section(text, RERUN) == ""


def test_the_same_command_passing_in_a_subagent_resolves_the_ladder_and_its_approach(
    session: Session,
) -> None:
    for _ in range(3):
        session.fail(CHECK, traceback(session.root))
    session.subagent("fixer")
    session.write("m.py", "fixer")
    session.passes(CHECK, "fixer")
    assert session.rows("SELECT DISTINCT resolution FROM error_log") == [("auto_fixed",)]
    assert session.rows("SELECT still_relevant FROM failed_paths") == [(0,)]
    text = session.restored()
    assert "python3 -c" not in text


def test_a_check_over_the_same_files_passing_resolves_a_narrower_run(session: Session) -> None:
    failing = "pytest tests/test_parse.py -k slow"
    for _ in range(2):
        session.fail(failing, "Exit code 1\nFAILED tests/test_parse.py::test_slow - assert 1 == 2")
    session.passes("pytest tests/test_parse.py tests/test_other.py")
    assert session.rows("SELECT DISTINCT resolution FROM error_log") == [("auto_fixed",)]


def test_a_passing_check_over_other_files_resolves_nothing(session: Session) -> None:
    failing = "pytest tests/test_parse.py"
    for _ in range(2):
        session.fail(failing, "Exit code 1\nFAILED tests/test_parse.py::test_slow - assert 1 == 2")
    session.passes("pytest tests/test_other.py")
    session.passes("cat tests/test_parse.py")  # names the file, but checks nothing
    assert session.rows("SELECT DISTINCT resolution FROM error_log") == [(None,)]
