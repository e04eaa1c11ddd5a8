"""Every `python -m` path users' settings or running processes name still runs: hooks start
the capture process (services/snapshots/capture.py; an earlier version started it as
`claude_session.services.capture`, whose shim stays), `install --mcp` registers
`claude_session.services.mcp_server` in users' MCP configurations, and the daemon is
`claude_session.daemon`."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

from claude_session.services.setup import mcp_install
from claude_session.services.snapshots import capture_control


def run_module(name: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-P", "-m", name, *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_capture_process_runs_from_its_old_and_new_paths(tmp_path: Path) -> None:
    for name in ("claude_session.services.capture", "claude_session.services.snapshots.capture"):
        done = run_module(name, cwd=tmp_path)  # no project given: its usage, exit 2
        assert done.returncode == 2, (name, done.stderr)
        assert "usage: python -m claude_session.services.snapshots.capture" in done.stderr


def test_hooks_start_the_capture_process_by_its_new_path() -> None:
    assert '"claude_session.services.snapshots.capture"' in inspect.getsource(capture_control.spawn)


def test_the_mcp_server_and_the_daemon_run_from_the_paths_users_have() -> None:
    assert mcp_install.server_argv("python")[-2:] == ["-m", "claude_session.services.mcp_server"]
    cwd = Path(__file__).resolve().parent  # not the repository: -P, the installed package
    done = run_module("claude_session.services.mcp_server", cwd=cwd)  # stdin at its end: it stops
    assert done.returncode == 0, done.stderr
    done = run_module("claude_session.daemon", "--help", cwd=cwd)
    assert done.returncode == 0 and "--project" in done.stdout
