"""The `claude-session` command: thin click commands over `Project` (the library API), the
services that act on the workspace (time travel, setup, cost's prices, telemetry), and
`output`, the one place that decides how an outcome is shown (JSON or text).

The group, and what the commands share, are in `group`; the commands live beside it, by what
they are for: `report_commands` (what was recorded), `admin_commands` (doctor, config, daemon,
fail, prune, ingest, demo), `setup_commands`, `timetravel_commands`, `memory_commands`,
`state_commands`, `statusline_command`, `cost_commands`, `live_commands` (these last ones load
when one of their commands runs).
"""

from __future__ import annotations

import sys

import click

# What was recorded and the daily commands register on `cli` now; the others when they run
# (Group.MODULES).
from . import admin_commands, report_commands
from .group import (
    Group,
    cli,
    find_root,
    format_option,
    hoist_project,
    json_option,
    opened,
    storage_fault,
    storage_problem,
)

__all__ = [
    "Group",
    "cli",
    "find_root",
    "format_option",
    "hoist_project",
    "json_option",
    "main",
    "opened",
    "storage_problem",
]

assert admin_commands and report_commands


def main() -> None:
    """The installed command: click's own errors as click prints them; a database or file
    system that refuses (full, read-only, locked past every deadline, damaged) as one clear
    line and exit 1, never a traceback (`Group.invoke` says it for every command; this is for
    what fails before or after one runs)."""
    try:
        cli.main(prog_name="claude-session")
    except Exception as exc:
        found = storage_fault(exc)
        if found is None:
            raise
        click.echo(f"claude-session: error: {storage_problem(found)}", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
