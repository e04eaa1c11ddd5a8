"""`state get|set|unset|list|history`: the project's key/value state and who changed what."""

from __future__ import annotations

import calendar
import difflib
import getpass
import time
from pathlib import Path

import click

from ..core import db
from ..core import state as project_state
from . import lookup, output
from .group import cli, json_option, opened


def _who() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown user"


@cli.group()
def state() -> None:
    """The project's state (project_state) and the history of every change."""


@state.command(name="get")
@click.argument("key")
@json_option("an object: key, value")
@click.pass_obj
def state_get(root: Path, key: str, as_json: bool) -> None:
    """Print KEY's value (exit 1 when it is not set)."""
    with opened(root) as conn:
        if not project_state.exists(conn, key):
            known = [str(r["key"]) for r in project_state.all_values(conn)]
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise click.ClickException(f"no state key {key!r}{hint}")
        value = project_state.get(conn, key)
    output.reply({"key": key, "value": value}, value or "", as_json)


@state.command(name="set")
@click.argument("key")
@click.argument("value")
@json_option("an object: key, value, changed")
@click.pass_obj
def state_set(root: Path, key: str, value: str, as_json: bool) -> None:
    """Set KEY to VALUE (recorded in the history as your command)."""
    with opened(root, create=True, ingest=True) as conn, db.Immediate(conn):
        changed = project_state.set_values(
            conn, {key: value}, time.time(), f"claude-session state set (by {_who()})"
        )
    output.reply(
        {"key": key, "value": value, "changed": bool(changed)},
        f"{key} {'set' if changed else 'unchanged'}",
        as_json,
    )


@state.command(name="unset")
@click.argument("key")
@json_option("an object: key, removed")
@click.pass_obj
def state_unset(root: Path, key: str, as_json: bool) -> None:
    """Remove KEY (recorded in the history)."""
    with opened(root, ingest=True) as conn, db.Immediate(conn):
        gone = project_state.delete(
            conn, key, time.time(), f"claude-session state unset (by {_who()})"
        )
    if not gone:
        raise click.ClickException(f"no state key {key!r}")
    output.reply({"key": key, "removed": True}, f"{key} removed", as_json)


@state.command(name="list")
@json_option("a list of keys: key, value, updated_at (Unix seconds)")
@output.wide_option
@click.pass_obj
def state_list(root: Path, as_json: bool) -> None:
    """Every key with its value and when it was last written."""
    with opened(root) as conn:
        found = project_state.all_values(conn)
    for row in found:  # SQLite's UTC text, as Unix seconds like every other time we print
        row["updated_at"] = _unix(row["updated_at"])
    output.emit(found, "json" if as_json else "table", title="state")


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
def state_history(root: Path, key: str | None, limit: int, as_json: bool) -> None:
    """Every change (of KEY, or of all keys), newest first: old, new, when, and the cause."""
    with opened(root) as conn:
        found = project_state.history(conn, key, limit + 1)  # one more: are there older?
        if key and not found and not project_state.exists(conn, key):
            known = [str(r["key"]) for r in project_state.all_values(conn)]
            raise lookup.unknown("state key", key, known)
    older = len(found) > limit
    output.emit(found[:limit], "json" if as_json else "table", "state history", HISTORY)
    if older:
        output.note(f"older changes not shown: `--limit {min(limit * 10, 100_000)}` shows more")
