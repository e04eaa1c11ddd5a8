"""Revert never destroys what it cannot bring back: nested repositories, files over the size
limit, the user's own files, files no snapshot could read, links out of the project; and
`revert --undo` brings back every byte, mode and folder the revert changed."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_cli, write_config
from workbench import Workbench, git, reads_anything, rerun_without_reading_anything, tree

from claude_session.services.timetravel import revert


@pytest.fixture
def bench(project: Path) -> Iterator[Workbench]:
    (project / "app.py").write_text("VALUE = 1\n")
    (project / ".gitignore").write_text("*.log\n")
    git(project, "init", "-q")
    git(project, "add", ".")
    git(project, "commit", "-qm", "init")
    wb = Workbench(project)
    wb.start()
    wb.prompt()
    yield wb
    wb.close()


def nested_repo(folder: Path, commit: bool = True) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    git(folder, "init", "-q")
    (folder / "lib.py").write_text("LIB = 1\n")
    if commit:
        git(folder, "add", ".")
        git(folder, "commit", "-qm", "lib")
    (folder / "NOTES.txt").write_text("my uncommitted notes\n")


def test_a_nested_repository_a_session_changed_is_never_removed(bench: Workbench) -> None:
    root = bench.root
    frame = bench.last_frame()
    # The session clones a library into the project and works in it.
    bench.bash("git clone lib", lambda: nested_repo(root / "vendor" / "lib"))
    bench.bash("edit lib", lambda: (root / "vendor" / "lib" / "lib.py").write_text("LIB = 2\n"))
    bench.bash("commit", lambda: git(root / "vendor" / "lib", "commit", "-qam", "two"))
    bench.write("app.py", b"VALUE = 2\n")
    before = tree(root)
    plan = revert.plan(bench.rec.conn, str(root), f"{bench.session}:{frame}")
    assert ("vendor/lib", revert.safe_write.NESTED) in plan.left
    assert [c.path for c in plan.changes] == ["app.py"]
    bench.revert(f"{bench.session}:{frame}")
    after = tree(root)
    assert {k: v for k, v in after.items() if k.startswith("vendor")} == {
        k: v for k, v in before.items() if k.startswith("vendor")
    }
    assert (root / "app.py").read_text() == "VALUE = 1\n"
    bench.undo()
    assert tree(root) == before


def test_a_folder_with_a_git_file_and_one_without_commits_are_left_alone(
    bench: Workbench,
) -> None:
    root = bench.root
    frame = bench.last_frame()

    def make() -> None:
        nested_repo(root / "fresh", commit=False)  # git init, nothing committed
        worktree = root / "wt"
        worktree.mkdir()
        (worktree / ".git").write_text("gitdir: /somewhere/else/.git/worktrees/wt\n")
        (worktree / "code.py").write_text("WT = 1\n")

    bench.bash("make repos", make)
    before = tree(root)
    plan = revert.plan(bench.rec.conn, str(root), f"{bench.session}:{frame}")
    assert not plan.changes
    assert {p for p, _ in plan.left} >= {"wt/code.py"}
    assert tree(root) == before


def test_a_file_over_the_size_limit_is_kept_by_the_safety_snapshot(bench: Workbench) -> None:
    root = bench.root
    write_config(root, {"snapshot_max_file_mb": 1})
    big = os.urandom(1024 * 1024 + 10)
    (root / "dataset.bin").write_bytes(b"small\n")
    bench.prompt()  # the user's small file, captured at the turn's start
    frame = bench.last_frame()
    bench.bash("make data", lambda: (root / "dataset.bin").write_bytes(big))
    plan = revert.plan(bench.rec.conn, str(root), f"{bench.session}:{frame}")
    [change] = plan.changes
    assert (change.action, change.path, change.large) == ("restore", "dataset.bin", True)
    bench.revert(f"{bench.session}:{frame}")
    assert (root / "dataset.bin").read_bytes() == b"small\n"
    bench.undo()
    assert (root / "dataset.bin").read_bytes() == big


def test_a_large_file_no_snapshot_has_is_never_deleted(bench: Workbench) -> None:
    root = bench.root
    write_config(root, {"snapshot_max_file_mb": 1})
    bench.prompt()
    frame = bench.last_frame()
    big = os.urandom(1024 * 1024 + 10)
    bench.bash("make data", lambda: (root / "dataset.bin").write_bytes(big))
    bench.write("app.py", b"VALUE = 3\n")
    plan = revert.plan(bench.rec.conn, str(root), f"{bench.session}:{frame}")
    assert [c.path for c in plan.changes] == ["app.py"]
    bench.revert(f"{bench.session}:{frame}", force=True)
    assert (root / "dataset.bin").read_bytes() == big


def test_the_users_own_file_is_protected_after_a_snapshot_captured_it(
    bench: Workbench,
) -> None:
    root = bench.root
    frame = bench.last_frame()
    bench.write("app.py", b"VALUE = 2\n")
    (root / "notes.md").write_text("the user's own notes\n")  # by hand, no tool call
    bench.prompt()  # the next turn's snapshot captures it
    bench.write("app.py", b"VALUE = 3\n")
    plan = revert.plan(bench.rec.conn, str(root), f"{bench.session}:{frame}")
    assert plan.outside == ["notes.md"]
    with pytest.raises(revert.RevertError, match=r"notes\.md.*--force"):
        revert.execute(bench.rec.conn, str(root), plan)
    assert (root / "notes.md").read_text() == "the user's own notes\n"
    assert (root / "app.py").read_text() == "VALUE = 3\n"
    bench.revert(f"{bench.session}:{frame}", paths=["app.py"])
    assert (root / "notes.md").exists() and (root / "app.py").read_text() == "VALUE = 1\n"


def test_a_users_edit_to_a_file_a_tool_wrote_is_protected_too(bench: Workbench) -> None:
    root = bench.root
    frame = bench.last_frame()
    bench.write("app.py", b"VALUE = 2\n")
    (root / "app.py").write_text("VALUE = 'mine'\n")
    bench.prompt()  # captured by the next snapshot: still the user's
    bench.write("other.py", b"X = 1\n")
    plan = revert.plan(bench.rec.conn, str(root), f"{bench.session}:{frame}")
    assert plan.outside == ["app.py"]
    before = tree(root)
    bench.revert(f"{bench.session}:{frame}", force=True)
    assert (root / "app.py").read_text() == "VALUE = 1\n"
    bench.undo()
    assert tree(root) == before


def test_what_the_capture_could_not_read_is_never_overwritten(bench: Workbench) -> None:
    root = bench.root
    (root / "pipe").write_text("a file the agent replaces by a fifo\n")
    bench.prompt()
    frame = bench.last_frame()

    def to_fifo() -> None:
        (root / "pipe").unlink()
        os.mkfifo(root / "pipe")
        (root / "build.log").write_text("ignored, never captured\n")

    bench.bash("mkfifo", to_fifo)
    plan = revert.plan(bench.rec.conn, str(root), f"{bench.session}:{frame}")
    assert "pipe" not in [c.path for c in plan.changes]
    bench.write("app.py", b"VALUE = 9\n")
    bench.revert(f"{bench.session}:{frame}")
    assert os.path.exists(root / "pipe") and not os.path.isfile(root / "pipe")
    assert (root / "build.log").exists() and (root / "app.py").read_text() == "VALUE = 1\n"
    (root / "pipe").unlink()
    os.mkfifo(root / "app.py.new")
    bench.prompt()
    plan = revert.plan(bench.rec.conn, str(root), f"{bench.session}:{frame}", paths=["pipe"])
    assert [c.path for c in plan.changes] == ["pipe"]  # gone for real: it comes back


def test_a_link_out_of_the_project_is_restored_as_a_link_never_followed(
    bench: Workbench, tmp_path: Path
) -> None:
    root = bench.root
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("outside the project\n")
    (root / "lib").mkdir()
    (root / "lib" / "keep.txt").write_text("inside\n")
    bench.prompt()
    frame = bench.last_frame()

    def swap() -> None:
        (root / "lib" / "keep.txt").unlink()
        (root / "lib").rmdir()
        (root / "lib").symlink_to(outside)

    bench.bash("link lib", swap)
    before = tree(root)
    bench.revert(f"{bench.session}:{frame}")
    assert (root / "lib").is_dir() and not (root / "lib").is_symlink()
    assert (root / "lib" / "keep.txt").read_text() == "inside\n"
    assert (outside / "keep.txt").read_text() == "outside the project\n"
    bench.undo()
    assert tree(root) == before
    assert (outside / "keep.txt").read_text() == "outside the project\n"


def test_undo_brings_back_modes_and_empty_folders(bench: Workbench) -> None:
    root = bench.root
    (root / "secret.txt").write_text("one\n")
    os.chmod(root / "secret.txt", 0o600)
    (root / "deep" / "er").mkdir(parents=True)
    os.chmod(root / "deep", 0o700)
    (root / "deep" / "er" / "only.txt").write_text("x\n")
    bench.prompt()
    frame = bench.last_frame()

    def change() -> None:
        (root / "secret.txt").write_text("two\n")
        (root / "deep" / "er" / "only.txt").unlink()
        (root / "made").mkdir()
        (root / "made" / "new.txt").write_text("new\n")

    bench.bash("change", change)
    before = tree(root)
    bench.revert(f"{bench.session}:{frame}")
    assert (root / "secret.txt").read_text() == "one\n"
    assert os.stat(root / "secret.txt").st_mode & 0o777 == 0o600  # kept its own mode
    assert not (root / "made").exists()
    bench.undo()
    assert tree(root) == before


def test_a_fifo_where_the_snapshots_have_a_file_is_never_replaced(bench: Workbench) -> None:
    """git keeps a tracked file's entry when a fifo takes its place: the snapshots still say
    `file`, so a revert must look at what is really on disk before it rewrites the path."""
    root = bench.root
    (root / "pipe").write_text("one\n")
    bench.prompt()
    frame = bench.last_frame()
    bench.write("pipe", b"two\n")

    def to_fifo() -> None:
        (root / "pipe").unlink()
        os.mkfifo(root / "pipe")

    bench.bash("mkfifo pipe", to_fifo)
    plan = revert.plan(bench.rec.conn, str(root), f"{bench.session}:{frame}")
    assert "pipe" not in [c.path for c in plan.changes]
    assert ("pipe", revert.safe_write.FIFO) in plan.left
    assert os.path.exists(root / "pipe") and not os.path.isfile(root / "pipe")


def test_a_file_no_one_can_read_is_never_overwritten(bench: Workbench, tmp_path: Path) -> None:
    """git keeps a file's old entry when it cannot read the file: the revert must not take
    that stale entry for the file's content. Run again without root's power to read anything
    when that power is there (the tests run as root)."""
    if reads_anything(tmp_path):
        rerun_without_reading_anything(
            f"{__file__}::test_a_file_no_one_can_read_is_never_overwritten"
        )
        return
    root = bench.root
    frame = bench.last_frame()
    bench.write("app.py", b"VALUE = 2\n")
    (root / "app.py").write_text("VALUE = 'the user's, never captured'\n")
    (root / "app.py").chmod(0)
    plan = revert.plan(bench.rec.conn, str(root), f"{bench.session}:{frame}")
    assert ("app.py", revert.safe_write.NOT_CAPTURED) in plan.left
    assert "app.py" not in [c.path for c in plan.changes]
    (root / "app.py").chmod(0o644)
    assert (root / "app.py").read_text() == "VALUE = 'the user's, never captured'\n"


def test_snapshots_and_reverts_never_rewrite_a_nested_repositorys_index(
    bench: Workbench,
) -> None:
    """git refreshes an index whose stat data is stale (a file touched, its bytes the same)
    whenever it asks that repository for its status, as `git add` does for a nested one: our
    git must not take that optional write."""
    root = bench.root
    frame = bench.last_frame()
    bench.write("app.py", b"VALUE = 2\n")
    lib = root / "vendor" / "lib"
    nested_repo(lib)  # by hand, just now: no git of ours has looked at it yet
    index = lib / ".git" / "index"
    stamp = index.stat().st_mtime_ns + 10**9
    os.utime(lib / "lib.py", ns=(stamp, stamp))  # touched, same bytes: its stat data is stale
    before = index.read_bytes()
    bench.revert(f"{bench.session}:{frame}", paths=["app.py"])
    bench.undo()
    bench.prompt()  # a capture
    assert index.read_bytes() == before


def test_a_fifo_and_a_socket_where_files_were_are_named_and_never_touched(
    bench: Workbench,
) -> None:
    """A tracked file replaced by a FIFO or a socket: git keeps the file's entry, so the
    snapshots show no change there. The installed command names both in its plan, with why,
    returns promptly (a FIFO is never opened), leaves them as they are, restores the rest,
    and its undo brings back every byte."""
    root = bench.root
    (root / "pipe").write_text("a file that becomes a fifo\n")
    (root / "sock").write_text("a file that becomes a socket\n")
    bench.prompt()
    frame = f"{bench.session}:{bench.last_frame()}"
    bench.write("app.py", b"VALUE = 2\n")

    def to_special() -> None:
        (root / "pipe").unlink()
        os.mkfifo(root / "pipe")
        (root / "sock").unlink()
        bind = "import socket; socket.socket(socket.AF_UNIX).bind('sock')"
        subprocess.run([sys.executable, "-c", bind], cwd=root, check=True, timeout=30)

    bench.bash("mkfifo pipe; make a socket", to_special)
    bench.close()  # the user's command opens the database on its own
    pipe, sock = os.lstat(root / "pipe"), os.lstat(root / "sock")
    assert stat.S_ISFIFO(pipe.st_mode) and stat.S_ISSOCK(sock.st_mode)
    before = tree(root)

    planned = run_cli(root, "revert", frame, "--dry-run", "--json")
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    assert {"path": "pipe", "why": revert.safe_write.FIFO} in plan["left_as_is"]
    assert {"path": "sock", "why": revert.safe_write.SOCKET} in plan["left_as_is"]
    assert [c["path"] for c in plan["changes"]] == ["app.py"]
    shown = run_cli(root, "revert", frame, "--dry-run")
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    assert "leave pipe (a FIFO (named pipe) is there" in text
    assert "leave sock (a socket is there" in text
    assert tree(root) == before

    done = run_cli(root, "revert", frame, "--yes")  # run_cli's timeout: it must not hang
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stdout.split())
    assert "leave pipe (a FIFO" in said and "leave sock (a socket" in said
    assert (root / "app.py").read_text() == "VALUE = 1\n"
    for name, was in (("pipe", pipe), ("sock", sock)):
        now = os.lstat(root / name)
        assert (now.st_ino, now.st_mode, now.st_mtime_ns) == (
            was.st_ino,
            was.st_mode,
            was.st_mtime_ns,
        )

    undone = run_cli(root, "revert", "--undo", "--yes", "--json")
    assert undone.returncode == 0, undone.stderr
    assert tree(root) == before
    assert os.lstat(root / "pipe").st_ino == pipe.st_ino
    assert os.lstat(root / "sock").st_ino == sock.st_ino
