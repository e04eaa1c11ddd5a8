"""Every command of the CLI, in every format it offers, against a database whose every free
text column is full of control characters: nothing raw reaches stdout or stderr (SECURITY.md
promise 2). The commands come from click's own tree (tests/every_command.py), so a new one is
covered, or the test says it has no arguments yet."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import apsw
import pytest
from every_command import (
    HOSTILE,
    RUNS,
    SESSION,
    SLOW_RUNS,
    Run,
    check_every_command_is_named,
    command_lines,
    kept,
    poison,
    put_back,
    raw_controls,
    receiving,
    record_hostile_project,
    run,
)


@pytest.fixture
def hostile(project: Path, tmp_path: Path) -> dict[str, str]:
    """The recorded project, a memory and a state key in it, and what the commands name."""
    record_hostile_project(project)
    added = run(project, ["memory", "add", "remember " + HOSTILE, "--json"])
    assert added.code == 0, added.stderr
    memory = str(json.loads(added.stdout)["id"])
    assert run(project, ["state", "set", "k1", "value " + HOSTILE]).code == 0
    poison(project)  # the memory's and the state's text too, as written straight
    exported = tmp_path / "memories.jsonl"
    record = {"category": "fact", "scope": "project", "text": "imported " + HOSTILE}
    exported.write_text(json.dumps(record) + "\n" + HOSTILE + "\n")
    return {
        "session": SESSION[:8],  # the whole id has the hostile text appended
        "frame": f"{SESSION[:8]}:1",
        "frame2": f"{SESSION[:8]}:4",
        "memory": memory,
        "key": "k1" + HOSTILE,
        "export_file": str(exported),
        "fork_path": str(tmp_path / "fork"),
    }


def printed_raw(
    project: Path, values: dict[str, str], runs: dict[str, list[list[str]]]
) -> tuple[str, list[Run]]:
    """Each command line that printed a control character raw (and which) or a traceback,
    and every run; each on the database as the fixture left it."""
    saved = kept(project)
    caught: dict[str, list[str]] = {}
    done: list[Run] = []
    with receiving():
        for _, line in command_lines(values, runs):
            put_back(project, saved)
            shutil.rmtree(values["fork_path"], ignore_errors=True)
            done.append(run(project, line))
            found = raw_controls(done[-1].stdout + done[-1].stderr)
            if "Traceback" in done[-1].stderr:
                found.insert(0, "a traceback: " + done[-1].stderr.strip().splitlines()[-1][:200])
            if found:
                caught.setdefault(" ".join(line), found)
    return "\n".join(f"  {line}: {found}" for line, found in caught.items()), done


def test_every_command_is_run_or_says_why_not() -> None:
    check_every_command_is_named()


def test_no_command_prints_a_recorded_control_character_raw(
    project: Path, hostile: dict[str, str]
) -> None:
    caught, _ = printed_raw(project, hostile, RUNS)
    assert not caught, "raw controls or a traceback printed by:\n" + caught


def test_no_command_that_takes_a_snapshot_prints_one_raw(
    project: Path, hostile: dict[str, str]
) -> None:
    caught, _ = printed_raw(project, hostile, SLOW_RUNS)
    assert not caught, "raw controls or a traceback printed by:\n" + caught


def test_an_error_quoting_recorded_text_prints_it_escaped(
    project: Path, hostile: dict[str, str]
) -> None:
    """Every snapshot failed, its note hostile: diff, fork and revert refuse in a message that
    quotes the recorded session id and note, escaped like everything printed (the one error
    path, `Group.invoke`); no snapshot is waited for, so no capture runs."""
    conn = apsw.Connection(str(project / ".claude-session.db"))
    conn.execute("UPDATE vcs_tags SET status = 'failed', snapshot_commit = NULL")
    conn.close()
    caught, done = printed_raw(project, hostile, SLOW_RUNS)
    assert not caught, "raw controls or a traceback printed by:\n" + caught
    refused = [r for r in done if "has no workspace snapshot" in r.stderr]
    assert refused and all(r.code == 1 for r in refused), [r.stderr for r in done]
    assert all(r.stderr.count("\\x1b") >= 2 for r in refused)  # the id's and the note's
