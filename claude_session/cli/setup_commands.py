"""`install` and `uninstall`: hooks in a Claude Code settings file or the plugin, never both,
each checked by firing a SessionStart through the very command Claude Code will run.

The file: `<project>/.claude/settings.local.json` for the project and local scopes (personal,
never committed: the commands hold this machine's paths), `~/.claude/settings.json` for the
user scope (`installer.hooks_settings_path`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from ..services import config_file, judge
from ..services.setup import hook_record, installer, mcp_install, plugin, statusline_setup
from . import hook_transport, output
from .group import cli, json_option


def say(text: str) -> None:
    """One line of what was done: printed, or with --json collected for the JSON answer."""
    report = click.get_current_context().meta.get(REPORT)
    if report is None:
        output.echo_wrapped(text)  # folded at the width, never cut
    else:
        report["messages"].append(text)


def say_settings(settings: dict[str, Any], path: Path, what: str) -> None:
    """--dry-run: which file would get `what`, and the settings it would then hold (the JSON
    answer's `file` and `settings`)."""
    say(f"would write {what} into {path}; the file would then hold:")
    report = click.get_current_context().meta.get(REPORT)
    if report is None:
        click.echo(json.dumps(settings, indent=2))
    else:
        report["file"] = str(path)
        report["settings"] = settings


@contextmanager
def reporting() -> Iterator[None]:
    """With --json: collect what `say` says, then print it as one JSON object."""
    if not output.json_wanted():
        yield
        return
    report: dict[str, Any] = {"messages": []}
    click.get_current_context().meta[REPORT] = report
    yield
    output.emit(report)


REPORT = "claude_session.report"
JSON_SHAPE = (
    "an object: messages (what was done, in order), and with --dry-run: file (the settings"
    " file) and settings (what it would hold)"
)
UNINSTALL_SHAPE = (
    "an object: messages (what was done, in order), and with --dry-run: plan (one per"
    " settings file: file, exists, hooks (the events whose claude-session handlers would go),"
    " status_line (true: ours would go)) and settings (what the first file changed would hold)"
)
SCOPE_FILES = (
    "project and local: <project>/.claude/settings.local.json (personal, not committed);"
    " user: ~/.claude/settings.json"
)


def settings_options(removing: bool) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--scope and --dry-run, for install (`removing` false) and uninstall."""
    also = (
        "; project also cleans the shared .claude/settings.json, where older installs wrote"
        if removing
        else ""
    )

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        scope = click.option(
            "--scope",
            type=click.Choice(installer.SCOPES),
            default="project",
            show_default=True,
            help=f"Which settings file: {SCOPE_FILES}{also}.",
        )
        dry_run = click.option(
            "--dry-run",
            is_flag=True,
            help="Show what would be removed from which file, change nothing."
            if removing
            else "Show which file would be written and what it would hold, write nothing.",
        )
        return scope(dry_run(command))

    return decorate


def plugin_options(command: Callable[..., Any]) -> Callable[..., Any]:
    with_mcp = click.option(
        "--mcp",
        "with_mcp",
        is_flag=True,
        help="Also register (uninstall: remove) the MCP server, user scope.",
    )
    command = with_mcp(command)
    as_plugin = click.option(
        "--plugin",
        "as_plugin",
        is_flag=True,
        help="As a Claude Code plugin (user-wide) instead of hooks in a settings file.",
    )
    claude = click.option(
        "--claude", "claude_path", help="The claude command (default: `claude` on PATH)."
    )
    return as_plugin(claude(command))


def statusline_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--statusline",
        is_flag=True,
        help="Claude Code's status line (statusLine in the scope's settings file), not the hooks.",
    )(command)


def refuse_unless_runnable() -> None:
    """Never write a command that cannot run: check the install, then fire a probe."""
    problem = installer.cannot_run()
    if problem is None:
        probe = installer.probe(installer.hook_command("SessionStart"))
        problem = None if probe.ok else f"a probe through the hook command failed: {probe.problem}"
    if problem:
        raise click.ClickException(f"not installed, nothing written: {problem}")


def report_probe(command: str, where: str) -> None:
    """After writing: fire one SessionStart through the command as written, and say so; only
    if it is one we recorded writing (the file is read back: never run what else is there)."""
    if not hook_record.is_recorded(command):
        raise click.ClickException(
            f"written to {where}, but it now holds a SessionStart command claude-session did"
            f" not write, not run: {json.dumps(command[:300])}"
        )
    probe = installer.probe(command)
    if not probe.ok:
        raise click.ClickException(
            f"written to {where}, but its command does not record: {probe.problem}"
        )
    say(
        f"checked: a SessionStart sent through the written command was recorded"
        f" ({probe.milliseconds:.0f} ms)"
    )


def written_command(settings: dict[str, Any]) -> str:
    for group in settings.get("hooks", {}).get("SessionStart", []):
        for handler in group.get("hooks", []):
            if installer.is_ours(handler):
                return str(handler["command"])
    raise click.ClickException("the written settings hold no claude-session SessionStart hook")


def remove_settings_hooks(root: Path) -> None:
    """Our hooks in every scope's settings file, removed (the plugin takes over)."""
    for scope, path in installer.all_settings_files(root):
        if not path.exists():
            continue
        current = installer.read_settings(path)
        updated = installer.without_ours(current)
        if updated != current:
            installer.write_settings(path, updated)
            say(f"removed claude-session's hooks ({scope}) from {path}: the plugin records")


def remove_plugin(claude_path: str | None) -> None:
    claude = plugin.find_claude(claude_path)
    if claude and plugin.unregister(claude):
        say(f"removed the {plugin.PLUGIN_ID} plugin: the settings file's hooks record instead")


@cli.command()
@settings_options(removing=False)
@plugin_options
@statusline_option
@click.option(
    "--force", is_flag=True, help="With --statusline: replace a status line that is not ours."
)
@hook_transport.option
@json_option(JSON_SHAPE)
@click.pass_obj
def install(
    root: Path,
    scope: str,
    dry_run: bool,
    as_plugin: bool,
    claude_path: str | None,
    with_mcp: bool,
    statusline: bool,
    force: bool,
    transport: str,
) -> None:
    """Write claude-session's hooks into Claude Code's settings: the project's personal
    .claude/settings.local.json (project and local scope), or ~/.claude/settings.json (--scope
    user); or install the plugin, or the status line. With --mcp, register its MCP server too.

    The home folder is no project: there, use --scope user."""
    with reporting():
        install_any(
            root, scope, dry_run, as_plugin, claude_path, with_mcp, statusline, force, transport
        )


def install_any(
    root: Path,
    scope: str,
    dry_run: bool,
    as_plugin: bool,
    claude_path: str | None,
    with_mcp: bool,
    statusline: bool,
    force: bool,
    transport: str = "auto",
) -> None:
    if statusline and as_plugin:
        raise click.UsageError("--statusline and --plugin are separate installs: run each alone")
    root = install_root(root)
    if scope != "user" and not as_plugin:
        refuse_home(root, "status line" if statusline else "hooks")
    if force and not statusline:
        raise click.UsageError("--force only applies to --statusline")
    if statusline:
        install_statusline(installer.hooks_settings_path(scope, root), dry_run, force)
        if with_mcp and not dry_run:
            install_mcp(claude_path)
        return
    if as_plugin:
        install_plugin(root, dry_run, claude_path)
    else:
        install_settings(root, scope, dry_run, claude_path, transport)
    if with_mcp and not dry_run:
        install_mcp(claude_path)
    if not dry_run:
        offer_judge(root, scope)


JUDGE_ON = "claude-session config --set judge_events=TaskCompleted"


def offer_judge(root: Path, scope: str) -> None:
    """The judge calls a paid model, so it is off until asked for: on a terminal, ask (no by
    default) and say what a call costs; elsewhere, one line on how to turn it on."""
    try:
        loaded = config_file.load(str(root))
    except config_file.ConfigError:
        return  # `config` and doctor report an unreadable file
    if "judge_events" in loaded.written:
        return  # chosen already, either way
    estimate = judge.estimated_cost_per_call()
    cost = (
        f"each check calls a paid model (claude -p --model {judge.JUDGE_MODEL}), about"
        f" ${estimate:.2f} a call (an estimate)"
    )
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    if scope == "user" or not interactive or click.get_current_context().meta.get(REPORT):
        say(f"the judge (checks finished tasks) is off; {cost}; to turn it on: `{JUDGE_ON}`")
        return
    question = (
        f"Turn on the judge? When a task is marked done, it checks the work is really done;"
        f" {cost}, at most ${loaded.values['judge_budget_usd_per_day']:.2f} a day"
        f" (judge_budget_usd_per_day)."
    )
    if not click.confirm(question, default=False):
        say(f"the judge stays off; to turn it on later: `{JUDGE_ON}`")
        return
    try:
        config_file.set_values(str(root), ["judge_events=TaskCompleted"])
    except config_file.ConfigError as exc:
        say(f"the judge was not turned on: {exc}")
        return
    say(
        f"the judge is on (judge_events=TaskCompleted in {loaded.path});"
        " `claude-session config --set judge_events=` turns it off"
    )


def install_root(root: Path) -> Path:
    """Without --project or $CLAUDE_PROJECT_DIR: the project the current folder is inside (its
    git repository, `.claude` folder or database above), said out loud; else `root`."""
    import os

    given = click.get_current_context().find_root().params.get("project")
    if given or os.environ.get("CLAUDE_PROJECT_DIR"):
        return root
    here = Path.cwd().resolve()
    found = installer.project_root_above(here) or here
    if found != here:
        say(f"installing for the project at {found} (the current folder is inside it)")
    return found


def refuse_home(root: Path, what: str) -> None:
    """The home folder is no project: its .claude/settings.local.json would hold the hooks of
    no project in particular, and a .gitignore would land in it."""
    if root.resolve() == installer.home_folder():
        raise click.ClickException(
            f"not installed, nothing written: {root} is your home folder, not a project; run"
            f" `claude-session install` inside a project, or `claude-session install --scope"
            f" user` to put the {what} in ~/.claude/settings.json for every project"
        )


def install_mcp(claude_path: str | None) -> None:
    claude = plugin.find_claude(claude_path)
    if claude is None:
        command = " ".join(mcp_install.server_argv())
        raise click.ClickException(
            "no `claude` command on PATH (or --claude): register the MCP server with\n"
            f"  claude mcp add -s user {mcp_install.NAME} -- {command}"
        )
    try:
        argv = mcp_install.register(claude)
    except plugin.ClaudeError as exc:
        raise click.ClickException(str(exc)) from exc
    say(
        f"registered the MCP server {mcp_install.NAME} (user scope): {' '.join(argv)};"
        " checked: it answered initialize"
    )


def install_settings(
    root: Path, scope: str, dry_run: bool, claude_path: str | None, transport: str = "auto"
) -> None:
    path = installer.hooks_settings_path(scope, root)
    try:
        current = installer.read_settings(path)
        installer.with_ours(current)  # a settings file we cannot add to: before registering
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    if not dry_run:
        refuse_unless_runnable()
    chosen = hook_transport.choose(root, scope, dry_run, claude_path, transport, say)
    updated = installer.with_ours(current, transport=chosen)
    events = len(installer.installed_events())
    if dry_run:
        say_settings(updated, path, f"claude-session's hooks for {events} events")
        if scope != "user":
            say_gitignore(root, installer.gitignore_plan(root), "would add")
        return
    backup = installer.write_ours(path, current, transport=chosen)
    carried = len(installer.MCP_EVENTS & set(installer.installed_events()))
    how = f" ({carried} through the MCP hook server)" if chosen == "mcp" else ""
    say(f"installed {events} hooks into {path}{how}")
    if backup:
        say(f"previous settings saved as {backup}")
    if scope != "user":
        say_gitignore(root, installer.ensure_ignored(root), "added")
    if scope == "project":
        move_out_of_shared_settings(root)
        say(
            "the hooks run this machine's Python by absolute path, so they are in the personal"
            f" {path.name} (read by Claude Code, not committed), not the shared settings.json:"
            " each teammate runs `claude-session install` once"
        )
    remove_plugin(claude_path)
    report_probe(written_command(installer.read_settings(path)), str(path))
    say("restart Claude Code (or open /hooks) so it loads the new hooks")


def say_gitignore(root: Path, done: installer.Ignored, verb: str) -> None:
    """What went into the project's .gitignore, and where; that the file was made, and why
    it matters little when the folder is no git repository."""
    if not done.added:
        return
    lines = " and ".join(done.added)
    if not done.created:
        say(f"{verb} {lines} to {done.path}")
        return
    made = "would create" if verb == "would add" else "created"
    why = (
        ""
        if installer.in_git_repository(root)
        else f" ({root} is not a git repository: the lines take effect if it becomes one)"
    )
    say(f"{made} {done.path} with {lines}{why}")


def move_out_of_shared_settings(root: Path) -> None:
    """Our hooks an older install wrote to the shared settings.json go (they are now in the
    local file): a teammate's Claude Code would run a path that is not on their machine."""
    shared = installer.settings_path("project", root)
    if not shared.exists():
        return
    current = installer.read_settings(shared)
    updated = installer.without_ours(current)
    if updated != current:
        installer.write_settings(shared, updated)
        say(f"removed claude-session's hooks from the shared {shared}")


def install_statusline(path: Path, dry_run: bool, force: bool) -> None:
    """Our statusLine into the settings file at `path`: never over someone else's without
    --force, probed before writing and through the written command after."""
    try:
        current = installer.read_settings(path)
        updated = statusline_setup.with_ours(current, force=force)
    except statusline_setup.ForeignStatusLine as exc:
        ours = output.escape_controls(" ".join(statusline_setup.argv()))
        raise click.ClickException(
            f"not installed, nothing written: {path} already has a status line:\n"
            f"  {output.escape_controls(str(exc))}\n"
            "Claude Code shows one status line. To replace it, add --force (the file is backed"
            " up first); to keep it, have your script pipe the same JSON on to ours and print"
            f" its line too:\n  {ours}"
        ) from exc
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    if dry_run:
        say_settings(updated, path, "claude-session's status line")
        return
    problem = statusline_setup.cannot_run()
    if problem is None:
        check, _ = statusline_setup.probe(statusline_setup.command())
        problem = None if check.ok else f"a probe through the command failed: {check.problem}"
    if problem:
        raise click.ClickException(f"not installed, nothing written: {problem}")
    if updated == current:
        say(f"the status line in {path} is already this one")
    else:
        backup = installer.write_settings(path, updated)
        replaced = current.get("statusLine") is not None
        say(f"{'replaced the' if replaced else 'installed the'} status line in {path}")
        if backup:
            say(f"previous settings saved as {backup}")
    written = installer.read_settings(path).get("statusLine", {}).get("command", "")
    if written != statusline_setup.command():  # read back: never run what else is there
        raise click.ClickException(
            f"written to {path}, but it now holds a status line claude-session did not write,"
            f" not run: {json.dumps(str(written)[:300])}"
        )
    check, line = statusline_setup.probe(str(written))
    if not check.ok:
        raise click.ClickException(f"written to {path}, but its command fails: {check.problem}")
    shown = output.escape_controls(line)
    say(
        f"checked: for a scratch project the written command printed {shown!r}"
        f" ({check.milliseconds:.0f} ms)"
    )
    say("Claude Code shows it from its next message (restart Claude Code if it does not)")


def install_plugin(root: Path, dry_run: bool, claude_path: str | None) -> None:
    folder = plugin.plugin_dir()
    if dry_run:
        say_settings(
            plugin.hooks_json(), folder / "hooks" / "hooks.json", f"the {plugin.PLUGIN} plugin"
        )
        return
    refuse_unless_runnable()
    plugin.write(folder)
    say(f"wrote the {plugin.PLUGIN} plugin to {folder}")
    remove_settings_hooks(root)
    hooks = json.loads((folder / "hooks" / "hooks.json").read_text())
    report_probe(written_command(hooks), str(folder / "hooks" / "hooks.json"))
    claude = plugin.find_claude(claude_path)
    if claude is None:
        raise click.ClickException(
            "no `claude` command on PATH (or --claude): register the plugin with\n"
            + plugin.commands_to_run(folder)
        )
    try:
        plugin.register(claude, folder)
    except plugin.ClaudeError as exc:
        raise click.ClickException(
            f"{exc}\nto register it by hand:\n{plugin.commands_to_run(folder)}"
        ) from exc
    say(f"registered {plugin.PLUGIN_ID} (user scope); restart Claude Code to load it")


@cli.command()
@settings_options(removing=True)
@plugin_options
@statusline_option
@json_option(UNINSTALL_SHAPE)
@click.pass_obj
def uninstall(
    root: Path,
    scope: str,
    dry_run: bool,
    as_plugin: bool,
    claude_path: str | None,
    with_mcp: bool,
    statusline: bool,
) -> None:
    """Remove exactly claude-session's hooks and status line from the scope's settings file
    (or the plugin; with --statusline, the status line alone; with --mcp, the MCP server
    too); anyone else's stay."""
    with reporting():
        uninstall_any(root, scope, dry_run, as_plugin, claude_path, with_mcp, statusline)


def uninstall_any(
    root: Path,
    scope: str,
    dry_run: bool,
    as_plugin: bool,
    claude_path: str | None,
    with_mcp: bool,
    statusline: bool,
) -> None:
    if with_mcp and not dry_run:
        claude = plugin.find_claude(claude_path)
        if claude and mcp_install.unregister(claude):
            say(f"removed the MCP server {mcp_install.NAME} (user scope)")
    if as_plugin:
        remove_plugin(claude_path)
        return
    paths = [installer.settings_path(scope, root)]
    if scope == "project":  # where `install` writes them, and where older installs did
        paths.insert(0, installer.hooks_settings_path(scope, root))
    acted = False
    for path in paths:
        had = installer.transport_of(installer.read_settings(path)) if path.exists() else None
        acted |= uninstall_from(path, statusline, dry_run)
        if not dry_run and not statusline:
            hook_transport.release(root, scope, claude_path, had, say)
    if not acted:  # one line, naming where it looked: not one per file it never wrote
        what = "status line" if statusline else "hooks or status line"
        looked = " or ".join(str(p) for p in paths)
        say(f"nothing to do: no claude-session {what} in {looked}")


def uninstall_from(path: Path, statusline: bool, dry_run: bool) -> bool:
    """Take ours out of one settings file (with `dry_run`, say what would go); whether
    anything of ours was there. A file without any is not mentioned (`uninstall_any` says
    once when no file had any)."""
    if not path.exists():
        if dry_run:
            plan_removal(path, None, [], False)
        return False
    current = installer.read_settings(path)
    without_hooks = current if statusline else installer.without_ours(current)
    updated = statusline_setup.without_ours(without_hooks)
    if dry_run:
        found = set() if statusline else {event for event, _ in installer.ours(current)}
        events = [e for e in installer.installed_events() if e in found]
        events += sorted(found - set(events))  # an event a newer install handled, say
        plan_removal(path, updated, events, updated != without_hooks)
        return bool(events) or updated != without_hooks
    removed = [
        what
        for what, gone in (
            ("hooks", without_hooks != current),
            ("status line", updated != without_hooks),
        )
        if gone
    ]
    if not removed:
        return False
    backup = installer.write_settings(path, updated)
    say(f"removed claude-session {' and '.join(removed)} from {path} (backup: {backup})")
    return True


def plan_removal(
    path: Path, updated: dict[str, Any] | None, events: list[str], status_line: bool
) -> None:
    """--dry-run of uninstall: what would go from `path`, in words (with --json, a `plan`
    entry, and `settings`: the first changed file as it would be)."""
    report = click.get_current_context().meta.get(REPORT)
    if report is not None:
        report.setdefault("plan", []).append(
            {"file": str(path), "exists": updated is not None, "hooks": events}
            | {"status_line": status_line}
        )
        if updated is not None and (events or status_line):
            report.setdefault("settings", updated)
    if updated is None:
        return
    parts = [f"handlers for {len(events)} events ({', '.join(events)})"] if events else []
    parts += ["status line"] if status_line else []
    if parts:
        say(
            f"would remove from {path}: claude-session's {' and its '.join(parts)}; anything"
            " else there stays"
        )
