"""`trust`: adopt this project's database and `.claude-session.json` as the user's own, after
showing what would be adopted (core/trust.py says what trust is and why a clone's are not)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from . import output
from .group import cli, json_option


@cli.command(name="trust")
@click.option("--revoke", is_flag=True, help="Stop trusting them.")
@click.option("--yes", is_flag=True, help="Adopt without asking (what is adopted is shown).")
@json_option(
    "an object: would_adopt (what is not trusted now: database, configuration), trusted"
    " (paths) or revoked (count), state (database, configuration)"
)
@click.pass_obj
def trust_command(root: Path, revoke: bool, yes: bool) -> None:
    """Trust this project's database and .claude-session.json as they are now (a clone's are
    never injected into the model nor run until you do). First shows what it would adopt: the
    rows of the database that would reach the model, the configuration's settings; asks on a
    terminal, needs --yes elsewhere."""
    from ..project import Project

    with Project(root) as project:
        if revoke:
            done = project.revoke_trust()
            result: dict[str, Any] = {"revoked": done.revoked}
        else:
            pending = project.pending_trust()
            if pending:
                output.tell(lambda: _show_adoption(pending))
            if pending and not yes:
                if not (sys.stdin.isatty() and sys.stdout.isatty()):
                    output.emit({"would_adopt": pending, "trusted": []}, text=lambda: None)
                    click.echo(
                        "not on a terminal: nothing trusted; pass --yes to adopt it", err=True
                    )
                    sys.exit(1)
                if not click.confirm("trust all of this as yours?", default=False):
                    output.echo_wrapped("nothing trusted")
                    return
            done = project.trust()
            result = {"would_adopt": pending, "trusted": list(done.trusted)}
        result["state"] = done.state
    output.emit(result, text=lambda: _say_trusted(result, revoke))


def _say_trusted(result: dict[str, Any], revoke: bool) -> None:
    if revoke:
        output.echo_wrapped(f"no longer trusted ({result['revoked']} records removed)")
    else:
        for path in result["trusted"]:
            output.echo_wrapped(f"trusted: {output.escape_controls(path)}")
        if not result["trusted"]:
            output.echo_wrapped("nothing to trust yet: no database and no .claude-session.json")


def _show_adoption(pending: dict[str, Any]) -> None:
    """What `trust` would adopt, escaped: it came from somewhere else."""
    database = pending.get("database")
    if database:
        output.echo_wrapped(f"not trusted now: {output.escape_controls(database['path'])}")
        output.echo_wrapped(f"  why: {output.escape_controls(database['why'])}")
        contents = ", ".join(
            f"{'?' if n is None else n} {name}" for name, n in database["holds"].items()
        )
        output.echo_wrapped(f"  it holds what would reach the model: {contents}")
    configuration = pending.get("configuration")
    if configuration:
        output.echo_wrapped(f"not trusted now: {output.escape_controls(configuration['path'])}")
        output.echo_wrapped(f"  why: {output.escape_controls(configuration['why'])}")
        for key, value in configuration["settings"].items():
            shown = json.dumps(value, ensure_ascii=True)[:200]
            output.echo_wrapped(
                f"  {output.escape_controls(str(key))} = {output.escape_controls(shown)}"
            )
