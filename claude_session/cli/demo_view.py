"""`demo` for people, from its JSON result alone: what was played, `status`, and the block
SessionStart put back after the compaction. tools/demo_image.py draws the README's picture
through this same function, so the picture and the demo cannot disagree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from . import cells, output, status_view


def show(result: dict[str, Any]) -> None:
    project = Path(result["project"])
    played, composed, failed = result["played"], result["composed"], result["hook_failures"]
    made = f", {composed} composed from its recorded payloads" if composed else ""
    output.echo_wrapped(
        f"played {played} Claude Code 2.1.330 events ({played - composed} recorded from the"
        f" real CLI{made}) through the hooks installed in"
        f" {project / '.claude' / 'settings.local.json'} ({len(failed)} hook failures)"
    )
    click.echo()
    status_view.show(result["status"])
    if result["compacted_at"] is not None:
        click.echo()
        output.echo_wrapped(
            f"What SessionStart put back into the model's context after session"
            f" {result['session_id']} was compacted ({cells.local_time(result['compacted_at'])}),"
            " as the model got it:"
        )
        click.echo()
        output.echo_text(result["context"])
    if result["kept"]:
        click.echo(f"\nscratch project kept: {project}")
    elif result["deleted"]:
        click.echo(f"\nscratch project deleted: {project.parent} (keep it with --keep)")
    else:
        click.echo(f"\nscratch project could not be deleted entirely: {project.parent}")
