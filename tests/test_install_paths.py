"""Every way a user installs claude-session records events: a wheel in a fresh venv, pipx,
`uv tool install`, and a clone with ./install.sh (the suite's own venv). Each install's
`claude-session install` writes commands that run code inside that install, through an
absolute interpreter, and a real payload fired through the written command exactly as Claude
Code fires it (`sh -c`, minimal PATH, CLAUDE_PROJECT_DIR) lands in the database."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

import apsw
import pytest
from conftest import PYTHON, ROOT, WheelInstall, fixture
from test_e2e_claude import claude_binary

from claude_session.core import db, mcp_hook_input
from claude_session.services.setup import installer

BIN = Path(PYTHON).parent


def git_project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    return project


def install_and_fire(cli: str, project: Path, site_marker: str) -> None:
    """`cli install` in `project`, then a recorded payload through the written command."""
    done = subprocess.run(
        [cli, "--project", str(project), "install"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "checked: a SessionStart sent through the written command was recorded" in done.stdout
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    command = settings["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
    argv = shlex.split(command.split(";")[0])
    assert os.path.isabs(argv[0]) and argv[1:3] == ["-I", "-S"]
    assert site_marker in argv[3] and argv[3].endswith("claude_session/hook.py")
    assert os.path.isfile(argv[3]), "the command runs code that exists inside this install"
    payload = fixture("PostToolUse.Bash", project)
    run = subprocess.run(
        ["/bin/sh", "-c", command],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(project), "CLAUDE_PROJECT_DIR": str(project)}
        | {"CLAUDE_SESSION_NO_DAEMON": "1", "CLAUDE_SESSION_STATE_DIR": str(project / "state")},
        cwd=project,
        timeout=60,
    )
    assert run.returncode == 0 and run.stdout == b"", run.stderr
    conn = apsw.Connection(str(project / ".claude-session.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = conn.execute(
            "SELECT tool_use_id FROM events WHERE hook_event_name = 'PostToolUse'"
        ).fetchall()
        version = conn.execute("PRAGMA user_version").fetchall()[0][0]
    finally:
        conn.close()
    assert rows == [(payload["tool_use_id"],)]
    assert version == db.SCHEMA_VERSION  # the schema.sql the wheel carries
    serve_and_fire(cli, project, site_marker)


def serve_and_fire(cli: str, project: Path, site_marker: str) -> None:
    """The same install with the mcp_tool transport, registered with the real claude: the
    MCP hook server it registered, started as Claude Code starts it (the command from
    ~/.claude.json, a minimal environment), records a payload sent as an mcp_tool hook."""
    home = project.parent / f"home-{project.name}"
    home.mkdir(exist_ok=True)
    env = dict(os.environ, HOME=str(home))
    claude = str(claude_binary())
    done = subprocess.run(
        [cli, "--project", str(project), "install", "--transport", "mcp", "--claude", claude],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "registered the MCP hook server claude-session-hooks (local scope)" in done.stdout
    config = json.loads((home / ".claude.json").read_text())
    entry = config["projects"][str(project)]["mcpServers"]["claude-session-hooks"]
    argv = [entry["command"], *entry["args"]]
    assert os.path.isabs(argv[0]) and argv[1:3] == ["-I", "-S"]
    assert site_marker in argv[3] and argv[3].endswith("claude_session/mcp_hook_server.py")
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    handler = settings["hooks"]["PreToolUse"][0]["hooks"][0]
    assert handler["type"] == "mcp_tool" and handler["server"] == "claude-session-hooks"
    payload = fixture("PreToolUse.Bash", project) | {"tool_use_id": "toolu_served_by_mcp"}
    arguments = mcp_hook_input.arguments_for(payload, handler["input"]["claude_session_install"])
    calls = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "x"}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
        | {"params": {"name": handler["tool"], "arguments": arguments}},
    ]
    served = subprocess.run(
        argv,
        input="".join(json.dumps(c) + "\n" for c in calls).encode(),
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(home), "CLAUDE_PROJECT_DIR": str(project)}
        | {"CLAUDE_SESSION_NO_DAEMON": "1", "CLAUDE_SESSION_STATE_DIR": str(project / "state")},
        cwd=project,
        timeout=60,
    )
    answers = [json.loads(line) for line in served.stdout.splitlines()]
    assert served.returncode == 0 and [a["id"] for a in answers] == [1, 2], served.stderr
    assert "isError" not in answers[1]["result"], answers[1]
    conn = apsw.Connection(str(project / ".claude-session.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        found = conn.execute(
            "SELECT h.transport FROM events e JOIN hook_events h ON h.event_id = e.id"
            " WHERE e.tool_use_id = 'toolu_served_by_mcp'"
        ).fetchall()
    finally:
        conn.close()
    assert found == [("mcp",)]


def test_the_wheel_carries_the_entry_the_schema_and_its_types(wheel_install: WheelInstall) -> None:
    names = set(zipfile.ZipFile(wheel_install.wheel).namelist())
    assert "claude_session/py.typed" in names  # users' type checkers read the package's types
    assert "claude_session/__init__.pyi" in names
    assert "claude_session/hook.py" in names
    assert "claude_session/core/schema.sql" in names
    assert any(n.startswith("claude_session/core/migrations/0006") for n in names)
    shipped = zipfile.ZipFile(wheel_install.wheel).read("claude_session/core/schema.sql")
    assert shipped == (ROOT / "schema.sql").read_bytes()  # the top-level one, unchanged


def test_a_users_type_checker_reads_the_installed_types(
    wheel_install: WheelInstall, tmp_path: Path
) -> None:
    """mypy run on a user's script against the wheel's venv: the library's types are read
    (a wrong use is an error naming them), so the package is typed as installed."""
    script = tmp_path / "uses_it.py"
    script.write_text(
        "from claude_session import MemoryAdded, NotFound, Project\n"
        "with Project('.') as project:\n"
        "    added: MemoryAdded = project.add_memory('x')\n"
        "    wrong: int = project.sessions()\n"
        "    assert issubclass(NotFound, Exception)\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
         "--python-executable", wheel_install.python, str(script)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    said = done.stdout + done.stderr
    assert "py.typed" not in said and "import-untyped" not in said, said
    assert done.returncode == 1 and "uses_it.py:4: error: Incompatible types" in said, said
    assert "list[Session]" in said, said
    assert said.count("error:") == 1, said


def test_a_wheel_in_a_fresh_venv_records(wheel_install: WheelInstall, tmp_path: Path) -> None:
    install_and_fire(wheel_install.cli, git_project(tmp_path), str(wheel_install.venv))


def test_pipx_install_records(wheel_install: WheelInstall, tmp_path: Path) -> None:
    home = tmp_path / "pipx"
    env = dict(os.environ, PIPX_HOME=str(home), PIPX_BIN_DIR=str(home / "bin"))
    env["PIPX_MAN_DIR"] = str(home / "man")
    done = subprocess.run(
        [str(BIN / "pipx"), "install", str(wheel_install.wheel)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    install_and_fire(str(home / "bin" / "claude-session"), git_project(tmp_path), str(home))


def test_uv_tool_install_records(wheel_install: WheelInstall, tmp_path: Path) -> None:
    tools = tmp_path / "uv"
    env = dict(os.environ, UV_TOOL_DIR=str(tools / "tools"), UV_TOOL_BIN_DIR=str(tools / "bin"))
    env |= {"UV_CACHE_DIR": str(tools / "cache"), "UV_PYTHON": sys.executable}
    done = subprocess.run(
        [str(BIN / "uv"), "tool", "install", str(wheel_install.wheel)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    install_and_fire(str(tools / "bin" / "claude-session"), git_project(tmp_path), str(tools))


def test_a_clone_with_install_sh_records(tmp_path: Path) -> None:
    """This suite runs from a clone set up by ./install.sh: its venv is that install."""
    install_and_fire(str(BIN / "claude-session"), git_project(tmp_path), str(ROOT))


def test_install_refuses_a_command_that_would_record_nothing(tmp_path: Path) -> None:
    """The CLI started by an interpreter whose hook process cannot import apsw (here: the
    system python with the package on PYTHONPATH): the hook would exit 0 and record nothing,
    so install writes nothing and says why."""
    system = "/usr/bin/python3"
    if not os.path.exists(system):
        pytest.fail("this check needs a second interpreter at /usr/bin/python3")
    project = git_project(tmp_path)
    site = next(Path(sys.prefix).glob("lib/python3*/site-packages"))
    done = subprocess.run(
        [
            system,
            "-c",
            "from claude_session.cli import main; main()",
            "--project",
            str(project),
            "install",
        ],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": f"{ROOT}:{site}"},
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "not installed, nothing written" in done.stderr
    assert not (project / ".claude" / "settings.json").exists()


def test_install_refuses_a_missing_entry(tmp_path: Path) -> None:
    command = installer.hook_command(
        "SessionStart", entry=tmp_path / "gone" / "claude_session" / "hook.py"
    )
    probe = installer.probe(command)
    assert not probe.ok and "nothing recorded" in str(probe.problem)
