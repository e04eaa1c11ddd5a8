"""What the `memory` commands share: the group, the user-level database, ids as shown
(`12`, `g12`), and a memory found by its id."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import apsw
import click

from ..core import memories, recall
from ..core.paths import db_path
from ..project.memory_reads import labelled
from .group import hooks_installed, listing_group, opened


@contextmanager
def global_db(create: bool) -> Iterator[apsw.Connection | None]:
    conn = recall.open_global(create=create)
    try:
        yield conn
    finally:
        if conn is not None:
            conn.close()


def parse_id(text: str) -> tuple[str, int]:
    found = memories.parse_label(text)
    if found is None:
        raise click.ClickException(f"{text!r} is not a memory id (12 for this project, g12 global)")
    return found


@listing_group("list", "as `memory list --json`: a list of memories, each with its fields")
def memory() -> None:
    """Memories: facts, learnings, preferences, context and skills, for this project or all.
    Without a command: `memory list`."""


def trusted_text(value: object) -> str:
    """A memory's `trusted` as a person reads it."""
    return "yes" if value == 1 else "no" if value == 0 else "unknown"


@contextmanager
def holding(root: Path, scope: str) -> Iterator[apsw.Connection]:
    if scope == "global":
        with global_db(create=False) as conn:
            if conn is None:
                raise click.ClickException("there are no global memories yet")
            yield conn
    else:
        with opened(root) as conn:
            yield conn


def found_row(conn: apsw.Connection, scope: str, memory_id: int, text: str) -> dict[str, Any]:
    row = memories.get(conn, memory_id)
    if row is None:
        raise click.ClickException(f"no memory {text!r} (see `claude-session memory list`)")
    return labelled(scope, [row])[0]


def has_project_database(root: Path) -> bool:
    """Whether this project has a database; when not, says so on stderr (a read never makes
    one), and the global memories are all there is."""
    if os.path.exists(db_path(str(root))):
        return True
    hooks = hooks_installed(root)
    said = (
        "claude-session: hooks installed, waiting for the first session"
        if hooks is not None
        else f"no claude-session database at {db_path(str(root))}"
    )
    click.echo(f"{said}: global memories only", err=True)
    return False
