"""claude-session as a Claude Code plugin: written on the user's machine, registered through a
local-folder marketplace, and never alongside our settings.json hooks.

Facts checked in the real CLI 2.1.330: plugin hooks run beside settings.json hooks with no
de-duplication (both would record every event twice); a plugin's `bin/` is not on the hooks'
PATH, so, like settings.json, the plugin calls this install's interpreter by absolute path and
the same in-package entry. The shell form keeps the guard that turns every failure into exit 0
(the exec form would pass python's own exit 2, "can't open file", straight to Claude Code).
A local-folder marketplace runs the plugin in place.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ... import __version__
from ...core import hook_contract
from . import installer

if TYPE_CHECKING:
    import subprocess

# A plugin's name must not start with "claude-" (the CLI's validator reserves it).
PLUGIN = "session-recorder"
MARKETPLACE = "session-recorder-local"
PLUGIN_ID = f"{PLUGIN}@{MARKETPLACE}"
DESCRIPTION = (
    "Records every Claude Code hook event into a per-project SQLite database and puts the "
    "essential state back after a compaction."
)
# The clone used as a plugin folder (`claude --plugin-dir <clone>`): its own venv and entry.
CLONE_PYTHON = "${CLAUDE_PLUGIN_ROOT}/.venv/bin/python"
CLONE_ENTRY = f"${{CLAUDE_PLUGIN_ROOT}}/claude_session/{hook_contract.HOOK_ENTRY}"


def plugin_dir() -> Path:
    """Where `install --plugin` writes the plugin: the user's data folder."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(
        os.environ.get("HOME") or str(Path.home()), ".local", "share"
    )
    return Path(base) / "claude-session" / "plugin"


def clone_command(event: str) -> str:
    """A hook command for the checkout itself as the plugin: paths from CLAUDE_PLUGIN_ROOT,
    which the shell expands (quoted, so a root with spaces works)."""
    flags = " ".join(hook_contract.INTERPRETER_FLAGS)
    guard = installer.block_guard()
    return (
        f'"{CLONE_PYTHON}" {flags} "{CLONE_ENTRY}" {shlex.quote(event)}; {guard} {installer.MARKER}'
    )


def hooks_json(command_for: Any = None) -> dict[str, Any]:
    """The plugin's hooks/hooks.json: one handler per event, as settings.json gets them."""
    handlers = installer.our_handlers(command_for=command_for)
    return {
        "description": DESCRIPTION,
        "hooks": {event: [{"hooks": [handler]}] for event, handler in handlers.items()},
    }


def manifest() -> dict[str, Any]:
    return {"name": PLUGIN, "version": __version__, "description": DESCRIPTION}


def write(folder: Path, command_for: Any = None) -> None:
    """Write the plugin (manifest, a one-plugin marketplace, hooks) into `folder`."""
    (folder / ".claude-plugin").mkdir(parents=True, exist_ok=True, mode=0o700)
    (folder / "hooks").mkdir(exist_ok=True, mode=0o700)
    marketplace = {
        "name": MARKETPLACE,
        "owner": {"name": "claude-session users"},
        "plugins": [{"name": PLUGIN, "source": "./", "description": DESCRIPTION}],
    }
    files = {
        folder / ".claude-plugin" / "plugin.json": manifest(),
        folder / ".claude-plugin" / "marketplace.json": marketplace,
        folder / "hooks" / "hooks.json": hooks_json(command_for),
    }
    for path, value in files.items():
        _write_json(path, value)


def _write_json(path: Path, value: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(json.dumps(value, indent=2) + "\n")
    os.replace(tmp, path)


class ClaudeError(RuntimeError):
    """The `claude` command refused or is missing: the message says what to run instead."""


def find_claude(explicit: str | None = None) -> str | None:
    return explicit or shutil.which("claude")


def run_claude(
    claude: str, *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`claude ARGS` (its auto-updater off), its output captured; one that cannot run is a
    failed command (exit 127)."""
    import subprocess  # here: `status` reads where the hooks come from, and runs nothing

    env = dict(os.environ, DISABLE_AUTOUPDATER="1")
    try:
        return subprocess.run(
            [claude, *args],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            check=False,
            cwd=cwd,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:  # said like a failed command
        return subprocess.CompletedProcess([claude, *args], 127, "", f"cannot run {claude}: {exc}")


def register(claude: str, folder: Path) -> None:
    """Add the folder as a marketplace and install the plugin from it (user scope)."""
    added = run_claude(claude, "plugin", "marketplace", "add", str(folder), "--scope", "user")
    if added.returncode != 0 and "already" not in (added.stdout + added.stderr).lower():
        raise ClaudeError(f"claude plugin marketplace add failed: {output_tail(added)}")
    done = run_claude(claude, "plugin", "install", PLUGIN_ID, "--scope", "user")
    if done.returncode != 0 and "already" not in (done.stdout + done.stderr).lower():
        raise ClaudeError(f"claude plugin install failed: {output_tail(done)}")


def unregister(claude: str) -> bool:
    """Uninstall the plugin and forget its marketplace; True if it was installed."""
    if not is_registered(claude):
        return False
    run_claude(claude, "plugin", "uninstall", PLUGIN_ID, "--scope", "user")
    run_claude(claude, "plugin", "marketplace", "remove", MARKETPLACE)
    return True


def is_registered(claude: str) -> bool:
    listed = run_claude(claude, "plugin", "list", "--json")
    if listed.returncode != 0:
        return False
    try:
        plugins = json.loads(listed.stdout)
    except ValueError:
        return PLUGIN_ID in listed.stdout
    return PLUGIN_ID in json.dumps(plugins)


def commands_to_run(folder: Path) -> str:
    return (
        f"claude plugin marketplace add {shlex.quote(str(folder))} --scope user\n"
        f"claude plugin install {PLUGIN_ID} --scope user"
    )


def output_tail(done: subprocess.CompletedProcess[str]) -> str:
    """The end of what a failed `claude` command said, for an error message."""
    return (done.stderr.strip() or done.stdout.strip())[-400:]
