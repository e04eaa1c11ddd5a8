"""The CLI against a database or disk that refuses: one clear line, exit 1, no traceback."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
from pathlib import Path

import apsw
from conftest import PYTHON, capture_lock, fixture, query, run_hook, wait_for
from test_faults import hold_write_lock

CLI = str(Path(PYTHON).parent / "claude-session")


def cli(project: Path, *args: str, **popen: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, "--project", str(project), *args],
        capture_output=True,
        text=True,
        timeout=60,
        **popen,  # type: ignore[arg-type]
    )


def recorded(project: Path) -> None:
    run_hook("UserPromptSubmit", fixture("UserPromptSubmit", project), project)


def assert_one_clear_line(done: subprocess.CompletedProcess[str], words: str) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and words in lines[0], done.stderr


def test_a_write_on_a_database_locked_past_every_deadline(project: Path) -> None:
    recorded(project)
    holder = hold_write_lock(project, 20)
    try:
        done = cli(project, "fail", "approach", "--reason", "why")
    finally:
        holder.kill()
    assert_one_clear_line(done, "locked")


def test_a_write_on_a_full_disk(project: Path) -> None:
    recorded(project)

    # The file size limit stands in for a full disk: set just past the WAL's end, the next
    # write is cut short there, as on a disk that fills up (one wholly past the limit fails
    # with EFBIG, which SQLite reports as an I/O error, not as a full disk).
    # The prompt's workspace snapshot is recorded by a process of its own: let it finish,
    # and hold its lock (it stays a moment for the next frame, and writes after a capture).
    assert wait_for(lambda: not query(project, "SELECT 1 FROM vcs_tags WHERE status = 'pending'"))
    held = capture_lock(project)
    # An empty WAL: the next write appends to it (a WAL that a checkpoint has let go would be
    # written again from its start, under any limit set past its end).
    checkpoint = apsw.Connection(str(project / ".claude-session.db"))
    checkpoint.setbusytimeout(5000)
    checkpoint.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    checkpoint.close()
    wal = project / ".claude-session.db-wal"
    limit = max(4096, wal.stat().st_size + 100 if wal.exists() else 0)

    def tiny_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    try:
        done = cli(project, "fail", "approach", "--reason", "why", preexec_fn=tiny_files)
    finally:
        os.close(held)
    assert_one_clear_line(done, "full")
