"""One validation of `.claude-session.json` for hooks, the CLI, the daemon and doctor: a value
invalid for one is invalid for all (it keeps its default in hooks and is reported by the CLI);
every mistake is one clear line and exit 1, never a traceback."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import PYTHON, fixture, query, run_hook, write_config

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


NOT_FINITE_OR_HUGE = ("Infinity", "-Infinity", "NaN", "inf", "-inf", "nan", "1e308", "1e999")


def test_config_set_refuses_numbers_that_are_not_finite_or_out_of_range(project: Path) -> None:
    """`--set KEY=Infinity` and `KEY=1e308` were taken (`Infinity` is JSON to Python's reader,
    not to the hooks', which then dropped the whole file): each is one line naming the key and
    its range, exit 1, and the file as it was."""
    assert cli(project, "config", "--set", "conflict_policy=deny").returncode == 0
    before = (project / ".claude-session.json").read_bytes()
    for given in NOT_FINITE_OR_HUGE:
        done = cli(project, "config", "--set", f"claim_lease_minutes={given}")
        one_line_error(done, "claim_lease_minutes: must be")
        assert "greater than 0 and at most 10080" in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert (project / ".claude-session.json").read_bytes() == before
    # Every numeric setting has an upper bound, and says it.
    from claude_session.core.config import DEFAULTS, RANGES
    from claude_session.services import config_file

    numeric = sorted(k for k, v in DEFAULTS.items() if isinstance(v, float))
    assert sorted(RANGES) == numeric
    for key in numeric:
        for given in ("1e308", "Infinity", "NaN"):
            try:
                config_file.set_values(str(project), [f"{key}={given}"])
            except config_file.ConfigError as exc:
                assert str(exc).startswith(f"not changed: {key}: must be "), exc
                assert f"{RANGES[key][1]:g}" in str(exc), exc
            else:
                raise AssertionError(f"{key}={given} was taken")
    assert (project / ".claude-session.json").read_bytes() == before
    done = cli(project, "config", "--set", "snapshot_wait_seconds=0")  # 0 is its "off"
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("bad", [float("inf"), float("nan"), 1e308])
def test_one_bad_number_written_by_hand_costs_its_own_key_not_the_file(
    project: Path, bad: float
) -> None:
    """A hand-edited file (then trusted) holding `Infinity`, `NaN` or `1e308`: the hooks keep
    the file's other values (the lease of 2 minutes) and the default for the bad one, and
    `config`, `status` and `doctor` name it."""
    write_config(project, {"claim_lease_minutes": 2, "failed_path_ttl_days": bad})
    assert lease_seconds_used_by_a_hook(project) == 2 * 60  # not the whole file dropped
    shown = cli(project, "config", "--json")
    assert shown.returncode == 1
    report = json.loads(shown.stdout)
    (problem,) = report["problems"]
    assert problem.startswith("failed_path_ttl_days: must be greater than 0 and at most 3650")
    values = {r["key"]: r["value"] for r in report["settings"]}
    assert values["failed_path_ttl_days"] == 14 and values["claim_lease_minutes"] == 2
    status = json.loads(cli(project, "status", "--json").stdout)
    assert any("failed_path_ttl_days" in p for p in status["now"]["problems"]), status["now"]
    doctor = json.loads(cli(project, "doctor", "--json").stdout)
    row = next(r for r in doctor if r["check"] == "configuration")
    assert not row["ok"] and "failed_path_ttl_days" in row["detail"], row
    assert "claim_lease_minutes" not in row["detail"]
