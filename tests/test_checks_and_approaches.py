"""A failing check (tests, build, lint, type check) is an error to fix and re-run, never an
approach not to repeat; its ladder is resolved by the same check passing anywhere in the
project; a check whose code changed since it failed is to be re-run, not "still failing"; and
what an ended session left open is shown as abandoned. Through the real hook processes."""

from __future__ import annotations

from itertools import count as counter
from pathlib import Path
from typing import Any

from conftest import fixture, query, run_hook

MAIN = "560819af-56fc-4528-be0a-32a24d1aa819"
NEXT = "93a0fe30-97e0-463f-b74a-dcf3bfd9a886"
SUBAGENT = "a026341fa5086f41e"
CHECK = "python3 -m pytest -q test_calc.py"
CHECK_ERROR = (
    "Exit code 1\nF\n============================ FAILURES ============================\n"
    "FAILED test_calc.py::test_add - assert -1 == 3\n1 failed in 0.01s"
)
_ids = counter(1)


def bash_failure(project: Path, session: str, command: str, error: str) -> dict[str, Any]:
    payload = fixture("PostToolUseFailure.Bash", project) | {"session_id": session}
    payload["tool_use_id"] = f"toolu_c{next(_ids)}"
    payload["tool_input"] = {"command": command, "description": "run"}
    payload["error"] = error
    return payload


def fail(project: Path, session: str, command: str, error: str = CHECK_ERROR) -> str:
    """Run a failing Bash command's hook; the guidance the model was given."""
    answer = run_hook("PostToolUseFailure", bash_failure(project, session, command, error), project)
    found = answer.json()
    assert found is not None
    return str(found["hookSpecificOutput"]["additionalContext"])


def succeed(project: Path, session: str, command: str) -> None:
    payload = fixture("PostToolUse.Bash", project) | {"session_id": session}
    payload["tool_use_id"] = f"toolu_c{next(_ids)}"
    payload["tool_input"] = {"command": command, "description": "run"}
    assert run_hook("PostToolUse", payload, project).stdout == ""


def subagent_fixes_calc(project: Path) -> None:
    """A subagent of the main session edits calc.py (after the check's failures)."""
    run_hook("SubagentStart", fixture("SubagentStart", project) | {"session_id": MAIN}, project)
    edit = fixture("PostToolUse.Edit", project) | {
        "session_id": MAIN,
        "tool_use_id": f"toolu_c{next(_ids)}",
        "agent_id": SUBAGENT,
        "agent_type": "general-purpose",
    }
    edit["tool_input"] = edit["tool_input"] | {
        "file_path": str(project / "calc.py"),
        "old_string": "return a - b",
        "new_string": "return a + b",
    }
    run_hook("PostToolUse", edit, project)


def start(project: Path, session: str, source: str = "startup") -> str | None:
    payload = fixture(f"SessionStart.{source}", project) | {"session_id": session}
    answer = run_hook("SessionStart", payload, project).json()
    return None if answer is None else str(answer["hookSpecificOutput"]["additionalContext"])


def section(text: str, title: str) -> str:
    """The lines of one `## title` section of a restored context ('' when absent)."""
    if f"## {title}" not in text:
        return ""
    return text.split(f"## {title}", 1)[1].split("\n## ", 1)[0].split("</claude-session", 1)[0]


def test_a_failing_check_is_an_error_to_rerun_and_never_a_failed_path(project: Path) -> None:
    start(project, MAIN)
    answers = [fail(project, MAIN, CHECK) for _ in range(3)]
    # the ladder still escalates: research at the third failure, but no "do not repeat"
    assert "3rd time" in answers[2] and "research is required" in answers[2]
    assert "do not repeat" not in answers[2] and "failed path" not in answers[2]
    assert "re-run it to confirm" in answers[2]
    assert query(project, "SELECT attempt_number, resolution FROM error_log ORDER BY id") == [
        (1, None),
        (2, None),
        (3, "escalated_research"),
    ]
    assert query(project, "SELECT count(*) FROM failed_paths") == [(0,)]
    subagent_fixes_calc(project)

    text = start(project, NEXT)
    assert text is not None
    assert "do not repeat" not in text and "Failed approaches" not in text
    assert CHECK not in section(text, "Open errors (not yet fixed)")
    rerun = section(text, "To re-run: files they depend on changed since they last failed")
    line = next(x for x in rerun.splitlines() if CHECK in x)
    assert "failed 3 times [test]" in line
    assert f"calc.py changed since by subagent {SUBAGENT} (Edit); re-run to confirm" in line
    # a fourth failure goes to the user, still without calling the check an approach to drop
    fourth = fail(project, MAIN, CHECK)
    assert "user has been asked" in fourth and "Stop changing code" in fourth
    assert "retrying this approach" not in fourth


def test_the_same_check_passing_in_another_session_resolves_its_ladder(project: Path) -> None:
    start(project, MAIN)
    for _ in range(3):
        fail(project, MAIN, CHECK)
    subagent_fixes_calc(project)
    start(project, NEXT)
    succeed(project, NEXT, " python3  -m pytest -q test_calc.py")  # the same, spaced apart
    assert query(project, "SELECT DISTINCT resolution FROM error_log") == [("auto_fixed",)]
    # the main session, resumed, is no longer told about it
    resumed = start(project, MAIN, "resume")
    assert resumed is None or CHECK not in resumed
    # and its resolution is learned, with what the other session ran
    learned = query(project, "SELECT text FROM memories WHERE category = 'learning'")
    assert len(learned) == 1 and "failed 3 times" in learned[0][0]


def test_a_ladder_of_an_ended_session_is_shown_as_abandoned(project: Path) -> None:
    start(project, MAIN)
    fail(project, MAIN, CHECK)
    fail(project, MAIN, "python3 src/app.py", "Exit code 1\nValueError: bad input")
    run_hook("SessionEnd", fixture("SessionEnd", project) | {"session_id": MAIN}, project)
    text = start(project, NEXT)
    assert text is not None
    assert "## Open errors (not yet fixed)" not in text
    abandoned = section(text, "Abandoned errors: left unfixed when their session ended")
    lines = [x for x in abandoned.splitlines() if x.startswith("- ")]
    assert len(lines) == 2
    assert all(x.endswith(f"abandoned when session {MAIN} ended") for x in lines)
    assert any(CHECK in x for x in lines) and any("python3 src/app.py" in x for x in lines)


def test_real_approaches_still_become_failed_paths_and_checks_do_not(project: Path) -> None:
    start(project, MAIN)
    edit_answers = []
    for _ in range(3):
        payload = bash_failure(project, MAIN, "", "") | {"tool_name": "Edit"}
        payload["tool_input"] = {
            "file_path": str(project / "calc.py"),
            "old_string": "return a - b",
            "new_string": "return a + b",
            "replace_all": False,
        }
        payload["error"] = "String to replace not found in file.\nString: return a - b"
        answer = run_hook("PostToolUseFailure", payload, project).json()
        assert answer is not None
        edit_answers.append(answer["hookSpecificOutput"]["additionalContext"])
    for _ in range(3):
        fail(project, MAIN, "python3 src/app.py data.txt", "Exit code 1\nValueError: bad input")
        fail(project, MAIN, "npx tsc --noEmit", "Exit code 2\nsrc/a.ts(3,5): error TS2304: x")
    assert "do not repeat it" in edit_answers[2]
    paths = query(project, "SELECT approach, file_path FROM failed_paths ORDER BY id")
    assert paths == [("Edit calc.py", "calc.py"), ("python3 src/app.py data.txt", None)]
    text = start(project, NEXT)
    assert text is not None
    dead_ends = section(text, "Failed approaches: do not repeat these")
    assert "Edit calc.py" in dead_ends and "python3 src/app.py data.txt" in dead_ends
    assert "tsc" not in dead_ends
    assert "npx tsc --noEmit" in section(text, "Open errors (not yet fixed)")
