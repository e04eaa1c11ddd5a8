"""One way to run git in the user's repository (core/usergit.py), and one for our snapshot
store (services/snapshots/workspace.py `git`): no other module of claude_session starts git,
and the user's runs with optional locks off (never writing the user's index), whatever the
environment the hook was started in points git at."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from claude_session.core import usergit

PACKAGE = Path(__file__).resolve().parent.parent / "claude_session"
RUNNERS = {"core/usergit.py", "services/snapshots/workspace.py"}
STARTERS = {"run", "Popen", "call", "check_call", "check_output"}


def _starts_git(call: ast.Call) -> bool:
    """A subprocess call whose argv is a literal list or tuple starting with "git"."""
    func = call.func
    if not (
        isinstance(func, ast.Attribute)
        and func.attr in STARTERS
        and isinstance(func.value, ast.Name)
        and func.value.id == "subprocess"
    ):
        return False
    argv = call.args[0] if call.args else None
    for keyword in call.keywords:
        if keyword.arg == "args":
            argv = keyword.value
    return (
        isinstance(argv, (ast.List, ast.Tuple))
        and bool(argv.elts)
        and isinstance(argv.elts[0], ast.Constant)
        and argv.elts[0].value == "git"
    )


def test_only_the_two_runners_start_git() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _starts_git(node):
                found.append((path.relative_to(PACKAGE).as_posix(), node.lineno))
    assert {name for name, _ in found} <= RUNNERS, found
    assert {name for name, _ in found} == RUNNERS  # the check still sees both runners


def test_the_check_sees_a_git_call() -> None:
    call = ast.parse('subprocess.run(["git", "-C", root, "status"], check=False)').body[0]
    assert isinstance(call, ast.Expr) and isinstance(call.value, ast.Call)
    assert _starts_git(call.value)


@pytest.fixture
def recording_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake `git` first on PATH that writes its environment and argv, then runs the real one."""
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True)
    if real.returncode != 0:
        pytest.skip("no git")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "record"
    fake = bin_dir / "git"
    fake.write_text(
        "#!/bin/sh\n"
        f'env > "{record}.env"\n'
        f'printf "%s\\n" "$@" > "{record}.argv"\n'
        f'exec {real.stdout.strip()} "$@"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return record


def test_the_user_runner_sets_optional_locks_off_and_ignores_a_foreign_git_dir(
    tmp_path: Path, recording_git: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "trunk"], cwd=repo, check=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "other"], cwd=elsewhere, check=True)
    # As if the hook were started from a git hook of another repository.
    monkeypatch.setenv("GIT_DIR", str(elsewhere / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(elsewhere / ".git" / "index"))
    monkeypatch.setenv("GIT_OPTIONAL_LOCKS", "1")

    code, out, _ = usergit.run(str(repo), ["symbolic-ref", "--short", "HEAD"], timeout=10)

    assert (code, out.strip()) == (0, "trunk")
    env = dict(
        line.split("=", 1)
        for line in Path(f"{recording_git}.env").read_text().splitlines()
        if "=" in line
    )
    assert env["GIT_OPTIONAL_LOCKS"] == "0"
    assert env["GIT_TERMINAL_PROMPT"] == "0"
    assert env["LC_ALL"] == "C"
    assert "GIT_DIR" not in env and "GIT_INDEX_FILE" not in env
    argv = Path(f"{recording_git}.argv").read_text().splitlines()
    assert argv[:2] == ["-C", str(repo)]


def test_every_caller_goes_through_the_runner(tmp_path: Path, recording_git: Path) -> None:
    """PreCompact's git state, a frame's HEAD, the telemetry's branch: each runs git with
    optional locks off."""
    from claude_session.services import gitstate
    from claude_session.services.snapshots import vcs
    from claude_session.services.telemetry import otel_export

    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "trunk"], cwd=repo, check=True)
    env_file = Path(f"{recording_git}.env")
    for call in (
        lambda: gitstate.capture(str(repo)),
        lambda: vcs.pointer(str(repo)),
        lambda: otel_export.resource_attributes(str(repo)),
    ):
        env_file.unlink(missing_ok=True)
        call()
        assert "GIT_OPTIONAL_LOCKS=0" in env_file.read_text().splitlines()
    assert gitstate.capture(str(repo))["branch"] == "trunk"
    assert vcs.pointer(str(repo)).git_branch == "trunk"
    assert otel_export.resource_attributes(str(repo))["vcs.repository.ref.name"] == "trunk"


def test_a_missing_git_and_a_timeout_are_statuses_not_exceptions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sleep = shutil.which("sleep")
    monkeypatch.setenv("PATH", str(tmp_path))  # no git there
    assert usergit.run(str(tmp_path), ["status"], timeout=5) == (
        usergit.NOT_INSTALLED,
        "",
        "git is not installed",
    )
    from claude_session.services import gitstate

    assert gitstate.capture(str(tmp_path)) == {"error": "git is not installed"}
    slow = tmp_path / "git"
    slow.write_text(f"#!/bin/sh\nexec {sleep} 5\n")
    slow.chmod(0o755)
    code, _, err = usergit.run(str(tmp_path), ["status"], timeout=0.2)
    assert code == usergit.TIMED_OUT and "took longer than 0.2s" in err
