"""The one place that turns query results into terminal output: JSON or rich tables.

Rows are plain dicts. One format for each kind of value, in cli/cells and nowhere else:
- booleans: `yes`/`no` in tables, true/false in JSON (SQLite's 0/1 included, by column name);
- durations (`*_seconds`): `45s`, `1m05s`, `2h03m`, `3d04h` (`duration`);
- times (`*_at`, Unix seconds): JSON keeps the number; key/value sections show the local time
  with its zone (`2026-11-23 17:20:05 UTC+01:00`), tables the local time (the zone is in the
  table's title) or, where recency matters, an age (`3m ago`, `in 12m`).

On a terminal, tables fit its width: every column has a priority; the least important go
first (a line under the table names them, and the options that show them), then the widest
are narrowed, their cells folded onto more lines, never cut. Headers are never cut. Off a
terminal (a pipe, a file), every line is whole whatever `COLUMNS` says: no wrapping, no
cutting, so a path can be copied as it is; tables print every column, each cell whole, as
`--wide` (`wide_option`) does on a terminal. Hints and problems wrap only on a terminal.

Recorded text is hostile input: every cell is a `rich.text.Text` (never parsed as markup, so
`[/tmp]` or `[link=...]` print as they are) and every control character (ESC, OSC, BEL, C1,
carriage return, bidirectional overrides) is shown escaped, never sent raw to the terminal.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..core.terminal import escape_controls, escape_json
from . import cells

FORMATS = ("table", "json")
__all__ = [
    "FORMATS",
    "console",
    "echo_text",
    "emit",
    "emit_pairs",
    "escape_controls",
    "json_line",
    "note",
    "print_table",
    "say",
    "to_json",
    "whole_rows",
    "wide_option",
    "wrap",
]

# name: (priority, narrowest width). Priority 1 is kept longest; unknown columns are 5.
COLUMNS: dict[str, tuple[int, int]] = {
    "what": (1, 16),
    "task": (3, 14),
    "text": (1, 20),
    "detail": (1, 20),
    "check": (1, 10),
    "ok": (1, 3),
    "file_path": (1, 14),
    "approach": (1, 16),
    "reason_failed": (2, 14),
    "reason": (6, 10),
    "decision": (1, 6),
    "event": (1, 18),
    "key": (1, 8),
    "value": (1, 10),
    "state": (1, 7),
    "status": (1, 7),
    "lease": (2, 8),
    "contested": (1, 3),
    "agent": (2, 8),
    "type": (2, 8),
    "session_id": (2, 9),
    "id": (1, 3),
    "frame": (1, 5),
    "kind": (2, 12),
    "resolution": (2, 8),
    "attempt_number": (2, 4),
    "attempts": (2, 4),
    "tool_name": (3, 5),
    "error_category": (4, 8),
    "category": (2, 8),
    "source": (3, 6),
    "last_activity_at": (2, 10),
    "last_seen_at": (3, 10),
    "last_at": (3, 10),
    "silent_seconds": (3, 6),
    "age_seconds": (4, 6),
    "received_at": (2, 19),
    "occurred_at": (3, 19),
    "created_at": (4, 19),
    "started_at": (5, 19),
    "files": (4, 8),
    "events": (3, 6),
    "prompts": (4, 7),
    "tool_calls": (4, 5),
    "tool_failures": (4, 5),
    "file_edits": (5, 5),
    "subagents": (6, 5),
    "compactions": (6, 5),
    "end_reason": (7, 6),
    "operation": (5, 5),
    "edits": (5, 5),
    "last_touched_at": (4, 10),
    "expires_at": (6, 10),
    "agent_id": (5, 8),
    "tool_use_id": (8, 8),
    "payload_bytes": (7, 5),
    "via": (8, 4),
    "payload": (1, 30),
    "exit_code": (6, 4),
    "resolved_at": (7, 19),
    "still_relevant": (7, 3),
    "context": (9, 10),
    "hook_event": (5, 8),
    "task_id": (7, 6),
    "judge": (8, 6),
    "scope": (4, 7),
    "tags": (5, 6),
    "used": (6, 4),
    "turn": (5, 4),
    "errors": (4, 6),
    "snapshot": (6, 8),
    "step": (2, 12),
    "cause": (3, 10),
    "old_value": (3, 8),
    "new_value": (2, 8),
    "cost_usd": (4, 7),
    "tokens": (6, 6),
}
# Columns that are the point of their table (doctor's detail, config's and state's keys and
# values, an event's payload; a table may name more): wrapped rather than cut (up to
# WRAPPED_CAP characters).
WRAPPED = frozenset({"detail", "value", "key", "payload"})
HEADERS = {
    "attempt_number": "step",
    "age_seconds": "age",
    "silent_seconds": "silent",
    "last_activity_at": "active",
    "tool_name": "tool",
    "error_category": "category",
    "payload_bytes": "bytes",
    "last_touched_at": "touched",
    "tool_failures": "fails",
    "tool_calls": "tools",
    "file_edits": "edits",
    "compactions": "compacts",
    "subagents": "subs",
    "still_relevant": "shown",
    "reason_failed": "why it failed",
    "cost_usd": "cost",
}
WRAPPED_CAP = 2000


F = TypeVar("F", bound=Callable[..., Any])
WIDE_WIDTH = 1_000_000  # the console's width under --wide: nothing is cut, nothing wraps
SETTINGS = {"wide": False}  # set by --wide (`wide_option`) for the one command a process runs


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


class Layout:
    """What one table says of its columns beyond COLUMNS and WRAPPED: other priorities and
    narrowest widths (`columns`, by name), and more columns to wrap rather than cut."""

    def __init__(
        self, columns: dict[str, tuple[int, int]] | None = None, wrap: Iterable[str] = ()
    ) -> None:
        self.columns = columns or {}
        self.wrap = WRAPPED | frozenset(wrap)

    def spec(self, name: str) -> tuple[int, int]:
        return self.columns.get(name) or spec(name)


def emit(
    data: Any, fmt: str = "table", title: str | None = None, layout: Layout | None = None
) -> None:
    """Print `data` (rows, or a dict of sections holding rows, dicts or scalars)."""
    if fmt == "json":
        print(to_json(data))
        return
    out = console()
    if isinstance(data, dict) and any(isinstance(v, dict | list) for v in data.values()):
        for name, section in data.items():
            _section(out, name, section, layout)
    else:
        _section(out, title or "", data, layout)


def reply(data: Any, text: str, as_json: bool) -> None:
    """A command's outcome: `data` as JSON with --json, else one line of text for people
    (escaped: it may quote what was recorded or typed)."""
    if as_json:
        emit(data, "json")
    else:
        click.echo(escape_controls(text))


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
    """A titled key/value list: keys dim, values wrapped (never cut), times in full."""
    grid = Table(
        title=Text(escape_controls(label)) if label else None,
        title_justify="left",
        title_style="bold",
        show_header=False,
        box=box.SIMPLE,
        show_edge=False,
        pad_edge=False,
    )
    grid.add_column("key", style="dim", no_wrap=True)
    grid.add_column("value", overflow="fold")
    for key, value in values.items():
        grid.add_row(Text(escape_controls(key.replace("_", " "))), cells.cell(key, value, True))
    out.print(grid)


def print_table(
    out: Console,
    rows: list[dict[str, Any]],
    label: str,
    layout: Layout | None = None,
    keep: bool = False,
) -> None:
    """A table fit to the console, then a line naming the columns it had no room for and
    what shows them: a column is never dropped without a word. `keep`: as `table`'s."""
    grid, dropped = table(rows, label, out.width, layout, keep)
    out.print(grid)
    if dropped:
        say(
            out,
            f"(hidden at {out.width} columns: {', '.join(dropped)} — {reveal()} shows them)",
            style="dim",
        )


def reveal() -> str:
    """The options of the running command that print every column: --wide, --json."""
    ctx = click.get_current_context(silent=True)
    params = {p.name for p in ctx.command.params} if ctx else set()
    found = [flag for flag, name in (("--wide", "wide"), ("--json", "as_json")) if name in params]
    return " or ".join(found) or "a wider terminal"


def table(
    rows: list[dict[str, Any]],
    label: str,
    width: int,
    layout: Layout | None = None,
    keep: bool = False,
) -> tuple[Table, list[str]]:
    """Rows as a table no wider than `width`, and the headers of the columns left out: the
    least important dropped first, then the widest narrowed (their cells folded, never
    cut), never below their narrowest readable width nor their header's. Under --wide,
    every column and every cell whole; `keep`: every column, narrowed and folded to fit
    (`--all` on a terminal)."""
    whole = width >= WIDE_WIDTH
    layout = layout or Layout()
    rows = [cells.marked(row) for row in rows]
    names = list(rows[0])
    wrapped = {i for i, n in enumerate(names) if n in layout.wrap and not whole}
    texts = [
        [
            escape_controls(
                cells.cell_value(
                    n, row.get(n), cap=_cap(i in wrapped, whole or keep), whole=whole or keep
                )
            )
            for i, n in enumerate(names)
        ]
        for row in rows
    ]
    headers = [header(n) for n in names]
    natural = [max([len(headers[i])] + [len(c[i]) for c in texts]) for i in range(len(names))]
    if whole:
        kept, widths = list(range(len(names))), dict(enumerate(natural))
    else:
        natural = [min(width, n) for n in natural]
        specs = [layout.spec(n) for n in names]
        least = [len(h) if keep else max(specs[i][1], len(h)) for i, h in enumerate(headers)]
        floors = [min(natural[i], least[i]) for i in range(len(names))]
        kept = fit([p for p, _ in specs], floors, width)
        widths = shrink({i: natural[i] for i in kept}, floors, width)
    times = any(n.endswith("_at") and n not in cells.RECENT for n in (names[i] for i in kept))
    suffix = f" (times in {cells.zone()})" if times else ""
    grid = Table(
        title=Text(escape_controls(label) + suffix) if label else None,
        title_justify="left",
        title_style="bold",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )
    for i in kept:
        grid.add_column(
            Text(headers[i]),
            width=widths[i],
            no_wrap=False,
            overflow="fold",  # folded onto more lines, never cut
            min_width=1,
        )
    for shown in texts:
        grid.add_row(*(Text(shown[i]) for i in kept))  # escaped: measured as shown
    return grid, [headers[i] for i in range(len(names)) if i not in kept]


def _cap(wrapped: bool, whole: bool) -> int | None:
    if whole:
        return None
    return WRAPPED_CAP if wrapped else cells.TEXT_CAP


def header(name: str) -> str:
    if name in HEADERS:
        return HEADERS[name]
    for suffix in ("_at", "_seconds", "_id", "_name"):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name.removesuffix(suffix)
            break
    return name.replace("_", " ")


def spec(name: str) -> tuple[int, int]:
    """A column's priority (1 is kept longest) and narrowest readable width."""
    if name in COLUMNS:
        return COLUMNS[name]
    if name.endswith("_at"):
        return (5, 10 if name in cells.RECENT else 19)
    return (5, 8)


def fit(priorities: list[int], floors: list[int], width: int) -> list[int]:
    """Indexes of the columns to show, in order: drop the least important (the last of equal
    priority) until the narrowest widths of the rest, with the gaps between them, fit."""
    kept = list(range(len(priorities)))
    while len(kept) > 1 and sum(floors[i] for i in kept) + 3 * (len(kept) - 1) > width:
        kept.remove(max(kept, key=lambda i: (priorities[i], i)))
    return kept


def shrink(widths: dict[int, int], floors: list[int], width: int) -> dict[int, int]:
    """Narrow the widest columns, one character at a time, until the table fits `width`."""
    room = width - 3 * (len(widths) - 1)
    while sum(widths.values()) > room:
        wide = [i for i in widths if widths[i] > floors[i]]
        if not wide:
            widest = max(widths, key=lambda i: widths[i])
            if widths[widest] <= 1:
                break
            widths[widest] -= 1  # one column alone wider than the console
            continue
        widest = max(wide, key=lambda i: widths[i] - floors[i])
        widths[widest] -= 1
    return widths


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
