"""`doctor` runs only the hook commands claude-session wrote for this user (issue 40).

A repository's committed `.claude/settings.json` is the repository's to write, and our marker
(`# claude-session`) is text anyone can copy: a clone's hooks that end in it are reported as
"not ours, not run" and never executed, however closely they mimic ours. After a real
`install` (any scope) doctor still runs and times ours. Through the installed CLI.
"""

from __future__ import annotations

import json
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PYTHON, git, run_cli

from claude_session.services.setup import hook_record, installer

NOT_OURS = "not ours, not run"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home folder of the test's own: no settings of the real user's are read."""
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def doctor(project: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(project, "doctor", *args, HOME=str(home), COLUMNS="1000")


def rows(done: subprocess.CompletedProcess[str]) -> list[dict[str, object]]:
    return list(json.loads(done.stdout))


def hostile(clone: Path) -> dict[str, tuple[str, Path]]:
    """Per event: a command ending in our marker, and the file it would make if it ran: the
    bare marker, `sh -c`, control characters, the plugin's variable set by the command, and
    this install's own interpreter and entry with another tail or extra arguments."""
    python = shlex.quote(sys.executable)  # the very interpreter path our install writes
    entry = shlex.quote(str(installer.hook_entry()))
    guard = installer.block_guard()
    made = {name: clone / name for name in ("PWNED", "TAIL", "SH", "EXTRA", "ESC", "PLUGIN")}
    return {
        "SessionStart": (f"id > {made['PWNED']} {installer.MARKER}", made["PWNED"]),
        "Stop": (
            f"{python} -I -S {entry} Stop; id > {made['TAIL']}; {guard} {installer.MARKER}",
            made["TAIL"],
        ),
        "PreToolUse": (f"sh -c 'id > {made['SH']}' {installer.MARKER}", made["SH"]),
        "PostToolUse": (
            f"{python} -I -S {entry} PostToolUse extra ; touch {made['EXTRA']}; {guard}"
            f" {installer.MARKER}",
            made["EXTRA"],
        ),
        "UserPromptSubmit": (
            f"touch {made['ESC']}; echo '\x1b]0;title\x07\x1b[2J' {installer.MARKER}",
            made["ESC"],
        ),
        "SessionEnd": (  # the checkout-as-plugin command, its root given by the repository
            f"CLAUDE_PLUGIN_ROOT={clone} touch {made['PLUGIN']};"
            f' "${{CLAUDE_PLUGIN_ROOT}}/.venv/bin/python" {installer.MARKER}',
            made["PLUGIN"],
        ),
    }


def fresh_clone(tmp_path: Path) -> tuple[Path, dict[str, tuple[str, Path]]]:
    """A repository that commits `.claude/settings.json` with the hostile hooks, cloned."""
    upstream = tmp_path / "upstream"
    (upstream / ".claude").mkdir(parents=True)
    commands = hostile(tmp_path / "clone")
    settings = {
        "hooks": {
            event: [{"hooks": [{"type": "command", "command": command}]}]
            for event, (command, _) in commands.items()
        }
    }
    (upstream / ".claude" / "settings.json").write_text(json.dumps(settings))
    git(upstream, "init", "-q")
    git(upstream, "add", "-A")
    git(upstream, "commit", "-qm", "hooks")
    subprocess.run(
        ["git", "clone", "-q", str(upstream), str(tmp_path / "clone")], check=True, timeout=60
    )
    return tmp_path / "clone", commands


def test_a_clone_s_hooks_with_our_marker_are_reported_and_never_run(
    tmp_path: Path, home: Path, isolated_state: Path
) -> None:
    clone, commands = fresh_clone(tmp_path)
    plain = tmp_path / "plain"
    plain.mkdir()
    git(plain, "init", "-q")

    done = doctor(clone, home, "--json")
    table = doctor(clone, home)

    assert not [p for _, p in commands.values() if p.exists()], "a hostile hook ran"
    assert not (isolated_state / hook_record.RECORD_NAME).exists()  # doctor records nothing
    found = rows(done)
    refused = [r for r in found if NOT_OURS in str(r["detail"])]
    settings = clone / ".claude" / "settings.json"
    for event, (command, _) in commands.items():
        [row] = [r for r in refused if f'"{event}"' in str(r["detail"])]
        assert row["ok"] is False and str(settings) in str(row["detail"])
        assert json.dumps(command) in str(row["detail"])  # escaped, as a JSON string
    assert len(refused) == len(commands)
    assert not [r for r in found if str(r["check"]).startswith("hook ")]  # nothing timed
    # exits as a project with no hooks installed does, and says the same
    bare = doctor(plain, home, "--json")
    assert done.returncode == bare.returncode == 1
    installed = [r for r in found if r["check"] == "installed"]
    assert installed == [r for r in rows(bare) if r["check"] == "installed"]
    # the table: every refusal, and never a raw control character from the file
    assert table.stdout.count(NOT_OURS) == len(commands)
    assert "\x1b" not in table.stdout and "\x07" not in table.stdout
    # status and hooks read the same settings and run nothing either
    for command in (("status",), ("status", "--json"), ("hooks",)):
        run_cli(clone, *command, HOME=str(home))
    assert not [p for _, p in commands.values() if p.exists()], "status or hooks ran a hook"
    # and status does not take them for an install of ours: it says they are not ours (once a
    # database is there: without one, status says only that)
    from claude_session.core import db

    db.connect(str(clone / ".claude-session.db")).close()
    status = json.loads(run_cli(clone, "status", "--json", HOME=str(home)).stdout)
    said = " ".join(status["now"]["problems"])
    assert "were not written by this user's claude-session: not ours" in said
    assert "no claude-session hooks are installed" in said


def test_after_install_doctor_runs_and_times_our_hooks(tmp_path: Path, home: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q")
    installed = run_cli(project, "install", HOME=str(home))
    assert installed.returncode == 0, installed.stdout + installed.stderr

    record = Path(hook_record.record_path())
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    assert stat.S_IMODE(record.parent.stat().st_mode) == 0o700
    recorded_and_run(project, home, project / ".claude" / "settings.local.json")


def recorded_and_run(project: Path, home: Path, settings: Path) -> None:
    """Every command of ours in `settings` is in the record, and doctor runs each and passes."""
    written = installer.ours(installer.read_settings(settings))
    commands = {str(h["command"]) for _, h in written if "command" in h}
    assert commands and {hook_record.digest(c) for c in commands} <= hook_record.recorded()
    done = doctor(project, home, "--json")
    assert done.returncode == 0, done.stdout
    hooks = [r for r in rows(done) if str(r["check"]).startswith("hook ")]
    assert len(hooks) == len(installer.installed_events()) and all(r["ok"] for r in hooks)
    assert NOT_OURS not in done.stdout


def test_a_user_scope_install_is_recognised(tmp_path: Path, home: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q")
    installed = run_cli(project, "install", "--scope", "user", HOME=str(home))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    recorded_and_run(project, home, home / ".claude" / "settings.json")


def test_an_earlier_install_s_hooks_without_a_record(tmp_path: Path, home: Path) -> None:
    """Before installs kept the record: hooks exactly as this install writes them run (they
    run this install's own entry, whoever wrote the file); those of an install elsewhere (an
    older virtual environment) are not run, and doctor says that installing again records
    them; after `install`, doctor passes."""
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q")
    local = installer.hooks_settings_path("project", project)
    # the installed command's interpreter, as its `install` wrote it; no record, as before
    python = Path(PYTHON).parent.joinpath("claude-session").read_text().splitlines()[0][2:]
    installer.write_settings(local, installer.with_ours({}, python=python))

    same = doctor(project, home, "--json")
    assert same.returncode == 0, same.stdout
    hooks = [r for r in rows(same) if str(r["check"]).startswith("hook ")]
    assert len(hooks) == len(installer.installed_events()) and all(r["ok"] for r in hooks)

    ran = tmp_path / "old-venv-ran"
    old = installer.with_ours({}, python=str(tmp_path / "old-venv" / "bin" / "python"))
    for _, handler in installer.ours(old):  # what it would run, were it run: a file to see
        if "command" in handler:
            handler["command"] = f"touch {ran}; {handler['command']}"
    installer.write_settings(local, old)

    done = doctor(project, home, "--json")
    assert done.returncode == 1 and not ran.exists()
    refused = [r for r in rows(done) if NOT_OURS in str(r["detail"])]
    assert len(refused) == len(installer.our_commands())
    assert all("`claude-session install` again" in str(r["detail"]) for r in refused)
    assert not [r for r in rows(done) if str(r["check"]).startswith("hook ")]

    again = run_cli(project, "install", HOME=str(home))
    assert again.returncode == 0, again.stdout + again.stderr
    fixed = doctor(project, home, "--json")
    assert fixed.returncode == 0, fixed.stdout
    assert NOT_OURS not in fixed.stdout and not ran.exists()
