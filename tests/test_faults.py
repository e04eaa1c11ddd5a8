"""Fault and bad-input cases for one hook run (shared/reference/fault-cases.md, by number),
each through the real entry point: the hook script as a subprocess. `run_hook` itself asserts
exit code 0 and that stdout is empty or exactly one JSON object."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import apsw
import pytest
from conftest import (
    PYTHON,
    count,
    fixture,
    hook_argv,
    hook_env,
    log_file,
    query,
    read_envelope,
    run_hook,
    spooled,
)

from claude_session.core import db, spool
from claude_session.services.setup import installer

SECRETS = {
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "ghp": "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2,
    "pat": "github_pat_11ABCDEFG0123456789_" + "x" * 30,
    "anthropic": "sk-ant-api03-" + "Zz9" * 15,
    "openai": "sk-proj-" + "Qq7" * 15,
    "pem": "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
    "password": "hunter2Secret",
    "bearer": "eyJhbGciOiJIUzI1NiJ9.payloadpart.signaturepart",
    "url": "p4ssw0rdInUrl",
    "private": "TOPSECRETNOTE",
}


def secret_payload(project: Path) -> dict[str, object]:
    payload = fixture("PostToolUse.Bash", project)
    payload["tool_input"]["command"] = (
        f"AWS_ACCESS_KEY_ID={SECRETS['aws']} curl -H 'Authorization: Bearer {SECRETS['bearer']}'"
        f" postgres://admin:{SECRETS['url']}@db.internal/app --password={SECRETS['password']}"
    )
    payload["tool_response"]["stdout"] = (
        f"token {SECRETS['ghp']} and {SECRETS['pat']}\n-----BEGIN PRIVATE KEY-----\n"
        f"{SECRETS['pem']}\n-----END PRIVATE KEY-----\n"
        f"keys {SECRETS['anthropic']} {SECRETS['openai']}"
    )
    payload["tool_response"]["stderr"] = f"note <PRIVATE>{SECRETS['private']}</Private> done"
    return payload


def assert_no_secret_on_disk(*folders: Path) -> None:
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                for name, value in SECRETS.items():
                    assert value.encode() not in data, f"{name} secret leaked into {path}"


def quick_check(project: Path) -> str:
    return str(query(project, "PRAGMA quick_check")[0][0])


def hold_write_lock(project: Path, seconds: float) -> subprocess.Popen[bytes]:
    """Another process holds BEGIN IMMEDIATE on the database for `seconds`."""
    code = (
        "import apsw, sys, time\n"
        f"c = apsw.Connection({str(project / '.claude-session.db')!r})\n"
        # a capture process (it packs frame states) may be writing: take the lock after it
        "c.setbusytimeout(20000)\n"
        "c.execute('BEGIN IMMEDIATE')\n"
        "print('locked', flush=True)\n"
        f"time.sleep({seconds})\n"
        "c.execute('ROLLBACK')\n"
    )
    holder = subprocess.Popen([PYTHON, "-c", code], stdout=subprocess.PIPE)
    assert holder.stdout is not None and holder.stdout.readline() == b"locked\n"
    return holder


def ingest(project: Path) -> None:
    conn = db.connect(str(project / ".claude-session.db"))
    spool.ingest(conn, str(project))
    conn.close()


# --- input and payload --------------------------------------------------------------------


def test_01_empty_stdin(project: Path) -> None:
    for event in ("SessionStart", "PreToolUse"):
        result = run_hook(event, b"", project)
        assert result.stdout == ""
    assert not (project / ".claude-session.db").exists()
    assert "empty stdin" in log_file(project).read_text()


def test_03_slow_but_valid_stdin_is_read_whole(project: Path) -> None:
    data = json.dumps(fixture("UserPromptSubmit", project)).encode()
    env = hook_env(project)
    proc = subprocess.Popen(
        hook_argv("UserPromptSubmit"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None
    for i in range(0, len(data), 40):
        proc.stdin.write(data[i : i + 40])
        proc.stdin.flush()
        time.sleep(0.2)
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    assert query(project, "SELECT prompt FROM prompts") == [("hello there",)]


@pytest.mark.parametrize(
    "data",
    [b'{"session_id": "a", "tool', b"[]", b"null", b"42", b'"x"', b"[" * 100_000, b"{" * 50_000],
    ids=["truncated", "array", "null", "number", "string", "nested-arrays", "nested-objects"],
)
def test_04_05_08_malformed_or_not_an_object(project: Path, data: bytes) -> None:
    result = run_hook("PreToolUse", data, project)
    assert result.stdout == ""
    assert not (project / ".claude-session.db").exists()  # no partial row
    log = log_file(project).read_text()
    assert "ERROR" in log and ("invalid JSON" in log or "not an object" in log)


def test_06_invalid_utf8_is_stored_with_replacement(project: Path) -> None:
    data = b'{"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": "ab\xff\xfecd"}'
    run_hook("UserPromptSubmit", data, project)
    assert query(project, "SELECT prompt FROM prompts") == [("ab\ufffd\ufffdcd",)]


def test_07_lone_surrogate_and_nul(project: Path) -> None:
    data = (
        '{"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": "x\\ud800y\\u0000z"}'
    )
    run_hook("UserPromptSubmit", data, project)
    stored = query(project, "SELECT payload FROM events")[0][0]
    assert json.loads(stored)["prompt"] == "x\ufffdy\x00z"  # NUL round-trips, surrogate replaced


def test_09_ten_megabyte_response_is_capped_hashed_and_redacted(project: Path) -> None:
    payload = fixture("PostToolUse.Bash", project)
    payload["tool_response"]["stdout"] = "x" * 10_000_000 + f" {SECRETS['ghp']}"
    raw = json.dumps(payload).encode()
    result = run_hook("PostToolUse", raw, project)
    # A guard against a hang, far from the hook's timeout; the speed target is bench/'s (a
    # 2 s bound here failed on a loaded 2-core machine at 2.3 s).
    assert result.seconds < 10.0
    size, sha, truncated, text = query(
        project, "SELECT payload_bytes, payload_sha256, truncated, payload FROM events"
    )[0]
    import hashlib

    assert (size, sha, truncated) == (len(raw), hashlib.sha256(raw).hexdigest(), 1)
    assert len(text) < 300_000 and json.loads(text)["tool_input"]["command"] == "python3 hello.py"
    assert_no_secret_on_disk(project)


def test_10_unbounded_stream_stops_at_the_cap(project: Path) -> None:
    env = hook_env(project)
    yes = subprocess.Popen(["yes"], stdout=subprocess.PIPE)
    started = time.perf_counter()
    done = subprocess.run(
        hook_argv("PostToolUse"),
        stdin=yes.stdout,
        capture_output=True,
        env=env,
        timeout=30,
    )
    yes.kill()
    assert done.returncode == 0 and done.stdout == b""
    assert time.perf_counter() - started < 5
    assert "oversized payload" in log_file(project).read_text()


def test_11_missing_fields(project: Path) -> None:
    run_hook("Stop", {"hook_event_name": "Stop"}, project)  # no session_id, no cwd
    run_hook("PreToolUse", {"session_id": "s1"}, project)  # no event name: the script's
    sql = "SELECT session_id, hook_event_name, unattributed FROM events ORDER BY id"
    assert query(project, sql) == [("", "Stop", "no session_id"), ("s1", "PreToolUse", None)]
    assert query(project, "SELECT session_id FROM sessions") == [("s1",)]  # none made up


def test_11_no_project_anywhere_spools_to_user_state(isolated_state: Path, tmp_path: Path) -> None:
    run_hook("Stop", {"session_id": "s1", "hook_event_name": "Stop"}, None, cwd=tmp_path)
    assert not list(tmp_path.glob(".claude-session*"))
    assert len(list((isolated_state / "spool").glob("*.json"))) == 1


def test_12_wrong_types(project: Path) -> None:
    run_hook(
        "PostToolUse",
        {
            "session_id": 42,
            "hook_event_name": "PostToolUse",
            "tool_name": "Write",
            "tool_input": "not an object",
            "tool_response": ["a", "list"],
            "tool_use_id": 7,
        },
        project,
    )
    assert query(project, "SELECT session_id, tool_use_id FROM events") == [("42", "7")]


def test_13_14_unknown_event_and_extra_fields_are_kept(project: Path) -> None:
    payload = fixture("PostToolUse.Edit", project)
    payload["future_field"] = {"nested": [1, 2, 3]}
    payload["tool_response"]["newThing"] = True
    run_hook("PostToolUse", payload, project)
    # a newer Claude Code's event, delivered to one of our scripts: stored under its own name
    result = run_hook(
        "Notification", {"session_id": "s1", "hook_event_name": "Foo", "x": 1}, project
    )
    assert result.stdout == ""
    stored = [json.loads(r[0]) for r in query(project, "SELECT payload FROM events ORDER BY id")]
    assert stored[0] == payload and stored[1]["x"] == 1
    assert query(project, "SELECT hook_event_name FROM events WHERE id = 2") == [("Foo",)]
    assert count(project, "file_claims") == 1  # known fields still extracted


def test_15_concurrent_duplicate_delivery_leaves_one_row(project: Path) -> None:
    data = json.dumps(fixture("PostToolUse.Write", project)).encode()
    env = hook_env(project)
    procs = [
        subprocess.Popen(
            hook_argv("PostToolUse"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        for _ in range(12)
    ]
    for proc in procs:
        proc.communicate(data, timeout=60)
        assert proc.returncode == 0
    assert count(project, "events") == 1
    assert count(project, "hook_events", "outcome = 'duplicate'") == 11


# --- paths and security -------------------------------------------------------------------


def test_16_path_traversal_is_only_data(project: Path) -> None:
    for target in ("../../../../etc/passwd", "~/.ssh/id_rsa"):
        payload = fixture("PostToolUse.Write", project)
        payload["tool_input"]["file_path"] = target
        payload["tool_use_id"] = f"toolu_{abs(hash(target))}"
        run_hook("PostToolUse", payload, project)
    paths = {r[0] for r in query(project, "SELECT file_path FROM file_claims")}
    # relative paths resolve against the project root (lexically, nothing is opened)
    assert paths == {os.path.normpath(project / "../../../../etc/passwd"), "~/.ssh/id_rsa"}


def test_19_20_secrets_never_reach_disk(project: Path, isolated_state: Path) -> None:
    payload = secret_payload(project)
    prompt = fixture("UserPromptSubmit", project)
    prompt["prompt"] = f"use {SECRETS['anthropic']} and <private>{SECRETS['private']}</PRIVATE>"
    run_hook("UserPromptSubmit", prompt, project)
    run_hook("PostToolUse", payload, project)
    # and through the spool: the same secrets while the database is locked
    holder = hold_write_lock(project, 8)
    try:
        second = dict(payload, tool_use_id="toolu_spooled")
        run_hook("PostToolUse", second, project, env={})
    finally:
        holder.kill()
    assert len(spooled(project)) == 1
    run_hook("PreToolUse", "{not json " + SECRETS["ghp"], project)  # into the log, if anywhere
    assert_no_secret_on_disk(project, isolated_state)
    stored = query(project, "SELECT payload FROM events WHERE hook_event_name = 'PostToolUse'")
    text = stored[0][0]
    assert "[REDACTED:github_token#" in text and "[REDACTED:private_key#" in text
    assert "[REDACTED:url_password#" in text and "[REDACTED:jwt#" in text


def test_21_compact_context_is_capped_and_survives_a_locked_database(project: Path) -> None:
    sid = "560819af-56fc-4528-be0a-32a24d1aa819"
    for i in range(5):  # a few real failures and edits through the hooks...
        failure = fixture("PostToolUseFailure.Bash", project)
        failure["tool_use_id"] = f"toolu_f{i}"
        failure["tool_input"]["command"] = f"pytest tests/test_{i}.py " + "-k x " * 40
        run_hook("PostToolUseFailure", failure, project)
        edit = fixture("PostToolUse.Edit", project)
        edit["tool_use_id"] = f"toolu_e{i}"
        edit["tool_input"]["file_path"] = str(project / f"src/module_{i}.py")
        run_hook("PostToolUse", edit, project)
    # ...and bulk state straight through the database, as a long busy session leaves it
    conn = db.connect(str(project / ".claude-session.db"))
    with db.Immediate(conn):
        for i in range(2000):
            conn.execute(
                "INSERT INTO file_claims (session_id, agent_id, file_path, first_claimed_at,"
                " last_touched_at) VALUES (?, 'main', ?, 0, ?)",
                (sid, f"lib/f{i}.py", i),
            )
    conn.close()
    start = fixture("SessionStart.compact", project) | {"session_id": sid}
    for locked in (False, True):
        holder = hold_write_lock(project, 8) if locked else None
        try:
            result = run_hook("SessionStart", start, project)
        finally:
            if holder:
                holder.kill()
        answer = result.json()
        assert answer is not None, f"no context (locked={locked})"
        text = answer["hookSpecificOutput"]["additionalContext"]
        assert len(text) <= 8000 and text.endswith("</claude-session-recorded-state>")
        assert "more not shown" in text
        assert result.seconds < 7  # the locked run waits for the lock, then spools and answers


def test_22_project_directory_missing(tmp_path: Path, isolated_state: Path) -> None:
    gone = tmp_path / "renamed-away"
    payload = fixture("UserPromptSubmit", gone)
    run_hook("UserPromptSubmit", payload, gone)
    assert not gone.exists()  # no directory tree created at a guessed location
    assert len(list((isolated_state / "spool").glob("*.json"))) == 1
    gone.mkdir()  # the project comes back: the CLI ingests what waited for it
    done = subprocess.run(
        [str(Path(PYTHON).parent / "claude-session"), "--project", str(gone), "ingest"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert query(gone, "SELECT prompt FROM prompts") == [("hello there",)]
    assert not list((isolated_state / "spool").glob("*.json"))


# --- storage faults -----------------------------------------------------------------------


def test_25_disk_full_rolls_back_and_spools(project: Path) -> None:
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    size = (project / ".claude-session.db").stat().st_size
    limit = 60_000

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    prompt = fixture("UserPromptSubmit", project)
    prompt["prompt"] = "y" * 40_000  # the WAL frames for this do not fit under the limit
    run_hook("UserPromptSubmit", prompt, project, preexec_fn=small_files)
    assert size > 0 and quick_check(project) == "ok"
    assert count(project, "events") == 1  # earlier rows intact, nothing partial
    assert len(spooled(project)) == 1
    ingest(project)
    assert count(project, "events") == 2 and count(project, "prompts") == 1


def test_26_lock_held_past_busy_timeout_spools_then_ingests(project: Path) -> None:
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    holder = hold_write_lock(project, 12)
    try:
        result = run_hook("PostToolUse", fixture("PostToolUse.Edit", project), project)
    finally:
        holder.kill()
        holder.wait()
    assert 4.5 < result.seconds < 9
    assert count(project, "events") == 1 and len(spooled(project)) == 1
    # the next successful hook run ingests the spool
    run_hook("PreToolUse", fixture("PreToolUse.Bash", project), project)
    assert count(project, "events") == 3 and not spooled(project)
    assert count(project, "hook_events", "outcome = 'spooled'") == 1
    # the audit row says the spool delivered it; the two live runs came from settings.json
    assert query(project, "SELECT dispatcher, count(*) FROM hook_events GROUP BY 1") == [
        ("settings", 2),
        ("spool", 1),
    ]
    assert count(project, "file_claims") == 1  # derived state replayed too


def test_28_kill_9_mid_transaction_leaves_no_partial_rows(project: Path) -> None:
    run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    code = (
        "import apsw, os, sys\n"
        f"c = apsw.Connection({str(project / '.claude-session.db')!r})\n"
        # a capture process (it packs frame states) may be writing: take the lock after it
        "c.setbusytimeout(20000)\n"
        "c.execute('BEGIN IMMEDIATE')\n"
        'c.execute("INSERT INTO events (dedup_key, received_at, session_id, hook_event_name,'
        " payload, payload_bytes) VALUES ('partial', 0, 's', 'X', '{}', 2)\")\n"
        "print('ready', flush=True)\n"
        "import time; time.sleep(60)\n"
    )
    child = subprocess.Popen([PYTHON, "-c", code], stdout=subprocess.PIPE)
    assert child.stdout is not None and child.stdout.readline() == b"ready\n"
    child.send_signal(signal.SIGKILL)
    child.wait()
    result = run_hook("PreToolUse", fixture("PreToolUse.Bash", project), project)
    assert result.seconds < 4  # not the lock's busy timeout (5 s): a dead holder is not waited on
    assert count(project, "events", "dedup_key = 'partial'") == 0
    assert count(project, "events") == 2 and quick_check(project) == "ok"


@pytest.mark.parametrize("writers", [64, 200])
def test_30_many_concurrent_hooks_lose_nothing(project: Path, writers: int) -> None:
    env = hook_env(project)
    names = ["PostToolUseFailure.Bash", "PostToolUse.Edit", "PreToolUse.Agent", "PostToolUse.Write"]
    procs = []
    for i in range(writers):
        payload = fixture(names[i % len(names)], project)
        payload["tool_use_id"] = f"toolu_storm_{i}"
        proc = subprocess.Popen(
            hook_argv(payload["hook_event_name"]),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(payload).encode())  # as Claude Code does: at once
        proc.stdin.close()
        procs.append(proc)
    for proc in procs:
        assert proc.stdout is not None and proc.stderr is not None
        out, err = proc.stdout.read(), proc.stderr.read()
        assert proc.wait(timeout=120) == 0, err
        assert out == b"" or isinstance(json.loads(out), dict)  # failures get guidance
    assert count(project, "events") + len(spooled(project)) == writers
    assert count(project, "events") == writers  # with BEGIN IMMEDIATE nobody needed the spool
    assert count(project, "error_log") == writers // 4
    assert max(r[0] for r in query(project, "SELECT attempt_number FROM error_log")) == writers // 4
    assert quick_check(project) == "ok"


@pytest.mark.parametrize("kind", ["garbage-header", "directory", "newer-schema"])
def test_31_34_unusable_database_spools_and_cli_explains(project: Path, kind: str) -> None:
    path = project / ".claude-session.db"
    if kind == "garbage-header":
        path.write_bytes(os.urandom(8192))
    elif kind == "directory":
        path.mkdir()
    else:
        conn = db.connect(str(path))
        conn.execute("PRAGMA user_version = 99")
        conn.close()
    before = path.read_bytes() if path.is_file() else None
    run_hook("UserPromptSubmit", fixture("UserPromptSubmit", project), project)
    assert len(spooled(project)) == 1
    if before is not None:
        assert path.read_bytes() == before  # never written to
    done = subprocess.run(
        [str(Path(PYTHON).parent / "claude-session"), "--project", str(project), "status"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    expected = {
        "garbage-header": f"{path} is damaged",  # and how to start afresh
        "directory": "cannot open",
        "newer-schema": "upgrade claude-session",
    }[kind]
    assert expected in done.stderr and "Traceback" not in done.stderr


def test_31_zero_length_file_becomes_a_database(project: Path) -> None:
    (project / ".claude-session.db").write_bytes(b"")
    run_hook("UserPromptSubmit", fixture("UserPromptSubmit", project), project)
    assert count(project, "events") == 1


def test_34_older_schema_is_migrated_keeping_rows(project: Path) -> None:
    path = project / ".claude-session.db"
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA journal_mode = WAL").fetchall()
    for _ in conn.execute((Path(__file__).parent / "fixtures" / "schema_v1.sql").read_text()):
        pass
    old_prompt = json.dumps(fixture("UserPromptSubmit", project) | {"prompt": "from v1"})
    conn.execute(
        "INSERT INTO events (dedup_key, received_at, session_id, hook_event_name, payload,"
        " payload_bytes) VALUES ('old', 1, 's-old', 'UserPromptSubmit', ?, 10)",
        (old_prompt,),
    )
    conn.close()
    procs = [
        subprocess.Popen(
            hook_argv("PreToolUse"),
            stdin=subprocess.PIPE,
            env=hook_env(project),
        )
        for _ in range(20)
    ]
    for i, proc in enumerate(procs):
        payload = fixture("PreToolUse.Bash", project) | {"tool_use_id": f"toolu_m{i}"}
        proc.communicate(json.dumps(payload).encode(), timeout=60)
        assert proc.returncode == 0
    assert query(project, "PRAGMA user_version")[0][0] == db.SCHEMA_VERSION
    assert count(project, "events") == 21 and not spooled(project)
    assert query(project, "SELECT prompt FROM prompts") == [("from v1",)]  # backfilled


# --- environment --------------------------------------------------------------------------


def test_38_broken_environment(project: Path, tmp_path: Path, reap_daemons: None) -> None:
    # No HOME and no CLAUDE_SESSION_NO_DAEMON: the hook starts the project's daemon,
    # which `reap_daemons` stops afterwards.
    gone = tmp_path / "cwd-that-vanished"
    gone.mkdir()
    proc = subprocess.Popen(
        hook_argv("UserPromptSubmit"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=gone,
        env={
            "PATH": "/usr/bin:/bin",
            "LANG": "C",
            "LC_ALL": "C",
            "CLAUDE_PROJECT_DIR": str(project),
        },  # no HOME
    )
    gone.rmdir()
    out, _ = proc.communicate(json.dumps(fixture("UserPromptSubmit", project)).encode())
    assert proc.returncode == 0 and out == b""
    assert count(project, "prompts") == 1


def test_38_registered_command_never_exits_nonzero(project: Path, tmp_path: Path) -> None:
    broken = installer.hook_command("PreToolUse", python="/nonexistent/venv/bin/python")
    run = installer.run_hook_command(broken, b"{}", project)
    assert run.returncode == 0 and run.stdout == ""  # sh: 127, not passed on
    # a deleted checkout: python itself exits 2 ("can't open file"), which must not block
    gone = installer.hook_command(
        "TaskCompleted", entry=tmp_path / "deleted-checkout" / "claude_session" / "hook.py"
    )
    run = installer.run_hook_command(gone, b"{}", project)
    assert run.returncode == 0 and "can't open file" in run.stderr
    working = installer.hook_command("PreToolUse", python=sys.executable)
    run = installer.run_hook_command(
        working, json.dumps(fixture("PreToolUse.Bash")).encode(), project
    )
    assert run.returncode == 0 and count(project, "events") == 1


class ReadOnly:
    """A read-only project folder. As root (who ignores file modes) the folder is bind-mounted
    read-only onto itself; as any other user its modes are taken away (folders r-x, files r--),
    which is what a user meets in a folder they may read but not write, and restored after."""

    def __init__(self, folder: Path) -> None:
        self.folder = str(folder)
        self.modes: dict[Path, int] = {}

    def __enter__(self) -> None:
        if os.geteuid() != 0:
            for path in [Path(self.folder), *Path(self.folder).rglob("*")]:
                if not path.is_symlink():
                    self.modes[path] = path.stat().st_mode & 0o7777
                    path.chmod(self.modes[path] & ~0o222)
            return
        subprocess.run(["mount", "--bind", self.folder, self.folder], check=True)
        subprocess.run(["mount", "-o", "remount,ro,bind", self.folder], check=True)

    def __exit__(self, *exc: object) -> None:
        if self.modes:
            for path, mode in self.modes.items():
                path.chmod(mode)
            return
        # A process that mapped the database's -shm file there has exited, but the kernel lets
        # go of the mapping a moment later: "target is busy" until then.
        for _ in range(50):
            if subprocess.run(["umount", self.folder], capture_output=True).returncode == 0:
                return
            time.sleep(0.1)
        subprocess.run(["umount", self.folder], check=True)


@pytest.mark.parametrize("database", ["absent", "present"])
def test_23_24_read_only_project_spools_to_user_state(
    project: Path, isolated_state: Path, database: str
) -> None:
    if database == "present":
        run_hook("SessionStart", fixture("SessionStart.startup", project), project)
    with ReadOnly(project):
        result = run_hook("UserPromptSubmit", fixture("UserPromptSubmit", project), project)
        assert result.stdout == ""
    assert len(list((isolated_state / "spool").glob("*.json"))) == 1  # nothing lost
    done = subprocess.run(
        [str(Path(PYTHON).parent / "claude-session"), "--project", str(project), "ingest"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert query(project, "SELECT prompt FROM prompts") == [("hello there",)]
    assert not list((isolated_state / "spool").glob("*.json"))


def test_23_a_read_only_project_is_said_once_per_session(
    project: Path, isolated_state: Path
) -> None:
    with ReadOnly(project):
        for i in range(3):
            payload = fixture("PostToolUse.Bash", project) | {"tool_use_id": f"toolu_ro_{i}"}
            run_hook("PostToolUse", payload, project)
    assert len(list((isolated_state / "spool").glob("*.json"))) == 3  # nothing lost
    log = (isolated_state / "claude-session.log").read_text()
    assert log.count("events of this session spooled") == 1


def test_24_the_cli_on_a_read_only_database_is_one_clear_line(project: Path) -> None:
    run_hook("UserPromptSubmit", fixture("UserPromptSubmit", project), project)
    with ReadOnly(project):
        done = subprocess.run(
            [
                str(Path(PYTHON).parent / "claude-session"),
                "--project",
                str(project),
                "fail",
                "an approach",
                "--reason",
                "why",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert len([line for line in done.stderr.splitlines() if line.strip()]) == 1


def edit_in_process(project: Path, payload: dict[str, Any]) -> tuple[int, str, str]:
    """A PostToolUse hook run through the runtime in this process (where a test can plant a
    stand-in bug): its exit code, stdout and stderr."""
    from claude_session.runtime import hookrt
    from claude_session.runtime.request import Request

    outcome = hookrt.Outcome()
    request = Request(
        "PostToolUse",
        json.dumps(payload).encode(),
        time.time(),
        time.perf_counter(),
        os.urandom(12).hex(),
        root_hint=str(project),
    )
    hookrt.process(outcome, request)
    outcome.finish()
    return outcome.code, outcome.out, outcome.err


@pytest.mark.parametrize("where", ["PostToolUse's writer", "executions.track", "frames.commit"])
def test_a_bug_in_our_derivation_still_keeps_the_event(
    project: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Wherever our own derivation fails (a stand-in raises there: the bug), the hook keeps
    the event and its audit row, says why in the log and the audit note, and answers as if
    we were not there. Before, a bug outside the event type's own writer (the tool call, the
    frame) failed again in the fallback, and the event was lost."""
    from claude_session.core import events, executions, frames

    def bug(*args: object, **kwargs: object) -> None:
        raise KeyError("a bug of ours")

    if where == "PostToolUse's writer":
        monkeypatch.setitem(events.DERIVE, "PostToolUse", bug)
    else:
        module, name = where.split(".")
        monkeypatch.setattr({"executions": executions, "frames": frames}[module], name, bug)
    payload = fixture("PostToolUse.Edit", project)
    assert edit_in_process(project, payload) == (0, "", "")
    assert query(project, "SELECT tool_use_id FROM events") == [(payload["tool_use_id"],)]
    notes = query(project, "SELECT outcome, note FROM hook_events")
    assert len(notes) == 1 and notes[0][0] == "stored"
    assert "derived state failed" in notes[0][1] and "a bug of ours" in notes[0][1]
    assert "event kept alone" in log_file(project).read_text()
    assert count(project, "tool_calls") == 0 and count(project, "frames") == 0  # nothing derived


def test_a_bug_even_in_storing_the_event_alone_spools_it(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug of ours in what every event runs (the audit row's summary; a stand-in raises
    there) fails the fallback too: the event then goes to the spool with the reason, and is
    stored once the bug is gone (the next ingest). Before, it was lost."""
    from claude_session.core import event as event_module

    def bug(*args: object, **kwargs: object) -> str:
        raise KeyError("a bug of ours")

    with monkeypatch.context() as patched:
        patched.setattr(event_module.Event, "summary", bug)
        payload = fixture("PostToolUse.Edit", project)
        assert edit_in_process(project, payload) == (0, "", "")
        assert count(project, "events") == 0
        files = spooled(project)
        assert len(files) == 1
        envelope = read_envelope(files[0])
        assert "a bug of ours" in envelope["reason"]
        assert json.loads(envelope["payload"])["tool_use_id"] == payload["tool_use_id"]
    # the bug is fixed (the patch is gone, the test's state folder kept): the next ingest stores it
    ingest(project)
    assert query(project, "SELECT tool_use_id FROM events") == [(payload["tool_use_id"],)]
    assert spooled(project) == []
