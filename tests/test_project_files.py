"""What we leave in the user's folders: the database (with its -wal and -shm) and the spool,
nothing else. Locks, the daemon's status and stop marker live in our per-user state folder,
keyed by a hash of the project root; a probe creates no file at all."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import PYTHON, fixture, log_file, run_hook

from claude_session.services.background import daemon_control
from claude_session.services.snapshots import capture_control

CLI = str(Path(PYTHON).parent / "claude-session")
ALLOWED = {".claude-session.db", ".claude-session.db-wal", ".claude-session.db-shm"}


def test_daemon_status_in_a_folder_without_a_database_leaves_nothing(
    tmp_path: Path, isolated_state: Path
) -> None:
    folder = tmp_path / "somewhere"
    folder.mkdir()
    done = subprocess.run(
        [CLI, "daemon", "status"], cwd=folder, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert list(folder.iterdir()) == []
    assert not daemon_control.is_running(str(folder))
    assert not Path(daemon_control.lock_path(str(folder))).exists()  # the probe made nothing


def test_runtime_files_live_in_the_per_user_state_keyed_by_the_root(
    tmp_path: Path, isolated_state: Path
) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for path in (
        daemon_control.lock_path(str(one)),
        daemon_control.status_path(str(one)),
        daemon_control.stop_marker_path(str(one)),
        capture_control.lock_path(str(one)),
        log_file(one),
    ):
        assert Path(path).is_relative_to(isolated_state), path
    assert daemon_control.lock_path(str(one)) != daemon_control.lock_path(str(two))
    assert daemon_control.lock_path(str(one)) == daemon_control.lock_path(str(one) + "/.")


def test_a_recorded_session_leaves_only_the_database_in_the_project(project: Path) -> None:
    """Edits ask for a workspace snapshot (the capture process and its lock), `daemon stop`
    writes its stop marker, `daemon status` probes the lock: none of it lands in the project."""
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    for name in ("PreToolUse.Edit", "PostToolUse.Edit"):
        run_hook(name.split(".")[0], fixture(name, project) | {"tool_use_id": "t1"}, project)
    for args in (("daemon", "status"), ("daemon", "stop"), ("status",)):
        done = subprocess.run(
            [CLI, "--project", str(project), *args], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
    import time

    deadline = time.monotonic() + 20
    while capture_control.is_running(str(project)) and time.monotonic() < deadline:
        time.sleep(0.05)
    run_hook("PreToolUse", b"{not json", project)  # an internal error: written to the log
    assert "invalid" in log_file(project).read_text().lower()
    left = {p.name for p in project.iterdir()} - {"src", "hello.py"}
    assert left <= ALLOWED | {".claude-session.db.spool"}, left
