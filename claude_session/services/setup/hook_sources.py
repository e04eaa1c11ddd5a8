"""Where Claude Code finds claude-session's hooks for a session started in a project, so that
`status` and `doctor` judge the hooks that really run there.

Claude Code reads the user's, the project's shared and the project's local settings file, and
in a linked git worktree (a `fork`'s or a `replay`'s, or one of Claude Code's own) the local
settings of the main repository, where a project install put the hooks. A replay whose
project had no hooks in reach gave `claude -p` ours on its command line (`--settings`); its
folder holds no settings file, yet its sessions were recorded.
"""

from __future__ import annotations

import os
from pathlib import Path

import apsw

from . import installer

MAIN_LOCAL = "main repository"  # the scope of the main repository's local settings file
WHOSE = {
    "project": "the project's shared settings",
    "local": "the project's personal settings",
    "user": "your settings, for every project",
}


def main_worktree(root: Path) -> Path | None:
    """The main working tree of the repository `root` is a linked worktree of, else None: a
    linked worktree's `.git` is a file (`gitdir: <main>/.git/worktrees/<name>`) whose folder
    names the main `.git` in its `commondir`. A submodule's names none: None."""
    marker = root / ".git"
    try:
        if not marker.is_file():
            return None
        text = marker.read_text(encoding="utf-8").strip()
        if not text.startswith("gitdir:"):
            return None
        gitdir = Path(text.removeprefix("gitdir:").strip())
        gitdir = gitdir if gitdir.is_absolute() else root / gitdir
        common = (gitdir / "commondir").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    common_dir = Path(os.path.realpath(gitdir / common))
    return common_dir.parent if common_dir.name == ".git" else None  # bare: no work tree


def settings_files(root: Path) -> list[tuple[str, Path]]:
    """(scope, path) of every settings file Claude Code reads hooks from for `root`."""
    files = installer.all_settings_files(root)
    main = main_worktree(root)
    if main is not None and main != Path(os.path.realpath(root)):
        files.append((MAIN_LOCAL, installer.settings_path("local", main)))
    return files


def replayed_here(root: Path) -> bool:
    """`claude-session replay` made this folder: its database holds the replay's branch."""
    from ...core import db
    from ...core.paths import db_path

    path = db_path(str(root))
    if not os.path.exists(path):
        return False
    try:
        conn = db.connect(path, create=False, readonly=True)
    except db.DatabaseError:
        return False
    try:
        rows = db.rows(conn, "SELECT path FROM branches WHERE kind = 'replay'")
    except apsw.Error:  # a damaged database: no replay to speak of
        return False
    finally:
        conn.close()
    here = os.path.realpath(root)
    return any(os.path.realpath(str(r["path"])) == here for r in rows)


def known_commands() -> set[str]:
    """The sha256 of every command counted as ours: those the record holds, and those this
    install and our package's plugin file hold (they run our own entry, whoever copied them
    into a settings file)."""
    from . import hook_record, plugin

    commands = installer.this_install_commands() | plugin.package_commands()
    return hook_record.recorded() | {hook_record.digest(c) for c in commands}


def written_by_us(handler: object, known: set[str]) -> bool:
    """A hook handler claude-session wrote for this user: a command hook whose command is
    known, or an mcp_tool hook (it names our server and tool and runs nothing of the file's)."""
    if not isinstance(handler, dict):
        return False
    if handler.get("type") == "mcp_tool":
        return True
    from . import hook_record

    command = handler.get("command")
    return isinstance(command, str) and hook_record.digest(command) in known


class Found:
    """The claude-session hooks that reach a session in a project, and from where."""

    def __init__(self, root: Path) -> None:
        from . import plugin

        self.files: list[tuple[str, Path, set[str]]] = []  # scope, path, events
        self.unreadable: list[str] = []
        self.not_ours: list[tuple[Path, str]] = []  # our marker, a command we did not write
        known: set[str] | None = None
        for scope, path in settings_files(root):
            try:
                settings = installer.read_settings(path)
            except (OSError, ValueError):
                self.unreadable.append(str(path))
                continue
            events = set()
            for event, handler in installer.ours(settings):
                known = known_commands() if known is None else known
                if written_by_us(handler, known):
                    events.add(event)
                else:
                    self.not_ours.append((path, event))
            if events:
                self.files.append((scope, path, events))
        plugin_hooks = plugin.plugin_dir() / "hooks" / "hooks.json"
        self.plugin = plugin_hooks if plugin_hooks.exists() else None
        self.replay = not self.files and self.plugin is None and replayed_here(root)

    @property
    def events(self) -> set[str]:
        return {event for _, _, events in self.files for event in events}

    def problems(self) -> list[str]:
        """What is wrong, one sentence each; none when the hooks that reach it are complete."""
        if self.unreadable:
            return [f"{self.unreadable[0]} cannot be read"]
        foreign = []
        if self.not_ours:
            path, event = self.not_ours[0]
            foreign = [
                f"{len(self.not_ours)} hook(s) in {path} ({event} first) carry claude-session's"
                " marker but were not written by this user's claude-session: not ours, never"
                " run by doctor (`claude-session doctor` lists them)"
            ]
        if self.plugin is not None or self.replay:
            return foreign
        if not self.files:
            return [*foreign, "no claude-session hooks are installed (`claude-session install`)"]
        missing = sorted(set(installer.installed_events()) - self.events)
        return foreign + (
            [f"hooks missing for {', '.join(missing)} (`claude-session install`)"]
            if missing
            else []
        )

    def describe(self) -> str:
        """Where they come from, in words (`status`, `doctor`, `fork`)."""
        where = []
        for scope, path, _ in self.files:
            if scope == MAIN_LOCAL:
                where.append(f"{path} (the main repository's: Claude Code reads it in a worktree)")
            else:
                where.append(f"{path} ({WHOSE.get(scope, scope)})")
        if self.plugin is not None:
            from .plugin import PLUGIN

            where.append(f"the {PLUGIN} plugin ({self.plugin})")
        if where:
            return "; ".join(where)
        if self.replay:
            return (
                "given to `claude -p` on its command line by `claude-session replay`; a"
                " `claude` started here by hand records nothing (`claude-session install`)"
            )
        return "none"
