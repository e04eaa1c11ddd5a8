"""Fault case 33: a project on a network or VM-shared file system (NFS, SMB, 9p, drvfs...),
where SQLite's WAL is not safe. The detector reads /proc/self/mountinfo; tests override it."""

from __future__ import annotations

from pathlib import Path

import apsw
from conftest import count, fixture, run_hook

from claude_session.core.paths import filesystem_type


def journal_mode(project: Path) -> str:
    conn = apsw.Connection(str(project / ".claude-session.db"))
    try:
        return str(conn.execute("PRAGMA journal_mode").fetchall()[0][0])
    finally:
        conn.close()


def test_on_a_network_file_system_the_database_uses_no_wal(project: Path) -> None:
    payload = fixture("UserPromptSubmit", project)
    run_hook("UserPromptSubmit", payload, project, env={"CLAUDE_SESSION_FS_TYPE": "nfs4"})
    assert journal_mode(project) == "delete"
    assert not (project / ".claude-session.db-wal").exists()
    assert count(project, "events") == 1


def test_on_a_local_file_system_the_database_uses_wal(project: Path) -> None:
    run_hook("UserPromptSubmit", fixture("UserPromptSubmit", project), project)
    assert journal_mode(project) == "wal"


def test_the_detector_reads_the_mount_table() -> None:
    assert filesystem_type("/proc/self") == "proc"
    assert filesystem_type("/") not in (None, "")
