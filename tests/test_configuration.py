"""One validation of `.claude-session.json` for hooks, the CLI, the daemon and doctor: a value
invalid for one is invalid for all (it keeps its default in hooks and is reported by the CLI);
every mistake is one clear line and exit 1, never a traceback."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import PYTHON, fixture, query, run_hook

CLI = str(Path(PYTHON).parent / "claude-session")


def cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, "--project", str(project), *args], capture_output=True, text=True, timeout=60
    )


def one_line_error(done: subprocess.CompletedProcess[str], words: str) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert words in done.stderr, done.stderr


def lease_seconds_used_by_a_hook(project: Path) -> float:
    run_hook("PostToolUse", fixture("PostToolUse.Edit", project), project)
    ((claimed, expires),) = query(project, "SELECT last_touched_at, expires_at FROM file_claims")
    return float(expires - claimed)


def test_a_zero_lease_is_invalid_for_hooks_and_cli_alike(project: Path) -> None:
    (project / ".claude-session.json").write_text(json.dumps({"claim_lease_minutes": 0}))
    assert lease_seconds_used_by_a_hook(project) == 15 * 60  # the default, not 0
    shown = cli(project, "config", "--json")
    assert shown.returncode == 1
    report = json.loads(shown.stdout)
    assert any("claim_lease_minutes" in p for p in report["problems"])
    lease = next(r for r in report["settings"] if r["key"] == "claim_lease_minutes")
    assert lease["value"] == 15.0
    doctor = json.loads(cli(project, "doctor", "--json").stdout)
    row = next(r for r in doctor if r["check"] == "configuration")
    assert not row["ok"] and "claim_lease_minutes" in row["detail"]


def test_config_set_validates_before_writing(project: Path) -> None:
    one_line_error(cli(project, "config", "--set", "claim_lease_minutes={"), "must be a number")
    one_line_error(cli(project, "config", "--set", "claim_lease_minutes=0"), "greater than 0")
    one_line_error(cli(project, "config", "--set", "no_such_key=1"), "unknown setting")
    one_line_error(cli(project, "config", "--set", "conflict_policy=maybe"), "warn, deny")
    assert not (project / ".claude-session.json").exists()  # nothing written
    done = cli(project, "config", "--set", "claim_lease_minutes=2", "--set", "conflict_policy=deny")
    assert done.returncode == 0, done.stderr
    assert json.loads((project / ".claude-session.json").read_text()) == {
        "claim_lease_minutes": 2,
        "conflict_policy": "deny",
    }
    assert lease_seconds_used_by_a_hook(project) == 2 * 60


def test_a_file_that_is_not_json_is_one_clear_line(project: Path) -> None:
    (project / ".claude-session.json").write_text("{ not json")
    one_line_error(cli(project, "config"), "not valid JSON")
    one_line_error(cli(project, "config", "--set", "claim_lease_minutes=3"), "not valid JSON")
    assert lease_seconds_used_by_a_hook(project) == 15 * 60  # hooks go on with the defaults
    doctor = json.loads(cli(project, "doctor", "--json").stdout)
    assert not next(r for r in doctor if r["check"] == "configuration")["ok"]


def test_a_directory_where_the_configuration_goes_never_costs_an_event(project: Path) -> None:
    """`.claude-session.json` as a directory: reading it failed inside every hook before the
    event was stored, so each hook exited 0 having recorded nothing. The hooks now use the
    defaults and record; `doctor` and `config` say the file is not readable."""
    (project / ".claude-session.json").mkdir()
    result = run_hook("PostToolUse", fixture("PostToolUse.Edit", project), project)
    assert result.returncode == 0 and result.stdout == ""
    assert query(project, "SELECT hook_event_name FROM events") == [("PostToolUse",)]
    doctor = json.loads(cli(project, "doctor", "--json").stdout)
    row = next(r for r in doctor if r["check"] == "configuration")
    assert not row["ok"] and "not a readable file" in row["detail"], row
    one_line_error(cli(project, "config"), "not a readable file")
