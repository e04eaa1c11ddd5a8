"""What `install` writes names what the runtime has: every command hook runs this install's
interpreter with the flags and the hook entry of the package, for an event the runtime knows,
behind the guard that turns the runtime's block status into Claude Code's; every mcp_tool hook
calls the tool the MCP hook server answers to, on the server `install` registers; every timeout
written leaves the runtime's own deadline room; the modules named after `-m` import. The
constants both sides use are defined once, in core/hook_contract.py."""

from __future__ import annotations

import importlib.util
import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

from conftest import PYTHON, fixture, run_cli
from test_mcp_hook_server import Server, filled, start_session

import claude_session
from claude_session.core import hook_contract
from claude_session.core.events import EVENTS
from claude_session.runtime import handlers, hookrt, mcp_transport, relay
from claude_session.services.setup import installer, mcp_install, plugin, statusline_setup

PACKAGE = Path(claude_session.__file__).resolve().parent


def written(path: Path) -> dict[str, list[dict[str, Any]]]:
    settings = json.loads(path.read_text())
    return {
        event: [handler for group in groups for handler in group["hooks"]]
        for event, groups in settings.get("hooks", {}).items()
    }


def words(command: str) -> list[str]:
    """A shell command's words, `;` a word of its own, the trailing comment dropped."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";|")
    lexer.whitespace_split = True
    return list(lexer)


def runtime_deadline(event: str) -> float:
    return relay.ANSWER_SECONDS.get(event, relay.DEFAULT_ANSWER_SECONDS)


def check_command(event: str, handler: dict[str, Any], python: str, entry: Path) -> None:
    assert handler["type"] == "command"
    argv = words(handler["command"])
    run, guard = argv[: argv.index(";")], argv[argv.index(";") + 1 :]
    assert run == [python, *hook_contract.INTERPRETER_FLAGS, str(entry), event], run
    assert event in EVENTS and event not in installer.SKIPPED_EVENTS
    # the runtime's block status, and only it, becomes Claude Code's
    assert hookrt.BLOCK_EXIT == hook_contract.BLOCK_EXIT != hook_contract.CLAUDE_BLOCK_EXIT
    assert guard == ["[", "$?", "-ne", str(hookrt.BLOCK_EXIT), "]", "||", "exit", "2"], guard
    assert handler["command"].endswith(installer.MARKER)
    assert handler["timeout"] > runtime_deadline(event), (event, handler["timeout"])


def test_a_command_install_names_the_runtime(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = run_cli(project, "install", "--transport", "command", HOME=str(home))
    assert done.returncode == 0, done.stderr
    found = written(project / ".claude" / "settings.local.json")
    assert set(found) == set(installer.installed_events())
    # every event the runtime handles on its own is one a hook is installed for
    assert set(handlers.HANDLERS) <= set(found)
    for event, ours in found.items():
        assert len(ours) == 1
        check_command(event, ours[0], PYTHON, PACKAGE / hook_contract.HOOK_ENTRY)
    assert (PACKAGE / hook_contract.HOOK_ENTRY).is_file()


def test_the_guard_turns_only_the_runtimes_block_into_claude_codes() -> None:
    for status, expected in ((hookrt.BLOCK_EXIT, 2), (0, 0), (1, 0), (2, 0)):
        done = subprocess.run(["sh", "-c", f"(exit {status}); {installer.block_guard()}"])
        assert done.returncode == expected, status


def test_the_installed_command_runs_the_hook(project: Path, tmp_path: Path) -> None:
    command = installer.our_handlers(PYTHON)["PostToolUse"]["command"]
    payload = json.dumps(fixture("PostToolUse.Edit", project)).encode()
    done = subprocess.run(
        ["sh", "-c", command],
        input=payload,
        capture_output=True,
        env={
            "PATH": "/usr/bin:/bin",
            "CLAUDE_PROJECT_DIR": str(project),
            "CLAUDE_SESSION_STATE_DIR": str(tmp_path / "state"),
            "CLAUDE_SESSION_NO_DAEMON": "1",
        },
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert (project / ".claude-session.db").exists()


def test_an_mcp_install_calls_the_tool_the_hook_server_answers(
    project: Path, tmp_path: Path
) -> None:
    path = tmp_path / "settings.local.json"
    installer.write_settings(path, installer.with_ours({}, PYTHON, transport="mcp"))
    found = written(path)
    assert set(found) == set(installer.installed_events())
    tools = {h["tool"] for ours in found.values() for h in ours if h["type"] == "mcp_tool"}
    servers = {h["server"] for ours in found.values() for h in ours if h["type"] == "mcp_tool"}
    assert tools == {mcp_transport.HOOK_TOOL} and servers == {mcp_transport.NAME}
    argv = installer.mcp_hook_server_argv(PYTHON)
    assert argv[1:3] == list(hook_contract.INTERPRETER_FLAGS)
    assert Path(argv[3]) == PACKAGE / hook_contract.MCP_HOOK_ENTRY and Path(argv[3]).is_file()
    for event, ours in found.items():
        handler = ours[0]
        if handler["type"] == "command":
            assert event not in installer.MCP_EVENTS
            check_command(event, handler, PYTHON, PACKAGE / hook_contract.HOOK_ENTRY)
        else:
            assert event in installer.MCP_EVENTS
            assert handler["timeout"] == installer.TIMEOUTS.get(event, installer.DEFAULT_TIMEOUT)
    start_session(project)
    with Server(project, argv=argv) as server:
        assert server.initialize()["serverInfo"]["name"] == found["PostToolUse"][0]["server"]
        handler = found["PostToolUse"][0]
        arguments = filled(fixture("PostToolUse.Edit", project), installer.package_folder())
        assert set(arguments) == set(handler["input"])
        answer = server.request("tools/call", {"name": handler["tool"], "arguments": arguments})
        assert answer["result"].get("isError") is not True, answer


def test_the_plugin_names_the_runtime() -> None:
    hooks = plugin.hooks_json()["hooks"]
    assert set(hooks) == set(installer.installed_events())
    for event, groups in hooks.items():
        (handler,) = [h for group in groups for h in group["hooks"]]
        check_command(event, handler, PYTHON, PACKAGE / hook_contract.HOOK_ENTRY)
    # the clone as a plugin folder: its paths below CLAUDE_PLUGIN_ROOT are this checkout's
    root = str(PACKAGE.parent)
    clone = plugin.clone_command("Stop").replace("${CLAUDE_PLUGIN_ROOT}", root)
    python = plugin.CLONE_PYTHON.replace("${CLAUDE_PLUGIN_ROOT}", root)
    check_command(
        "Stop", {"type": "command", "command": clone, "timeout": 999}, python, PACKAGE / "hook.py"
    )


def test_the_other_entries_install_writes_exist() -> None:
    status = statusline_setup.argv(PYTHON)
    assert status[1:3] == list(hook_contract.INTERPRETER_FLAGS)
    assert Path(status[3]) == PACKAGE / hook_contract.STATUSLINE_ENTRY and Path(status[3]).is_file()
    memory = mcp_install.server_argv(PYTHON)
    module = memory[memory.index("-m") + 1]
    assert importlib.util.find_spec(module) is not None, module
    assert mcp_install.NAME == hook_contract.MCP_SERVER


def test_the_runtimes_deadlines_stay_under_the_timeouts_written() -> None:
    from claude_session.core.config import DEFAULTS
    from claude_session.services import gitstate

    for event in installer.installed_events():
        assert installer.TIMEOUTS.get(event, installer.DEFAULT_TIMEOUT) > runtime_deadline(event)
    for event in ("Stop", "SubagentStop", "TaskCompleted"):  # the judge's events wait for it
        assert installer.TIMEOUTS[event] > float(DEFAULTS["judge_timeout_seconds"])
    # PreCompact's git state runs inside the hook: within the relay's answer, so the timeout
    assert runtime_deadline("PreCompact") > gitstate.GIT_TIMEOUT_SECONDS
