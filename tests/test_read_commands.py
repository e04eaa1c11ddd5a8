"""Read commands never write (issue 32): no database made where there is none (in the project
or the home folder), the spool left to the hooks and the daemon, and a read on a
folder with no database says so. Run as users run them: the installed CLI, no --project."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import PYTHON, count, fixture, hook_env, run_hook, spool_a_stop, spooled

# Every command that only reads, with arguments it needs; each must refuse or answer without
# leaving a database, a spool or a WAL file behind.
READS = [
    ["status"],
    ["status", "--json"],
    ["agents"],
    ["agents", "--all"],
    ["sessions"],
    ["claims"],
    ["errors"],
    ["failed-paths"],
    ["verdicts"],
    ["events"],
    ["restore"],
    ["cost"],
    ["timeline"],
    ["state", "list"],
    ["state", "get", "task"],
    ["state", "history"],
    ["memory", "list"],
    ["memory", "list", "--json"],
    ["memory", "search", "anything"],
    ["memory", "show", "1"],
    ["memory", "export"],
    ["fork", "--list"],
    ["watch", "--once"],
    ["statusline"],
    ["doctor"],
    ["config"],
]
# Those whose answer stands without a project database (global memories, settings, checks).
ANSWER_WITHOUT = {"memory list", "memory search", "memory export", "statusline", "config"}


def run(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`claude-session ARGS` run in `cwd` as a user does: no --project, no CLAUDE_PROJECT_DIR."""
    env = hook_env(None, HOME=str(home))
    return subprocess.run(
        [str(Path(PYTHON).parent / "claude-session"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )


def made(*folders: Path) -> list[str]:
    return sorted(
        str(Path(d) / n)
        for f in folders
        for d, _, names in os.walk(f)
        for n in names
        if ".claude-session.db" in n
    )


@pytest.mark.parametrize("args", READS, ids=" ".join)
def test_a_read_in_a_folder_without_a_database_writes_nothing(
    tmp_path: Path, args: list[str]
) -> None:
    home, folder = tmp_path / "home", tmp_path / "home" / "work"
    folder.mkdir(parents=True)
    done = run(folder, home, *args)
    assert made(tmp_path) == [], done
    said = done.stdout + done.stderr
    assert "Traceback" not in said
    name = " ".join(args[:2]) if args[0] in ("memory", "state") else args[0]
    if name in ANSWER_WITHOUT:
        assert done.returncode == 0, said
    if name.startswith("memory"):
        assert f"no claude-session database at {folder / '.claude-session.db'}" in done.stderr
    elif name not in ANSWER_WITHOUT and name != "doctor":
        assert done.returncode == 1, said
        assert "no claude-session database at" in done.stderr
        assert "claude-session install" in done.stderr


def test_memory_list_at_home_makes_no_database_there(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    for args in (["memory", "list"], ["memory", "search", "x"], ["memory", "export"]):
        assert run(home, home, *args).returncode == 0
    assert made(tmp_path) == []


def test_reads_leave_the_spool_and_the_tables_as_they_were(project: Path) -> None:
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    spool_a_stop(project)
    events = count(project, "events")
    for args in READS:
        run(project, project.parent, *args)
    assert len(spooled(project)) == 1  # still waiting for the hooks or the daemon
    assert count(project, "events") == events
    waiting = run(project, project.parent, "status")
    assert "1 event waits in the spool" in waiting.stdout


def test_a_spool_without_a_database_is_named_by_a_read(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    folder.mkdir()
    spool_a_stop(folder)
    done = run(folder, tmp_path, "status")
    assert done.returncode == 1
    assert "1 events wait in its spool" not in done.stderr  # said in good English
    assert "1 event waits in its spool" in done.stderr and "claude-session ingest" in done.stderr
    assert not (folder / ".claude-session.db").exists()
    assert run(folder, tmp_path, "ingest").returncode == 0
    assert (folder / ".claude-session.db").exists() and not spooled(folder)
