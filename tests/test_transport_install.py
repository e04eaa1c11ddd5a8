"""`install --transport`: the mcp_tool hooks and their MCP hook server registered with the real
Claude Code CLI (2.1.330, offline: `claude mcp add/remove/get` only write `$HOME/.claude.json`),
the fall back to command hooks said out loud when no `claude` can register it, nothing
written when `--transport mcp` cannot be had, the organization's policies read, and
`uninstall` taking the registration away with the hooks. All through the installed command,
in a git project of the test's own, with a home folder of its own."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, hook_env, run_cli
from test_e2e_claude import claude_binary

from claude_session.runtime import mcp_transport
from claude_session.services.setup import installer, mcp_install

SERVER = installer.MCP_HOOK_SERVER
NO_CLAUDE = "no `claude` command on PATH (or --claude) to register the MCP hook server with"


@pytest.fixture(scope="module")
def claude() -> Path:
    return claude_binary()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


@pytest.fixture
def repo(project: Path) -> Path:
    """The `project` fixture as a git work tree (named by its real path, as Claude Code
    keys its local scope)."""
    subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=60)
    return project.resolve()


def cli(project: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The installed command in the hooks' environment (PATH /usr/bin:/bin: no `claude`)."""
    assert not any((Path(d) / "claude").exists() for d in ("/usr/bin", "/bin"))
    return run_cli(project, *args, HOME=str(home), COLUMNS="1000")


def words(text: str) -> str:
    return " ".join(text.split())


def settings_file(project: Path) -> Path:
    return project / ".claude" / "settings.local.json"


def handlers(project: Path) -> dict[str, list[dict[str, Any]]]:
    """Every handler in the project's settings.local.json, by event."""
    settings = json.loads(settings_file(project).read_text())
    return {
        event: [handler for group in groups for handler in group["hooks"]]
        for event, groups in settings.get("hooks", {}).items()
    }


def registered(home: Path, project: Path) -> dict[str, Any] | None:
    """The MCP hook server's local-scope registration for `project` in $HOME/.claude.json."""
    path = home / ".claude.json"
    if not path.exists():
        return None
    state = json.loads(path.read_text())
    servers = state.get("projects", {}).get(str(project), {}).get("mcpServers", {})
    found = servers.get(SERVER)
    return found if isinstance(found, dict) else None


def claude_mcp(
    claude: Path, project: Path, home: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    """`claude mcp ARGS` as a user runs it in the project."""
    env = hook_env(project) | {"HOME": str(home), "DISABLE_AUTOUPDATER": "1"}
    return subprocess.run(
        [str(claude), "mcp", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def assert_all_commands(project: Path) -> None:
    found = handlers(project)
    assert set(found) == set(installer.installed_events())
    for event, ours in found.items():
        assert len(ours) == 1, event
        assert ours[0]["type"] == "command" and ours[0]["command"].endswith(installer.MARKER)
        assert f"hook.py {event};" in ours[0]["command"]


# --- 1. mcp: the hooks and the registration ---------------------------------------------------


def test_install_with_the_mcp_transport_writes_mcp_tool_hooks_and_registers_the_server(
    repo: Path, home: Path, claude: Path
) -> None:
    done = cli(repo, home, "install", "--transport", "mcp", "--claude", str(claude))
    assert done.returncode == 0, done.stdout + done.stderr
    said = words(done.stdout)
    argv = installer.mcp_hook_server_argv(PYTHON)
    assert f"registered the MCP hook server {SERVER} (local scope): {' '.join(argv)}" in said
    assert "checked: it answered initialize" in said
    carried = len(installer.MCP_EVENTS & set(installer.installed_events()))
    assert f"({carried} through the MCP hook server)" in said

    # the settings: mcp_tool hooks exactly for MCP_EVENTS, command hooks for the rest
    found = handlers(repo)
    assert set(found) == set(installer.installed_events())
    for event, ours in found.items():
        assert len(ours) == 1, event
        if event in installer.MCP_EVENTS:
            assert ours[0] == installer.mcp_handler(event)
            assert ours[0]["server"] == SERVER and ours[0]["tool"] == mcp_transport.HOOK_TOOL
            assert ours[0]["input"]["claude_session_install"] == installer.package_folder()
        else:
            assert ours[0]["type"] == "command", event
            assert ours[0]["command"] == installer.hook_command(event, PYTHON)
    assert {e for e, h in found.items() if h[0]["type"] == "mcp_tool"} == set(
        installer.MCP_EVENTS
    ) & set(installer.installed_events())
    assert installer.transport_of(json.loads(settings_file(repo).read_text())) == "mcp"

    # the registration, local scope: this project's entry in $HOME/.claude.json
    server = registered(home, repo)
    assert server is not None
    assert [server["command"], *server["args"]] == argv
    assert server.get("type", "stdio") == "stdio"
    # and Claude Code finds it there, starts it and connects
    got = claude_mcp(claude, repo, home, "get", SERVER)
    assert got.returncode == 0, got.stdout + got.stderr
    assert SERVER in got.stdout and "Local config" in got.stdout
    assert "mcp_hook_server.py" in got.stdout
    assert "Connected" in got.stdout, got.stdout
    # only in this project: another folder does not have it
    elsewhere = repo.parent / "elsewhere"
    elsewhere.mkdir()
    assert claude_mcp(claude, elsewhere, home, "get", SERVER).returncode != 0


# --- 2. no claude to register with --------------------------------------------------------------


def test_auto_without_claude_on_path_falls_back_to_commands_and_says_why(
    repo: Path, home: Path
) -> None:
    done = cli(repo, home, "install", "--transport", "auto")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"hooks as commands (a process per event): {NO_CLAUDE}" in words(done.stdout)
    assert "registered the MCP hook server" not in done.stdout
    assert_all_commands(repo)
    assert not (home / ".claude.json").exists()


def test_auto_with_a_claude_path_that_does_not_exist_falls_back_to_commands(
    repo: Path, home: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere" / "claude"
    done = cli(repo, home, "install", "--transport", "auto", "--claude", str(missing))
    assert done.returncode == 0, done.stdout + done.stderr
    said = words(done.stdout)
    assert "hooks as commands (a process per event):" in said
    assert str(missing) in said or NO_CLAUDE in said  # why: that claude cannot be run
    assert_all_commands(repo)
    assert not (home / ".claude.json").exists()


def test_auto_with_a_claude_that_fails_falls_back_to_commands(repo: Path, home: Path) -> None:
    done = cli(repo, home, "install", "--transport", "auto", "--claude", "/bin/false")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "hooks as commands (a process per event): claude mcp add failed" in words(done.stdout)
    assert_all_commands(repo)


@pytest.mark.parametrize("where", ["not on PATH", "a path that does not exist"])
def test_mcp_without_a_claude_is_an_error_and_writes_nothing(
    repo: Path, home: Path, tmp_path: Path, where: str
) -> None:
    args = ["install", "--transport", "mcp"]
    if where != "not on PATH":
        args += ["--claude", str(tmp_path / "nowhere" / "claude")]
    before = sorted(p.name for p in repo.iterdir())
    done = cli(repo, home, *args)
    assert done.returncode != 0, done.stdout
    assert "not installed, nothing written" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in repo.iterdir()) == before == [".git"]  # no .claude, .gitignore
    assert not (home / ".claude.json").exists()
    assert not (home / ".claude").exists()


# --- 3. the organization's policy -------------------------------------------------------------


def managed(tmp_path: Path, name: str, value: Any) -> Path:
    path = tmp_path / name / "managed-settings.json"
    path.parent.mkdir()
    path.write_text(value if isinstance(value, str) else json.dumps(value))
    return path


def test_policy_problem_reads_each_rule_of_the_managed_settings(tmp_path: Path) -> None:
    ours = {"serverName": SERVER}
    other = {"serverName": "github"}
    absent = tmp_path / "absent" / "managed-settings.json"

    def problem(value: Any) -> str | None:
        path = managed(tmp_path, f"case{len(list(tmp_path.iterdir()))}", value)
        return mcp_install.policy_problem((absent, path))

    # no file, or nothing about MCP servers: no problem
    assert mcp_install.policy_problem((absent,)) is None
    assert problem({"permissions": {"deny": ["Bash(rm:*)"]}}) is None
    assert problem([1, 2]) is None  # not an object: not a policy
    # only the organization's servers
    found = problem({"allowManagedMcpServersOnly": True})
    assert found and "allows only the organization's own MCP servers" in found
    assert problem({"allowManagedMcpServersOnly": False}) is None
    # an allow list: with us, no problem; without us (or empty), one
    assert problem({"allowedMcpServers": [other, ours]}) is None
    found = problem({"allowedMcpServers": [other]})
    assert found and f"allowedMcpServers list that does not admit {SERVER}" in found
    # an allow list with commands admits a stdio server by its command only
    argv = installer.mcp_hook_server_argv()
    assert problem({"allowedMcpServers": [ours, {"serverCommand": ["npx", "x"]}]}) is not None
    assert problem({"allowedMcpServers": [{"serverCommand": argv}]}) is None
    # a deny list naming our command; MCP kept to plugins; a managed-mcp.json beside it
    found = problem({"deniedMcpServers": [{"serverCommand": argv}]})
    assert found and "denies" in found
    found = problem({"strictPluginOnlyCustomization": ["mcp"]})
    assert found and "from plugins only" in found
    beside = managed(tmp_path, "with-managed-mcp", {})
    (beside.parent / "managed-mcp.json").write_text("{}")
    found = mcp_install.policy_problem((beside,))
    assert found and "managed-mcp.json" in found
    found = problem({"allowedMcpServers": []})
    assert found and "allowedMcpServers" in found
    # a deny list: with us, a problem; without us, none
    found = problem({"deniedMcpServers": [other, ours]})
    assert found and f"denies the MCP server {SERVER}" in found
    assert problem({"deniedMcpServers": [other]}) is None
    # denied wins over allowed
    found = problem({"allowedMcpServers": [ours], "deniedMcpServers": [ours]})
    assert found and "denies" in found
    # a file that cannot be read is a problem (we cannot tell), named
    bad = managed(tmp_path, "unreadable", "{not json")
    found = mcp_install.policy_problem((bad,))
    assert found and str(bad) in found and "could not be read" in found
    # every path is read: a problem in the second one counts
    found = mcp_install.policy_problem(
        (managed(tmp_path, "first", {}), managed(tmp_path, "second", {"deniedMcpServers": [ours]}))
    )
    assert found and "second" in found


# --- 4. uninstall, and installing twice -------------------------------------------------------


def test_uninstall_after_an_mcp_install_removes_hooks_and_registration_only(
    repo: Path, home: Path, claude: Path
) -> None:
    foreign_hook = {"type": "command", "command": "echo mine"}
    settings_file(repo).parent.mkdir()
    settings_file(repo).write_text(
        json.dumps({"hooks": {"Stop": [{"hooks": [foreign_hook]}]}, "model": "opus"})
    )
    added = claude_mcp(claude, repo, home, "add", "-s", "local", "mine", "--", "/bin/true")
    assert added.returncode == 0, added.stderr
    for _ in range(2):  # twice: the same result
        done = cli(repo, home, "install", "--transport", "mcp", "--claude", str(claude))
        assert done.returncode == 0, done.stdout + done.stderr
    found = handlers(repo)
    assert set(found) == set(installer.installed_events())
    for event, handlers_of_event in found.items():
        ours = [h for h in handlers_of_event if installer.is_ours(h)]
        assert len(ours) == 1, event
    assert foreign_hook in found["Stop"]
    state = json.loads((home / ".claude.json").read_text())
    assert sorted(state["projects"][str(repo)]["mcpServers"]) == ["claude-session-hooks", "mine"]

    done = cli(repo, home, "uninstall", "--claude", str(claude))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"removed the MCP hook server {SERVER} (local scope)" in words(done.stdout)
    assert json.loads(settings_file(repo).read_text()) == {
        "hooks": {"Stop": [{"hooks": [foreign_hook]}]},
        "model": "opus",
    }
    assert registered(home, repo) is None
    state = json.loads((home / ".claude.json").read_text())
    assert sorted(state["projects"][str(repo)]["mcpServers"]) == ["mine"]
    assert claude_mcp(claude, repo, home, "get", SERVER).returncode != 0

    # a second uninstall: nothing left to do, no registration touched
    again = cli(repo, home, "uninstall", "--claude", str(claude))
    assert again.returncode == 0, again.stdout + again.stderr
    assert "removed the MCP hook server" not in again.stdout
    assert claude_mcp(claude, repo, home, "get", "mine").returncode == 0


# --- 5. command: nothing registered -----------------------------------------------------------


def test_install_with_the_command_transport_registers_nothing(
    repo: Path, home: Path, claude: Path
) -> None:
    done = cli(repo, home, "install", "--transport", "command", "--claude", str(claude))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "MCP hook server" not in done.stdout
    assert_all_commands(repo)
    assert installer.transport_of(json.loads(settings_file(repo).read_text())) == "command"
    assert registered(home, repo) is None
    assert claude_mcp(claude, repo, home, "get", SERVER).returncode != 0


def test_a_command_install_after_an_mcp_install_takes_the_registration_away(
    repo: Path, home: Path, claude: Path
) -> None:
    """Nothing would call the MCP hook server any more: it is not left registered."""
    done = cli(repo, home, "install", "--transport", "mcp", "--claude", str(claude))
    assert done.returncode == 0 and registered(home, repo) is not None, done.stdout
    done = cli(repo, home, "install", "--transport", "command", "--claude", str(claude))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "removed the MCP hook server" in done.stdout
    assert_all_commands(repo)
    assert registered(home, repo) is None


def test_uninstall_without_a_claude_says_the_registration_stays(
    repo: Path, home: Path, claude: Path
) -> None:
    done = cli(repo, home, "install", "--transport", "mcp", "--claude", str(claude))
    assert done.returncode == 0, done.stdout
    done = cli(repo, home, "uninstall")  # no claude on this PATH, no --claude
    assert done.returncode == 0, done.stdout + done.stderr
    said = " ".join(done.stdout.split())
    assert f"the MCP hook server {SERVER} is still registered (local scope)" in said
    assert f"claude mcp remove -s local {SERVER}" in said
    assert registered(home, repo) is not None
