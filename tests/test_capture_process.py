"""The capture process as hooks start it (services/snapshots/capture_control.py,
services/snapshots/capture.py): one process however many hooks ask while it starts, one that stays
a moment for the next frame, and one that lets the lock go at once when a revert waits for it."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from conftest import wait_for
from test_before_images import pending, send  # the same session's hooks, as a user's

from claude_session.services.snapshots import capture, capture_control


def capture_processes(project: Path) -> list[int]:
    ps = ["ps", "-ww", "-eo", "pid=,args="]
    listing = subprocess.run(ps, capture_output=True, text=True).stdout
    return [
        int(line.split()[0])
        for line in listing.splitlines()
        if "claude_session.services.snapshots.capture" in line and str(project) in line
    ]


def test_hooks_asking_while_a_capture_starts_start_no_second_one(project: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    send(project, "SessionStart.startup")
    assert wait_for(lambda: pending(project) == 0, 30)
    assert wait_for(lambda: not capture_control.is_running(str(project)), 30)
    root = str(project)
    # Its start delay and imports: the lock is not held yet, the marker says it is coming.
    assert capture_control.ensure_running(root) is True
    assert [capture_control.ensure_running(root) for _ in range(20)] == [False] * 20
    assert wait_for(lambda: capture_control.is_running(root), 15)
    assert not os.path.lexists(capture_control.starting_path(root))  # taken over by the lock
    assert len(capture_processes(project)) == 1


def test_a_capture_serves_a_stream_of_frames_then_lingers_and_gives_way_to_a_revert(
    project: Path,
) -> None:
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    send(project, "SessionStart.startup")
    send(project, "UserPromptSubmit", prompt="go")
    seen: set[int] = set()
    for n in range(6):
        use = f"toolu_stream{n}"
        tool_input = {"file_path": str(project / "a.txt"), "content": f"{n}\n"}
        send(project, "PreToolUse.Write", tool_use_id=use, tool_input=tool_input)
        (project / "a.txt").write_text(f"{n}\n")
        send(project, "PostToolUse.Write", tool_use_id=use, tool_input=tool_input)
        seen.update(capture_processes(project))
        time.sleep(0.2)
    assert wait_for(lambda: pending(project) == 0, 30)
    seen.update(capture_processes(project))
    assert len(seen) == 1, seen  # one process for the whole stream, not one per frame
    assert capture_control.is_running(str(project))  # it stays for the next frame...
    started = time.monotonic()
    fd = capture_control.take_lock(str(project), capture.LINGER_SECONDS * 10)
    assert fd is not None
    try:
        waited = time.monotonic() - started
        assert waited < capture.LINGER_SECONDS, waited  # ...but not while a revert waits
        assert not os.path.lexists(capture_control.wanted_path(str(project)))
    finally:
        os.close(fd)
    assert wait_for(lambda: not capture_processes(project), 15)
