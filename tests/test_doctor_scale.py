"""`doctor` at scale: the installed hooks run several at a time, and the database is checked
without reading every page unless asked (`--full`: PRAGMA quick_check)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from conftest import PYTHON, fixture, run_hook

from claude_session.services import doctor

CLI = str(Path(PYTHON).parent / "claude-session")


def cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, "--project", str(project), *args], capture_output=True, text=True, timeout=300
    )


def test_installed_hooks_run_together_not_one_after_another(project: Path) -> None:
    assert cli(project, "install").returncode == 0
    started = time.perf_counter()
    report = doctor.check(project)
    wall = time.perf_counter() - started
    hooks = [r for r in report if r["check"].startswith("hook ")]
    assert len(hooks) > 20 and all(r["ok"] for r in hooks), hooks
    each = sum(float(r["detail"].split(" ms")[0]) for r in hooks) / 1000
    assert wall < each * 0.75, (wall, each)  # their times overlap


def test_the_database_check_reads_no_whole_file_unless_full(project: Path) -> None:
    assert cli(project, "install").returncode == 0
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    quick = json.loads(cli(project, "doctor", "--json").stdout)
    names = {r["check"]: r for r in quick}
    assert names["database readable"]["ok"] and "database quick_check" not in names
    full = json.loads(cli(project, "doctor", "--full", "--json").stdout)
    assert {r["check"]: r for r in full}["database quick_check"]["ok"]
