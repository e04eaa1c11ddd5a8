"""The status line, run as Claude Code runs it: the installed `statusLine` command through
`sh -c` with a minimal PATH and the statusLine JSON on stdin, against projects recorded
through the real hooks; and `install --statusline` / `uninstall`, from the clone and from a
wheel in a fresh venv."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import apsw
import pytest
from conftest import PYTHON, WheelInstall, fixture, hook_env, log_file, query, run_hook

from claude_session.core import errors, readings, statusline
from claude_session.services.setup import installer, statusline_setup

CLI = str(Path(PYTHON).parent / "claude-session")
SESSION = "560819af-56fc-4528-be0a-32a24d1aa819"
OTHER = "11111111-2222-3333-4444-555555555555"
HOSTILE_TYPE = "\x1b]0;evil\x07\x1b[2J\x9b31m\u202eevil\r"
RAW = ["\x1b]0;", "\x1b[2J", "\x07", "\x9b", "\u202e", "\r"]
SGR = re.compile("\x1b\\[[0-9;]*m")
FAIL = "python3 -c 'import nonexistent_mod'"
_ids = iter(range(1, 10_000))


# -- building a project through the real hooks -------------------------------------------


def event(project: Path, name: str, session: str = SESSION, **changes: Any) -> dict[str, Any]:
    payload = fixture(name, project) | {"session_id": session}
    if "tool_use_id" in payload:
        payload["tool_use_id"] = f"toolu_sl{next(_ids)}"
    for key in ("agent_id", "agent_type"):
        payload.pop(key, None)
    return payload | changes


def start_session(project: Path, session: str = SESSION) -> None:
    run_hook("SessionStart", event(project, "SessionStart.startup", session), project)


def start_agent(project: Path, agent: str, kind: str = "general-purpose") -> None:
    launch = event(project, "PreToolUse.Agent")
    launch["tool_input"] |= {"subagent_type": kind, "description": f"work of {agent}"}
    run_hook("PreToolUse", launch, project)
    start = event(project, "SubagentStart", agent_id=agent, agent_type=kind)
    run_hook("SubagentStart", start, project)


def edit(project: Path, agent: str, path: str, kind: str = "general-purpose") -> None:
    for name in ("PreToolUse.Edit", "PostToolUse.Edit"):
        payload = event(project, name, agent_id=agent, agent_type=kind)
        payload["tool_input"]["file_path"] = str(project / path)
        run_hook(name.split(".")[0], payload, project)


def fail(project: Path, session: str = SESSION) -> None:
    run_hook("PostToolUseFailure", event(project, "PostToolUseFailure.Bash", session), project)


def stop_agent(project: Path, agent: str) -> None:
    stop = event(project, "SubagentStop", agent_id=agent, agent_type="general-purpose")
    run_hook("SubagentStop", stop, project)


@pytest.fixture
def busy(project: Path) -> Path:
    """A session with two subagents editing one file and a command failing three times."""
    start_session(project)
    start_agent(project, "a1")
    start_agent(project, "a2")
    edit(project, "a1", "src/shared.py")
    edit(project, "a2", "src/shared.py")
    edit(project, "a1", "src/only_a1.py")
    for _ in range(3):
        fail(project)
    return project


# -- running the status line as Claude Code does -------------------------------------------


def sample(
    project: Path | None, session: str | None = SESSION, cost: float | None = None, **extra: Any
) -> dict[str, Any]:
    """The statusLine input, as Claude Code 2.1.330 sends it (every field optional). Its
    `cost` only when given: the line then starts with it (tests/test_cost_surfaces.py), and
    the other parts are what these tests look at."""
    data: dict[str, Any] = {
        "transcript_path": "/home/dev/.claude/projects/x/s.jsonl",
        "model": {"id": "claude-opus-4-6", "display_name": "Opus"},
        "version": "2.1.330",
        "output_style": {"name": "default"},
        "context_window": {"used_percentage": 12},
        "exceeds_200k_tokens": False,
    }
    if cost is not None:
        data["cost"] = {"total_cost_usd": cost, "total_duration_ms": 4000}
    if session is not None:
        data["session_id"] = session
    if project is not None:
        data["cwd"] = str(project)
        data["workspace"] = {"current_dir": str(project), "project_dir": str(project)}
    return data | extra


def status_env(**extra: str) -> dict[str, str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": os.environ.get("HOME", "/tmp"),
        "CLAUDE_SESSION_STATE_DIR": os.environ["CLAUDE_SESSION_STATE_DIR"],
        "NO_COLOR": "1",
    }
    return env | extra


def show(
    data: dict[str, Any] | bytes | None,
    *,
    command: str | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> str:
    """stdout of the status-line command run through `sh -c`; it must exit 0."""
    raw = json.dumps(data).encode() if isinstance(data, dict) else data or b""
    done = subprocess.run(
        ["/bin/sh", "-c", command or statusline_setup.command(PYTHON)],
        input=raw,
        capture_output=True,
        env=env or status_env(),
        cwd=cwd or "/",
        timeout=30,  # a hang guard, not a speed target (that lives in bench/bench.py)
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.decode("utf-8", "replace")


# -- what it says ----------------------------------------------------------------------


def test_agents_contested_files_and_open_errors_of_the_session(busy: Path) -> None:
    # 80 characters leave no room for the details (types, the file's name) beside all three
    assert show(sample(busy)) == (
        "cs: 3 agents running · 1 contested file · 1 open error (ladder 3/4)\n"
    )
    # Claude Code's own cost figure in the input comes first, and the line still fits
    assert show(sample(busy, cost=1.2449)) == (
        "cs: $1.24 · 3 agents running · 1 contested file · 1 open error (ladder 3/4)\n"
    )
    # what it counted is what the database holds
    conn = apsw.Connection(str(busy / ".claude-session.db"), flags=apsw.SQLITE_OPEN_READONLY)
    conn.setbusytimeout(5000)  # a capture process may be writing its snapshot's row
    running = conn.execute(
        "SELECT count(*) FROM agent_registry WHERE session_id = ? AND status = 'running'",
        (SESSION,),
    ).fetchall()
    attempts = conn.execute("SELECT attempt_number FROM error_log ORDER BY id").fetchall()
    assert running == [(3,)] and attempts == [(1,), (2,), (3,)]


def test_the_line_follows_the_session_as_it_goes_on(busy: Path) -> None:
    stop_agent(busy, "a1")  # its claims are released: nobody contests src/shared.py any more
    assert show(sample(busy)) == (
        "cs: 2 agents running (general-purpose) · 1 open error (ladder 3/4)\n"
    )
    fixed = event(busy, "PostToolUse.Bash")
    fixed["tool_input"]["command"] = FAIL  # the same command, now passing: auto_fixed
    run_hook("PostToolUse", fixed, busy)
    assert show(sample(busy)) == "cs: 2 agents running (general-purpose)\n"
    stop_agent(busy, "a2")
    assert show(sample(busy)) == "cs: 1 agent running\n"
    run_hook("SessionEnd", event(busy, "SessionEnd"), busy)
    assert show(sample(busy)) == "cs: idle\n"


def test_another_session_and_the_whole_project(busy: Path) -> None:
    start_session(busy, OTHER)
    fail(busy, OTHER)
    assert show(sample(busy, OTHER)) == "cs: 1 agent running · 1 open error (ladder 1/4)\n"
    assert show(sample(busy, "unknown-session")) == "cs: idle\n"
    assert show(sample(busy, None)) == (
        "cs: 4 agents running · 1 contested file · 2 open errors (ladder 3/4)\n"
    )


def test_colours_are_plain_sgr_and_no_color_turns_them_off(busy: Path) -> None:
    coloured = show(sample(busy), env={k: v for k, v in status_env().items() if k != "NO_COLOR"})
    assert "\x1b[33m1 contested file\x1b[0m" in coloured
    assert "\x1b[31m1 open error (ladder 3/4)\x1b[0m" in coloured  # research step: red
    assert SGR.sub("", coloured) == show(sample(busy))
    assert "\x1b" not in show(sample(busy), env=status_env(NO_COLOR="1"))


def test_the_project_is_found_from_cwd_the_environment_or_the_current_folder(
    busy: Path,
) -> None:
    deep = busy / "src" / "pkg"
    deep.mkdir(parents=True)
    expected = show(sample(busy))
    # workspace.project_dir wins over cwd; both are walked up from
    other = busy.parent / "elsewhere"
    other.mkdir()
    both = sample(deep) | {"cwd": str(other)}
    assert show(both) == expected
    assert show({"session_id": SESSION, "cwd": str(deep)}) == expected
    env = status_env(CLAUDE_PROJECT_DIR=str(deep))
    assert show({"session_id": SESSION}, env=env) == expected
    assert show({"session_id": SESSION}, cwd=deep) == expected
    # no input at all: the current folder, the whole project
    assert show(b"", cwd=deep).startswith("cs: 3 agents running")


def test_bad_input_falls_back_and_exits_0(busy: Path) -> None:
    project_wide = show(sample(busy, None))
    for raw in (
        b"",
        b"   \n",
        b"not json",
        b'{"session_id": ',
        b"[1, 2, 3]",
        b'"a string"',
        b'{"workspace": {"project_dir": 42}, "cwd": ["x"], "session_id": {"a": 1}}',
        b"\xff\xfe{\x00}",
        b"[" * 100_000 + b"]" * 100_000,
        b'{"cwd": "' + b"x" * (2 * 1024 * 1024) + b'"}',  # over the size cap
    ):
        assert show(raw, cwd=busy) == project_wide, raw[:40]
    assert show(b"garbage", cwd=busy.parent) == ""  # and nothing where there is no database


def test_stdin_left_open_is_given_up_on(busy: Path) -> None:
    proc = subprocess.Popen(
        ["/bin/sh", "-c", statusline_setup.command(PYTHON)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=status_env(CLAUDE_PROJECT_DIR=str(busy)),
        cwd="/",
    )
    try:
        out, err = proc.communicate(timeout=30)  # stdin is a pipe nobody writes nor closes
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert out.decode() == show(sample(busy, None))


def test_no_database_prints_nothing_and_creates_nothing(tmp_path: Path) -> None:
    empty = tmp_path / "no-db"
    (empty / "sub").mkdir(parents=True)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    env = status_env(CLAUDE_PROJECT_DIR=str(empty))
    assert show(sample(empty / "sub"), env=env, cwd=empty) == ""
    assert show(sample(tmp_path / "missing" / "dir"), env=env, cwd=empty) == ""
    assert show(b"", env=env, cwd=empty) == ""
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert not list(tmp_path.rglob(".claude-session.db*"))


def test_a_database_it_cannot_read_is_a_question_mark_and_left_untouched(
    tmp_path: Path,
) -> None:
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / ".claude-session.db").write_bytes(b"not a database" * 100)
    assert show(sample(garbage)) == "cs: ?\n"
    assert (garbage / ".claude-session.db").read_bytes() == b"not a database" * 100
    newer = tmp_path / "newer"
    newer.mkdir()
    start_session(newer)
    conn = apsw.Connection(str(newer / ".claude-session.db"))
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    assert show(sample(newer)) == "cs: ?\n"
    assert (
        apsw.Connection(str(newer / ".claude-session.db")).execute("PRAGMA user_version").fetchall()
        == [(999,)]  # never migrated, never written
    )
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / ".claude-session.db").symlink_to(newer / ".claude-session.db")
    assert show(sample(linked)) == "cs: ?\n"  # a planted link is not followed


def test_a_writer_holding_the_database_does_not_stop_it(busy: Path) -> None:
    expected = show(sample(busy))
    writer = apsw.Connection(str(busy / ".claude-session.db"))
    writer.setbusytimeout(5000)  # a capture process may be writing its snapshot's row
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("UPDATE project_state SET value = value")
    try:
        assert show(sample(busy)) == expected  # WAL: readers are not kept waiting
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_a_rollback_journal_database_locked_exclusively_gives_a_blank_line(
    project: Path,
) -> None:
    """On a network file system the database has a rollback journal, where a writer's
    exclusive lock does keep readers out: past the busy timeout the line is blank this time,
    the exit status 0, and nothing is logged as an error of ours."""
    payload = event(project, "SessionStart.startup")
    run_hook("SessionStart", payload, project, env={"CLAUDE_SESSION_FS_TYPE": "nfs"})
    writer = apsw.Connection(str(project / ".claude-session.db"))
    writer.setbusytimeout(5000)  # a capture process may be writing its snapshot's row
    assert writer.execute("PRAGMA journal_mode").fetchall() == [("delete",)]
    assert show(sample(project)) == "cs: 1 agent running\n"
    writer.execute("BEGIN EXCLUSIVE")
    writer.execute("UPDATE project_state SET value = value")
    try:
        assert show(sample(project)) == ""
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    log = log_file(project)
    assert not log.exists() or " ERROR [" not in log.read_text()
    assert show(sample(project)) == "cs: 1 agent running\n"


def test_hostile_recorded_text_is_never_printed_raw(project: Path) -> None:
    start_session(project)
    start_agent(project, "h1", HOSTILE_TYPE)
    start_agent(project, "h2", "Explore")
    hostile_path = "src/\x1b]8;;https://evil.example\x07a\x1b[2J.py"
    edit(project, "h1", hostile_path, HOSTILE_TYPE)
    recorded = query(project, "SELECT agent_type FROM agent_registry WHERE id = 'h1'")
    assert recorded == [(HOSTILE_TYPE,)]  # it is in the database as it came
    types = show(sample(project))
    assert types.startswith("cs: 3 agents running (\\x1b]0;evil\\x07")  # shown escaped
    edit(project, "h2", hostile_path, "Explore")  # now contested: the path is shown
    path = show(sample(project))
    assert "1 contested file (" in path and "evil.example\\x07a\\x1b[2J.py)" in path
    env = {k: v for k, v in status_env().items() if k != "NO_COLOR"}
    for line in (types, path, show(sample(project), env=env)):
        plain = SGR.sub("", line)
        for raw in [*RAW, "\x1b]8;;"]:
            assert raw not in plain, (raw, line)
        assert "\x1b" not in plain and len(plain.rstrip("\n")) <= statusline.WIDTH


# -- the line itself ---------------------------------------------------------------------


def test_the_line_keeps_to_80_characters_dropping_details_first() -> None:
    many = [(f"a-very-long-subagent-type-{i}", 2) for i in range(5)]
    path = "src/" + "deep/" * 20 + "name.py"
    line = statusline.render(statusline.Status(11, many, [path], 2, 2))
    assert line == "cs: 11 agents running · 1 contested file · 2 open errors (ladder 2/4)"
    # the contested file's name outlives the agents' types, and keeps its end
    line = statusline.render(statusline.Status(3, many, [path], 0, 0))
    assert line.startswith("cs: 3 agents running · 1 contested file (…eep/")
    assert line.endswith("/deep/name.py)") and len(line) <= statusline.WIDTH
    line = statusline.render(statusline.Status(3, [("general-purpose", 2)], [path], 0, 0))
    assert line == "cs: 3 agents running · 1 contested file (…eep/deep/deep/deep/deep/name.py)"
    both = statusline.render(statusline.Status(3, [("general-purpose", 2)], ["src/a.py"], 0, 0))
    assert both == "cs: 3 agents running (general-purpose ×2) · 1 contested file (src/a.py)"
    short = statusline.render(statusline.Status(2, [("Explore", 1)], [], 0, 0))
    assert short == "cs: 2 agents running (Explore)"
    assert statusline.render(statusline.Status(0, [], [], 0, 0)) == "cs: idle"
    past_top = statusline.render(statusline.Status(1, [], ["a", "b"], 1, 6))
    assert past_top == "cs: 1 agent running · 2 contested files · 1 open error (ladder 4/4+)"
    huge = statusline.render(statusline.Status(10**70, many, [path] * 3, 10**70, 5))
    assert len(huge) <= statusline.WIDTH and huge.endswith("…")


def test_the_copied_ladder_constants_are_still_the_ladders() -> None:
    assert statusline.OPEN == readings.OPEN
    assert statusline.USER_AT == errors.USER_AT
    assert statusline.RESEARCH_AT == errors.RESEARCH_AT


def test_the_entry_imports_only_the_standard_library_and_apsw(busy: Path) -> None:
    argv = shlex.split(statusline_setup.command(PYTHON).rsplit("#", 1)[0])
    done = subprocess.run(
        [argv[0], "-I", "-S", "-X", "importtime", *argv[3:]],
        input=json.dumps(sample(busy)).encode(),
        capture_output=True,
        env=status_env(),
        timeout=30,
    )
    assert done.returncode == 0 and done.stdout.startswith(b"cs: 3 agents running")
    modules = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.decode().splitlines()
        if line.startswith("import time:") and "imported package" not in line
    }
    assert "claude_session.core.statusline" in modules
    third_party = {
        m
        for m in modules
        if m.split(".")[0] not in sys.stdlib_module_names and m.split(".")[0] != "claude_session"
    }
    assert third_party == {"apsw"}
    costly = {"json", "typing", "re", "subprocess", "dataclasses", "hashlib", "enum", "signal"}
    costly |= {"collections", "click", "rich", "pydantic", "claude_session.services"}
    assert not modules & costly, sorted(modules & costly)
    assert not {
        m for m in modules if m.startswith(("claude_session.services", "claude_session.cli"))
    }


def test_the_cli_command_says_the_same_and_json_for_scripts(busy: Path) -> None:
    data = json.dumps(sample(busy)).encode()
    line = subprocess.run(
        [CLI, "statusline"], input=data, capture_output=True, timeout=60, env=status_env()
    )
    assert line.returncode == 0 and line.stdout.decode() == show(sample(busy))
    done = subprocess.run(
        [CLI, "--project", str(busy), "statusline", "--format", "json", "--session", SESSION],
        input=b"",
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["agents_running"] == 3 and found["contested_files"] == ["src/shared.py"]
    assert found["subagent_types"] == [{"type": "general-purpose", "running": 2}]
    assert found["open_errors"] == 1 and found["top_ladder_step"] == 3
    assert found["database"] == str(busy / ".claude-session.db") and found["problem"] is None
    nothing = subprocess.run(
        [CLI, "--project", str(busy.parent), "statusline"], capture_output=True, timeout=60
    )
    assert nothing.returncode == 0 and nothing.stdout == b""
    assert not (busy.parent / ".claude-session.db").exists()


# -- install --statusline / uninstall -------------------------------------------------------


def cli(
    *args: str, home: Path, project: Path, check: bool = True
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ) | {"HOME": str(home)}
    done = subprocess.run(
        [CLI, "--project", str(project), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


def written(settings: Path) -> dict[str, Any]:
    value = json.loads(settings.read_text())
    assert isinstance(value, dict)
    return value


def test_install_writes_a_status_line_that_shows_the_project(busy: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = cli("install", "--statusline", "--scope", "user", home=home, project=busy)
    assert "checked: for a scratch project the written command printed 'cs: 1 agent running'" in (
        done.stdout
    )
    settings = home / ".claude" / "settings.json"
    line = written(settings)["statusLine"]
    assert line == {"type": "command", "command": statusline_setup.command(), "padding": 0}
    assert line["command"].endswith("claude_session/statusline.py # claude-session")
    assert not (busy / ".claude" / "settings.json").exists()  # user scope only
    assert show(sample(busy), command=line["command"]).startswith("cs: 3 agents running")
    again = cli("install", "--statusline", "--scope", "user", home=home, project=busy)
    assert "already this one" in again.stdout


def test_install_refuses_a_foreign_status_line_unless_forced(
    busy: Path, tmp_path: Path, isolated_state: Path
) -> None:
    home = tmp_path / "home"
    settings = busy / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    theirs = '{"model": "x", "statusLine": {"type": "command", "command": "~/my-line.sh"}}\n'
    settings.write_text(theirs)
    refused = cli(
        "install", "--statusline", "--scope", "local", home=home, project=busy, check=False
    )
    assert refused.returncode != 0
    assert "already has a status line" in refused.stderr and "~/my-line.sh" in refused.stderr
    assert "--force" in refused.stderr
    assert settings.read_text() == theirs  # unchanged, byte for byte
    dry = cli(
        "install",
        "--statusline",
        "--scope",
        "local",
        "--dry-run",
        home=home,
        project=busy,
        check=False,
    )
    assert dry.returncode != 0 and settings.read_text() == theirs
    forced = cli("install", "--statusline", "--scope", "local", "--force", home=home, project=busy)
    assert "replaced the status line" in forced.stdout
    data = written(settings)
    assert data["model"] == "x" and statusline_setup.is_ours(data["statusLine"])
    backups = list((isolated_state / "backups").glob("*settings.local.json*"))
    assert [b.read_text() for b in backups] == [theirs]  # the old one is kept


def test_install_replaces_our_own_status_line_of_another_install(
    busy: Path, tmp_path: Path
) -> None:
    settings = busy / ".claude" / "settings.local.json"  # a project install's file
    settings.parent.mkdir()
    old = statusline_setup.command(
        "/old/venv/bin/python", Path("/old/claude_session/statusline.py")
    )
    settings.write_text(json.dumps({"statusLine": {"type": "command", "command": old}}))
    cli("install", "--statusline", home=tmp_path, project=busy)
    assert written(settings)["statusLine"]["command"] == statusline_setup.command()


def test_uninstall_removes_only_our_status_line(busy: Path, tmp_path: Path) -> None:
    settings = busy / ".claude" / "settings.local.json"  # a project install's file
    cli("install", home=tmp_path, project=busy)  # the hooks
    cli("install", "--statusline", home=tmp_path, project=busy)
    data = written(settings)
    data["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "echo theirs"}]})
    settings.write_text(json.dumps(data))
    cli("uninstall", "--statusline", home=tmp_path, project=busy)
    after = written(settings)
    assert "statusLine" not in after and after["hooks"] == data["hooks"]  # hooks stay
    cli("install", "--statusline", home=tmp_path, project=busy)
    cli("uninstall", home=tmp_path, project=busy)  # ours, all of it: hooks and status line
    assert written(settings) == {
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo theirs"}]}]}
    }
    theirs = {"statusLine": {"type": "command", "command": "my-line.sh"}}
    settings.write_text(json.dumps(theirs))
    done = cli("uninstall", "--statusline", home=tmp_path, project=busy)
    assert "nothing to do" in done.stdout and written(settings) == theirs


def test_statusline_and_plugin_are_separate_installs(project: Path, tmp_path: Path) -> None:
    done = cli("install", "--statusline", "--plugin", home=tmp_path, project=project, check=False)
    assert done.returncode == 2 and "separate installs" in done.stderr
    forced = cli("install", "--force", home=tmp_path, project=project, check=False)
    assert forced.returncode == 2 and not (project / ".claude").exists()


def test_the_probe_catches_a_command_that_does_not_show_a_line() -> None:
    assert statusline_setup.probe(statusline_setup.command())[0].ok
    for broken in ("exit 1", "echo hello", "yes 'cs: x' | head", "/nonexistent/python -I -S x"):
        check, _ = statusline_setup.probe(broken)
        assert not check.ok and check.problem, broken


def test_a_wheel_in_a_fresh_venv_installs_a_working_status_line(
    wheel_install: WheelInstall, busy: Path, tmp_path: Path
) -> None:
    assert "claude_session/statusline.py" in zipfile.ZipFile(wheel_install.wheel).namelist()
    done = subprocess.run(
        [wheel_install.cli, "--project", str(busy), "install", "--statusline"],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ) | {"HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    command = written(busy / ".claude" / "settings.local.json")["statusLine"]["command"]
    argv = shlex.split(command.rsplit("#", 1)[0])
    assert argv[0].startswith(str(wheel_install.venv)) and argv[1:3] == ["-I", "-S"]
    assert argv[3].startswith(str(wheel_install.venv)) and os.path.isfile(argv[3])
    assert show(sample(busy), command=command) == (
        "cs: 3 agents running · 1 contested file · 1 open error (ladder 3/4)\n"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    assert show(sample(empty), command=command) == ""
    assert not (empty / ".claude-session.db").exists()


def test_claude_project_dir_alone_finds_the_project(project: Path) -> None:
    """The environment Claude Code gives its hooks (CLAUDE_PROJECT_DIR set) and no input give
    the same line as a statusLine input naming the project."""
    start_session(project)
    env = hook_env(project) | {"NO_COLOR": "1"}
    assert show(b"", env=env) == show(sample(project)) == "cs: 1 agent running\n"
    assert installer.hook_entry().parent / "statusline.py" == statusline_setup.entry()
