"""`status` writes nothing (issue 45): the new bytes of Claude Code's transcripts are read by the
daemon, `cost` and `Project.refresh()`, never on the way to `status`, which shows the cost as
last read and says how many bytes of the transcripts are not read yet."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from conftest import database_at_version, run_cli
from inproc import Recorder
from test_transcripts import PROMPT, SESSION, assistant, cost_state, start, user, write

from claude_session import Project
from claude_session.core import db
from claude_session.services.cost import transcripts


@pytest.fixture
def main_path(config: Path) -> Path:
    """The session's transcript, where Claude Code writes it (under the config folder)."""
    return config / "projects" / "-tmp-project" / f"{SESSION}.jsonl"


def files_of(project: Path) -> dict[str, str | None]:
    """The database and its -wal as they are on disk (None: no such file)."""
    found: dict[str, str | None] = {}
    for suffix in ("", "-wal"):
        path = project / f".claude-session.db{suffix}"
        found[suffix or "db"] = (
            hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None
        )
    return found


def responses(project: Path) -> int:
    conn = db.connect(str(project / ".claude-session.db"), readonly=True)
    try:
        return db.as_int(conn.execute("SELECT count(*) FROM message_usage").fetchall()[0][0])
    finally:
        conn.close()


def test_status_leaves_the_database_as_it_was_and_says_what_is_not_read_yet(
    recorder: Recorder, main_path: Path, project: Path, config: Path
) -> None:
    start(recorder, main_path)
    write(main_path, [user(PROMPT, 1), assistant("m1", 2, tokens=(40_000, 1_200, 0, 0))])
    write(main_path, [cost_state({"claude-opus-4-5": 0.23})])
    transcripts.catch_up(recorder.conn)  # what the daemon read so far
    size_read = main_path.stat().st_size
    write(main_path, [assistant("m2", 3, tokens=(10_000, 300, 0, 0))])
    write(main_path, [cost_state({"claude-opus-4-5": 0.31})])
    unread = main_path.stat().st_size - size_read
    recorder.close()
    before = files_of(project)
    env = {"CLAUDE_CONFIG_DIR": str(config)}

    shown = run_cli(project, "status", "--json", **env)
    assert shown.returncode == 0, shown.stderr
    cost = json.loads(shown.stdout)["cost"]
    assert cost["session_id"] == SESSION and cost["messages"] == 1
    assert round(cost["cost_usd"], 4) == 0.23  # as last read: the new bytes are not in it
    assert [(b["session_id"], b["bytes"], b["files"]) for b in cost["not_read_yet"]] == [
        (SESSION, unread, 1)
    ]
    text = run_cli(project, "status", **env)
    assert text.returncode == 0, text.stderr
    said = " ".join(text.stdout.split())
    assert "$0.2300" in said and f"{unread:,} bytes of its transcripts not read yet" in said
    assert "`claude-session cost` reads them now" in said
    assert files_of(project) == before  # not a byte written, to the database or its -wal
    assert responses(project) == 1

    with Project(project) as library:  # the write asked for by name takes them in
        read = library.refresh()
    assert read.transcripts["messages"] == 1 and responses(project) == 2
    after = json.loads(run_cli(project, "status", "--json", **env).stdout)["cost"]
    assert after["not_read_yet"] == [] and round(after["cost_usd"], 4) == 0.31
    assert "not read yet" not in run_cli(project, "status", **env).stdout


def test_a_latest_session_never_read_is_said_beside_the_cost_shown(
    recorder: Recorder, main_path: Path, project: Path, config: Path
) -> None:
    """The cost shown is of the latest session read; a later one whose transcript was never
    read is named, with its bytes, so the figure is not taken for the latest session's."""
    start(recorder, main_path)
    write(main_path, [user(PROMPT, 1), assistant("m1", 2), cost_state({"claude-opus-4-5": 0.1})])
    transcripts.catch_up(recorder.conn)
    later = "5e55a0b1-0000-4000-8000-00000000beef"
    other = main_path.parent / f"{later}.jsonl"
    recorder.advance(60)
    base = {"session_id": later, "transcript_path": str(other), "cwd": recorder.root}
    recorder.send(base | {"hook_event_name": "SessionStart", "source": "startup"})
    write(other, [user(PROMPT, 61) | {"sessionId": later}, assistant("n1", 62)])
    recorder.close()
    before = files_of(project)
    env = {"CLAUDE_CONFIG_DIR": str(config)}
    cost = json.loads(run_cli(project, "status", "--json", **env).stdout)["cost"]
    assert cost["session_id"] == SESSION
    assert [(b["session_id"], b["bytes"], b["read_at"]) for b in cost["not_read_yet"]] == [
        (later, other.stat().st_size, None)
    ]
    said = " ".join(run_cli(project, "status", **env).stdout.split())
    assert f"of session {later[:8]}'s transcripts not read yet (never read)" in said
    assert files_of(project) == before


def test_a_database_an_older_version_wrote_is_upgraded_first(project: Path) -> None:
    """The one write `status` may make: the upgrade any command in the project makes."""
    database_at_version(project / ".claude-session.db", db.SCHEMA_VERSION - 1).close()
    shown = run_cli(project, "status", "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["database"]["schema_version"] == db.SCHEMA_VERSION
