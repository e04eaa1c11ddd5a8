"""Writing our hooks into Claude Code's settings files, and taking exactly them out again.

A project (or local) install writes `<project>/.claude/settings.local.json`, a user install
`~/.claude/settings.json` (`hooks_settings_path`).

Our handlers are recognised by a shell comment at the end of the command (an mcp_tool hook:
our server's name and the install named in its input), so `uninstall` never touches anyone
else's hooks. Commands use absolute paths to the venv interpreter and the
hook scripts (a pyenv shim costs ~90 ms per event). The shell wrapper turns every exit status
into 0 except the runtime's deliberate block (3, which becomes the contract's 2): a broken
installation, whose python may itself exit 2 ("can't open file"), can never block Claude Code.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...core import hook_contract, mcp_hook_input
from ...core.events import EVENTS
from ...core.paths import DB_NAME

MARKER = hook_contract.MARKER
BLOCK_EXIT = hook_contract.BLOCK_EXIT  # the runtime's block; the wrapper turns it into 2
SCOPES = ("project", "local", "user")
GITIGNORE_LINE = f"{DB_NAME}*"
LOCAL_SETTINGS_LINE = ".claude/settings.local.json"

# WorktreeCreate hooks replace Claude Code's own git worktree creation: never install one.
SKIPPED_EVENTS = ("WorktreeCreate",)
# Events whose hooks Claude Code need not wait for. Empty on purpose: Claude Code kills async
# hooks still running when `claude -p` exits, which can lose the event, and the observe-only
# events as async command hooks made a session no faster than the do-nothing twin (a process
# per event costs the CPU Claude Code waits for; docs/benchmarks.md, "Async observe-only
# hooks"). Kept as the one switch should that trade-off change.
ASYNC_EVENTS: frozenset[str] = frozenset()
# Seconds, per event (core/hook_contract.py says why).
TIMEOUTS = hook_contract.HOOK_TIMEOUTS
DEFAULT_TIMEOUT = hook_contract.DEFAULT_HOOK_TIMEOUT

# The transports (docs/design.md, "Hooks without a process"): 'mcp' delivers the events of a
# running session to the session's own MCP hook server (runtime/mcp_transport.py) as mcp_tool
# hooks, no process started; 'command' starts a hook process per event (which hands the
# event to the project's daemon when one runs).
TRANSPORTS = ("mcp", "command")
MCP_HOOK_SERVER = hook_contract.MCP_HOOK_SERVER  # the MCP server's name, as `install` registers it
HOOK_TOOL = hook_contract.HOOK_TOOL  # the MCP hook server's tool, which every mcp_tool hook calls
# The events the MCP hook server carries: those of a running session. The rest stay commands:
# SessionStart and Setup (Claude Code gives an mcp_tool hook there no MCP client, checked in
# 2.1.330), SessionEnd (the server is gone by then), InstructionsLoaded and DirectoryAdded
# (they fire while the server may still be connecting, and such events are not waited for),
# TaskCompleted (its block is an exit code, which an mcp_tool hook cannot give).
COMMAND_ONLY = frozenset(
    ("SessionStart", "Setup", "InstructionsLoaded", "DirectoryAdded", "SessionEnd", "TaskCompleted")
)
MCP_EVENTS = frozenset(e for e in EVENTS if e not in COMMAND_ONLY and e not in SKIPPED_EVENTS)


def package_folder() -> str:
    """This install's package folder: named in every mcp_tool hook, so that the MCP hook server
    of another install refuses it (runtime/mcp_transport.py)."""
    return str(Path(__file__).resolve().parents[2])


def mcp_hook_server_argv(python: str | None = None) -> list[str]:
    """The MCP hook server as Claude Code starts it: this install's interpreter and entry."""
    interpreter = os.path.abspath(python or sys.executable)
    entry = Path(package_folder()) / hook_contract.MCP_HOOK_ENTRY
    return [interpreter, *hook_contract.INTERPRETER_FLAGS, str(entry)]


def mcp_handler(event: str) -> dict[str, Any]:
    """Our mcp_tool hook for `event`: each of its payload fields by reference
    (core/mcp_hook_input)."""
    return {
        "type": "mcp_tool",
        "server": MCP_HOOK_SERVER,
        "tool": HOOK_TOOL,
        "input": mcp_hook_input.input_template(package_folder(), event),
        "timeout": TIMEOUTS.get(event, DEFAULT_TIMEOUT),
    }


def hook_entry() -> Path:
    """The hook entry inside this installed package (site-packages for a wheel, the checkout
    for a clone): whatever install wrote it, the command runs code that exists there."""
    return Path(__file__).resolve().parents[2] / hook_contract.HOOK_ENTRY


def hook_argv(event: str, python: str | None = None, entry: Path | None = None) -> list[str]:
    """The hook process as Claude Code starts it, without the shell guard."""
    interpreter = os.path.abspath(python or sys.executable)  # not resolved: keep the venv path
    return [interpreter, *hook_contract.INTERPRETER_FLAGS, str(entry or hook_entry()), event]


def installed_events() -> tuple[str, ...]:
    return tuple(e for e in EVENTS if e not in SKIPPED_EVENTS)


def block_guard() -> str:
    """The shell after the hook process: the runtime's block becomes Claude Code's, every
    other status 0."""
    return f"[ $? -ne {BLOCK_EXIT} ] || exit {hook_contract.CLAUDE_BLOCK_EXIT}"


def hook_command(event: str, python: str | None = None, entry: Path | None = None) -> str:
    return f"{shlex.join(hook_argv(event, python, entry))}; {block_guard()} {MARKER}"


def our_handlers(
    python: str | None = None,
    command_for: Callable[[str], str] | None = None,
    transport: str = "command",
) -> dict[str, dict[str, Any]]:
    """One handler per installed event; `command_for` makes the command (default: this
    install's interpreter and entry), so settings.json and the plugin share everything else.
    With the 'mcp' transport, the events of a running session are mcp_tool hooks."""
    handlers = {}
    for event in installed_events():
        if transport == "mcp" and event in MCP_EVENTS:
            handlers[event] = mcp_handler(event)
            continue
        handler: dict[str, Any] = {
            "type": "command",
            "command": command_for(event) if command_for else hook_command(event, python),
            "timeout": TIMEOUTS.get(event, DEFAULT_TIMEOUT),
        }
        if event in ASYNC_EVENTS:
            handler["async"] = True
        handlers[event] = handler
    return handlers


def is_ours(handler: Any) -> bool:
    if not isinstance(handler, dict):
        return False
    if handler.get("type") == "mcp_tool":
        given = handler.get("input")
        return (
            handler.get("server") == MCP_HOOK_SERVER
            and isinstance(given, dict)
            and (mcp_hook_input.INSTALL_ARGUMENT in given)
        )
    return str(handler.get("command", "")).endswith(MARKER)


def ours(settings: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(event, handler) for every claude-session handler of a settings object."""
    hooks = settings.get("hooks")
    found = []
    for event, groups in (hooks if isinstance(hooks, dict) else {}).items():
        for group in groups if isinstance(groups, list) else []:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for handler in handlers if isinstance(handlers, list) else []:
                if is_ours(handler):
                    found.append((str(event), handler))
    return found


def transport_of(settings: dict[str, Any]) -> str | None:
    """Which transport our hooks in `settings` use: 'mcp', 'command', or None (none there)."""
    types = {handler.get("type") for _, handler in ours(settings)}
    if not types:
        return None
    return "mcp" if "mcp_tool" in types else "command"


def settings_path(scope: str, root: Path) -> Path:
    if scope == "project":
        return root / ".claude" / "settings.json"
    if scope == "local":
        return root / ".claude" / "settings.local.json"
    if scope == "user":
        return Path(os.environ.get("HOME") or Path.home()) / ".claude" / "settings.json"
    raise ValueError(f"unknown scope {scope!r}; use one of {', '.join(SCOPES)}")


def hooks_settings_path(scope: str, root: Path) -> Path:
    """Where `install --scope SCOPE` writes its hooks and status line. Their commands name
    this machine's interpreter and install by absolute path, which a teammate's machine does
    not have: the project scope's go to `.claude/settings.local.json`, which Claude Code reads
    for the project and teams do not commit, never to the shared `.claude/settings.json`."""
    return settings_path("local" if scope == "project" else scope, root)


def without_ours(settings: dict[str, Any]) -> dict[str, Any]:
    """A copy of `settings` with every claude-session handler removed (others untouched)."""
    result: dict[str, Any] = json.loads(json.dumps(settings))
    hooks = result.get("hooks")
    if not isinstance(hooks, dict):
        return result
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                handlers = [h for h in group["hooks"] if not is_ours(h)]
                if not handlers and any(is_ours(h) for h in group["hooks"]):
                    continue
                group = {**group, "hooks": handlers}
            kept.append(group)
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks:
        del result["hooks"]
    return result


def with_ours(
    settings: dict[str, Any], python: str | None = None, transport: str = "command"
) -> dict[str, Any]:
    """`settings` with exactly one claude-session handler per event (idempotent)."""
    result = without_ours(settings)
    hooks = result.setdefault("hooks", {})
    for event, handler in our_handlers(python, transport=transport).items():
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise ValueError(f"settings: hooks.{event} is not a list; fix it by hand first")
        groups.append({"hooks": [handler]})
    return result


def our_commands(python: str | None = None, transport: str = "command") -> list[str]:
    """The command of each command hook `with_ours` adds (mcp_tool hooks have none)."""
    handlers = our_handlers(python, transport=transport).values()
    return [str(h["command"]) for h in handlers if "command" in h]


def this_install_commands() -> set[str]:
    """The hook commands this install writes now: they run this install's own entry, so they
    are ours whoever wrote them into a settings file (an install before the record was kept)."""
    return {hook_command(event) for event in installed_events()}


def write_ours(
    path: Path, settings: dict[str, Any], python: str | None = None, transport: str = "command"
) -> Path | None:
    """`settings` with our hooks (`with_ours`) written to `path`; every command written is
    first recorded as ours (hook_record: `doctor` runs no other). Returns the backup."""
    from . import hook_record

    updated = with_ours(settings, python, transport)
    hook_record.remember(our_commands(python, transport))
    return write_settings(path, updated)


def read_settings(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return {}
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    return value


def write_settings(path: Path, settings: dict[str, Any]) -> Path | None:
    """Replace the settings file atomically, after a backup of the old one; returns the backup.

    A settings.json that is a symbolic link (dotfile managers do that) is edited where it
    points, so the link stays; the file keeps its mode. Backups go to our own state folder
    (never into the project, where they could be committed), 0600, under unique names."""
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    target.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    mode = 0o644
    if target.exists():
        mode = stat.S_IMODE(target.stat().st_mode)
        backup = _backup(target)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(json.dumps(settings, indent=2) + "\n")
    os.replace(tmp, target)
    return backup


def _backup(path: Path) -> Path:
    """A copy of `path` in the per-user state folder: 0600, a name no other install takes."""
    from ...core.paths import user_state_dir

    folder = Path(user_state_dir()) / "backups"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    where = str(path.parent).strip("/").replace("/", "_")[-80:]
    name = f"{where}_{path.name}.{stamp}.{os.getpid()}.{os.urandom(4).hex()}"
    backup = folder / name
    fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(path.read_bytes())
    return backup


IGNORED = (
    ("# claude-session database, WAL, spool and log", GITIGNORE_LINE),
    (
        "# Claude Code's personal settings: claude-session's hooks (this machine's paths)",
        LOCAL_SETTINGS_LINE,
    ),
)


class Ignored:
    """What `ensure_ignored` did to the project's .gitignore."""

    def __init__(self, path: Path, created: bool, added: list[str]) -> None:
        self.path = path
        self.created = created
        self.added = added


def gitignore_plan(root: Path) -> Ignored:
    """What `ensure_ignored` would do, writing nothing (for --dry-run)."""
    path = root / ".gitignore"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    kept = {line.strip().lstrip("/") for line in lines}
    return Ignored(path, not path.exists(), [line for _, line in IGNORED if line not in kept])


def ensure_ignored(root: Path) -> Ignored:
    """The database (with its -wal, -shm, spool, log) and `.claude/settings.local.json` in the
    project's .gitignore (Claude Code adds the latter to the global excludes only when it
    creates the file itself); the file is made when missing."""
    plan = gitignore_plan(root)
    if plan.added:
        text = plan.path.read_text(encoding="utf-8") if plan.path.exists() else ""
        with plan.path.open("a", encoding="utf-8") as f:
            if text and not text.endswith("\n"):
                f.write("\n")
            for comment, line in IGNORED:
                if line in plan.added:
                    f.write(f"{comment}\n{line}\n")
    return plan


def in_git_repository(root: Path) -> bool:
    """`root` is inside a git work tree (a `.git` folder or a worktree's file at or above)."""
    here = root.resolve()
    return any((folder / ".git").exists() for folder in (here, *here.parents))


def home_folder() -> Path:
    """The user's home folder, resolved ($HOME first, as Claude Code finds `~/.claude`)."""
    return Path(os.environ.get("HOME") or Path.home()).resolve()


def all_settings_files(root: Path) -> list[tuple[str, Path]]:
    return [(scope, settings_path(scope, root)) for scope in SCOPES]


class HookRun:
    """What one hook command did when run the way Claude Code runs it."""

    def __init__(self, returncode: int, stdout: str, stderr: str, seconds: float) -> None:
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.seconds = seconds

    def output_problem(self) -> str | None:
        """None when stdout is empty or exactly one JSON object, as the contract wants."""
        text = self.stdout.strip()
        if not text:
            return None
        try:
            value = json.loads(text)
        except ValueError:
            return f"stdout is not JSON: {text[:80]!r}"
        return None if isinstance(value, dict) else "stdout is JSON but not an object"


def hook_environment(project_dir: Path, extra_env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment Claude Code gives a hook (or the MCP hook server it starts) in
    `project_dir`, with a minimal PATH, so a hook that needs the user's shell setup shows up."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": os.environ.get("HOME", str(project_dir)),
        "CLAUDE_PROJECT_DIR": str(project_dir),
    }
    for name in ("CLAUDE_SESSION_STATE_DIR", "XDG_STATE_HOME", "CLAUDE_SESSION_NO_DAEMON"):
        if name in os.environ:
            env[name] = os.environ[name]
    env.update(extra_env or {})
    return env


def run_hook_command(
    command: str,
    payload: bytes,
    project_dir: Path,
    timeout: float = DEFAULT_TIMEOUT,
    extra_env: dict[str, str] | None = None,
) -> HookRun:
    """Run `command` with `sh -c`, the payload on stdin and CLAUDE_PROJECT_DIR set, as Claude
    Code does (with a minimal PATH, so a hook that needs the user's shell setup shows up)."""
    import subprocess

    env = hook_environment(project_dir, extra_env)
    started = time.perf_counter()
    try:
        done = subprocess.run(
            ["/bin/sh", "-c", command],
            input=payload,
            capture_output=True,
            env=env,
            cwd=project_dir,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        return HookRun(-1, "", f"timed out after {exc.timeout}s", time.perf_counter() - started)
    return HookRun(
        done.returncode,
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace"),
        time.perf_counter() - started,
    )


class Probe:
    """One SessionStart fired through a hook command into a scratch project."""

    def __init__(self, ok: bool, milliseconds: float, problem: str | None) -> None:
        self.ok = ok
        self.milliseconds = milliseconds
        self.problem = problem


PROBE_SESSION = "claude-session-install-probe"


def probe(command: str) -> Probe:
    """Run `command` exactly as Claude Code would (`sh -c`, minimal PATH, CLAUDE_PROJECT_DIR)
    on a SessionStart into a fresh scratch folder, and look for the row it must record."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="claude-session-probe-") as scratch:
        return probe_in(Path(scratch), command)


def probe_env(folder: Path) -> dict[str, str]:
    """What a probe adds to a hook's environment: no daemon, no judge, no workspace snapshot
    (no process outliving the probe), and per-user state and data in the scratch folder (its
    trust record, logs and memories never reach the user's own)."""
    return {
        "CLAUDE_SESSION_NO_DAEMON": "1",
        "CLAUDE_SESSION_NO_JUDGE": "1",
        "CLAUDE_SESSION_NO_SNAPSHOTS": "1",
        "CLAUDE_SESSION_STATE_DIR": str(folder / "state"),
        "CLAUDE_SESSION_DATA_DIR": str(folder / "data"),
    }


def probe_in(folder: Path, command: str) -> Probe:
    """`probe` into `folder`, which is left holding the database the SessionStart made."""
    import apsw

    payload = {
        "session_id": PROBE_SESSION,
        "hook_event_name": "SessionStart",
        "source": "startup",
        "cwd": str(folder),
    }
    run = run_hook_command(
        command, json.dumps(payload).encode(), folder, extra_env=probe_env(folder)
    )
    milliseconds = run.seconds * 1000
    if run.returncode != 0:
        return Probe(False, milliseconds, f"exit {run.returncode}: {run.stderr.strip()[-300:]}")
    database = folder / DB_NAME
    if not database.exists():
        why = run.stderr.strip()[-300:] or "no database was created"
        return Probe(False, milliseconds, f"exit 0 but nothing recorded: {why}")
    conn = apsw.Connection(str(database), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        found = conn.execute(
            "SELECT count(*) FROM events WHERE session_id = ?", (PROBE_SESSION,)
        ).fetchall()[0][0]
    finally:
        conn.close()
    if found != 1:
        return Probe(False, milliseconds, "exit 0 but the event is not in the database")
    return Probe(True, milliseconds, None)


def cannot_run(python: str | None = None) -> str | None:
    """Why this install cannot write a working hook command, or None."""
    interpreter = os.path.abspath(python or sys.executable)
    if not os.path.isfile(interpreter) or not os.access(interpreter, os.X_OK):
        return f"the interpreter {interpreter} is not an executable file"
    if not hook_entry().is_file():
        return f"the hook entry {hook_entry()} is missing from this install"
    return None


def project_root_above(start: Path) -> Path | None:
    """The project `start` is inside: the nearest folder at or above it holding a git
    repository (`.git`, a folder or a worktree's file), a `.claude` folder or a claude-session
    database. The home folder's `.claude` is the user's own settings, not a project."""
    from ...core.paths import DB_NAME

    home = Path.home().resolve() if os.environ.get("HOME") else None
    here = start.resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists() or (folder / DB_NAME).exists():
            return folder
        if (folder / ".claude").is_dir() and folder != home:
            return folder
    return None
