"""Group commit (core/group_commit.py): what several long-lived processes of one project post is
stored by whoever holds the writer lock, in one transaction, each event once; a process finds
its event stored by another; a posted event outlives its process; a file not ours is never
stored. In-process: the other processes are envelopes posted as they post them."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest
from conftest import fixture

from claude_session.core import apply_types, config, db, event, group_commit, spool
from claude_session.core.paths import db_path

SESSIONS = ("group-a", "group-b", "group-c", "group-d")


@pytest.fixture
def writer(project: Path) -> Iterator[apsw.Connection]:
    """A connection of a process that serializes its writers, as the hook servers do."""
    db.serialize_writers(threading.RLock())
    conn = db.connect(db_path(str(project)))
    try:
        yield conn
    finally:
        conn.close()
        db.serialize_writers(None)


def prepared(
    project: Path, name: str, session: str, tool_use_id: str
) -> tuple[event.Event, apply_types.Delivery, apply_types.Context]:
    payload = fixture(name, project) | {"session_id": session, "tool_use_id": tool_use_id}
    raw = json.dumps(payload).encode()
    scratch = apsw.Connection(":memory:")
    ev, _ = event.load(scratch, raw, payload["hook_event_name"])
    now = time.time()
    delivery = apply_types.Delivery(
        os.urandom(12).hex(), now, len(raw), transport="mcp", dispatcher="settings"
    )
    settings = config.for_hooks(str(project), scratch)
    return ev, delivery, apply_types.Context(str(project), now, None, settings, (4242, 7, "pid:1"))


def post(project: Path, parts: tuple[Any, ...], pid: int | None = None) -> Path:
    """What another process does before it waits for the lock: its event in the inbox."""
    ev, delivery, ctx = parts
    folder = group_commit._inbox(str(project))
    name = f"{time.time_ns():020d}-{pid or os.getpid()}-{delivery.delivery_id}.json"
    return Path(spool.write_quick(folder, name, group_commit.envelope(ev, delivery, ctx)))


def rows(project: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = db.connect(db_path(str(project)), readonly=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_the_lock_holder_stores_every_posted_event_in_one_commit(
    project: Path, writer: apsw.Connection
) -> None:
    others = [prepared(project, "PreToolUse.Write", s, f"t-{s}") for s in SESSIONS[1:]]
    posted = [post(project, parts) for parts in others]
    commits: list[int] = []
    writer.setwalhook(lambda conn, name, pages: commits.append(pages) or apsw.SQLITE_OK)
    mine = prepared(project, "PreToolUse.Write", SESSIONS[0], "t-mine")
    applied = group_commit.store_posted(writer, group_commit.post(*mine), *mine)
    assert len(commits) == 1  # four events, one transaction
    assert not any(path.exists() for path in posted)
    assert os.listdir(group_commit.inbox_dir(str(project))) == []
    stored = rows(
        project,
        "SELECT e.session_id, e.tool_use_id, count(h.id), min(h.outcome), min(h.transport)"
        " FROM events e JOIN hook_events h ON h.event_id = e.id"
        " WHERE e.hook_event_name = 'PreToolUse' GROUP BY e.id ORDER BY e.id",
    )
    assert stored == [(s, f"t-{s}", 1, "stored", "mcp") for s in SESSIONS[1:]] + [
        (SESSIONS[0], "t-mine", 1, "stored", "mcp")
    ]
    assert applied.event_id == max(r[0] for r in rows(project, "SELECT id FROM events"))
    # What was derived from the others' events is there as if each had stored its own.
    calls = rows(project, "SELECT session_id, tool_use_id, status FROM tool_calls ORDER BY 1")
    assert calls == sorted(
        [(s, f"t-{s}", "running") for s in SESSIONS[1:]] + [(SESSIONS[0], "t-mine", "running")]
    )
    agents = rows(project, "SELECT id FROM agent_registry WHERE is_main = 1 ORDER BY id")
    assert agents == [(s,) for s in SESSIONS]


def test_a_process_whose_event_another_stored_reads_it_back_and_stores_nothing(
    project: Path, writer: apsw.Connection
) -> None:
    ev, delivery, ctx = prepared(project, "UserPromptSubmit", SESSIONS[1], "")
    mine = group_commit.post(ev, delivery, ctx)  # posted; now it waits for the lock...
    leader = prepared(project, "UserPromptSubmit", SESSIONS[0], "")
    group_commit.store_posted(writer, group_commit.post(*leader), *leader)
    assert not os.path.exists(mine)  # ...which another took first, storing it too
    commits: list[int] = []
    writer.setwalhook(lambda conn, name, pages: commits.append(pages) or apsw.SQLITE_OK)
    applied = group_commit.store_posted(writer, mine, ev, delivery, ctx)
    assert commits == []  # nothing written: its turn at the lock only finds its event
    found = rows(
        project,
        "SELECT e.id, h.id, h.outcome FROM events e JOIN hook_events h ON h.event_id = e.id"
        f" WHERE e.session_id = '{SESSIONS[1]}'",
    )
    assert found == [(applied.event_id, applied.audit_id, "stored")]
    turns = rows(project, f"SELECT count(*) FROM turns WHERE session_id = '{SESSIONS[1]}'")
    assert turns == [(1,)]


def test_an_event_posted_by_a_process_that_died_is_stored_by_spool_ingestion(
    project: Path, writer: apsw.Connection
) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    parts = prepared(project, "Stop", SESSIONS[2], "")
    path = post(project, parts, pid=gone.pid)
    assert spool.backlog(str(project)) == 1  # status counts it as waiting
    assert spool.ingest(writer, str(project)) == 1
    assert not path.exists()
    stored = rows(
        project,
        "SELECT e.hook_event_name, h.outcome, h.note FROM events e"
        f" JOIN hook_events h ON h.event_id = e.id WHERE e.session_id = '{SESSIONS[2]}'",
    )
    assert stored == [
        (
            "Stop",
            "spooled",
            "spooled: posted for a group commit, then its process stopped before it was stored",
        )
    ]


def test_a_file_in_the_inbox_that_we_did_not_write_is_set_aside_never_stored(
    project: Path, writer: apsw.Connection
) -> None:
    ev, delivery, ctx = prepared(project, "PreToolUse.Bash", SESSIONS[3], "t-planted")
    body = json.dumps(group_commit.envelope(ev, delivery, ctx)).encode()
    folder = Path(group_commit._inbox(str(project)))
    planted = folder / f"{time.time_ns():020d}-{os.getpid()}-planted.json"
    planted.write_bytes(b"0" * 64 + b"\n" + body)  # no MAC of ours
    leader = prepared(project, "Stop", SESSIONS[0], "")
    group_commit.store_posted(writer, group_commit.post(*leader), *leader)
    assert not planted.exists()
    assert (folder / "rejected" / planted.name).exists()
    assert rows(project, "SELECT count(*) FROM events WHERE tool_use_id = 't-planted'") == [(0,)]
    assert rows(project, "SELECT hook_event_name FROM events") == [("Stop",)]


def test_with_the_lock_free_an_event_is_stored_alone_and_nothing_is_posted(
    project: Path, writer: apsw.Connection
) -> None:
    """A single session pays nothing for groups: no file, no savepoint, its own transaction."""
    from claude_session.core import events

    alone: list[str] = []

    def by_itself(conn: apsw.Connection, *parts: Any) -> Any:
        alone.append(parts[0].name)
        return events.apply(conn, *parts)

    group_commit.store(writer, *prepared(project, "Stop", SESSIONS[0], ""), by_itself)
    assert alone == ["Stop"]
    assert not os.path.exists(group_commit.inbox_dir(str(project)))


def test_with_the_lock_held_by_another_process_the_event_is_posted_and_stored_in_a_group(
    project: Path, writer: apsw.Connection
) -> None:
    """Another process holds the writer lock a moment: the event is posted, then stored by
    this process once the lock is free (it finds its own file still there)."""
    from claude_session.core import writelock

    lock_file = writelock.for_database(db_path(str(project))).path
    holder = subprocess.Popen(
        ["flock", lock_file, "sleep", "0.5"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 5
        while not db.writers_busy(writer) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert db.writers_busy(writer)
        other = prepared(project, "PreToolUse.Bash", SESSIONS[1], "t-other")
        posted = post(project, other)

        def never(*parts: Any) -> Any:
            raise AssertionError("stored alone while another writer held the lock")

        applied = group_commit.store(
            writer, *prepared(project, "PreToolUse.Bash", SESSIONS[0], "t-mine"), never
        )
    finally:
        holder.wait(10)
    assert not posted.exists()
    assert os.listdir(group_commit.inbox_dir(str(project))) == []
    stored = rows(project, "SELECT id, tool_use_id FROM events ORDER BY id")
    assert [t for _, t in stored] == ["t-other", "t-mine"]
    assert applied.event_id == stored[-1][0]


def test_a_posted_file_taken_away_by_hand_still_has_its_event_stored(
    project: Path, writer: apsw.Connection
) -> None:
    parts = prepared(project, "Stop", SESSIONS[0], "")
    mine = group_commit.post(*parts)
    os.unlink(mine)  # gone, and nobody stored it
    applied = group_commit.store_posted(writer, mine, *parts)
    stored = rows(
        project, "SELECT e.id, h.outcome FROM events e JOIN hook_events h ON h.event_id = e.id"
    )
    assert stored == [(applied.event_id, "stored")]
