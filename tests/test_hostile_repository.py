"""The hostile-repository suite (SECURITY.md promise 4): hypothesis generates repositories that
commit any combination of our file names (database, fork records, spool, held files, settings,
snapshot store, configuration; tests/hostile_repo.py), the user clones one and works in it the
way Claude Code runs our hooks (the hook entry points, -I -S, as `install` writes them), then
runs the installed command as a user does. Nothing of the repository's reaches the model, runs,
or is deleted, and `status` says what was ignored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import fixture, git, run_cli, run_hook
from hostile_repo import MARK, PARTS, cloned, everything_under
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SESSION = "0b5e55ed-0000-4000-8000-00000000c10e"
EVENTS = (
    ("SessionStart", "SessionStart.startup", {}),
    ("UserPromptSubmit", "UserPromptSubmit", {}),
    ("PreToolUse", "PreToolUse.Edit", {}),
    ("PostToolUseFailure", "PostToolUseFailure.Bash", {}),
    ("PreToolUse", "PreToolUse.Bash", {}),
    ("TaskCompleted", "TaskCompleted", {}),
    ("Stop", "Stop", {}),
    ("SessionStart", "SessionStart.compact", {}),
    ("SessionStart", "SessionStart.resume", {}),
)


def work_in(clone: Path) -> list[str]:
    """A session's hooks in the clone; everything they answered (what the model is given)."""
    answers = []
    for event, name, changes in EVENTS:
        try:
            payload = fixture(name, clone)
        except FileNotFoundError:  # an event with no recorded payload in the fixtures
            continue
        payload |= {"session_id": SESSION} | changes
        answers.append(run_hook(event, payload, clone).stdout)
    return answers


def as_a_user(clone: Path, victim: Path) -> dict[str, Any]:
    """The installed command on the clone: what a user runs after a session there."""
    said: dict[str, Any] = {}
    for name, args in {
        "status": ("status", "--json"),
        "doctor": ("doctor", "--json"),
        "forks": ("fork", "--list", "--json"),
        "remove_victim": ("fork", "--remove", str(victim), "--yes", "--force"),
        "remove_git": ("fork", "--remove", str(clone / ".git"), "--yes", "--force"),
        "export": ("export-otel",),
        "ingest": ("ingest",),
    }.items():
        said[name] = run_cli(clone, *args)
    return said


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(parts=st.sets(st.sampled_from(PARTS), min_size=1).map(frozenset))
def test_nothing_of_a_hostile_repository_reaches_the_model_runs_or_is_deleted(
    tmp_path_factory: Any, parts: frozenset[str]
) -> None:
    where = tmp_path_factory.mktemp("hostile")
    clone, victim = cloned(where, parts)
    kept = everything_under(victim)

    answers = work_in(clone)
    for answer in answers:
        assert MARK not in answer, (parts, answer)
    said = as_a_user(clone, victim)

    assert not list(where.rglob("PWNED-*")), parts  # nothing of theirs ran
    assert everything_under(victim) == kept  # nothing deleted or changed
    assert git(clone, "log", "--oneline").strip()  # the clone's repository is whole
    for name in ("remove_victim", "remove_git"):
        assert said[name].returncode != 0 and "Traceback" not in said[name].stderr
    assert not [r for r in json.loads(said["forks"].stdout or "[]") if r["remove_with"]]
    assert said["export"].returncode != 0 or "0 sessions" in said["export"].stdout

    status = json.loads(said["status"].stdout)
    problems = " ".join(status["now"]["problems"])
    if parts & {"database", "fork_record"}:
        assert "the database is not trusted" in problems, problems
    if "spool" in parts:
        assert "not written by this user's claude-session" in problems, problems
    if "settings" in parts:
        assert "not ours" in problems, problems
    if "config" in parts:
        assert "the configuration is not trusted" in problems, problems
    doctor = json.loads(said["doctor"].stdout)
    if "settings" in parts:
        assert [r for r in doctor if "not ours, not run" in str(r["detail"])]


def test_the_same_files_written_by_this_users_install_are_used(
    project: Path, tmp_path: Path
) -> None:
    """The suite's checks can fail: a session of the user's own leaves a failure that the next
    session is told about, and status names no problem of trust."""
    (project / "app.py").write_text("VALUE = 1\n")
    git(project, "init", "-q")
    failure = fixture("PostToolUseFailure.Bash", project) | {"session_id": SESSION}
    run_hook("PostToolUseFailure", failure, project)
    start = fixture("SessionStart.startup", project) | {"session_id": "next-session"}
    answer = run_hook("SessionStart", start, project).json()
    assert answer and "additionalContext" in answer["hookSpecificOutput"]
    status = json.loads(run_cli(project, "status", "--json").stdout)
    assert not [p for p in status["now"]["problems"] if "trusted" in p]
