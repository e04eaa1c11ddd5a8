"""`claude-session statusline`: the status line by hand, or as JSON for a script.

It calls the very function the fast entry runs for Claude Code (`core.statusline.compute`):
the same input, project search, read-only opening and line. Only the start-up differs (click,
~100 ms), which is why Claude Code is given the fast entry instead (`install --statusline`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ..core import statusline
from . import output
from .group import cli


@cli.command(name="statusline")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    callback=output.json_chosen,
    help="The line, or what it is made of as JSON.",
)
@output.json_flag(
    "What the line is made of, as JSON (the same as --format json): project, database,"
    " session_id, agents_running, subagent_types (type, running), contested_files,"
    " open_errors, top_ladder_step, cost_usd, cost_from, slow_hooks (hooks whose p90 run, by"
    " Claude Code's clock, passes hook_budget_ms), line, problem"
)
@click.option("--session", help="Session id (default: the one in the JSON on stdin, if any).")
@click.option(
    "--color/--no-color",
    default=None,
    help="ANSI colours (default: on a terminal, unless NO_COLOR is set).",
)
@click.pass_context
def statusline_command(
    ctx: click.Context, fmt: str, session: str | None, color: bool | None
) -> None:
    """One short line about the project: the session's cost, agents running, contested
    files, open errors (`cs: $1.24 · 3 agents running · 2 open errors`).

    Reads Claude Code's statusLine JSON from stdin when stdin is not a terminal; prints nothing
    where there is no database (and never creates one)."""
    explicit = ctx.parent.params.get("project") if ctx.parent else None
    if color is None:
        color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    result = statusline.compute(
        statusline.read_stdin(),
        start=str(Path(explicit).resolve()) if explicit else None,
        session_id=session,
        color=color and not output.json_wanted(),
    )
    found = result.status
    output.emit(
        {
            "project": result.root,
            "database": result.database,
            "session_id": result.session_id,
            "agents_running": found.agents if found else None,
            "subagent_types": [{"type": t, "running": n} for t, n in found.types] if found else [],
            "contested_files": found.contested if found else [],
            "open_errors": found.open_errors if found else None,
            "top_ladder_step": found.top_step if found and found.open_errors else None,
            "cost_usd": found.cost if found else None,
            "cost_from": found.cost_from if found else None,
            "slow_hooks": found.slow_hooks if found else None,
            "line": result.line,
            "problem": result.problem,
        },
        text=lambda: click.echo(result.line) if result.line else None,  # its colours are ours
    )
