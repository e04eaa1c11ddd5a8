"""Listings at any size: a page of the newest rows by default, with a line saying how many
more there are; `--all` streams every row as it is read (none held, no table to lay out)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any

import apsw
import click

from ..services import queries
from . import output

__all__ = ["emit_page", "limit_option", "show", "stream_rows"]


def limit_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """--limit: how many of the newest rows a listing shows (without --all)."""
    return click.option(
        "--limit",
        type=click.IntRange(1, None),
        default=queries.PAGE,
        show_default=True,
        help="How many of the newest rows to show (--all: every row, streamed).",
    )(command)


def emit_page(
    page: queries.Page,
    as_json: bool,
    title: str,
    command: str,
    hide: tuple[str, ...] = (),
) -> None:
    """The page as a table (or JSON), then, on stderr, how many more matched and how to see
    them: stdout stays the data alone."""
    rows = page.rows if as_json else [_without(row, hide) for row in page.rows]
    output.emit(rows, "json" if as_json else "table", title=title)
    if page.more:
        click.echo(
            f"{page.more:,} more not shown (of {page.total:,}): `claude-session {command}"
            " --all` lists every one, `--limit N` more of the newest",
            err=True,
        )


def show(
    conn: apsw.Connection,
    query: queries.Query,
    every: bool,
    limit: int,
    as_json: bool,
    title: str,
    command: str,
    hide: tuple[str, ...] = (),
) -> None:
    """A listing: every row streamed (`--all`), or the newest page with what more there is."""
    if every:
        stream_rows(queries.stream(conn, query), as_json, hide)
        return
    emit_page(queries.page(conn, query, limit), as_json, title, command, hide)


def stream_rows(rows: Iterable[dict[str, Any]], as_json: bool, hide: tuple[str, ...] = ()) -> None:
    """Every row as it is read: a JSON array written element by element, or tab-separated
    lines under a header (cells escaped and formatted as in the tables, each line within the
    width like a table's)."""
    out = sys.stdout
    first = True
    if as_json:
        out.write("[")
        for row in rows:
            out.write(("\n  " if first else ",\n  ") + output.to_json(row).replace("\n", " "))
            first = False
        out.write("\n]\n" if not first else "]\n")
        out.flush()
        return
    columns: list[str] = []
    width = output.console().width  # like a table: within the terminal, COLUMNS or 80
    for row in rows:
        row = _without(row, hide)
        if first:
            columns = list(row)
            out.write(_fit("\t".join(c.replace("_", " ") for c in columns), width) + "\n")
            first = False
        cells = (output.cell_text(c, row.get(c)) for c in columns)
        out.write(_fit("\t".join(cell.replace("\t", " ") for cell in cells), width) + "\n")
    if first:
        out.write("none\n")
    out.flush()


def _fit(line: str, width: int) -> str:
    """A streamed line within the width (tabs count as one column here): the full rows are
    in --json."""
    return line if len(line) <= width else line[: width - 1] + "…"


def _without(row: dict[str, Any], hide: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in hide}
