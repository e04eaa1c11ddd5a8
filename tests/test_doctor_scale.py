"""`doctor` at scale: the database is checked without reading every page unless asked
(`--full`: PRAGMA quick_check). The installed hooks run one at a time, each timed alone as
Claude Code waits for it: tests/test_first_hour.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import PYTHON, fixture, run_hook

CLI = str(Path(PYTHON).parent / "claude-session")


def cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, "--project", str(project), *args], capture_output=True, text=True, timeout=300
    )


def test_the_database_check_reads_no_whole_file_unless_full(project: Path) -> None:
    assert cli(project, "install").returncode == 0
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    quick = json.loads(cli(project, "doctor", "--json").stdout)
    names = {r["check"]: r for r in quick}
    assert names["database readable"]["ok"] and "database quick_check" not in names
    full = json.loads(cli(project, "doctor", "--full", "--json").stdout)
    assert {r["check"]: r for r in full}["database quick_check"]["ok"]
