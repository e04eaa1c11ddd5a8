"""Errors and memories as a user reads them (issue 44, points 6 and 7): `errors` one row per
error in the words `status` uses, the ladder going on in the next session from where the last
one abandoned it, `memory import` matching by text, `memory list` marking what is not plain
fact, `memory outcome --reason`, and whole session ids in error messages. The real hooks and
the installed CLI run; the databases are read back."""

from __future__ import annotations

import json
from itertools import count as counter
from pathlib import Path
from typing import Any

from conftest import fixture, query, run_cli, run_hook

FIRST = "560819af-56fc-4528-be0a-32a24d1aa819"
SECOND = "7d3c2a10-9b1e-4f5a-8c6d-0e1f2a3b4c5d"
_ids = counter(1)


def start(project: Path, session: str) -> str:
    """SessionStart of `session`: what the model was told (the restored context)."""
    payload = fixture("SessionStart.startup", project) | {"session_id": session}
    answer = run_hook("SessionStart", payload, project).json() or {}
    return str(answer.get("hookSpecificOutput", {}).get("additionalContext", ""))


def end(project: Path, session: str) -> None:
    run_hook("SessionEnd", fixture("SessionEnd", project) | {"session_id": session}, project)


def fail(project: Path, session: str, command: str) -> str:
    """A Bash call of `session` failing: what the model was told after it."""
    payload = fixture("PostToolUseFailure.Bash", project) | {"session_id": session}
    payload["tool_use_id"] = f"toolu_ee{next(_ids)}"
    payload["tool_input"] = {"command": command, "description": "run"}
    payload["error"] = "Exit code 1\nValueError: the input is empty"
    answer = run_hook("PostToolUseFailure", payload, project).json()
    assert answer is not None
    return str(answer["hookSpecificOutput"]["additionalContext"])


def succeed(project: Path, session: str, command: str) -> None:
    payload = fixture("PostToolUse.Bash", project) | {"session_id": session}
    payload["tool_use_id"] = f"toolu_ee{next(_ids)}"
    payload["tool_input"] = {"command": command, "description": "run"}
    run_hook("PostToolUse", payload, project)


def cli(project: Path, *args: str) -> str:
    done = run_cli(project, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def as_json(project: Path, *args: str) -> Any:
    return json.loads(cli(project, *args, "--json"))


# --- errors ---------------------------------------------------------------------------------


def test_errors_lists_one_row_per_error_in_the_words_status_uses(project: Path) -> None:
    start(project, FIRST)
    for _ in range(4):
        fail(project, FIRST, "python3 app.py data.txt")
    fail(project, FIRST, "ls missing-folder")
    end(project, FIRST)

    listed = as_json(project, "errors")
    assert [(e["what"], e["attempts"], e["step"], e["state"]) for e in listed] == [
        ("ls missing-folder", 1, "1 (retry)", "abandoned"),
        ("python3 app.py data.txt", 4, "4 (ask the user)", "abandoned"),
    ]
    ladder = listed[1]
    assert [(f["attempt_number"], f["step"]) for f in ladder["failures"]] == [
        (1, "1 (retry)"),
        (2, "2 (retry)"),
        (3, "3 (research)"),
        (4, "4 (ask the user)"),
    ]
    assert ladder["id"] == ladder["failures"][0]["id"]  # an error is named by its first failure
    assert ladder["first_at"] < ladder["last_at"] == ladder["failures"][-1]["occurred_at"]
    # status says the same of each: the same state and step words
    status = as_json(project, "status")["open_errors"]
    assert sorted((e["what"], e["state"], e["step"]) for e in status) == sorted(
        (e["what"], e["state"], e["step"]) for e in listed
    )
    # people read two rows, each with its cost once, and never a resolution's column value
    table = cli(project, "errors").splitlines()
    assert len([line for line in table if "python3 app.py data.txt" in line]) == 1
    assert len([line for line in table if "ls missing-folder" in line]) == 1
    assert "escalated" not in cli(project, "errors", "--wide")
    assert "escalated" not in json.dumps(listed)
    streamed = cli(project, "errors", "--all").splitlines()
    assert len(streamed) == 3 and streamed[0].split("\t")[:9] == [
        *("id", "session id", "agent id", "tool name", "error category", "what", "attempts"),
        *("step", "state"),
    ]
    assert as_json(project, "errors", "--open") == listed  # abandoned is still unfixed


def test_errors_all_with_none_says_what_is_empty(project: Path) -> None:
    start(project, FIRST)
    assert cli(project, "errors", "--all").strip() == "errors: none"
    assert cli(project, "errors").strip() == "errors: none"
    assert as_json(project, "errors", "--all") == []


def test_the_ladder_goes_on_in_the_next_session_from_where_it_was_abandoned(
    project: Path,
) -> None:
    start(project, FIRST)
    told = [fail(project, FIRST, "python3 app.py data.txt") for _ in range(4)]
    assert "has failed 4 times" in told[-1] and "user has been asked" in told[-1]
    end(project, FIRST)

    restored = start(project, SECOND)
    assert "Abandoned errors" in restored and "`python3 app.py data.txt` failed 4x" in restored
    again = fail(project, SECOND, "python3 app.py data.txt")
    assert "(attempt 1)" not in again and "Fix the cause and retry" not in again
    assert "has failed 5 times" in again and "user has been asked" in again
    rows = query(
        project, "SELECT session_id, attempt_number FROM error_log ORDER BY id DESC LIMIT 1"
    )
    assert rows == [(SECOND, 5)]
    newest = as_json(project, "errors")[0]
    assert (newest["session_id"], newest["attempts"], newest["step"], newest["state"]) == (
        SECOND,
        1,
        "5 (edits may be refused)",
        "open",
    )
    status = as_json(project, "status")["open_errors"]
    assert [(e["session_id"], e["step"]) for e in status if e["state"] == "open"] == [
        (SECOND, "5 (edits may be refused)")
    ]

    # Once it passes the ladder is fixed (here and where it was abandoned): it starts over.
    succeed(project, SECOND, "python3 app.py data.txt")
    assert "(attempt 1)" in fail(project, SECOND, "python3 app.py data.txt")

    # Two sessions failing side by side climb their own ladders: one that was under way when
    # the other abandoned its climb was never told of it.
    beside = "0b5e1d2c-3a4f-4e6d-9c8b-7a6f5e4d3c2b"
    start(project, beside)
    fail(project, beside, "make deploy-site")  # before the second session abandons
    for _ in range(3):
        fail(project, SECOND, "make deploy-site")
    end(project, SECOND)
    assert "(attempt 2)" in fail(project, beside, "make deploy-site")


# --- session ids in messages ----------------------------------------------------------------


def test_an_ambiguous_session_is_named_by_whole_ids_that_can_be_pasted(project: Path) -> None:
    alike = ("560819af-56fc-4528-aaaa-32a24d1aa819", "560819af-56fc-4528-bbbb-32a24d1aa819")
    for session in alike:
        start(project, session)
    done = run_cli(project, "agents", "--session", "560819af")
    assert done.returncode == 1
    assert f"it starts {alike[0]}, {alike[1]};" in done.stderr  # not twice "560819af-56f"
    for session in alike:
        assert run_cli(project, "agents", "--session", session).returncode == 0


# --- memories -------------------------------------------------------------------------------


def _learned_from_a_failed_path(project: Path, command: str) -> str:
    """A project whose first failed path (id 1 there) became a learned memory: a session
    fails `command` three times and ends, the next one starts. Its text."""
    start(project, FIRST)
    for _ in range(3):
        fail(project, FIRST, command)
    end(project, FIRST)
    start(project, SECOND)
    assert query(project, "SELECT id FROM failed_paths") == [(1,)]
    (text,) = [t for (t,) in query(project, "SELECT text FROM memories WHERE source = 'learned'")]
    assert command in text
    return str(text)


def test_import_keeps_an_unrelated_learned_memory_of_the_same_failed_path_number(
    tmp_path: Path,
) -> None:
    origin, target = tmp_path / "origin", tmp_path / "target"
    origin.mkdir()
    target.mkdir()
    theirs = _learned_from_a_failed_path(origin, "python3 origin_tool.py")
    ours = _learned_from_a_failed_path(target, "python3 target_tool.py")
    exported = cli(origin, "memory", "export", "--format", "jsonl")

    done = run_cli(target, "memory", "import", "-", "--json", stdin=exported)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "imported": 1,
        "already_present": 0,
        "invalid": 0,
        "problems": [],
    }
    texts = {m["text"] for m in as_json(target, "memory", "list")}
    assert texts == {theirs, ours}
    # the same text again is the same memory: present already, nothing added
    again = run_cli(target, "memory", "import", "-", "--json", stdin=exported)
    assert json.loads(again.stdout)["already_present"] == 1
    assert json.loads(again.stdout)["imported"] == 0
    # and so is ours, exported from here and read back
    mine = cli(target, "memory", "export", "--format", "jsonl")
    back = run_cli(target, "memory", "import", "-", "--json", stdin=mine)
    assert json.loads(back.stdout)["imported"] == 0
    assert len(as_json(target, "memory", "list")) == 2


def test_memory_list_marks_disproved_hypothesis_and_possibly_stale_ones(project: Path) -> None:
    start(project, FIRST)
    (project / "parser.py").write_text("def parse(text): ...\n")
    cli(project, "memory", "add", "PLAIN-FACT the tests run with pytest")
    cli(project, "memory", "add", "STALE-FACT the parser is in parser.py", "--file", "parser.py")
    cli(project, "memory", "add", "DEAD-END the cache is the cause")
    cli(project, "memory", "add", "GUESS the lock is held too long")
    cli(project, "memory", "outcome", "3", "disproved", "--reason", "clearing it changed nothing")
    cli(project, "memory", "outcome", "4", "hypothesis")
    (project / "parser.py").write_text("def parse(text, strict): ...\n")

    rows = {m["text"].split()[0]: m for m in as_json(project, "memory", "list")}
    assert {k: (m["outcome"], m["possibly_stale"]) for k, m in rows.items()} == {
        "PLAIN-FACT": (None, False),
        "STALE-FACT": (None, True),
        "DEAD-END": ("disproved", False),
        "GUESS": ("hypothesis", False),
    }
    assert rows["DEAD-END"]["outcome_reason"] == "clearing it changed nothing"
    lines = cli(project, "memory", "list").splitlines()
    header = next(line for line in lines if line.startswith("id "))
    assert header.split()[:5] == ["id", "category", "scope", "state", "text"]

    def state_of(marker: str) -> str:
        line = next(line for line in lines if marker in line)
        return line[header.index("state") : header.index("text")].strip()

    assert state_of("PLAIN-FACT") == "-"
    assert state_of("STALE-FACT") == "possibly stale"
    assert state_of("DEAD-END") == "disproved"
    assert state_of("GUESS") == "hypothesis"
    streamed = cli(project, "memory", "list", "--all")
    assert "\tdisproved\tDEAD-END" in streamed and "\tpossibly stale\tSTALE-FACT" in streamed

    # the reason is shown, and cleared with the outcome
    assert "clearing it changed nothing" in cli(project, "memory", "show", "3")
    refused = run_cli(project, "memory", "outcome", "3", "none", "--reason", "x")
    assert refused.returncode == 2 and "--reason goes with an outcome" in refused.stderr
    cli(project, "memory", "outcome", "3", "none")
    assert as_json(project, "memory", "show", "3")["outcome_reason"] is None
