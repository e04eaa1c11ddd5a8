"""Every `python -m` path our hooks, `install` and `daemon_control` name runs: hooks start the
capture process (services/snapshots/capture.py), `install --mcp` registers
`claude_session.mcp_server` in users' MCP configurations, and the daemon is
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


def test_the_capture_process_runs_from_its_path(tmp_path: Path) -> None:
    done = run_module("claude_session.services.snapshots.capture", cwd=tmp_path)  # no project
    assert done.returncode == 2, done.stderr  # given: its usage, exit 2
    assert "usage: python -m claude_session.services.snapshots.capture" in done.stderr


def test_hooks_start_the_capture_process_by_its_path() -> None:
    assert '"claude_session.services.snapshots.capture"' in inspect.getsource(capture_control.spawn)


def test_the_mcp_server_and_the_daemon_run_from_the_paths_installed() -> None:
    assert mcp_install.server_argv("python")[-2:] == ["-m", "claude_session.mcp_server"]
    cwd = Path(__file__).resolve().parent  # not the repository: -P, the installed package
    done = run_module("claude_session.mcp_server", cwd=cwd)  # stdin at its end: it stops
    assert done.returncode == 0, done.stderr
    done = run_module("claude_session.daemon", "--help", cwd=cwd)
    assert done.returncode == 0 and "--project" in done.stdout
