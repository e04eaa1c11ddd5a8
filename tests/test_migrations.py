"""Schema versioning: schema.sql equals version 1 plus every migration; migrations keep rows."""

from __future__ import annotations

import json
import re
from pathlib import Path

import apsw
import pytest
from conftest import database_at_version

from claude_session.core import db

V1 = Path(__file__).parent / "fixtures" / "schema_v1.sql"


def shape(conn: apsw.Connection) -> list[tuple[str, str, str]]:
    """Normalised sqlite_master: what a database is, whatever order or spacing made it."""
    found = conn.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
        " ORDER BY type, name"
    ).fetchall()

    def normal(sql: str) -> str:
        text = re.sub(r"\s+", " ", re.sub(r"--[^\n]*", "", sql)).strip()
        return re.sub(r"\s+([,)])", r"\1", text)  # ALTER TABLE ADD COLUMN leaves "x TEXT , y"

    return [(t, n, normal(s or "")) for t, n, s in found]


def run(conn: apsw.Connection, sql: str) -> None:
    for _ in conn.execute(sql):
        pass


def test_schema_version_constant_matches_schema_sql_and_migrations() -> None:
    assert f"PRAGMA user_version = {db.SCHEMA_VERSION};" in db.read_schema()
    assert max(n for n, _ in db.migrations()) == db.SCHEMA_VERSION
    numbers = [n for n, _ in db.migrations()]
    assert numbers == list(range(2, db.SCHEMA_VERSION + 1)), "migrations are append-only, gapless"


@pytest.mark.parametrize("start", range(1, db.SCHEMA_VERSION))
def test_every_previous_version_migrates_to_the_fresh_schema(tmp_path: Path, start: int) -> None:
    """Version 1 from its snapshot, later ones as the migrations left them; rows survive."""
    path = str(tmp_path / f"v{start}.db")
    old = database_at_version(path, start)
    if start < 5:  # the columns' names before and after the original schema came back
        old.execute(
            "INSERT INTO error_log (session_id, agent_id, signature, category, error_text,"
            " attempt, occurred_at) VALUES ('s', 'main', 'Bash: make', 'build', 'Exit code 2',"
            " 1, 1)"
        )
    else:
        old.execute(
            "INSERT INTO error_log (session_id, agent_id, signature, error_category,"
            " error_message, attempt_number, occurred_at) VALUES ('s', 'main', 'Bash: make',"
            " 'build', 'Exit code 2', 1, 1)"
        )
    old.close()
    migrated = db.connect(path)
    fresh = db.connect(str(tmp_path / "fresh.db"))
    assert shape(migrated) == shape(fresh)
    assert migrated.execute("SELECT signature FROM error_log").fetchall() == [("Bash: make",)]


def test_fresh_schema_equals_version_1_plus_migrations(tmp_path: Path) -> None:
    fresh = db.connect(str(tmp_path / "fresh.db"))
    migrated = apsw.Connection(str(tmp_path / "old.db"))
    run(migrated, V1.read_text())
    migrated.close()
    migrated = db.connect(str(tmp_path / "old.db"))
    assert db.schema_version(migrated) == db.schema_version(fresh) == db.SCHEMA_VERSION
    assert shape(migrated) == shape(fresh)


def test_failed_migration_rolls_back_version_and_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "old.db")
    conn = apsw.Connection(path)
    run(conn, V1.read_text())
    conn.close()
    broken = [(n, sql + "\nTHIS IS NOT SQL;") for n, sql in db.migrations()]
    monkeypatch.setattr(db, "migrations", lambda: broken)
    with pytest.raises(db.DatabaseError):
        db.connect(path)
    conn = apsw.Connection(path)
    assert conn.execute("PRAGMA user_version").fetchall()[0][0] == 1
    assert not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'prompts'").fetchall()
    conn.close()
    monkeypatch.undo()
    assert db.schema_version(db.connect(path)) == db.SCHEMA_VERSION  # completes next time


def test_newer_database_is_never_written(tmp_path: Path) -> None:
    path = str(tmp_path / "new.db")
    conn = db.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(db.SchemaTooNew, match="upgrade claude-session"):
        db.connect(path)
    with pytest.raises(db.SchemaTooNew):
        db.connect(path, readonly=True)


def test_foreign_sqlite_file_is_not_taken_over(tmp_path: Path) -> None:
    path = str(tmp_path / "other.db")
    conn = apsw.Connection(path)
    conn.execute("CREATE TABLE mine (x)")
    conn.close()
    with pytest.raises(db.DatabaseError, match="not a claude-session database"):
        db.connect(path)


RELEASE_V4 = Path(__file__).parent / "fixtures" / "db_v4_release_0.1.0.sqlite"
TEXT_TIME = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")
SESSION = "560819af-56fc-4528-be0a-32a24d1aa819"


def test_release_0_1_0_database_migrates_in_place_with_every_row(tmp_path: Path) -> None:
    """A real version-4 database (a demo session with a subagent, an error, a judge verdict
    and a failed path) opens as version 5, every row kept, under the original names."""
    path = tmp_path / ".claude-session.db"
    path.write_bytes(RELEASE_V4.read_bytes())
    old = apsw.Connection(str(path))
    assert db.schema_version(old) == 4
    tables = [
        name
        for (name,) in old.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        # one wide row per session becomes rows, and the empty project_state is filled in:
        # both are checked below
        if name not in ("session_metrics", "project_state")
    ]
    before = {t: old.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in tables}
    wide = {
        row[0]: row[1:]
        for row in old.execute(
            "SELECT session_id, events, prompts, tool_calls, tool_failures, file_edits,"
            " subagents, compactions FROM session_metrics"
        )
    }
    old.close()

    conn = db.connect(str(path))
    assert db.schema_version(conn) == db.SCHEMA_VERSION
    assert {t: conn.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in tables} == before
    assert before["agent_registry"] == 5 and before["error_log"] == 1

    agents = dict(conn.execute("SELECT id, task_description FROM agent_registry").fetchall())
    assert agents["a026341fa5086f41e"] == "SUBTASK-B: read hello.py"
    assert agents[SESSION] == "TASK-A: write hello.py and run it"
    sub = conn.execute(
        "SELECT status, spawn_time, end_time, spawn_time = datetime(started_at, 'unixepoch'),"
        " files_changed FROM agent_registry WHERE id = 'a026341fa5086f41e'"
    ).fetchall()[0]
    assert sub[0] == "completed" and TEXT_TIME.match(sub[1]) and TEXT_TIME.match(sub[2])
    assert sub[3] == 1 and sub[4] == "[]"  # it only read
    main_files = "SELECT files_changed FROM agent_registry WHERE id = ?"
    assert conn.execute(main_files, (SESSION,)).fetchall() == [('["hello.py"]',)]

    error = conn.execute(
        "SELECT error_category, error_message, attempt_number, resolution, task_id, interrupted,"
        " timestamp FROM error_log"
    ).fetchall()[0]
    assert error[:4] == ("runtime", error[1], 1, "abandoned")
    assert error[1].startswith("Exit code 1\nTraceback") and "nonexistent_mod" in error[1]
    assert error[4] == "f488a35e-814d-45c0-9de3-7bc46145606e"  # the prompt it happened in
    assert error[5] == 0 and TEXT_TIME.match(error[6])

    verdict = conn.execute(
        "SELECT hook_event, decision, reason, verdict_json, task_id, timestamp FROM llm_verdicts"
    ).fetchall()[0]
    assert verdict[:3] == ("TaskCompleted", "block", "tests still fail")
    assert json.loads(verdict[3]) == {"decision": "block", "reason": "tests still fail"}
    assert verdict[4] == "t1" and TEXT_TIME.match(verdict[5])

    failed = conn.execute("SELECT approach, reason_failed, timestamp FROM failed_paths").fetchall()
    assert failed[0][:2] == (
        "pip install -e . with setuptools 58",
        "editable install needs setuptools>=64",
    )
    assert conn.execute("SELECT operation, timestamp FROM file_claims").fetchall()[0][0] == "Edit"
    for table in ("file_claims", "failed_paths", "context_snapshots", "hook_events"):
        times = [t for (t,) in conn.execute(f"SELECT timestamp FROM {table}")]
        assert times and all(TEXT_TIME.match(t) for t in times), table
    assert conn.execute(
        "SELECT count(*) FROM hook_events WHERE dispatcher = 'settings'"
        " AND payload_summary IS NOT NULL AND event_type IS NOT NULL"
    ).fetchall() == [(before["hook_events"],)]
    assert ("Write hello.py",) in conn.execute("SELECT payload_summary FROM hook_events")
    state = dict(conn.execute("SELECT key, value FROM project_state").fetchall())
    assert state["last_session_id"] == SESSION

    # The counters `status` shows are the same numbers as before, now rows.
    from claude_session.services import queries

    shown = {
        s["session_id"]: (
            s["events"],
            s["prompts"],
            s["tool_calls"],
            s["tool_failures"],
            s["file_edits"],
            s["subagents"],
            s["compactions"],
        )
        for s in queries.sessions(conn)
    }
    assert shown == wide
    durations = conn.execute(
        "SELECT event_type, value FROM session_metrics WHERE session_id = ?"
        " AND key = 'duration_ms' ORDER BY event_type",
        (SESSION,),
    ).fetchall()
    assert durations == [("PostToolUse", "210"), ("PostToolUseFailure", "138")]
