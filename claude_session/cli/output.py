"""The one place that decides how a command's outcome is shown: JSON or text for people.

A command hands its outcome to `emit` (or `reply`) as data: rows, dataclasses (the library's
records and answers), a dict of sections. Under --json (`json_flag`: commands never see it)
that data is printed as JSON; otherwise the command's own text (`text=`: a line, or what
prints it), else tables and key/value lists laid out by cli/tables. `tell` is for what only
people read (a plan before a question); `emit_stream` for rows read one by one (`--all`).

One format for each kind of value, in cli/cells and nowhere else:
- booleans: `yes`/`no` in tables, true/false in JSON (SQLite's 0/1 included, by column name);
- durations (`*_seconds`): `45s`, `1m05s`, `2h03m`, `3d04h` (`duration`);
- times (`*_at`, Unix seconds): JSON keeps the number; key/value sections show the local time
  with its zone (`2026-11-23 17:20:05 UTC+01:00`), tables the local time (the zone is in the
  table's title) or, where recency matters, an age (`3m ago`, `in 12m`).

On a terminal, tables fit its width without splitting a value (cli/tables: the least important
columns go first, a line under the table names them and the options that show them; only free
text folds, at spaces; when even the columns a table must keep do not fit, one record per
block). Off a
terminal (a pipe, a file), every line is whole whatever `COLUMNS` says: no wrapping, no
cutting, so a path can be copied as it is; tables print every column, each cell whole, as
`--wide` (`wide_option`) does on a terminal. Hints and problems wrap only on a terminal.

Recorded text is hostile input: every cell is a `rich.text.Text` (never parsed as markup, so
`[/tmp]` or `[link=...]` print as they are) and every control character (ESC, OSC, BEL, C1,
carriage return, bidirectional overrides) is shown escaped, never sent raw to the terminal.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import textwrap
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.text import Text

from ..core.terminal import escape_controls, escape_json
from . import cells, tables
from .tables import WIDE_WIDTH, Layout

__all__ = [
    "Layout",
    "console",
    "echo_text",
    "emit",
    "emit_pairs",
    "emit_plan",
    "emit_stream",
    "escape_controls",
    "json_chosen",
    "json_flag",
    "json_line",
    "json_wanted",
    "note",
    "plain",
    "print_table",
    "reply",
    "reset",
    "say",
    "tell",
    "to_json",
    "whole_rows",
    "wide_option",
    "wrap",
]

F = TypeVar("F", bound=Callable[..., Any])
# The one command a process runs sets these: --wide (`wide_option`), --json (`json_flag`).
# `cli` resets them first, for click's runner that runs many commands in one process.
SETTINGS = {"wide": False, "json": False}


def reset() -> None:
    SETTINGS.update(wide=False, json=False)


def json_flag(text: str) -> Callable[[F], F]:
    """--json (its help: `text`): the command's outcome as JSON. Commands never see it: they
    hand their outcome to `emit` or `reply`, which read it; `json_wanted` says it to a command
    whose conversation changes with it (a question is never asked of a script)."""

    def decorate(command: F) -> F:
        return click.option(
            "--json", is_flag=True, expose_value=False, callback=json_chosen, help=text
        )(command)

    return decorate


def json_chosen(ctx: click.Context, param: click.Parameter, value: object) -> object:
    """An option's callback that asks for JSON when it is given (--json, `--format json`);
    never turns it off, whatever order click reads the options in (`reset` does)."""
    if value is True or value == "json":
        SETTINGS["json"] = True
    return value


def json_wanted() -> bool:
    """Whether the running command prints JSON (--json)."""
    return SETTINGS["json"]


def wide_option(command: F) -> F:
    """--wide: every column of every table, each cell whole, however wide the lines get."""

    def remember(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
        SETTINGS["wide"] = bool(value)
        return bool(value)

    return click.option(
        "--wide",
        is_flag=True,
        expose_value=False,
        callback=remember,
        help="Print every column of the tables, each cell whole, however long the lines"
        " (without it, tables fit the terminal; off a terminal they are always whole).",
    )(command)


def console(err: bool = False) -> Console:
    """The console the CLI prints through (`err`: stderr's): a terminal's width; off a
    terminal, or under --wide, as wide as anything printed (rich leaves out colours and
    styles off a terminal, and `COLUMNS` does not fold lines that go to a pipe or a file)."""
    out = Console(highlight=False, soft_wrap=False, markup=False, stderr=err)
    if SETTINGS["wide"] or not out.is_terminal:
        return Console(highlight=False, soft_wrap=False, markup=False, stderr=err, width=WIDE_WIDTH)
    return out


def whole() -> bool:
    """Whether tables print every column, each cell whole: off a terminal (a script or a
    file reads them) or under --wide."""
    return SETTINGS["wide"] or not console().is_terminal


def whole_rows() -> bool:
    """Whether streamed rows (`--all`) keep every cell whole: as tables, `whole`."""
    return whole()


Said = str | Callable[[], None] | None


def emit(
    data: Any,
    title: str | None = None,
    layout: Layout | None = None,
    *,
    text: Said = None,
    line: bool = False,
) -> None:
    """The one switch between JSON and what people read: `data` (rows, dataclasses, or a dict
    of sections holding them, dicts or scalars) as JSON under --json (`line`: on one line, for
    a script reading a stream as it comes); else `text` (a line, or what prints the people's
    view), else `data` as tables and key/value lists."""
    data = plain(data)
    if SETTINGS["json"]:
        print(json_line(data) if line else to_json(data), flush=line)
        return
    if isinstance(text, str):
        click.echo(escape_controls(text))
        return
    if text is not None:
        text()
        return
    out = console()
    if isinstance(data, dict) and any(isinstance(v, dict | list) for v in data.values()):
        for name, section in data.items():
            _section(out, name, section, layout)
    else:
        _section(out, title or "", data, layout)


def reply(data: Any, text: Said) -> None:
    """A command's outcome: `data` as JSON with --json, else `text` for people: one line
    (escaped: it may quote what was recorded or typed), or what prints it."""
    emit(data, text=text)


def tell(text: Said) -> None:
    """What people read and a script does not (a plan before a question, a word of progress):
    nothing under --json, where the outcome `emit` prints says it all."""
    if not SETTINGS["json"]:
        emit(None, text=text)


def emit_plan(data: Any, text: Said, *, final: bool) -> None:
    """A plan said before acting on it (prune, purge, revert): people always read it; a
    script gets it as the outcome only when it is `final` (a dry run, or a question it cannot
    answer ends the command), else the outcome of what is then done."""
    if final:
        emit(data, text=text)
    else:
        tell(text)


def plain(data: Any) -> Any:
    """Dataclasses (the library's records and answers) as the dicts JSON and tables show."""
    if dataclasses.is_dataclass(data) and not isinstance(data, type):
        return dataclasses.asdict(data)
    if isinstance(data, dict):
        return {k: plain(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [plain(v) for v in data]
    return data


def _section(out: Console, name: str, section: Any, layout: Layout | None = None) -> None:
    label = name.replace("_", " ")
    if isinstance(section, list) and section and all(isinstance(r, dict) for r in section):
        print_table(out, section, label, layout)
    elif isinstance(section, list):
        shown = ", ".join(cells.cell_value("", v) for v in section) if section else "none"
        say(out, f"{label}: {shown}")
    elif isinstance(section, dict):
        emit_pairs(out, label, section)
    else:
        out.print(
            Text.assemble((escape_controls(label), "bold"), ": ", cells.cell(name, section, True))
        )


def emit_pairs(out: Console, label: str, values: dict[str, Any]) -> None:
    """A titled key/value list (tables.pairs) printed."""
    _print(out, tables.pairs(label, values, out.width))


def print_table(
    out: Console,
    rows: list[dict[str, Any]],
    label: str,
    layout: Layout | None = None,
    *,
    full: bool = False,
    tell_dropped: bool = True,
) -> list[str]:
    """A table fit to the console (or its records as blocks: cli/tables), then a line naming
    the columns it had no room for and what shows them: a column is never dropped without a
    word. Returns those columns (`tell_dropped=False`: the caller says them, once). `full`:
    as `tables.table`'s."""
    shown, dropped = tables.table(rows, label, out.width, layout, full)
    _print(out, shown)
    if dropped and tell_dropped:
        say_dropped(out, dropped)
    return dropped


def _print(out: Console, shown: tables.Shown) -> None:
    for part in shown:
        if isinstance(part, Text):  # a value wider than the terminal: the terminal wraps it
            out.print(part, no_wrap=True, overflow="ignore", crop=False)
        else:
            out.print(part)


def say_dropped(out: Console, dropped: list[str]) -> None:
    say(
        out,
        f"(hidden at {out.width} columns: {', '.join(dropped)} — {reveal()} shows them)",
        style="dim",
    )


def reveal() -> str:
    """The options of the running command that print every column: --wide, --json."""
    ctx = click.get_current_context(silent=True)
    options = {o for p in ctx.command.params for o in p.opts} if ctx else set()
    found = [flag for flag in ("--wide", "--json") if flag in options]
    return " or ".join(found) or "a wider terminal"


BATCH = 200  # rows laid out as one table by `--all` on a terminal


def emit_stream(rows: Iterable[Any], layout: Layout | None = None) -> None:
    """Every row as it is read: a JSON array written element by element; off a terminal (or
    with --wide), tab-separated lines under a header, each cell whole, where a script reads
    them; on a terminal, tables of up to BATCH rows each, every cell whole, laid out as every
    table is (no value split: the least important columns left out and named once, under the
    last), at most BATCH rows held."""
    out = sys.stdout
    first = True
    layout = layout or Layout()
    if SETTINGS["json"]:
        out.write("[")
        for row in map(plain, rows):
            out.write(("\n  " if first else ",\n  ") + to_json(row).replace("\n", " "))
            first = False
        out.write("\n]\n" if not first else "]\n")
        out.flush()
        return
    if not whole_rows():
        _stream_tables(rows, layout)
        return
    columns: list[str] = []
    for row in rows:
        row = cells.marked(layout.row(plain(row)))
        if first:
            columns = list(row)
            out.write("\t".join(c.replace("_", " ") for c in columns) + "\n")
            first = False
        texts = (cells.cell_text(c, row.get(c), True) for c in columns)
        out.write("\t".join(text.replace("\t", " ") for text in texts) + "\n")
    if first:
        out.write("none\n")
    out.flush()


def _stream_tables(rows: Iterable[Any], layout: Layout) -> None:
    """`--all` on a terminal: the rows as tables of BATCH rows, each printed as it fills and
    laid out as any table is (cli/tables); the columns any of them left out are named once,
    under the last."""
    out = console()
    batch: list[dict[str, Any]] = []
    dropped: dict[str, None] = {}
    shown = False

    def flush() -> None:
        hidden = print_table(out, batch, "", layout, full=True, tell_dropped=False)
        dropped.update(dict.fromkeys(hidden))
        batch.clear()

    for row in rows:
        batch.append(plain(row))
        if len(batch) >= BATCH:
            flush()
            shown = True
    if batch:
        flush()
        shown = True
    if not shown:
        out.print("none")
    if dropped:
        say_dropped(out, list(dropped))


def to_json(data: Any) -> str:
    """JSON for a terminal or a pipe: 0/1 of yes/no columns as false/true; every control
    character escaped (`escape_json`: C0 by `json`, DEL, C1 and bidi marks after it)."""
    return escape_json(json.dumps(_booleans(data), indent=2, ensure_ascii=False, default=str))


def json_line(data: Any, separators: tuple[str, str] | None = None) -> str:
    """One JSON value on one line, as it is (no yes/no columns read), controls escaped as
    `to_json` escapes them: a line of an export file, a record in a comment."""
    return escape_json(json.dumps(data, ensure_ascii=False, separators=separators))


def _booleans(data: Any, key: str = "") -> Any:
    if isinstance(data, dict):
        return {k: _booleans(v, str(k)) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_booleans(v, key) for v in data]
    if key in cells.BOOLEANS and not isinstance(data, bool) and data in (0, 1):
        return bool(data)
    return data


def wrap(line: str, width: int, indent: int = 4) -> list[str]:
    """`line` (escaped) in lines of at most `width`, the continuation lines indented `indent`
    past its own indentation: a hint or a path is folded, never cut."""
    text = escape_controls(line)
    lead = len(text) - len(text.lstrip(" "))
    hang = min(lead + indent, max(width // 2, 1))
    width = max(width, hang + 10)
    parts = text.split("`")
    if len(parts) % 2 and len(parts) > 1:
        # A command in backticks (`claude-session trust`) is kept on one line when it fits
        # one: its spaces are unbreakable (NUL: escaped text holds none) while it is wrapped.
        glued = "`".join(p.replace(" ", "\0") if n % 2 else p for n, p in enumerate(parts))
        found = _wrap(glued, width, hang, whole_words=True)
        if all(len(part) <= width for part in found):
            return [part.replace("\0", " ") for part in found] or [""]
    return _wrap(text, width, hang, whole_words=False) or [""]


def _wrap(text: str, width: int, hang: int, whole_words: bool) -> list[str]:
    return textwrap.wrap(
        text,
        width=width,
        subsequent_indent=" " * hang,
        break_long_words=not whole_words,
        break_on_hyphens=False,
        drop_whitespace=True,
    )


def say(out: Console, line: str, indent: int = 4, style: str = "") -> None:
    """One line for people (a hint, a problem, a fix), wrapped at the console's width."""
    for part in wrap(line, out.width, indent):
        out.print(Text(part, style=style), no_wrap=True, overflow="ignore", crop=False)


def note(line: str) -> None:
    """A line for people on stderr (how many more rows, what a filter hides), wrapped at the
    width of the terminal it goes to (whole off a terminal): stdout stays the data."""
    for part in wrap(line, console(err=True).width):
        click.echo(part, err=True)


def echo_wrapped(line: str, indent: int = 4, err: bool = False) -> None:
    """One line of recorded text, escaped and, on a terminal, folded at its width, its
    continuation lines indented under it (whole off a terminal): nothing is cut. `err`: on
    stderr (what is said about an output, so that the output itself stays exact)."""
    for part in wrap(line, console(err=err).width, indent):
        print(part, file=sys.stderr if err else sys.stdout)


def echo_text(text: str, fold: bool = True) -> None:
    """Print multi-line recorded text (the restored context) with its controls escaped. On a
    terminal each line is folded at its width; piped, or with `fold=False` (a patch), every
    line is printed whole, so a file holds exactly the text (`restore > context.txt`)."""
    out = console()
    escaped = escape_controls(text, keep_newlines=True)
    if not fold or not out.is_terminal:
        Console(highlight=False, soft_wrap=True, markup=False).print(Text(escaped))
        return
    for line in escaped.split("\n"):
        for part in wrap(line, out.width, 2) if line.strip() else [""]:
            print(part)
