"""The snapshot store heals and never keeps half a capture: stale git locks left by a killed
capture are removed, a failed capture (a full disk, a ref that cannot be written) leaves the
store byte for byte as it was, and `doctor` reports and repairs the store. Real git, real
processes killed with SIGKILL, a real full file system (a small tmpfs)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import PYTHON, fixture, log_file, query, run_hook, wait_for

from claude_session.services.snapshots import snapshot_store, workspace

CLI = str(Path(PYTHON).parent / "claude-session")
SESSION = "store-session-0001"


def store_of(root: Path) -> Path:
    return Path(workspace.snapshot_dir(str(root)))


def store_files(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file in the store: relative path -> (bytes, mtime in ns; the index's only: git
    "freshens" an existing object it would have written, its mtime, and nothing else)."""
    git_dir = store_of(root)
    return {
        p.relative_to(git_dir).as_posix(): (
            p.read_bytes(),
            p.stat().st_mtime_ns if p.name == "index" else 0,
        )
        for p in sorted(git_dir.rglob("*"))
        if p.is_file()
    }


def leftovers(root: Path) -> list[str]:
    """Lock files, index copies and quarantine folders in the store."""
    git_dir = store_of(root)
    found = [p.relative_to(git_dir).as_posix() for p in git_dir.rglob("*.lock")]
    found += [p.name for p in git_dir.glob("index.*")]
    found += [p.name for p in (git_dir / "objects").glob("incoming-*")]
    return sorted(found)


def fsck(root: Path) -> subprocess.CompletedProcess[str]:
    git_dir = store_of(root)
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), "fsck", "--no-progress", "--no-dangling"],
        capture_output=True,
        text=True,
        env={"PATH": os.environ["PATH"], "GIT_INDEX_FILE": str(git_dir / "index")},
    )


def snapshot_files(root: Path, commit: str) -> set[str]:
    done = subprocess.run(
        ["git", "--git-dir", str(store_of(root)), "ls-tree", "-r", "--name-only", commit],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(done.stdout.split())


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, "--project", str(project), *args], capture_output=True, text=True, timeout=300
    )


def doctor_rows(project: Path, *args: str) -> dict[str, dict[str, object]]:
    done = cli(project, "doctor", "--json", *args)
    return {row["check"]: row for row in json.loads(done.stdout)}


# --- 1. stale locks heal ---------------------------------------------------------------------


def test_stale_git_locks_left_by_hand_are_removed_by_the_next_capture(project: Path) -> None:
    """Without healing, one stale index.lock failed every later capture, for good."""
    (project / "a.txt").write_text("a\n")
    workspace.capture(str(project), label="s/1")
    git_dir = store_of(project)
    gone = dead_pid()
    stale = ["index.lock", "HEAD.lock", "packed-refs.lock", "config.lock"]
    stale += [f"index.scratch.{gone}", f"index.new.{gone}", f"index.restore.{gone}.lock"]
    for name in stale:
        (git_dir / name).write_bytes(b"")
    (git_dir / "refs" / "snapshots" / "s" / "2.lock").write_bytes(b"")
    alive = git_dir / "index.scratch.1"  # pid 1 runs: its scratch index is not ours to take
    alive.write_bytes(b"")
    (project / "b.txt").write_text("b\n")
    made = workspace.capture(str(project), label="s/2")  # the label whose ref lock was stale
    assert snapshot_files(project, made.commit) == {"a.txt", "b.txt"}
    assert leftovers(project) == ["index.scratch.1"]
    alive.unlink()
    logged = log_file(project).read_text()
    assert "removed a stale index.lock left by a capture that was killed" in logged
    assert "refs/snapshots/s/2.lock" in logged
    assert workspace.prune(str(project), {made.commit})["dropped"] == 1  # packed-refs lock free
    assert fsck(project).returncode == 0


def test_a_capture_killed_during_git_add_is_healed_by_the_next(project: Path) -> None:
    """A real capture process, SIGKILLed (with its git) while `git add` holds the index lock."""
    (project / "first.txt").write_text("first\n")
    workspace.capture(str(project), label="k/0")
    git_dir = store_of(project)
    for i in range(3000):  # ~48 MB of random bytes: `git add` takes a while to hash them
        folder = project / f"d{i % 30:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i:05d}.bin").write_bytes(os.urandom(16_384))
    code = "import sys; from claude_session.services.snapshots import workspace as w\n"
    code += "w.capture(sys.argv[1], label='k/1')"
    child = subprocess.Popen([PYTHON, "-c", code, str(project)], start_new_session=True)
    try:
        assert wait_for(lambda: any(git_dir.glob("index*.lock")), 30), "git add never started"
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    left = leftovers(project)
    assert any(name.endswith(".lock") for name in left), left
    made = workspace.capture(str(project), label="k/2")
    assert made.files == 3001
    assert leftovers(project) == []
    assert "left by a capture that was killed" in log_file(project).read_text()
    assert fsck(project).returncode == 0, fsck(project).stdout


# --- 2. a failed capture leaves nothing behind ------------------------------------------------


def test_a_capture_whose_ref_cannot_be_written_leaves_the_store_as_it_was(project: Path) -> None:
    """The ref update fails after the new objects were moved in: they are taken out again,
    and the index is the one from before (with its time)."""
    (project / "a.txt").write_text("a\n")
    workspace.capture(str(project), label="x")
    before = store_files(project)
    refs = workspace.refs(str(project))
    for i in range(40):  # new objects in new fan-out folders and in ones the store has
        (project / f"new{i}.bin").write_bytes(os.urandom(5_000))
    with pytest.raises(workspace.WorkspaceError, match="update-ref"):
        workspace.capture(str(project), label="x/1")  # refs/snapshots/x is a file: no x/1
    assert store_files(project) == before
    assert workspace.refs(str(project)) == refs
    made = workspace.capture(str(project), label="y")
    assert snapshot_files(project, made.commit) == {"a.txt"} | {f"new{i}.bin" for i in range(40)}
    assert fsck(project).returncode == 0


def test_a_dead_captures_quarantine_goes_and_a_live_ones_stays(project: Path) -> None:
    (project / "a.txt").write_text("a\n")
    workspace.capture(str(project), label="q/1")
    objects = store_of(project) / "objects"
    dead = objects / f"incoming-{dead_pid()}-abcd1234"
    live = objects / "incoming-1-abcd1234"
    for folder in (dead, live):
        (folder / "ab").mkdir(parents=True)
        (folder / "ab" / ("c" * 38)).write_bytes(b"half an object")
    workspace.capture(str(project), label="q/2")
    assert not dead.exists() and live.exists()


# --- 3. a full disk -------------------------------------------------------------------------


def tmpfs_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: str) -> Iterator[Path]:
    """A tmpfs as the state folder (where the snapshot store lives)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"{options},mode=0700", "tmpfs", str(disk)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    monkeypatch.setenv("CLAUDE_SESSION_STATE_DIR", str(disk))
    try:
        yield disk
    finally:
        if subprocess.run(["umount", str(disk)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(disk)], check=True)


@pytest.fixture
def small_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from tmpfs_state(tmp_path, monkeypatch, "size=2m")


@pytest.fixture
def few_inodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from tmpfs_state(tmp_path, monkeypatch, "size=20m,nr_inodes=400")


def fill(disk: Path, leave: int) -> Path:
    """Fill the file system, then give back about `leave` bytes."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        chunk = b"\0" * 65536
        while True:
            try:
                os.write(fd, chunk)
            except OSError:
                break
        os.ftruncate(fd, max(0, os.fstat(fd).st_size - leave))
    finally:
        os.close(fd)
    return filler


def test_a_full_disk_fails_the_capture_with_the_reason_and_leaves_nothing(
    project: Path, small_disk: Path
) -> None:
    (project / "a.txt").write_text("a\n")
    workspace.capture(str(project), label="f/1")
    (project / "big.bin").write_bytes(os.urandom(1_000_000))  # under the cap, over the space
    filler = fill(small_disk, leave=200_000)
    before = store_files(project)
    with pytest.raises(workspace.WorkspaceError, match="No space left on device"):
        workspace.capture(str(project), label="f/2")
    assert store_files(project) == before
    assert leftovers(project) == []
    filler.unlink()
    made = workspace.capture(str(project), label="f/3")
    assert snapshot_files(project, made.commit) == {"a.txt", "big.bin"}
    assert leftovers(project) == []
    checked = fsck(project)
    assert checked.returncode == 0 and "missing" not in checked.stdout, checked.stdout


def test_files_git_could_not_store_fail_the_capture_not_vanish_from_it(
    project: Path, few_inodes: Path
) -> None:
    """Out of inodes, `git add --ignore-errors` leaves files out and exits 1 without a
    "fatal:": taken for unreadable files, that made a snapshot missing most of them."""
    (project / "a.txt").write_text("a\n")
    workspace.capture(str(project), label="i/1")
    for i in range(30):
        (project / f"f{i:02d}.txt").write_text(f"file {i}\n")
    fillers = []
    while True:
        try:
            (few_inodes / f"filler{len(fillers)}").touch()
        except OSError:
            break
        fillers.append(few_inodes / f"filler{len(fillers)}")
    for filler in fillers[-10:]:  # room for the quarantine, the index copy, a few objects
        filler.unlink()
    before = store_files(project)
    with pytest.raises(workspace.WorkspaceError, match=r"git add failed: .*No space left"):
        workspace.capture(str(project), label="i/2")
    assert store_files(project) == before
    for filler in fillers[:-10]:
        filler.unlink()
    made = workspace.capture(str(project), label="i/3")
    assert made.files == 31


def test_the_capture_process_records_a_full_disk_on_the_frame(
    project: Path, small_disk: Path
) -> None:
    """Through the real hooks and the real capture process: the frame's snapshot is 'failed'
    with the reason, and once there is space again the next frame is captured."""

    def hook(event: str, tool: str, tool_use_id: str) -> None:
        target = {"file_path": str(project / "a.txt"), "old_string": "a", "new_string": "b"}
        payload = fixture(f"{event}.{tool}", project) | {"session_id": SESSION}
        payload |= {"tool_use_id": tool_use_id, "tool_input": target | {"content": "x"}}
        run_hook(event, payload, project)

    def settled() -> bool:
        return not query(project, "SELECT 1 FROM vcs_tags WHERE status = 'pending'")

    def statuses() -> list[str]:
        return [row[0] for row in query(project, "SELECT status FROM vcs_tags ORDER BY 1")]

    (project / "a.txt").write_text("a\n")
    start = fixture("SessionStart.startup", project) | {"session_id": SESSION}
    run_hook("SessionStart", start, project)
    hook("PreToolUse", "Write", "w1")  # the frame before the Write: captured
    assert wait_for(settled, 30) and statuses() == ["captured"]
    (project / "big.bin").write_bytes(os.urandom(1_000_000))
    filler = fill(small_disk, leave=200_000)
    before = store_files(project)
    hook("PostToolUse", "Write", "w1")  # the frame after it: the capture process fails
    hook("PreToolUse", "Edit", "e1")  # waits for that snapshot
    assert wait_for(settled, 30)
    failed = query(project, "SELECT note FROM vcs_tags WHERE status = 'failed'")
    assert len(failed) == 1 and "No space left on device" in failed[0][0], failed
    assert store_files(project) == before
    filler.unlink()
    hook("PostToolUse", "Edit", "e1")
    hook("PreToolUse", "Edit", "e2")
    assert wait_for(settled, 30)
    rows = query(project, "SELECT status, files FROM vcs_tags ORDER BY captured_at")
    assert rows[-1] == ("captured", 2) and [r[0] for r in rows].count("failed") == 1, rows
    assert leftovers(project) == []
    assert fsck(project).returncode == 0


# --- 4. doctor -------------------------------------------------------------------------------


def test_doctor_reports_the_store_and_removes_a_stale_lock(project: Path) -> None:
    rows = doctor_rows(project)
    assert "none yet" in str(rows["snapshot store"]["detail"])
    assert not store_of(project).exists()  # doctor does not make one
    (project / "a.txt").write_text("a\n")
    workspace.capture(str(project), label="d/1")
    (store_of(project) / "index.lock").write_bytes(b"")
    rows = doctor_rows(project)
    assert rows["snapshot store"]["ok"] and "1 snapshot" in str(rows["snapshot store"]["detail"])
    repairs = rows["snapshot store repairs"]
    assert "removed a stale index.lock left by a capture that was killed" in str(repairs["detail"])
    assert leftovers(project) == []
    assert "no stale locks" in str(doctor_rows(project)["snapshot store repairs"]["detail"])


def test_doctor_neither_waits_for_nor_disturbs_a_running_capture(project: Path) -> None:
    (project / "a.txt").write_text("a\n")
    workspace.capture(str(project), label="d/1")
    lock = store_of(project) / "index.lock"
    lock.write_bytes(b"")
    code = "import sys, time; from claude_session.services.snapshots import workspace as w\n"
    code += "l = w.Lock(w.snapshot_dir(sys.argv[1])); l.__enter__(); print('held', flush=True)\n"
    code += "time.sleep(120)"
    holder = subprocess.Popen([PYTHON, "-c", code, str(project)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        started = time.monotonic()
        rows = doctor_rows(project)
        assert time.monotonic() - started < workspace.LOCK_WAIT_SECONDS / 2
    finally:
        holder.kill()
        holder.wait()
    assert "a capture is running" in str(rows["snapshot store repairs"]["detail"])
    assert lock.exists()  # it may be the running capture's own


def test_doctor_fsck_finds_a_missing_object(project: Path) -> None:
    (project / "a.txt").write_text("some content\n")
    made = workspace.capture(str(project), label="d/1")
    rows = doctor_rows(project, "--fsck")
    assert rows["snapshot store fsck"]["ok"], rows["snapshot store fsck"]
    assert "snapshot store fsck" not in doctor_rows(project)
    blob = subprocess.run(
        ["git", "--git-dir", str(store_of(project)), "rev-parse", f"{made.commit}:a.txt"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (store_of(project) / "objects" / blob[:2] / blob[2:]).unlink()
    done = cli(project, "doctor", "--json", "--fsck")
    row = next(r for r in json.loads(done.stdout) if r["check"] == "snapshot store fsck")
    assert done.returncode == 1 and not row["ok"] and blob in row["detail"], row


def test_heal_needs_no_store(tmp_path: Path) -> None:
    assert snapshot_store.heal(str(tmp_path / "nothing.git"), None, thorough=True) == []


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
