"""A cloned repository is not trusted: a database or configuration this user did not make here
is never put before the model and never makes us run a command, until `claude-session trust`;
`status` and `doctor` say why."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

from conftest import PYTHON, clone_database, fixture, run_hook

CLI = str(Path(PYTHON).parent / "claude-session")
SESSION = "560819af-56fc-4528-be0a-32a24d1aa819"


def cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, "--project", str(project), *args], capture_output=True, text=True, timeout=60
    )


def a_project_with_open_work(project: Path) -> None:
    failure = fixture("PostToolUseFailure.Bash", project) | {"session_id": SESSION}
    run_hook("PostToolUseFailure", failure, project)


def injected(project: Path, source: str) -> str | None:
    start = fixture(f"SessionStart.{source}", project) | {"session_id": "new-session"}
    answer = run_hook("SessionStart", start, project).json()
    return None if answer is None else answer["hookSpecificOutput"]["additionalContext"]


def test_a_cloned_database_is_never_injected_until_trusted(project: Path, tmp_path: Path) -> None:
    origin = tmp_path / "origin"
    origin.mkdir()
    a_project_with_open_work(origin)
    assert injected(origin, "startup")  # our own database: what was left open is said
    clone = tmp_path / "clone"
    clone_database(origin, clone)  # a database committed to a repository, as a clone has it
    assert injected(clone, "startup") is None
    assert injected(clone, "compact") is None
    status = json.loads(cli(clone, "status", "--json").stdout)
    assert "not created by claude-session for this user" in status["trust"]["database"]
    doctor = json.loads(cli(clone, "doctor", "--json").stdout)
    assert not next(r for r in doctor if r["check"] == "trust: database")["ok"]
    assert cli(clone, "trust", "--yes").returncode == 0
    assert injected(clone, "startup")
    assert json.loads(cli(clone, "status", "--json").stdout)["trust"]["database"] == "trusted"
    assert cli(clone, "trust", "--revoke").returncode == 0
    assert injected(clone, "startup") is None


def test_a_cloned_configuration_never_runs_its_judge_until_trusted(
    project: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "judge-ran"
    judge = tmp_path / "judge.sh"
    judge.write_text(
        f'#!/bin/sh\ncat >/dev/null\ntouch {marker}\necho \'{{"decision": "allow"}}\'\n'
    )
    judge.chmod(judge.stat().st_mode | stat.S_IEXEC)
    config = {"judge_command": str(judge), "judge_events": "TaskCompleted"}
    (project / ".claude-session.json").write_text(json.dumps(config))  # arrived with a clone
    done = {"session_id": SESSION, "hook_event_name": "TaskCompleted", "cwd": str(project)}
    done |= {"task_id": "t1", "task_subject": "ship it"}
    env = {"CLAUDE_SESSION_NO_JUDGE": ""}
    run_hook("TaskCompleted", done, project, env=env)
    assert not marker.exists()
    shown = cli(project, "config", "--json")
    assert any(p.startswith("untrusted") for p in json.loads(shown.stdout)["problems"])
    refused = cli(project, "config", "--set", "claim_lease_minutes=5")
    assert refused.returncode == 1 and "not trusted" in refused.stderr
    assert cli(project, "trust", "--yes").returncode == 0
    run_hook("TaskCompleted", done | {"task_id": "t2"}, project, env=env)
    assert marker.exists()  # trusted: now it runs
    # an edit by hand makes it untrusted again
    marker.unlink()
    (project / ".claude-session.json").write_text(json.dumps(config | {"judge_timeout_seconds": 9}))
    run_hook("TaskCompleted", done | {"task_id": "t3"}, project, env=env)
    assert not marker.exists()
    # written through our own command: trusted
    assert cli(project, "trust", "--yes").returncode == 0
    assert cli(project, "config", "--set", "judge_timeout_seconds=10").returncode == 0
    run_hook("TaskCompleted", done | {"task_id": "t4"}, project, env=env)
    assert marker.exists()


def test_a_link_at_the_trust_record_is_refused(project: Path, isolated_state: Path) -> None:
    victim = isolated_state.parent / "victim.txt"
    victim.write_text("keep")
    os.symlink(victim, isolated_state / "trusted")
    run_hook("UserPromptSubmit", fixture("UserPromptSubmit", project), project)
    assert victim.read_text() == "keep"
    assert (project / ".claude-session.db").exists()  # recorded all the same
