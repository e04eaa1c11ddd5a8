"""Error escalation and failed paths, through the real hooks, on recorded payload shapes."""

from __future__ import annotations

import json
import subprocess
import time
from itertools import count as counter
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, fixture, query, run_hook, write_config

from claude_session.core import errors

SESSION = "560819af-56fc-4528-be0a-32a24d1aa819"
CLI = str(Path(PYTHON).parent / "claude-session")
_ids = counter(1)

TRACEBACK = (
    "Exit code 1\nTraceback (most recent call last):\n"
    '  File "/usr/lib/python3.11/runpy.py", line 198, in _run_module_as_main\n'
    '  File "{root}/src/app.py", line 12, in main\n'
    "    total = parse(data)\n"
    '  File "{root}/src/parser.py", line 40, in parse\n'
    "    return int(text)\n"
    "ValueError: invalid literal for int() with base 10: 'x'"
)


def failure(project: Path, command: str, error: str, **changes: Any) -> dict[str, Any]:
    payload = fixture("PostToolUseFailure.Bash", project) | {"session_id": SESSION}
    payload["tool_use_id"] = f"toolu_l{next(_ids)}"
    payload["tool_input"] = {"command": command, "description": "run"}
    payload["error"] = error.format(root=project)
    payload.update(changes)
    return payload


def success(project: Path, command: str) -> dict[str, Any]:
    payload = fixture("PostToolUse.Bash", project) | {"session_id": SESSION}
    payload["tool_use_id"] = f"toolu_l{next(_ids)}"
    payload["tool_input"] = {"command": command, "description": "run"}
    return payload


def fail(project: Path, command: str, error: str = TRACEBACK) -> dict[str, Any]:
    answer = run_hook("PostToolUseFailure", failure(project, command, error), project).json()
    assert answer is not None
    assert answer["hookSpecificOutput"]["hookEventName"] == "PostToolUseFailure"
    return answer


def cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, "--project", str(project), *args], capture_output=True, text=True)


def test_ladder_through_every_step_then_reset(project: Path) -> None:
    write_config(project, {"escalation_deny_edits": True})
    command = "python3 src/app.py data.txt"
    answers = [fail(project, command) for _ in range(5)]
    texts = [a["hookSpecificOutput"]["additionalContext"] for a in answers]
    assert "(attempt 1) in src/parser.py" in texts[0] and "Fix the cause and retry" in texts[0]
    assert "ValueError: invalid literal" in texts[0]  # the gist
    assert "(attempt 2)" in texts[1] and "Fix the cause and retry" in texts[1]
    assert "3rd time" in texts[2] and "research is required" in texts[2]
    assert "systemMessage" not in answers[2]
    assert "user has been asked" in texts[3] and "failed 4 times" in answers[3]["systemMessage"]
    assert "failed 5 times" in answers[4]["systemMessage"]
    rows = query(
        project,
        "SELECT attempt_number, resolution, file_path, error_category FROM error_log ORDER BY id",
    )
    assert rows == [
        (1, None, "src/parser.py", "runtime"),
        (2, None, "src/parser.py", "runtime"),
        (3, "escalated_research", "src/parser.py", "runtime"),
        (4, "escalated_user", "src/parser.py", "runtime"),
        (5, "escalated_user", "src/parser.py", "runtime"),
    ]
    # attempt 3 recorded the approach as a failed path, with the error's gist
    paths = query(
        project, "SELECT approach, reason_failed, file_path, still_relevant FROM failed_paths"
    )
    assert paths == [
        (
            command,
            "Exit code 1: ValueError: invalid literal for int() with base 10: 'x'",
            "src/parser.py",
            1,
        )
    ]
    # from attempt 5 the optional policy refuses edits to the file at fault
    edit = fixture("PreToolUse.Edit", project) | {"session_id": SESSION, "tool_use_id": "toolu_e"}
    edit["tool_input"]["file_path"] = str(project / "src" / "parser.py")
    output = run_hook("PreToolUse", edit, project).json()["hookSpecificOutput"]
    assert (
        output["permissionDecision"] == "deny"
        and "after 5 failed attempts" in output["permissionDecisionReason"]
    )
    # a later success of the same command fixes every entry and resets the ladder
    assert run_hook("PostToolUse", success(project, command), project).stdout == ""
    assert query(project, "SELECT DISTINCT resolution FROM error_log") == [("auto_fixed",)]
    assert run_hook("PreToolUse", edit | {"tool_use_id": "toolu_e2"}, project).json() is None
    again = fail(project, command)["hookSpecificOutput"]["additionalContext"]
    assert "(attempt 1)" in again


def test_deny_policy_is_off_by_default(project: Path) -> None:
    for _ in range(6):
        fail(project, "python3 src/app.py")
    edit = fixture("PreToolUse.Edit", project) | {"session_id": SESSION}
    edit["tool_input"]["file_path"] = str(project / "src" / "parser.py")
    assert run_hook("PreToolUse", edit, project).json() is None


def test_different_commands_failing_in_one_file_share_a_ladder(project: Path) -> None:
    fail(project, "python3 src/app.py a.txt")
    fail(project, "python3 -m src.app b.txt")
    third = fail(project, "python3 src/app.py --strict")["hookSpecificOutput"]["additionalContext"]
    assert "3rd time" in third
    approach = query(project, "SELECT approach FROM failed_paths")[0][0]
    assert (
        approach == "python3 src/app.py a.txt; then python3 -m src.app b.txt; then "
        "python3 src/app.py --strict"
    )


def test_failed_path_names_the_edits_made_to_the_file_at_fault(project: Path) -> None:
    edit = fixture("PostToolUse.Edit", project) | {"session_id": SESSION, "tool_use_id": "toolu_x"}
    edit["tool_input"] |= {
        "file_path": str(project / "src" / "parser.py"),
        "old_string": "int(text)",
        "new_string": "int(text.strip())",
    }
    run_hook("PostToolUse", edit, project)
    for _ in range(3):
        fail(project, "python3 src/app.py")
    approach = query(project, "SELECT approach FROM failed_paths")[0][0]
    assert "after editing src/parser.py: replaced 'int(text)' with 'int(text.strip())'" in approach


def test_failure_inside_a_successful_tool_response_is_an_error(project: Path) -> None:
    payload = fixture("PostToolUse.Edit", project) | {
        "session_id": SESSION,
        "tool_name": "TaskUpdate",
        "tool_input": {"taskId": "7"},
    }
    payload["tool_response"] = {"success": False, "taskId": "7", "error": "Task 7 not found"}
    answer = run_hook("PostToolUse", payload, project).json()
    assert "Task 7 not found" in answer["hookSpecificOutput"]["additionalContext"]
    assert query(project, "SELECT tool_name, error_category, error_message FROM error_log") == [
        ("TaskUpdate", "runtime", "Task 7 not found")  # a tool that failed at run time
    ]


def test_session_end_abandons_and_resume_reopens(project: Path) -> None:
    fail(
        project,
        "pytest tests/test_x.py",
        "Exit code 1\nFAILED tests/test_x.py::test_a - assert 1 == 2",
    )
    run_hook("SessionEnd", fixture("SessionEnd", project) | {"session_id": SESSION}, project)
    assert query(project, "SELECT resolution FROM error_log") == [("abandoned",)]
    # a new session hears about it
    start = fixture("SessionStart.startup", project) | {"session_id": "another-session"}
    text = run_hook("SessionStart", start, project).json()["hookSpecificOutput"][
        "additionalContext"
    ]
    assert "pytest tests/test_x.py" in text and "[test]" in text
    # the same session resumed: open again
    resume = fixture("SessionStart.resume", project) | {"session_id": SESSION}
    run_hook("SessionStart", resume, project)
    assert query(project, "SELECT resolution FROM error_log") == [(None,)]


def test_interrupts_are_recorded_but_not_escalated(project: Path) -> None:
    for _ in range(4):
        payload = failure(project, "sleep 100", "Interrupted by user", is_interrupt=True)
        assert run_hook("PostToolUseFailure", payload, project).json() is None
    # an interrupt keeps its real category, is flagged, and climbs no ladder
    assert query(
        project, "SELECT DISTINCT error_category, interrupted, resolution FROM error_log"
    ) == [("runtime", 1, None)]
    assert query(project, "SELECT attempt_number FROM error_log ORDER BY id") == [
        (1,),
        (2,),
        (3,),
        (4,),
    ]
    assert query(project, "SELECT count(*) FROM failed_paths") == [(0,)]


# --- categories and files on real error texts ------------------------------------------------

REAL_ERRORS = [
    (
        "pytest -q",
        "Exit code 1\n..F\nFAILED tests/test_calc.py::test_add - assert 3 == 4\n"
        "1 failed, 2 passed in 0.05s",
        "test",
        "tests/test_calc.py",
    ),
    (
        "npx jest",
        "Exit code 1\nFAIL src/sum.test.js\n  ● sum › adds\n    at Object.<anonymous> "
        "(src/sum.test.js:4:17)\nTests:       1 failed, 1 total",
        "test",
        "src/sum.test.js",
    ),
    (
        "go test ./...",
        "Exit code 1\n--- FAIL: TestAdd (0.00s)\n    calc_test.go:9: got 3 want 4\n"
        "FAIL\tcalc\t0.002s",
        "test",
        "calc_test.go",
    ),
    (
        "mypy src",
        "Exit code 1\nsrc/app.py:12: error: Incompatible types in assignment "
        '(expression has type "str", variable has type "int")  [assignment]\n'
        "Found 1 error in 1 file (checked 3 source files)",
        "type",
        "src/app.py",
    ),
    (
        "npx tsc --noEmit",
        "Exit code 2\nsrc/index.ts(3,7): error TS2322: Type 'string' is not "
        "assignable to type 'number'.",
        "type",
        "src/index.ts",
    ),
    (
        "ruff check .",
        "Exit code 1\nsrc/app.py:1:8: F401 [*] `os` imported but unused\nFound 1 error.",
        "lint",
        "src/app.py",
    ),
    (
        "npx eslint src",
        "Exit code 1\n/p/src/a.js\n  1:7  error  'x' is assigned a value but never "
        "used  no-unused-vars\n\n✖ 1 problem (1 error, 0 warnings)",
        "lint",
        None,
    ),
    (
        "cargo build",
        "Exit code 101\nerror[E0308]: mismatched types\n --> src/main.rs:4:18\n"
        'error: could not compile `calc` (bin "calc") due to 1 previous error',
        "build",
        "src/main.rs",
    ),
    (
        "pip install -r requirements.txt",
        "Exit code 1\nERROR: Could not find a version that satisfies the requirement nosuchpkg",
        "build",
        None,
    ),
    (
        "./scripts/check.sh",
        "Exit code 1\nsrc/a.ts(3,5): error TS2304: Cannot find name 'x'.",
        "type",
        "src/a.ts",
    ),
    (
        "node server.js",
        "Exit code 1\n/p/server.js:3\nTypeError: Cannot read properties of "
        "undefined (reading 'port')\n    at Object.<anonymous> (/p/config.js:3:20)",
        "runtime",
        "/p/config.js",
    ),
]


@pytest.mark.parametrize(
    ("command", "error", "kind", "at_fault"),
    REAL_ERRORS,
    ids=[c.split()[0] + "-" + k for c, _, k, _ in REAL_ERRORS],
)
def test_category_and_file_at_fault_on_real_error_texts(
    command: str, error: str, kind: str, at_fault: str | None
) -> None:
    assert errors.category(command, error) == kind
    assert errors.file_at_fault(error) == at_fault


def test_recorded_failure_fixture_is_a_runtime_error_of_its_command(project: Path) -> None:
    payload = fixture("PostToolUseFailure.Bash", project)
    answer = run_hook("PostToolUseFailure", payload, project).json()
    text = answer["hookSpecificOutput"]["additionalContext"]
    assert "python3 -c 'import nonexistent_mod'" in text and "No module named" in text
    assert query(project, "SELECT error_category, exit_code FROM error_log") == [("runtime", 1)]


# --- failed paths by hand, and in the next session's context ---------------------------------


def test_fail_command_records_resolves_and_lists(project: Path) -> None:
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    done = cli(
        project,
        "fail",
        "switching the parser to regex",
        "--reason",
        "breaks on nested quotes; token=abcd1234secret",
        "--file",
        "src/parser.py",
    )
    assert done.returncode == 0, done.stderr
    listed = json.loads(cli(project, "failed-paths", "--json").stdout)
    assert [(p["approach"], p["file_path"]) for p in listed] == [
        ("switching the parser to regex", "src/parser.py")
    ]
    assert "abcd1234secret" not in listed[0]["reason_failed"]  # redacted before it was written
    start = fixture("SessionStart.startup", project) | {"session_id": "next-session"}
    text = run_hook("SessionStart", start, project).json()["hookSpecificOutput"][
        "additionalContext"
    ]
    assert "Failed approaches: do not repeat these" in text and "switching the parser" in text
    assert cli(project, "fail", "--resolve", str(listed[0]["id"])).returncode == 0
    assert json.loads(cli(project, "failed-paths", "--json").stdout) == []
    assert len(json.loads(cli(project, "failed-paths", "--all", "--json").stdout)) == 1
    assert cli(project, "fail", "--resolve", "999").returncode == 1


def test_expired_failed_paths_are_not_shown(project: Path) -> None:
    write_config(project, {"failed_path_ttl_days": 0.000001})
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    cli(project, "fail", "old idea", "--reason", "did not work")
    time.sleep(0.2)  # past its 86 ms: the next CLI can start faster than that
    assert json.loads(cli(project, "failed-paths", "--json").stdout) == []


def test_errors_command_lists_open_ones(project: Path) -> None:
    fail(project, "make build", "Exit code 2\nmake: *** [all] Error 1")
    run_hook(
        "PostToolUseFailure", failure(project, "ls /x", "Exit code 2\nls: cannot access"), project
    )
    run_hook("PostToolUse", success(project, "ls /x"), project)
    listed = json.loads(cli(project, "errors", "--open", "--json").stdout)
    assert [(e["what"], e["error_category"], e["attempts"], e["step"]) for e in listed] == [
        ("make build", "build", 1, "1 (retry)")
    ]
    assert len(json.loads(cli(project, "errors", "--json").stdout)) == 2


def test_failed_paths_of_the_work_at_hand_come_first(project: Path) -> None:
    run_hook(
        "SessionStart", fixture("SessionStart.startup", project) | {"session_id": "other"}, project
    )
    cli(project, "fail", "an idea from another session", "--reason", "no", "--session", "other")
    for _ in range(3):
        fail(project, "python3 src/app.py")  # this session's own dead end, recorded first
    cli(project, "fail", "newer idea elsewhere", "--reason", "no", "--session", "other")
    start = fixture("SessionStart.compact", project) | {"session_id": SESSION}
    text = run_hook("SessionStart", start, project).json()["hookSpecificOutput"][
        "additionalContext"
    ]
    section = text[text.index("## Failed approaches") :]
    assert section.index("python3 src/app.py") < section.index("newer idea elsewhere")
    assert section.index("newer idea elsewhere") < section.index("an idea from another session")


def test_failed_path_quotes_edits_of_exactly_the_file_at_fault(project: Path) -> None:
    """Asked about a.py, the edits of data.py (whose name ends the same) are not it."""
    for n, (name, old, new) in enumerate(
        (("a.py", "a", "b"), ("data.py", "WRONG", "WRONGER"), ("data.py", "WRONG2", "X"))
    ):
        edit = fixture("PostToolUse.Edit", project) | {"session_id": SESSION}
        edit["tool_use_id"] = f"toolu_edit_{n}"
        edit["tool_input"] |= {
            "file_path": str(project / name),
            "old_string": old,
            "new_string": new,
        }
        run_hook("PostToolUse", edit, project)
    error = (
        'Exit code 1\nTraceback (most recent call last):\n  File "{root}/a.py", line 3\nValueError'
    )
    for _ in range(3):
        fail(project, "python3 a.py", error)
    approach = query(project, "SELECT approach FROM failed_paths")[0][0]
    assert "replaced 'a' with 'b'" in approach
    assert "WRONG" not in approach
