"""Listings at any size: a page of the newest rows by default, with a line saying how many
more there are, and how many the default filter hides and which option shows them (never a
silent "none"); `--all` streams every row as it is read (`output.emit_stream`)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import click

from ..core.readings import PAGE
from ..project import Listing
from . import output

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
    page: Listing[Any],
    title: str,
    command: str,
    layout: output.Layout | None = None,
) -> None:
    """The page as a table (or JSON), then, on stderr, how many more matched and how to see
    them: stdout stays the data alone."""
    output.emit(page.rows, title=title, layout=layout)
    if page.more:
        output.note(
            f"{page.more:,} more not shown (of {page.total:,}): `claude-session {command}"
            " --all` lists every one, `--limit N` more of the newest"
        )


def show_listing(
    page: Callable[[], Listing[Any]],
    each: Callable[[], Iterator[Any]],
    every: bool,
    title: str,
    command: str,
    hide: tuple[str, ...] = (),
    reveal: str = "",
) -> None:
    """A listing read through the library API (one of `Project`'s `*_page` methods and its
    `each_*`): every row streamed (`--all`), or the newest page with what more there is and
    what its default filter hides (`reveal`: the command line that shows those; default, the
    command with --all). The rows are the dataclasses' fields, the names `--json` prints."""
    layout = output.Layout(hide=hide)
    if every:
        stream_rows(each(), title, layout)
        return
    found = page()
    emit_page(found, title, command, layout)
    tell_hidden(found.hidden, found.hidden_what, reveal or f"{command} --all")


def stream_rows(rows: Iterator[Any], title: str, layout: output.Layout) -> None:
    """Every row as it is read (`--all`); none at all said as the page says it (`errors:
    none`, `[]` under --json), never a bare `none` that names nothing."""
    first = next(rows, None)
    if first is None:
        output.emit([], title=title, layout=layout)
        return
    output.emit_stream(itertools.chain([first], rows), layout)


def tell_hidden(count: int, what: str | None, reveal: str) -> None:
    """On stderr (stdout stays the data), how many rows the listing's default filter left
    out and what shows them: `2 hidden: released claims (`claude-session claims --all` shows
    them)`."""
    if count and what is not None:
        output.note(f"{count:,} hidden: {what} (`claude-session {reveal}` shows them)")
