"""Listings at any size: a page of the newest rows by default, with a line saying how many
more there are, and how many the default filter hides and which option shows them (never a
silent "none"); `--all` streams every row as it is read: off a terminal as tab-separated
lines, each cell whole, where a script reads them; on a terminal as aligned tables of a few
hundred rows at a time, cells folded, never cut."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import click

from ..core.readings import PAGE
from ..project import Listing
from . import cells, output

__all__ = ["PAGE", "emit_page", "limit_option", "show_listing", "stream_rows", "tell_hidden"]


def limit_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """--limit: how many of the newest rows a listing shows (without --all)."""
    return click.option(
        "--limit",
        type=click.IntRange(1, None),
        default=PAGE,
        show_default=True,
        help="How many of the newest rows to show (--all: every row, streamed).",
    )(command)


def emit_page(
    page: Listing[dict[str, Any]],
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
        output.note(
            f"{page.more:,} more not shown (of {page.total:,}): `claude-session {command}"
            " --all` lists every one, `--limit N` more of the newest"
        )


def show_listing(
    page: Callable[[], Listing[Any]],
    each: Callable[[], Iterator[Any]],
    every: bool,
    as_json: bool,
    title: str,
    command: str,
    hide: tuple[str, ...] = (),
    reveal: str = "",
) -> None:
    """A listing read through the library API (one of `Project`'s `*_page` methods and its
    `each_*`): every row streamed (`--all`), or the newest page with what more there is and
    what its default filter hides (`reveal`: the command line that shows those; default, the
    command with --all). The rows are the dataclasses' fields, the names `--json` prints."""
    if every:
        stream_rows((dataclasses.asdict(row) for row in each()), as_json, hide)
        return
    found = page()
    rows = Listing([dataclasses.asdict(row) for row in found.rows], found.total)
    emit_page(rows, as_json, title, command, hide)
    tell_hidden(found.hidden, found.hidden_what, reveal or f"{command} --all")


def tell_hidden(count: int, what: str | None, reveal: str) -> None:
    """On stderr (stdout stays the data), how many rows the listing's default filter left
    out and what shows them: `2 hidden: released claims (`claude-session claims --all` shows
    them)`."""
    if count and what is not None:
        output.note(f"{count:,} hidden: {what} (`claude-session {reveal}` shows them)")


BATCH = 200  # rows laid out as one table by `--all` on a terminal


def stream_rows(rows: Iterable[dict[str, Any]], as_json: bool, hide: tuple[str, ...] = ()) -> None:
    """Every row as it is read: a JSON array written element by element; off a terminal (or
    with --wide), tab-separated lines under a header, each cell whole, where a script reads
    them; on a terminal, aligned tables of up to BATCH rows each, every column kept and every
    cell folded within its width, never cut (at most BATCH rows are held at a time)."""
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
    if not output.whole_rows():
        _stream_tables(rows, hide)
        return
    columns: list[str] = []
    for row in rows:
        row = cells.marked(_without(row, hide))
        if first:
            columns = list(row)
            out.write("\t".join(c.replace("_", " ") for c in columns) + "\n")
            first = False
        texts = (cells.cell_text(c, row.get(c), True) for c in columns)
        out.write("\t".join(text.replace("\t", " ") for text in texts) + "\n")
    if first:
        out.write("none\n")
    out.flush()


def _stream_tables(rows: Iterable[dict[str, Any]], hide: tuple[str, ...]) -> None:
    """`--all` on a terminal: the rows as tables of BATCH rows, each printed as it fills."""
    out = output.console()
    batch: list[dict[str, Any]] = []
    shown = False

    def flush() -> None:
        output.print_table(out, batch, "", keep=True)
        batch.clear()

    for row in rows:
        batch.append(_without(row, hide))
        if len(batch) >= BATCH:
            flush()
            shown = True
    if batch:
        flush()
        shown = True
    if not shown:
        out.print("none")


def _without(row: dict[str, Any], hide: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in hide}
