"""A new user's first hour, as they met it: every word names what is really done (the file
`install` writes, the .gitignore it makes, what `uninstall --dry-run` would remove, whole
numbers in `config`), no false alarm (a fork's worktree and the demo's project find their
hooks; doctor times each hook alone), `memory add --scope session` finds the latest session,
and the web page tells a revert from a fork. All through the installed command."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, fixture, git, query, run_cli, run_hook, run_tmp, wait_for

from claude_session.services.setup import hook_record, installer

CLI = str(Path(PYTHON).parent / "claude-session")
SESSION = "f1r57-h0ur-0000-4000-8000-000000000001"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home folder of the test's own: no settings or plugin of the real user's is read."""
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


WIDE = {"COLUMNS": "1000"}  # no long path of a temporary folder folded inside a word


def cli(project: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(project, *args, HOME=str(home), **WIDE)


def ok(project: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = cli(project, home, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def words(text: str) -> str:
    """Output as one line of words: what it says, however it was folded at the width."""
    return " ".join(text.split())


def git_repo(project: Path) -> Path:
    (project / "app.py").write_text("VALUE = 1\n")
    git(project, "init", "-q")
    git(project, "add", ".")
    git(project, "commit", "-qm", "init")
    return project


def send(project: Path, name: str, session: str = SESSION, **changes: Any) -> None:
    payload = fixture(name, project) | {"session_id": session} | changes
    payload.pop("agent_id", None)
    payload.pop("agent_type", None)
    run_hook(name.split(".")[0], payload, project)


def recorded_write(project: Path, session: str = SESSION) -> int:
    """A session that writes app.py, its snapshots taken; the frame of the Write."""
    send(project, "SessionStart.startup", session)
    send(project, "UserPromptSubmit", session, prompt="make the value 2")
    settled = "SELECT 1 FROM vcs_tags WHERE status = 'pending'"
    assert wait_for(lambda: not query(project, settled), 30)
    given = {"file_path": str(project / "app.py"), "content": "VALUE = 2\n"}
    send(project, "PreToolUse.Write", session, tool_use_id="toolu_fh1", tool_input=given)
    (project / "app.py").write_text("VALUE = 2\n")
    send(project, "PostToolUse.Write", session, tool_use_id="toolu_fh1", tool_input=given)
    send(project, "Stop", session)
    assert wait_for(lambda: not query(project, settled), 30)
    return int(
        query(project, "SELECT frame_no FROM tool_calls WHERE tool_use_id = 'toolu_fh1'")[0][0]
    )


# --- 2. every word matches the behaviour --------------------------------------------------------


def test_install_refuses_the_home_folder_and_writes_nothing(home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_PROJECT_DIR"}
    env |= {"HOME": str(home)} | WIDE
    for argv in (
        [CLI, "install"],
        [CLI, "install", "--dry-run"],
        [CLI, "--project", ".", "install"],
    ):
        done = subprocess.run(argv, cwd=home, capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 1, done.stdout + done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "is your home folder, not a project" in done.stderr
        assert "--scope user" in done.stderr
        assert list(home.iterdir()) == []  # no .claude, no .gitignore
    user = subprocess.run(
        [CLI, "install", "--scope", "user"], cwd=home, capture_output=True, text=True, env=env
    )
    assert user.returncode == 0, user.stderr
    assert str(home / ".claude" / "settings.json") in words(user.stdout)
    assert (
        not (home / ".gitignore").exists()
        and not (home / ".claude" / "settings.local.json").exists()
    )


def test_install_says_it_created_the_gitignore_of_a_folder_that_is_no_repository(
    project: Path, home: Path
) -> None:
    done = ok(project, home, "install")
    gitignore = project / ".gitignore"
    assert (
        f"created {gitignore} with .claude-session.db* and .claude/settings.local.json"
        f" ({project} is not a git repository" in words(done.stdout)
    )
    assert gitignore.read_text().splitlines()[1::2] == [
        ".claude-session.db*",
        ".claude/settings.local.json",
    ]
    said = words(done.stdout)
    assert f"installed {len(installer.installed_events())} hooks into" in said
    assert str(project / ".claude" / "settings.local.json") in said
    # in a repository with its own .gitignore: what was added, and where
    repo = project.parent / "repo"
    repo.mkdir()
    git_repo(repo)
    (repo / ".gitignore").write_text("*.log")
    done = ok(repo, home, "install")
    assert (
        f"added .claude-session.db* and .claude/settings.local.json to {repo / '.gitignore'}"
        in words(done.stdout)
    )
    assert "not a git repository" not in words(done.stdout)
    assert (repo / ".gitignore").read_text().startswith("*.log\n#")


def test_install_dry_run_and_help_name_the_file_written(project: Path, home: Path) -> None:
    local = project / ".claude" / "settings.local.json"
    done = ok(project, home, "install", "--dry-run")
    said = words(done.stdout)
    # no `claude` on this PATH to register the MCP hook server with: commands, and why
    assert said.startswith("hooks as commands (a process per event): no `claude` command on PATH")
    events = len(installer.installed_events())  # 33: PreSkillShellCommand too
    assert f"would write claude-session's hooks for {events} events into {local};" in said
    assert f"would create {project / '.gitignore'}" in said
    assert not (project / ".claude").exists() and not (project / ".gitignore").exists()
    as_json = json.loads(ok(project, home, "install", "--dry-run", "--json").stdout)
    assert as_json["file"] == str(local) and "SessionStart" in as_json["settings"]["hooks"]
    user = json.loads(ok(project, home, "install", "--scope", "user", "--dry-run", "--json").stdout)
    assert user["file"] == str(home / ".claude" / "settings.json")
    helped = " ".join(ok(project, home, "install", "--help").stdout.split())
    assert ".claude/settings.local.json" in helped and "~/.claude/settings.json" in helped
    assert "into Claude Code's settings.json" not in helped


def test_uninstall_dry_run_says_what_would_go_from_which_file(project: Path, home: Path) -> None:
    local = project / ".claude" / "settings.local.json"
    shared = project / ".claude" / "settings.json"
    ok(project, home, "install")
    before = local.read_text()
    shared.write_text(json.dumps({"model": "team-model"}))
    done = ok(project, home, "uninstall", "--dry-run")
    assert done.stdout.strip() != "{}" and not done.stdout.lstrip().startswith("{")
    said = words(done.stdout)
    events = len(installer.installed_events())
    assert said.startswith(
        f"would remove from {local}: claude-session's handlers for {events} events (SessionStart,"
    )
    assert "WorktreeRemove" in said and "anything else there stays" in said
    assert str(shared) not in said  # it holds nothing of ours: nothing to say of it
    assert local.read_text() == before  # a dry run
    plan = json.loads(ok(project, home, "uninstall", "--dry-run", "--json").stdout)
    assert [p["file"] for p in plan["plan"]] == [str(local), str(shared)]
    assert plan["plan"][0]["hooks"][0] == "SessionStart" and plan["plan"][1]["hooks"] == []
    assert "hooks" not in plan["settings"]


def test_config_shows_whole_numbers_as_integers(project: Path, home: Path) -> None:
    shown = ok(project, home, "config").stdout
    assert re.search(r"^claim_lease_minutes\s+15\s", shown, re.M), shown
    assert re.search(r"^memory_max_count\s+20000\s", shown, re.M), shown
    assert not re.search(r"\b\d+\.0\b", shown), shown
    ok(project, home, "config", "--set", "snapshot_wait_seconds=0.5")
    shown = ok(project, home, "config").stdout
    assert re.search(r"^snapshot_wait_seconds\s+0\.5\s", shown, re.M), shown
    values = {
        r["key"]: r["value"]
        for r in json.loads(ok(project, home, "config", "--json").stdout)["settings"]
    }
    assert values["claim_lease_minutes"] == 15 and isinstance(values["claim_lease_minutes"], int)


# --- 6. no false alarms ---------------------------------------------------------------------


def test_a_fork_worktree_finds_the_main_repositorys_hooks(project: Path, home: Path) -> None:
    """Claude Code reads the main repository's `.claude/settings.local.json` for a session in a
    linked worktree: a fork's sessions record through the project's install."""
    git_repo(project)
    ok(project, home, "install")
    frame = recorded_write(project)
    made = json.loads(ok(project, home, "fork", f"{SESSION}:{frame}", "--json").stdout)
    fork = Path(made["path"])
    assert made["made_with"].startswith("git worktree")
    assert not (fork / ".claude" / "settings.local.json").exists()  # nothing written there
    assert str(project / ".claude" / "settings.local.json") in made["hooks"]
    send(fork, "SessionStart.startup", session="forked-first-hour")
    assert query(fork, "SELECT child_session_id FROM branches") == [("forked-first-hour",)]
    status = ok(fork, home, "status")
    assert "no claude-session hooks" not in words(status.stdout)
    assert "main repository" in words(status.stdout)
    doctor = cli(fork, home, "doctor", "--json")
    rows = {r["check"]: r for r in json.loads(doctor.stdout)}
    assert "installed" not in rows  # the hooks were found
    assert rows["settings main repository"]["ok"]
    assert all(r["ok"] for name, r in rows.items() if name.startswith("hook ")), rows
    assert doctor.returncode == 0, [r for r in rows.values() if not r["ok"]]


def test_a_fork_in_a_plain_folder_carries_the_hooks(project: Path, home: Path) -> None:
    """No git commit to make a worktree from: the fork gets the project's hooks in its own
    `.claude/settings.local.json`, so a `claude` started there records."""
    (project / "app.py").write_text("VALUE = 1\n")
    ok(project, home, "install")
    frame = recorded_write(project)
    made = json.loads(ok(project, home, "fork", f"{SESSION}:{frame}", "--json").stdout)
    fork = Path(made["path"])
    assert made["made_with"].startswith("folder")
    settings = json.loads((fork / ".claude" / "settings.local.json").read_text())
    assert installer.is_ours(settings["hooks"]["SessionStart"][0]["hooks"][0])
    assert str(fork / ".claude" / "settings.local.json") in made["hooks"]
    send(fork, "SessionStart.startup", session="forked-plain")
    assert "no claude-session hooks" not in words(ok(fork, home, "status").stdout)


FAKE_CLAUDE = """#!{python}
# Stands in for `claude -p`: runs the SessionStart hooks of the --settings it was given, as
# Claude Code runs a command hook (sh -c, the payload on stdin, CLAUDE_PROJECT_DIR).
import json, os, subprocess, sys
settings = json.loads(sys.argv[sys.argv.index("--settings") + 1])
payload = {{"session_id": "replayed-first-hour", "hook_event_name": "SessionStart",
           "source": "startup", "cwd": os.getcwd()}}
for group in settings["hooks"]["SessionStart"]:
    for hook in group["hooks"]:
        subprocess.run(["/bin/sh", "-c", hook["command"]], input=json.dumps(payload).encode(),
                       env=os.environ | {{"CLAUDE_PROJECT_DIR": os.getcwd()}}, check=True)
"""


def test_a_replay_run_with_the_hooks_on_its_command_line_is_no_alarm(
    project: Path, home: Path, tmp_path: Path
) -> None:
    """A project whose hooks reach no replay (none installed): `replay` gives `claude -p`
    ours with --settings. Its folder has no settings file, yet its session was recorded:
    status and doctor say where the hooks came from, and raise no alarm."""
    git_repo(project)
    frame = recorded_write(project)  # recorded by running the hooks directly
    claude = tmp_path / "claude"
    claude.write_text(FAKE_CLAUDE.format(python=PYTHON))
    claude.chmod(0o755)
    done = ok(
        project,
        home,
        "replay",
        f"{SESSION}:{frame}",
        "--prompt",
        "again",
        "--claude",
        str(claude),
        "--json",
    )
    replayed = Path(json.loads(done.stdout)["path"])
    assert query(replayed, "SELECT child_session_id FROM branches") == [("replayed-first-hour",)]
    status = json.loads(ok(replayed, home, "status", "--json").stdout)
    assert not any("hooks" in p for p in status["now"]["problems"]), status["now"]["problems"]
    assert "by `claude-session replay`" in status["hooks"]["installed_in"]
    checked = cli(replayed, home, "doctor", "--json")
    doctor = json.loads(checked.stdout)
    installed = next(r for r in doctor if r["check"] == "installed")
    assert installed["ok"] and "claude-session replay" in installed["detail"]
    assert checked.returncode == 0, [r for r in doctor if not r["ok"]]


def test_the_demo_project_has_its_hooks_installed(home: Path) -> None:
    done = subprocess.run(
        [CLI, "demo", "--keep", "--json"],
        capture_output=True,
        text=True,
        env=os.environ | {"HOME": str(home), "TMPDIR": str(run_tmp())},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    project = Path(result["project"])
    try:
        assert not result["status"]["now"]["problems"], result["status"]["now"]["problems"]
        local = project / ".claude" / "settings.local.json"
        assert str(local) in result["status"]["hooks"]["installed_in"]
        doctor = cli(project, home, "doctor", "--json")
        assert doctor.returncode == 0, doctor.stdout
    finally:
        subprocess.run(["rm", "-rf", str(project.parent)], check=False)


def test_doctor_runs_each_hook_alone(project: Path, home: Path) -> None:
    """Each installed command wrapped to take a lock folder while it runs: a second one
    starting meanwhile finds it taken and says so. None does; every one ran. (The wrapped
    commands are recorded as ours, as an install would: doctor runs no other.)"""
    ok(project, home, "install")
    settings_file = project / ".claude" / "settings.local.json"
    settings = json.loads(settings_file.read_text())
    lock, log = project.parent / "running", project.parent / "runs.log"
    for event, groups in settings["hooks"].items():
        for group in groups:
            for handler in group["hooks"]:
                hook = shlex.join(installer.hook_argv(event, PYTHON))
                handler["command"] = (
                    f"mkdir {lock} 2>/dev/null || echo overlap >> {log}; {hook};"
                    f" rmdir {lock} 2>/dev/null; echo ran >> {log} {installer.MARKER}"
                )
                hook_record.remember([handler["command"]])
    settings_file.write_text(json.dumps(settings))
    report = json.loads(cli(project, home, "doctor", "--json").stdout)
    hooks = [r for r in report if r["check"].startswith("hook ")]
    assert len(hooks) == len(installer.installed_events()) and all(r["ok"] for r in hooks), hooks
    runs = log.read_text().split()
    assert runs.count("ran") == len(hooks)
    assert "overlap" not in runs
    timed = next(r for r in report if r["check"] == "hooks timed")
    assert "run one at a time, each alone" in timed["detail"]


# --- 7. memory add and the web page ---------------------------------------------------------------


def test_a_session_memory_goes_to_the_latest_session(project: Path, home: Path) -> None:
    send(project, "SessionStart.startup", session="older-session")
    send(project, "SessionStart.startup", session="newer-session")
    send(project, "UserPromptSubmit", session="newer-session", prompt="go on")
    done = ok(
        project,
        home,
        "memory",
        "add",
        "parser refactor in progress",
        "--category",
        "context",
        "--scope",
        "session",
    )
    assert "for session newer-session (the most recently active)" in words(done.stdout)
    listed = json.loads(ok(project, home, "memory", "list", "--json").stdout)
    (found,) = [m for m in listed if m["text"] == "parser refactor in progress"]
    assert found["scope"] == "session" and found["session_id"] == "newer-session"
    answer = json.loads(
        ok(
            project,
            home,
            "memory",
            "add",
            "another note",
            "--category",
            "context",
            "--scope",
            "session",
            "--json",
        ).stdout
    )
    assert answer["session_id"] == "newer-session"


def test_an_empty_project_has_no_session_to_attach_a_session_memory_to(
    project: Path, home: Path
) -> None:
    done = cli(project, home, "memory", "add", "x", "--category", "context", "--scope", "session")
    assert done.returncode == 1 and "no session recorded yet" in done.stderr


def test_the_web_page_tells_a_revert_from_a_fork(project: Path, home: Path) -> None:
    git_repo(project)
    frame = recorded_write(project)
    ok(project, home, "revert", f"{SESSION}:{frame - 1}", "--yes")
    assert (project / "app.py").read_text() == "VALUE = 1\n"
    process = subprocess.Popen(
        [CLI, "--project", str(project), "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ | {"HOME": str(home)},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/[A-Za-z0-9_-]+/", line)
        assert url, line
        with urllib.request.urlopen(f"{url.group(0)}session/{SESSION[:8]}", timeout=30) as page:
            html = page.read().decode()
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(30)
    legend = dict(re.findall(r'<span data-key="(\w+)"><svg[^>]*><circle [^>]*fill="(#\w+)"', html))
    assert "revert" in legend and legend["revert"] != legend["fork"]
    marks = re.findall(
        r'data-kind="revert"><title>[^<]*</title><circle class="kind-revert"'
        r'[^>]*fill="(#\w+)"',
        html,
    )
    assert marks == [legend["revert"]]
