"""The CLI against a database or disk that refuses, or a database that is damaged: one clear
line, exit 1, no traceback."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
from pathlib import Path

import apsw
import pytest
from conftest import PYTHON, capture_lock, fixture, query, run_hook, wait_for
from every_command import (
    HOSTILE,
    NO_DATABASE,
    OWN_WAY,
    Run,
    command_lines,
    kept,
    put_back,
    receiving,
    run,
)
from inproc import Recorder
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


def not_sqlite(path: Path) -> None:
    path.write_bytes(b"this is not a database, whatever its name says\n" * 200)


def truncated(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2 + 1000])


def corrupted_page(path: Path) -> None:
    """Every page but the first (the header and the schema's root) scribbled over."""
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big") or 65536
    noise = (bytes(range(7, 256)) * (page // 249 + 1))[:page]
    for start in range(page, len(data), page):
        data[start : start + page] = noise[: len(data) - start]
    path.write_bytes(bytes(data))


CORRUPTIONS = {"not_sqlite": not_sqlite, "truncated": truncated, "corrupted_page": corrupted_page}


def corrupted_run(project: Path, saved: bytes, corrupt: str, line: list[str]) -> Run:
    """`line` run on the recorded database, damaged as `corrupt` says."""
    put_back(project, saved)
    CORRUPTIONS[corrupt](project / ".claude-session.db")
    return run(project, line)


@pytest.mark.parametrize("corrupt", list(CORRUPTIONS))
def test_every_command_on_a_corrupt_database_prints_one_line(
    recorder: Recorder, project: Path, corrupt: str, tmp_path: Path
) -> None:
    """Every command that reads the project's database, in every format it offers
    (tests/every_command.py): one line on stderr naming the damaged file, exit 1, never a
    traceback; doctor and the status line say it their own way."""
    for name in ("SessionStart.startup", "UserPromptSubmit", "PostToolUse.Write", "Stop"):
        recorder.send(fixture(name, project) | {"session_id": "c0ffee00-corrupt"})
        recorder.advance(1)
    recorder.close()
    saved = kept(project)
    values = {
        "session": "c0ffee00-corrupt",
        "frame": "c0ffee00-corrupt:1",
        "frame2": "c0ffee00-corrupt:2",
        "memory": "1",
        "key": "k1",
        "export_file": str(tmp_path / "memories.jsonl"),
        "fork_path": str(tmp_path / "fork"),
    }
    (tmp_path / "memories.jsonl").write_text('{"category": "fact", "text": "x"}\n')
    assert set(OWN_WAY) == {"doctor", "statusline"}, "say below how a new one says it"
    with receiving():
        found = [
            (command, line, corrupted_run(project, saved, corrupt, line))
            for command, line in command_lines(values)
            if not any(HOSTILE in word for word in line)  # those name nothing that is there
        ]
    wrong: dict[str, str] = {}
    for command, line, done in found:
        lines = [x for x in done.stderr.splitlines() if x.strip()]
        if command in NO_DATABASE:
            ok = "Traceback" not in done.stderr
        elif command == "doctor":
            said = [w for w in ("NotADBError", "CorruptError") if w in done.stdout]
            ok = done.code == 1 and bool(said)  # its `database` check failed, saying why
        elif command == "statusline":
            ok = done.code == 0 and "cs: ?" in done.stdout
        else:
            ok = done.code == 1 and len(lines) == 1 and "damaged" in lines[0]
            ok = ok and str(project / ".claude-session.db") in lines[0]
        if not ok:
            wrong[" ".join(line)] = f"exit {done.code}: {done.stderr[-300:]!r}"
    assert not wrong, "\n".join(f"{line}: {why}" for line, why in wrong.items())
