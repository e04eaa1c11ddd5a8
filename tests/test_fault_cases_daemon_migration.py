"""Fault cases 34-36 beyond the basics: a migration killed halfway and hooks arriving during one;
a stale or reused pid in the lock file; a daemon stopped with SIGSTOP never slows a hook."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import apsw
from conftest import (
    PYTHON,
    count,
    daemons_of,
    fixture,
    hook_argv,
    hook_env,
    run_hook,
    spooled,
    wait_for,
)

from claude_session.core import db
from claude_session.services.background import daemon_control

CLI = str(Path(PYTHON).parent / "claude-session")
RELEASE_DB = Path(__file__).parent / "fixtures" / "db_v4_release_0.1.0.sqlite"

# Opens a version-4 database and migrates it, pausing inside the migration's transaction.
SLOW_MIGRATION = r"""
import sys, time
from claude_session.core import db
conn = __import__("apsw").Connection(sys.argv[1])
paused = []
def pause(cursor, sql, bindings):
    if "ALTER TABLE" in sql and not paused:  # once, inside the migration's transaction
        paused.append(sql)
        print("migrating", flush=True)
        time.sleep(float(sys.argv[2]))
    return True
conn.exec_trace = pause
db.ensure_schema(conn)
print("migrated", flush=True)
"""


def version_4_project(project: Path) -> Path:
    path = project / ".claude-session.db"
    shutil.copy(RELEASE_DB, path)
    return path


def test_34_a_migration_killed_halfway_leaves_the_old_schema_and_completes_next_time(
    project: Path,
) -> None:
    path = version_4_project(project)
    before = apsw.Connection(str(path)).execute("SELECT count(*) FROM events").fetchall()[0][0]
    child = subprocess.Popen(
        [PYTHON, "-c", SLOW_MIGRATION, str(path), "30"], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdout.readline() == "migrating\n"
    child.send_signal(signal.SIGKILL)
    child.wait()
    check = apsw.Connection(str(path))
    assert check.execute("PRAGMA user_version").fetchall() == [(4,)]
    assert check.execute("PRAGMA quick_check").fetchall() == [("ok",)]
    check.close()
    run_hook("UserPromptSubmit", fixture("UserPromptSubmit", project), project)
    migrated = db.connect(str(path))
    assert db.schema_version(migrated) == db.SCHEMA_VERSION
    assert migrated.execute("SELECT count(*) FROM events").fetchall()[0][0] == before + 1


def test_34_hooks_arriving_during_a_migration_wait_or_spool_and_lose_nothing(
    project: Path,
) -> None:
    path = version_4_project(project)
    before = apsw.Connection(str(path)).execute("SELECT count(*) FROM events").fetchall()[0][0]
    child = subprocess.Popen(
        [PYTHON, "-c", SLOW_MIGRATION, str(path), "2"], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdout.readline() == "migrating\n"
    hooks = []
    for i in range(20):
        payload = fixture("PostToolUse.Bash", project) | {"tool_use_id": f"toolu_mig_{i}"}
        proc = subprocess.Popen(
            hook_argv("PostToolUse"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=hook_env(project),
        )
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(payload).encode())
        proc.stdin.close()
        hooks.append(proc)
    for proc in hooks:
        assert proc.wait(timeout=60) == 0
        assert proc.stdout is not None and proc.stdout.read() == b""
    assert child.wait(timeout=60) == 0
    stored = count(project, "events", "tool_use_id LIKE 'toolu_mig_%'")
    assert stored + len(spooled(project)) == 20
    run_hook("UserPromptSubmit", fixture("UserPromptSubmit", project), project)  # ingests
    assert count(project, "events", "tool_use_id LIKE 'toolu_mig_%'") == 20
    assert count(project, "events") == before + 21


def test_35_a_stale_or_reused_pid_in_the_lock_file_does_not_stop_a_start(
    project: Path, reap_daemons: None
) -> None:
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        for pid in (999_999_999, bystander.pid):  # a dead pid, then a live unrelated one
            Path(daemon_control.lock_path(str(project))).write_text(str(pid))
            assert not daemon_control.is_running(str(project))
            stopped = subprocess.run(
                [CLI, "--project", str(project), "daemon", "stop"], capture_output=True, text=True
            )
            assert stopped.returncode == 0 and "not running" in stopped.stdout
            assert bystander.poll() is None  # never signalled
        subprocess.run([CLI, "--project", str(project), "daemon", "start"], check=True)
        assert daemon_control.running_pid(str(project)) == daemons_of(project)[0]
    finally:
        bystander.kill()


def test_36_a_stopped_daemon_never_slows_a_hook(project: Path, reap_daemons: None) -> None:
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    subprocess.run([CLI, "--project", str(project), "daemon", "start"], check=True)
    pid = daemon_control.running_pid(str(project))
    assert pid
    os.kill(pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        for name in ("SessionStart.resume", "PreToolUse.Bash", "PostToolUse.Bash"):
            payload = fixture(name, project)
            run_hook(str(payload["hook_event_name"]), payload, project, env={})
        assert time.monotonic() - started < 3.0
        assert len(daemons_of(project)) == 1  # a hung daemon still holds its lock: no second
    finally:
        os.kill(pid, signal.SIGCONT)
    assert wait_for(lambda: daemon_control.is_running(str(project)))
