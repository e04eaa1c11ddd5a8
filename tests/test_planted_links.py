"""Files we create are never opened through a link someone planted: the link is refused with a
log line, the event is kept (spooled), and the file the link points at is untouched."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import fixture, log_file, run_hook, spooled

VICTIM_TEXT = b"precious data the user can write\n"


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    target = tmp_path / "victim.txt"
    target.write_bytes(VICTIM_TEXT)
    return target


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm", "-journal"])
def test_a_link_at_the_database_files_is_refused(project: Path, victim: Path, suffix: str) -> None:
    if suffix:  # the database exists; a link sits where SQLite would open its companion file
        run_hook("UserPromptSubmit", fixture("UserPromptSubmit", project), project)
        for extra in ("-wal", "-shm"):
            if os.path.lexists(project / f".claude-session.db{extra}"):
                os.unlink(project / f".claude-session.db{extra}")
    os.symlink(victim, project / f".claude-session.db{suffix}")
    payload = fixture("PostToolUse.Bash", project)
    run_hook("PostToolUse", payload, project)
    assert victim.read_bytes() == VICTIM_TEXT
    assert len(spooled(project)) == 1  # the event is kept
    log = log_file(project).read_text()
    assert "symbolic link" in log


def test_a_dangling_link_at_the_database_is_not_created_through(
    project: Path, tmp_path: Path
) -> None:
    target = tmp_path / "elsewhere.db"
    os.symlink(target, project / ".claude-session.db")
    run_hook("UserPromptSubmit", fixture("UserPromptSubmit", project), project)
    assert not target.exists()
    assert len(spooled(project)) == 1


def test_a_link_at_git_info_exclude_is_not_written_through(project: Path, victim: Path) -> None:
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    exclude = project / ".git" / "info" / "exclude"
    exclude.unlink()
    os.symlink(victim, exclude)
    run_hook("UserPromptSubmit", fixture("UserPromptSubmit", project), project)
    assert victim.read_bytes() == VICTIM_TEXT
    assert (project / ".claude-session.db").exists()  # recorded all the same


def test_a_link_at_the_log_is_not_written_through(project: Path, victim: Path) -> None:
    os.symlink(victim, log_file(project))
    run_hook("PreToolUse", b"{not json", project)  # something to log
    assert victim.read_bytes() == VICTIM_TEXT


def test_links_at_the_daemon_lock_and_status_are_never_followed(
    project: Path, victim: Path, reap_daemons: None
) -> None:
    """The daemon truncates and writes its lock, and replaces its status file: a link planted
    at either is refused and its target left alone; hooks go on recording."""
    import time

    from conftest import PYTHON

    from claude_session.services.background import daemon_control

    os.symlink(victim, daemon_control.lock_path(str(project)))
    status_victim = victim.with_name("status-victim.txt")
    status_victim.write_bytes(VICTIM_TEXT)
    os.symlink(status_victim, daemon_control.status_path(str(project)))
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    cli = str(Path(PYTHON).parent / "claude-session")
    subprocess.run([cli, "--project", str(project), "daemon", "start"], capture_output=True)
    time.sleep(daemon_control.START_DELAY_SECONDS + 1.5)
    assert victim.read_bytes() == VICTIM_TEXT
    assert status_victim.read_bytes() == VICTIM_TEXT
    run_hook("UserPromptSubmit", fixture("UserPromptSubmit", project), project)
    assert (project / ".claude-session.db").exists()
