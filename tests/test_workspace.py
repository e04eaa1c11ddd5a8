"""Workspace snapshots in our own git directory: real git, real files, the user's repository
compared before and after, byte for byte."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from claude_session.services.snapshots import snapshot_files as files_of_snapshots
from claude_session.services.snapshots import snapshot_over, workspace

GIT_ENV = {
    "GIT_AUTHOR_NAME": "u",
    "GIT_AUTHOR_EMAIL": "u@example.com",
    "GIT_COMMITTER_NAME": "u",
    "GIT_COMMITTER_EMAIL": "u@example.com",
}


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *args],
        capture_output=True,
        env={**os.environ, **GIT_ENV, "GIT_OPTIONAL_LOCKS": "0"},  # status writes no index
        check=True,
    )
    return done.stdout.decode()


def user_repo_state(root: Path) -> dict[str, object]:
    """Everything of the user's repository that a snapshot must leave alone."""
    index = root / ".git" / "index"
    index_state = (index.read_bytes(), index.stat().st_mtime_ns)
    return {
        "status": git(root, "status", "--porcelain=v2", "--branch", "--untracked-files=all"),
        "stash": git(root, "stash", "list"),
        "refs": git(root, "for-each-ref"),
        "objects": git(root, "count-objects", "-v"),
        "index": index_state,
        "head": (root / ".git" / "HEAD").read_bytes(),
    }


def files_of(root: Path) -> dict[str, tuple[bytes, bool]]:
    """path -> (bytes, executable) of every file outside .git."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel == ".git" or rel.startswith(".git/") or not path.is_file():
            continue
        out[rel] = (path.read_bytes(), os.access(path, os.X_OK))
    return out


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("print('a')\n")
    (root / "src" / "b.py").write_text("print('b')\n")
    (root / "README.md").write_text("readme\n")
    (root / ".gitignore").write_text("*.log\nbuild/\n")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-qm", "init")
    (root / "src" / "a.py").write_text("print('a changed')\n")  # modified, unstaged
    (root / "notes.txt").write_text("untracked\n")  # untracked
    (root / "debug.log").write_text("ignored\n")  # ignored by .gitignore
    (root / "build").mkdir()
    (root / "build" / "out.bin").write_bytes(b"\0" * 100)  # ignored folder
    (root / "secret.env").write_text("K=1\n")
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("secret.env\n")  # ignored, user-local
    (root / ".claude-session.db").write_bytes(b"db")  # ours, never in a snapshot
    return root


def snapshot_files(root: Path, commit: str) -> set[str]:
    git_dir = workspace.snapshot_dir(str(root))
    done = subprocess.run(
        ["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", commit],
        capture_output=True,
        check=True,
    )
    return set(done.stdout.decode().split())


def test_capture_takes_tracked_and_untracked_files_and_leaves_the_repository_alone(
    repo: Path,
) -> None:
    before = user_repo_state(repo)
    first = workspace.capture(str(repo), label="s/1")
    (repo / "src" / "b.py").write_text("print('b2')\n")
    second = workspace.capture(str(repo), label="s/2")
    files_of_snapshots.restore(
        str(repo), first.commit
    )  # b.py back as it was: the state of `before`
    files_of_snapshots.changed_paths(str(repo), second.commit, None)
    files_of_snapshots.unified_diff(str(repo), first.commit, second.commit)
    assert snapshot_files(repo, first.commit) == {
        ".gitignore",
        "README.md",
        "notes.txt",
        "src/a.py",
        "src/b.py",
    }
    after = user_repo_state(repo)
    assert after == before
    assert not str(workspace.snapshot_dir(str(repo))).startswith(str(repo))


def test_capture_in_a_folder_that_is_not_a_repository(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    (root / "x.txt").write_text("x\n")
    made = workspace.capture(str(root), label="p/1")
    (root / "x.txt").write_text("y\n")
    assert files_of_snapshots.changed_paths(str(root), made.commit, None) == [("M", "x.txt")]
    files_of_snapshots.restore(str(root), made.commit)
    assert (root / "x.txt").read_text() == "x\n"
    assert not (root / ".git").exists()


def test_round_trip_restores_every_byte_mode_and_deletion(repo: Path) -> None:
    a = workspace.capture(str(repo), label="s/a")
    state_a = files_of(repo)
    (repo / "src" / "a.py").write_text("modified again\n")
    (repo / "src" / "b.py").unlink()
    (repo / "new" / "deep").mkdir(parents=True)
    (repo / "new" / "deep" / "c.py").write_text("created\n")
    (repo / "README.md").chmod(0o755)
    (repo / "notes.txt").write_bytes(bytes(range(256)) * 4)
    (repo / "debug.log").write_text("ignored, changed\n")
    b = workspace.capture(str(repo), label="s/b")
    state_b = files_of(repo)
    assert sorted(files_of_snapshots.changed_paths(str(repo), a.commit, b.commit)) == [
        ("A", "new/deep/c.py"),
        ("D", "src/b.py"),
        ("M", "README.md"),
        ("M", "notes.txt"),
        ("M", "src/a.py"),
    ]
    done = files_of_snapshots.restore(str(repo), a.commit)
    assert sorted(done) == [
        ("created", "src/b.py"),
        ("deleted", "new/deep/c.py"),
        ("restored", "README.md"),
        ("restored", "notes.txt"),
        ("restored", "src/a.py"),
    ]
    now = files_of(repo)
    # Ignored files are never touched by a restore: debug.log keeps its later content.
    assert now.pop("debug.log") == state_b["debug.log"]
    expected = dict(state_a)
    expected.pop("debug.log")
    assert now == expected
    assert not (repo / "new").exists()  # the folders a created file needed go too
    assert (repo / ".claude-session.db").read_bytes() == b"db"
    files_of_snapshots.restore(str(repo), b.commit)
    assert files_of(repo) == state_b


def test_restore_only_the_paths_asked_for(repo: Path) -> None:
    a = workspace.capture(str(repo), label="s/a")
    (repo / "src" / "a.py").write_text("one\n")
    (repo / "src" / "b.py").write_text("two\n")
    assert files_of_snapshots.restore(str(repo), a.commit, ["src/b.py"]) == [
        ("restored", "src/b.py")
    ]
    assert (repo / "src" / "a.py").read_text() == "one\n"
    assert (repo / "src" / "b.py").read_text() == "print('b')\n"


def test_diff_against_the_work_tree_shows_pending_changes_and_writes_nothing(repo: Path) -> None:
    a = workspace.capture(str(repo), label="s/a")
    (repo / "src" / "a.py").write_text("print('pending')\n")
    before = user_repo_state(repo)
    text = files_of_snapshots.unified_diff(str(repo), a.commit, None)
    assert "+print('pending')" in text and "-print('a changed')" in text
    assert files_of_snapshots.diff_stat(str(repo), a.commit, None) == [
        {"path": "src/a.py", "added": 1, "deleted": 1}
    ]
    assert user_repo_state(repo) == before


def test_a_planted_link_at_the_snapshot_folder_is_refused(repo: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    git_dir = Path(workspace.snapshot_dir(str(repo)))
    git_dir.parent.mkdir(parents=True, exist_ok=True)
    git_dir.symlink_to(target)
    with pytest.raises(workspace.WorkspaceError, match="symbolic link"):
        workspace.capture(str(repo), label="s/1")
    assert list(target.iterdir()) == []


def test_files_over_the_cap_are_left_out_and_reported(repo: Path) -> None:
    (repo / "big.bin").write_bytes(b"x" * 2048)
    made = workspace.capture(str(repo), label="s/1", max_file_bytes=1024)
    assert made.skipped_large == ["big.bin"]
    assert "big.bin" not in snapshot_files(repo, made.commit)
    (repo / "src" / "a.py").write_text("y" * 4096)  # a file that grows past the cap
    later = workspace.capture(str(repo), label="s/2", max_file_bytes=1024)
    assert "src/a.py" in later.skipped_large
    assert "src/a.py" not in snapshot_files(repo, later.commit)


def test_concurrent_captures_all_succeed(repo: Path) -> None:
    made: list[str] = []
    errors: list[BaseException] = []

    def one(i: int) -> None:
        try:
            made.append(workspace.capture(str(repo), label=f"s/{i}").commit)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(made) == 6
    assert set(workspace.refs(str(repo)).values()) == set(made)


def test_prune_keeps_what_is_asked_and_frees_the_rest(repo: Path) -> None:
    for i in range(3):
        (repo / f"blob{i}.bin").write_bytes(os.urandom(200_000))
        workspace.capture(str(repo), label=f"s/{i}")
        (repo / f"blob{i}.bin").unlink()
    keep = workspace.capture(str(repo), label="s/keep")
    grown = workspace.size_bytes(str(repo))
    result = workspace.prune(str(repo), {keep.commit})
    assert result["dropped"] == 3
    assert workspace.size_bytes(str(repo)) < grown - 550_000  # the three blobs are gone
    (repo / "src" / "a.py").write_text("after prune\n")
    files_of_snapshots.restore(str(repo), keep.commit)
    assert (repo / "src" / "a.py").read_text() == "print('a changed')\n"


def test_snapshots_made_over_an_earlier_one_hold_any_name_and_leave_ignored_paths_alone(
    repo: Path,
) -> None:
    """capture_over_all: many snapshots from one capture in one go; names with a newline, a
    quote, a backslash, a space or bytes that are not UTF-8 are kept exactly; an ignored path
    is never put; a file dropped is gone; the count of files is right; each has its ref."""
    base = workspace.capture(str(repo), label="s/1")
    odd = ["line\nbreak.txt", 'quo"te\\slash.txt', "sp ace/é.txt", os.fsdecode(b"raw\xff.bin")]
    jobs = [
        snapshot_over.Over(
            f"s/{n}",
            base.commit,
            [
                (
                    name,
                    0o100755 if n % 2 else 0o100644,
                    f"{n}:{name}".encode("utf-8", "surrogateescape"),
                )
            ],
            ["README.md"] if n == 3 else [],
        )
        for n, name in enumerate(odd, start=2)
    ]
    jobs.append(snapshot_over.Over("s/9", base.commit, [("debug.log", 0o100644, b"no")], []))
    made = snapshot_over.capture_over_all(str(repo), jobs)
    git_dir = workspace.snapshot_dir(str(repo))
    before = snapshot_files(repo, base.commit)
    for n, (job, capture) in enumerate(zip(jobs, made, strict=True), start=2):
        listing = subprocess.run(
            ["git", "--git-dir", git_dir, "ls-tree", "-r", "-z", capture.commit],
            capture_output=True,
            check=True,
        ).stdout
        entries = {}
        for line in filter(None, listing.split(b"\0")):
            meta, _, name = line.partition(b"\t")
            entries[os.fsdecode(name)] = meta.split()[0].decode()
        parents = subprocess.run(
            ["git", "--git-dir", git_dir, "rev-list", "--parents", "-n", "1", capture.commit],
            capture_output=True,
            check=True,
        ).stdout.split()
        assert parents == [capture.commit.encode()]  # a root commit: prune can free it
        if job.label == "s/9":
            assert capture.tree == base.tree  # an ignored path is never put
            continue
        name = odd[n - 2]
        want = before | {name}
        if n == 3:
            want -= {"README.md"}
        assert set(entries) == want and capture.files == len(want)
        assert entries[name] == ("100755" if n % 2 else "100644")
        content = subprocess.run(
            ["git", "--git-dir", git_dir, "cat-file", "blob", f"{capture.commit}:{name}"],
            capture_output=True,
            check=True,
        ).stdout
        assert content == f"{n}:{name}".encode("utf-8", "surrogateescape")
    assert {f"s/{n}" for n in (1, 2, 3, 4, 5, 9)} <= set(workspace.refs(str(repo)))
