"""The claude-session command, run as a user runs it (a subprocess of the installed script)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import PYTHON, count, fixture, run_hook, run_tmp, spool_a_stop, stream

from claude_session.core.db import SCHEMA_VERSION
from claude_session.services.setup import installer

CLI = str(Path(PYTHON).parent / "claude-session")


def cli(
    *args: str, project: Path | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    cmd = [CLI, *(["--project", str(project)] if project else []), *args]
    env = os.environ | {"TMPDIR": str(run_tmp())}  # `demo`'s scratch: where the run's end looks
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    if check:
        assert done.returncode == 0, done.stderr + done.stdout
    return done


def test_install_merges_idempotently_keeps_other_hooks_and_backs_up(project: Path) -> None:
    settings = project / ".claude" / "settings.local.json"  # this machine's paths: personal
    settings.parent.mkdir()
    theirs = {"command": "echo theirs", "type": "command"}
    settings.write_text(
        json.dumps(
            {"model": "x", "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [theirs]}]}}
        )
    )
    cli("install", project=project)
    cli("install", project=project)
    data = json.loads(settings.read_text())
    assert data["model"] == "x"
    assert data["hooks"]["PreToolUse"][0] == {"matcher": "Bash", "hooks": [theirs]}
    for event in installer.installed_events():
        ours = [h for g in data["hooks"][event] for h in g["hooks"] if installer.is_ours(h)]
        assert len(ours) == 1, event
        command = ours[0]["command"]
        assert command.startswith(f"{PYTHON} -I -S /") and command.endswith(
            "; [ $? -ne 3 ] || exit 2 # claude-session"
        )
        assert isinstance(ours[0]["timeout"], int) and 0 < ours[0]["timeout"] <= 600  # seconds
        if event == "SessionEnd":  # Claude Code caps SessionEnd hooks at 60 s
            assert ours[0]["timeout"] <= 60
    assert "WorktreeCreate" not in data["hooks"]  # it would replace git worktree creation
    # synchronous: async hooks are killed when `claude -p` exits, and the event is lost
    assert not any(h.get("async") for g in data["hooks"].values() for x in g for h in x["hooks"])
    assert not list(settings.parent.glob("*.bak*"))  # backups live with our state
    assert not (project / ".claude" / "settings.json").exists()  # the shared file: untouched
    assert ".claude/settings.local.json" in (project / ".gitignore").read_text().splitlines()
    assert ".claude-session.db*" in (project / ".gitignore").read_text().splitlines()
    cli("install", project=project)
    assert (project / ".gitignore").read_text().count(".claude-session.db*") == 1

    cli("uninstall", project=project)
    assert json.loads(settings.read_text()) == {
        "model": "x",
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [theirs]}]},
    }


def test_install_dry_run_writes_nothing(project: Path) -> None:
    out = cli("install", "--dry-run", "--json", project=project).stdout
    assert "SessionStart" in json.loads(out)["settings"]["hooks"]
    assert not (project / ".claude").exists()


def test_install_scopes(project: Path, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    cli("install", "--scope", "local", project=project)
    assert (project / ".claude" / "settings.local.json").exists()
    cli("install", "--scope", "user", project=project)
    assert (home / ".claude" / "settings.json").exists()


def test_doctor_runs_every_installed_hook_and_finds_duplicates(project: Path) -> None:
    cli("install", project=project)
    report = json.loads(cli("doctor", "--json", project=project).stdout)
    hooks = [r for r in report if r["check"].startswith("hook ")]
    assert len(hooks) == len(installer.installed_events()) and all(r["ok"] for r in hooks)
    # a second registration with a different interpreter path (another install of ours wrote
    # it, and recorded it): events would be recorded twice
    shared = project / ".claude" / "settings.json"  # (the install wrote settings.local.json)
    installer.write_ours(shared, {}, python=sys.executable + "3")
    done = cli("doctor", "--json", project=project, check=False)
    assert done.returncode == 1
    dup = next(r for r in json.loads(done.stdout) if r["check"] == "duplicate registrations")
    assert not dup["ok"] and "SessionStart" in dup["detail"]


def test_doctor_reports_a_broken_hook(project: Path) -> None:
    """Hooks an install of ours wrote (and recorded), whose interpreter is gone since."""
    settings = project / ".claude" / "settings.json"
    installer.write_ours(settings, {}, python="/nonexistent/python")
    done = cli("doctor", "--json", project=project, check=False)
    assert done.returncode == 1
    hooks = [r for r in json.loads(done.stdout) if r["check"].startswith("hook ")]
    assert hooks and not any(r["ok"] for r in hooks)
    assert all("event not recorded" in r["detail"] for r in hooks)


def test_status_events_and_restore_after_a_recorded_session(project: Path) -> None:
    for payload in stream(project):
        run_hook(payload["hook_event_name"], payload, project)
    status = json.loads(cli("status", "--json", project=project).stdout)
    assert status["database"]["events"] == len(stream(project))
    assert (
        status["database"]["schema_version"] == SCHEMA_VERSION
        and status["database"]["spool_backlog"] == 0
    )
    assert status["database"]["internal_errors"] == 0
    assert status["claims"] == []  # both sessions ended: every lease was released
    claims = json.loads(cli("claims", "--all", "--json", project=project).stdout)
    assert [(c["file_path"], c["agent"], c["lease"]) for c in claims] == [
        ("hello.py", "main", "released: session ended (other)")
    ]
    # the session ended and abandoned it: still unfixed, as the restored context says
    assert [(e["what"], e["state"]) for e in status["open_errors"]] == [
        ("python3 -c 'import nonexistent_mod'", "abandoned")
    ]
    errors = json.loads(cli("errors", "--json", project=project).stdout)
    assert [(e["command"], e["state"]) for e in errors] == [
        ("python3 -c 'import nonexistent_mod'", "abandoned")
    ]
    assert status["agents"] == []  # no session is active and nothing runs
    everyone = json.loads(cli("agents", "--all", "--json", project=project).stdout)
    real = {a["agent"] for a in everyone if not a["is_internal"] and a["type"] != "main"}
    assert real == {"a026341fa5086f41e"}
    assert sum(a["is_internal"] for a in everyone) == 2  # the compaction helpers, kept apart
    assert sorted(a["state"] for a in everyone if a["type"] == "main") == ["completed"] * 2
    assert status["database"]["last_snapshot"]["snapshot_type"] == "session_end"
    table = cli("status", project=project).stdout
    assert "session_end" in table and "560819af" in table

    events = json.loads(cli("events", "--json", "--tool", "Bash", project=project).stdout)
    assert [e["event"] for e in events] == [
        "PreToolUse",
        "PostToolUse",
        "PreToolUse",
        "PostToolUseFailure",
    ]
    one = json.loads(
        cli(
            "events",
            "--json",
            "--session",
            "93a0",
            "--event",
            "PostCompact",
            "--payload",
            project=project,
        ).stdout
    )
    assert json.loads(one[0]["payload"])["compact_summary"] == "Done."

    restored = cli("restore", "--preview", project=project).stdout
    assert "hello.py" in restored and "nonexistent_mod" in restored
    assert "TASK-A: write hello.py" in restored
    # what was put back after the one compaction, as given then: the other session's
    given = cli("restore", "--session", "93a0", project=project)
    assert given.stdout.startswith("<claude-session-recorded-state>\nContext was just compacted.")
    assert "nonexistent_mod" not in given.stdout
    assert "put back into session 93a0fe30" in " ".join(given.stderr.split())


def test_status_without_a_database_says_what_to_do(project: Path) -> None:
    done = cli("status", project=project, check=False)
    assert done.returncode == 1 and "claude-session install" in done.stderr


def test_demo_plays_the_recorded_session_through_the_hooks() -> None:
    done = cli("demo")
    said = " ".join(done.stdout.split())  # lines are folded at the width
    assert "played 38 Claude Code 2.1.330 events (35 recorded from the real CLI, 3 composed" in said
    assert "(0 hook failures)" in said
    assert "<claude-session-recorded-state>" in said and "nonexistent_mod" in said


def test_demo_where_git_fails_says_so_and_leaves_no_scratch_project(tmp_path: Path) -> None:
    """The demo's scratch project is a git repository: where git cannot make one, the demo
    says so (exit 1, no traceback) and deletes its scratch folder."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "git").write_text("#!/bin/sh\necho 'git: broken on purpose' >&2\nexit 3\n")
    (fake / "git").chmod(0o755)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = os.environ | {"TMPDIR": str(scratch), "PATH": f"{fake}:{os.environ['PATH']}"}
    done = subprocess.run([CLI, "demo"], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 1, done.stdout
    said = " ".join(done.stderr.split())
    assert "the demo's scratch project: git init failed: git: broken on purpose" in said
    assert "Traceback" not in done.stderr
    assert list(scratch.iterdir()) == []


def test_every_command_has_help() -> None:
    import click
    from click.testing import CliRunner

    from claude_session.cli import cli as group

    listed = group.list_commands(click.Context(group))  # loads every command module
    assert set(group.commands) == set(listed)
    from claude_session.cli import Group

    loaded_first = {"claude_session.cli.report_commands", "claude_session.cli.admin_commands"}
    defined = {n: c.callback.__module__ for n, c in group.commands.items() if c.callback}
    lazy = {n for n, module in defined.items() if module not in loaded_first}
    assert lazy == set(Group.MODULES)  # every command of another module loads by its name
    for name, command in group.commands.items():
        assert command.help, name
        result = CliRunner().invoke(group, [name, "--help"])
        assert result.exit_code == 0, name


def test_a_read_leaves_the_spool_to_the_hooks_and_ingest_takes_it(project: Path) -> None:
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    spool_a_stop(project)
    status = json.loads(cli("status", "--json", project=project).stdout)
    assert status["database"]["spool_backlog"] == 1  # a read writes nothing
    assert count(project, "events") == 1
    said = cli("status", project=project).stdout
    assert "1 event waits in the spool" in said and "claude-session ingest" in said
    taken = json.loads(cli("ingest", "--json", project=project).stdout)
    assert taken == {"ingested": 1, "waiting": 0}
    assert count(project, "events") == 2


def test_prune_drops_old_sessions_raw_events_and_keeps_what_was_learned(project: Path) -> None:
    for payload in stream(project):
        run_hook(payload["hook_event_name"], payload, project)
    live = fixture("UserPromptSubmit", project) | {"session_id": "still-going"}
    run_hook("UserPromptSubmit", live, project)
    import apsw

    conn = apsw.Connection(str(project / ".claude-session.db"))
    conn.execute("UPDATE sessions SET ended_at = ended_at - 90 * 86400 WHERE status = 'ended'")
    conn.close()
    done = cli("prune", "--older-than", "30", "--vacuum", "--yes", project=project)
    assert f"{len(stream(project))} events rows" in done.stdout
    assert count(project, "events") == 1 and count(project, "hook_events") == 1  # the live one
    assert count(project, "error_log") == 1 and count(project, "agent_registry") > 0
    assert count(project, "context_snapshots") == 2  # each old session's last one
