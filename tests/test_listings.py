"""Listings at scale: a page of the newest rows by default with a line saying how many more,
every row streamed with --all, a session prefix through the session index, and `status` reading
no whole table of history."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import apsw
from conftest import PYTHON, stream
from inproc import Recorder

from claude_session.core import db
from claude_session.services import queries, status_report

CLI = str(Path(PYTHON).parent / "claude-session")


def cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [CLI, "--project", str(project), *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done


def recorded(project: Path, sessions: int = 3) -> Recorder:
    recorder = Recorder(project)
    for n in range(sessions):
        for payload in stream(project):
            recorder.send(payload | {"session_id": f"{payload['session_id']}-{n}"})
            recorder.advance(0.5)
    return recorder


def plans(conn: apsw.Connection, run: Any) -> list[tuple[str, str]]:
    """(statement, each line of its query plan) for every statement `run` executes."""
    seen: list[tuple[str, Any]] = []

    def trace(cursor: apsw.Cursor, sql: str, bindings: Any) -> bool:
        seen.append((sql, bindings))
        return True

    conn.exec_trace = trace
    try:
        run()
    finally:
        conn.exec_trace = None
    found = []
    for sql, bindings in seen:
        if sql.lstrip().upper().startswith(("SELECT", "WITH")):
            for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", bindings or ()).fetchall():
                found.append((sql, str(row[-1])))
    return found


def test_a_session_prefix_is_a_range_of_the_session_index(project: Path) -> None:
    recorder = recorded(project, 2)
    conn = recorder.conn
    sid = conn.execute("SELECT session_id FROM events LIMIT 1").fetchall()[0][0]
    found = queries.events(conn, session=sid[:6])
    assert found and all(row["session_id"].startswith(sid[:6]) for row in found)
    steps = plans(conn, lambda: queries.events(conn, session=sid[:6], limit=5))
    assert not [d for _, d in steps if re.match(r"SCAN events\b", d)], steps
    assert any("events_session" in d for _, d in steps), steps
    assert queries.events(conn, session=sid[:6] + "\uffff") == []


def test_status_reads_no_whole_audit_and_no_more_claims_than_it_shows(project: Path) -> None:
    recorder = recorded(project, 2)
    conn = recorder.conn
    steps = plans(conn, lambda: status_report.status(conn, str(project)))
    whole = [
        (sql, d)
        for sql, d in steps
        if re.match(r"SCAN hook_events\b", d) and "ORDER BY id DESC LIMIT" not in sql
    ]
    assert not whole, whole
    found = status_report.status(conn, str(project))
    assert found["hooks"]["latest_runs"] == 2 * len(stream(project))


def add_claims(path: str, count: int, now: float) -> None:
    """`count` live claims of one running agent, and one file claimed live by two agents."""
    conn = db.connect(path)
    with db.Immediate(conn):
        for agent in ("a1", "a2"):
            conn.execute(
                "INSERT INTO agent_registry (id, session_id, status, last_seen_at)"
                " VALUES (?, 's', 'running', ?)",
                (agent, now),
            )
        for i in range(count):
            conn.execute(
                "INSERT INTO file_claims (session_id, agent_id, file_path, first_claimed_at,"
                " last_touched_at, expires_at) VALUES ('s', 'a1', ?, ?, ?, ?)",
                (f"f{i}.py", now - i, now - i, now + 3600),
            )
        conn.execute(
            "INSERT INTO file_claims (session_id, agent_id, file_path, first_claimed_at,"
            " last_touched_at, expires_at) VALUES ('s', 'a2', 'f70.py', ?, ?, ?)",
            (now - 500, now - 500, now + 3600),
        )
    conn.close()


def test_listings_page_by_default_and_stream_everything_with_all(project: Path) -> None:
    import time

    add_claims(str(project / ".claude-session.db"), 120, time.time())
    done = cli(project, "claims", "--json")
    shown = json.loads(done.stdout)
    assert len(shown) == queries.PAGE
    assert shown[0]["file_path"] == "f70.py" and shown[0]["contested"] == 1  # contested first
    assert "71 more not shown (of 121)" in done.stderr and "--all" in done.stderr
    every = json.loads(cli(project, "claims", "--all", "--json").stdout)
    assert len(every) == 121 and sum(row["contested"] for row in every) == 2
    lines = cli(project, "claims", "--all").stdout.splitlines()
    assert len(lines) == 122 and lines[0].split("\t")[0] == "file path"  # a header, a row each
    assert len(cli(project, "claims", "--limit", "5").stdout.splitlines()) < 30
    status = json.loads(cli(project, "status", "--json").stdout)
    assert len(status["claims"]) == status_report.STATUS_CLAIMS


def test_every_listing_has_all_and_limit(project: Path) -> None:
    recorded(project, 1).close()
    listings = ("agents", "claims", "errors", "events", "failed-paths", "verdicts", "memory list")
    for listing in listings:
        helped = cli(project, *listing.split(), "--help").stdout
        assert "--all" in helped and "--limit" in helped, listing
        assert json.loads(cli(project, *listing.split(), "--all", "--json").stdout) is not None
        cli(project, *listing.split())
    events = json.loads(cli(project, "events", "--all", "--json").stdout)
    assert len(events) == len(stream(project))
    assert [e["id"] for e in events] == sorted(e["id"] for e in events)  # oldest first
    page = json.loads(cli(project, "events", "--limit", "4", "--json").stdout)
    assert [e["id"] for e in page] == [e["id"] for e in events][-4:]  # the same order


def test_the_fast_path_of_escaping_never_lets_a_control_through() -> None:
    """`escape_controls` returns printable text as it is (a listing streams thousands of
    cells): every character it escapes must be one `str.isprintable` refuses."""
    from claude_session.core.terminal import escape_controls, is_control

    assert not [c for c in map(chr, range(0x110000)) if is_control(c) and c.isprintable()]
    assert escape_controls("a\x1b[31mb\u202ec") == "a\\x1b[31mb\\u202ec"
    assert escape_controls("plain é ✓ text") == "plain é ✓ text"
