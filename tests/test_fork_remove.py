"""A fork leaves a registered worktree in the user's repository: `fork` says how to remove it,
`fork --list` shows the forks, `fork --remove FOLDER --yes` removes the folder and its
registration: only a fork we made, and not when work done there would be lost (unless
--force). Through the installed command, as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from conftest import git, run_cli
from test_first_hour import recorded_write

SESSION = "f0rk-rem0-0000-4000-8000-000000000001"


def cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The installed command, wide: no long temporary path folded inside a word."""
    return run_cli(project, *args, COLUMNS="1000")


def a_fork(project: Path) -> Path:
    """A git project, a session that writes app.py, and a fork from the Write's frame."""
    (project / "app.py").write_text("VALUE = 1\n")
    git(project, "init", "-q")
    git(project, "add", ".")
    git(project, "commit", "-qm", "init")
    frame = recorded_write(project, SESSION)
    made = cli(project, "fork", f"{SESSION}:{frame}")
    assert made.returncode == 0, made.stderr
    listed = json.loads(cli(project, "fork", "--list", "--json").stdout)
    fork = Path(listed[-1]["path"])
    said = " ".join(made.stdout.split())
    assert f"when done with it: claude-session fork --remove {fork} --yes" in said
    return fork


def test_a_fork_is_listed_and_removed_with_its_worktree_registration(project: Path) -> None:
    fork = a_fork(project)
    assert str(fork) in git(project, "worktree", "list")
    listed = json.loads(cli(project, "fork", "--list", "--json").stdout)
    assert [(r["kind"], r["exists"], r["worktree"]) for r in listed] == [("fork", True, True)]
    shown = " ".join(cli(project, "fork", "--list").stdout.split())
    assert f"{fork} (worktree)" in shown and "remove: claude-session fork --remove" in shown
    asked = cli(project, "fork", "--remove", str(fork))  # no terminal, no --yes: nothing
    assert asked.returncode == 1 and "pass --yes" in asked.stderr and fork.is_dir()
    done = cli(project, "fork", "--remove", str(fork), "--yes")
    assert done.returncode == 0, done.stderr
    assert "and its worktree registration" in " ".join(done.stdout.split())
    assert not fork.exists()
    assert str(fork) not in git(project, "worktree", "list")
    listed = json.loads(cli(project, "fork", "--list", "--json").stdout)
    assert [(r["exists"], r["worktree"], r["remove_with"]) for r in listed] == [
        (False, False, None)
    ]
    assert (project / "app.py").read_text() == "VALUE = 2\n"  # the project untouched


def test_work_done_in_the_fork_is_not_lost_without_force(project: Path) -> None:
    fork = a_fork(project)
    (fork / "app.py").write_text("VALUE = 3\n")
    refused = cli(project, "fork", "--remove", str(fork), "--yes")
    assert refused.returncode == 1 and fork.is_dir()
    said = " ".join(refused.stderr.split())
    assert "changed since the fork was made: app.py" in said and "--force" in said
    forced = cli(project, "fork", "--remove", str(fork), "--yes", "--force")
    assert forced.returncode == 0, forced.stderr
    assert not fork.exists() and str(fork) not in git(project, "worktree", "list")


def test_a_deletion_or_a_change_that_kept_the_time_is_work_too(project: Path) -> None:
    """Compared by content with the snapshot the fork was made from, not by file times: a
    file deleted there, or changed with its old time put back (`cp -p`, `touch -r`)."""
    fork = a_fork(project)
    (fork / "notes.md").write_text("kept\n")
    os.utime(fork / "notes.md", (1_000_000, 1_000_000))  # an old time: new, by content
    kept = (fork / "app.py").stat()
    (fork / "app.py").write_text("VALUE = 9\n")
    os.utime(fork / "app.py", ns=(kept.st_atime_ns, kept.st_mtime_ns))
    refused = cli(project, "fork", "--remove", str(fork), "--yes")
    said = " ".join(refused.stderr.split())
    assert refused.returncode == 1 and fork.is_dir(), said
    assert "changed since the fork was made: app.py" in said
    assert "added since the fork was made: notes.md" in said
    (fork / "app.py").write_text("VALUE = 2\n")  # as the fork was made
    (fork / "notes.md").unlink()
    assert cli(project, "fork", "--remove", str(fork), "--yes", "--json").returncode == 0
    assert not fork.exists()


def test_a_file_deleted_in_the_fork_is_work_too(project: Path) -> None:
    fork = a_fork(project)
    (fork / "app.py").unlink()
    refused = cli(project, "fork", "--remove", str(fork), "--yes")
    said = " ".join(refused.stderr.split())
    assert refused.returncode == 1 and "deleted since the fork was made: app.py" in said


def test_a_folder_that_is_not_our_fork_is_left_alone(project: Path, tmp_path: Path) -> None:
    a_fork(project)
    other = tmp_path / "someone-elses"
    other.mkdir()
    (other / "keep.txt").write_text("mine\n")
    refused = cli(project, "fork", "--remove", str(other), "--yes")
    assert refused.returncode == 1 and (other / "keep.txt").exists()
    assert "not a fork claude-session made" in " ".join(refused.stderr.split())
    itself = cli(project, "fork", "--remove", str(project), "--yes")
    assert itself.returncode == 1 and (project / "app.py").exists()
