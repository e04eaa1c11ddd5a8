"""`state get|set|unset|list|history`: the project's key/value state and who changed what."""

from __future__ import annotations

import calendar
import dataclasses
import difflib
import time
from pathlib import Path

import click

from ..project import Project
from . import lookup, output
from .group import json_option, listing_group, require_database


@listing_group(
    "list", "as `state list --json`: a list of keys: key, value, updated_at (Unix seconds)"
)
def state() -> None:
    """The project's state (project_state) and the history of every change. Without a
    command: `state list`."""


@state.command(name="get")
@click.argument("key")
@json_option("an object: key, value")
@click.pass_obj
def state_get(root: Path, key: str) -> None:
    """Print KEY's value (exit 1 when it is not set)."""
    require_database(root, reading=False)  # before the first session no key is set: exit 1
    with Project(root) as project:
        project.refresh(transcripts=False, spool=False)
        found = project.state_value(key)
        if found is None:
            known = [v.key for v in project.state()]
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise click.ClickException(f"no state key {key!r}{hint}")
    output.reply({"key": key, "value": found.value}, found.value or "")


@state.command(name="set")
@click.argument("key")
@click.argument("value")
@json_option("an object: key, value, changed")
@click.pass_obj
def state_set(root: Path, key: str, value: str) -> None:
    """Set KEY to VALUE (recorded in the history as your command)."""
    with Project(root) as project:
        done = project.set_state(key, value)
    changed = bool(done.changed)
    output.reply(
        {"key": key, "value": value, "changed": changed},
        f"{key} {'set' if changed else 'unchanged'}",
    )


@state.command(name="unset")
@click.argument("key")
@json_option("an object: key, removed")
@click.pass_obj
def state_unset(root: Path, key: str) -> None:
    """Remove KEY (recorded in the history)."""
    with Project(root) as project:
        project.unset_state(key)
    output.reply({"key": key, "removed": True}, f"{key} removed")


@state.command(name="list")
@json_option("a list of keys: key, value, updated_at (Unix seconds)")
@output.wide_option
@click.pass_obj
def state_list(root: Path) -> None:
    """Every key with its value and when it was last written."""
    require_database(root)
    with Project(root) as project:
        project.refresh(transcripts=False, spool=False)
        found = [dataclasses.asdict(v) for v in project.state()]
    for row in found:  # SQLite's UTC text, as Unix seconds like every other time we print
        row["updated_at"] = _unix(row["updated_at"])
    output.emit(found, title="state")


def _unix(text: object) -> object:
    """`2026-11-23 17:20:05` (UTC, as `datetime('now')` writes it) as Unix seconds."""
    try:
        return float(calendar.timegm(time.strptime(str(text), "%Y-%m-%d %H:%M:%S")))
    except ValueError:
        return text


# A change is read for its key (wrapped, never cut), the new value and its cause; the old value
# is the previous row's new one, the first to go when the width is short.
HISTORY = output.Layout({"key": (1, 24), "old_value": (5, 9), "cause": (3, 10)})


@state.command(name="history")
@click.argument("key", required=False)
@click.option("--limit", type=click.IntRange(1, 100_000), default=50, show_default=True)
@json_option("a list of changes: id, key, old_value, new_value, changed_at, cause")
@output.wide_option
@click.pass_obj
def state_history(root: Path, key: str | None, limit: int) -> None:
    """Every change (of KEY, or of all keys), newest first: old, new, when, and the cause."""
    require_database(root)
    with Project(root) as project:
        project.refresh(transcripts=False, spool=False)
        found = [dataclasses.asdict(c) for c in project.state_history(key, limit + 1)]
        if key and not found:  # one more: are there older?
            known = [v.key for v in project.state()]
            if key not in known:
                raise lookup.unknown("state key", key, known)
    older = len(found) > limit
    output.emit(found[:limit], "state history", HISTORY)
    if older:
        output.note(f"older changes not shown: `--limit {min(limit * 10, 100_000)}` shows more")
