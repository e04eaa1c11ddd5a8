"""`install --transport`: which way our hooks reach us, and registering the MCP hook server.

'auto' (the default) takes the mcp_tool transport where it can be had: a `claude` command to
register the MCP hook server with, no organization policy against our MCP server, and a server
that answers. Otherwise the hooks are commands, and the user is told why. 'mcp' insists (an
error instead of the fallback); 'command' never registers anything.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from ..services.setup import installer, mcp_install, plugin

CHOICES = ("auto", *installer.TRANSPORTS)
HELP = (
    "How hook events reach claude-session: mcp (the events of a running session go to an MCP"
    " hook server Claude Code starts for the session, no process per event), command (a process"
    " per event), or auto: mcp where a `claude` command can register the MCP hook server and no"
    " policy forbids it, else command."
)


def option(command: click.decorators.FC) -> click.decorators.FC:
    return click.option(
        "--transport",
        type=click.Choice(CHOICES),
        default="auto",
        show_default=True,
        help=HELP,
    )(command)


def choose(
    root: Path,
    scope: str,
    dry_run: bool,
    claude_path: str | None,
    wanted: str,
    say: Callable[[str], None],
) -> str:
    """The transport to write, with the MCP hook server registered for it (unless a dry run)."""
    claude = plugin.find_claude(claude_path)
    if wanted == "command":
        # an earlier mcp install's registration goes: nothing of ours would call it any more
        if not dry_run and claude and mcp_install.unregister_hooks(claude, root, scope):
            name = installer.MCP_HOOK_SERVER
            say(f"removed the MCP hook server {name}: the hooks are commands now")
        return "command"
    why = (
        "no `claude` command on PATH (or --claude) to register the MCP hook server with"
        if claude is None
        else mcp_install.policy_problem()
    )
    if why is None and claude is not None:
        if dry_run:
            scope_name = mcp_install.mcp_hook_server_scope(scope)
            say(
                f"would register the MCP hook server {installer.MCP_HOOK_SERVER}"
                f" ({scope_name} scope):"
                f" {' '.join(installer.mcp_hook_server_argv())}"
            )
            return "mcp"
        try:
            argv = mcp_install.register_hooks(claude, root, scope)
        except plugin.ClaudeError as exc:
            why = str(exc)
        else:
            scope_name = mcp_install.mcp_hook_server_scope(scope)
            say(
                f"registered the MCP hook server {installer.MCP_HOOK_SERVER} ({scope_name} scope):"
                f" {' '.join(argv)}; checked: it answered initialize"
            )
            return "mcp"
    if wanted == "mcp":
        raise click.ClickException(f"not installed, nothing written: {why}")
    say(f"hooks as commands (a process per event): {why}")
    return "command"


def release(
    root: Path, scope: str, claude_path: str | None, had: str | None, say: Callable[[str], None]
) -> None:
    """After our mcp_tool hooks are gone from a settings file: unregister the MCP hook server."""
    if had != "mcp":
        return
    claude = plugin.find_claude(claude_path)
    scope_name = mcp_install.mcp_hook_server_scope(scope)
    if claude is None:
        say(
            f"the MCP hook server {installer.MCP_HOOK_SERVER} is still registered"
            f" ({scope_name} scope):"
            " no `claude` command on PATH (or --claude) to remove it with; run `claude mcp"
            f" remove -s {scope_name} {installer.MCP_HOOK_SERVER}`"
        )
    elif mcp_install.unregister_hooks(claude, root, scope):
        say(f"removed the MCP hook server {installer.MCP_HOOK_SERVER} ({scope_name} scope)")
