"""A table fit to a width without splitting a value: which columns a table keeps (rich
cannot drop a column), how wide each is, and where free text folds.

Every column has a priority (`COLUMNS`); the least important go first. A cell that is not
free text (an id, a number, a cost, a state word, a time, a path) is never narrowed: its
column is as wide as its widest cell, or left out. Only the free-text columns (`WRAPPED`, and
those a table names) are narrowed, folded at spaces, never below their narrowest readable
width. When even the must-keep columns (the first, which names the row, and those of
priority 1) do not fit, the rows are shown one record per block (`header  value` lines).
Headers are never cut. At WIDE_WIDTH (--wide, or off a terminal) every column is kept and
every cell whole.

Recorded text is hostile input: every cell is a `rich.text.Text` (never parsed as markup)
and every control character is shown escaped (cli/cells, core/terminal).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from rich import box
from rich.cells import cell_len, chop_cells
from rich.table import Table
from rich.text import Text

from ..core.terminal import escape_controls
from . import cells

Shown = list[Text | Table]  # a table's title lines, then the table or its records as blocks
WIDE_WIDTH = 1_000_000  # the console's width under --wide: nothing is cut, nothing wraps

# name: (priority, narrowest width). Priority 1 is kept longest; unknown columns are 5.
COLUMNS: dict[str, tuple[int, int]] = {
    "what": (1, 16),
    "task": (2, 20),
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
    "type": (3, 8),
    "session_id": (2, 9),
    "id": (1, 3),
    "frame": (1, 5),
    "kind": (2, 12),
    "resolution": (1, 8),
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
    "new_value": (1, 8),
    "cost_usd": (3, 7),
    "tokens": (6, 6),
}
# Free text (a prompt, a task, a message, a reason, a payload, a value someone wrote; lists
# of values): the only columns narrowed to fit, folded at spaces (up to WRAPPED_CAP
# characters). A table may name more (`Layout.wrap`). Every other cell shows whole.
WRAPPED = frozenset(
    {
        "detail",
        "value",
        "new_value",
        "old_value",
        "payload",
        "what",
        "task",
        "text",
        "prompt",
        "approach",
        "reason",
        "reason_failed",
        "context",
        "cause",
        "changes",
        "command",
        "error_message",
        "models",
        "tags",
    }
)
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
# A free-text column is at least as wide as its longest word, up to 40 cells (an id in a
# state's value, a short path: whole) or, where that leaves no room for the must-keep columns,
# up to WORD_CAP (`claude-session`, a word read as one, is never broken; a long path may be).
WORD_CAPS = (40, 20)
WORD_CAP = WORD_CAPS[-1]


class Layout:
    """What one table says of its columns beyond COLUMNS and WRAPPED: other priorities and
    narrowest widths (`columns`, by name), more columns to wrap rather than cut, columns the
    table leaves out (`hide`) and how a row is reshaped for it (`shown`): JSON has the rows
    as they are."""

    def __init__(
        self,
        columns: dict[str, tuple[int, int]] | None = None,
        wrap: Iterable[str] = (),
        hide: Iterable[str] = (),
        shown: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self.columns = columns or {}
        self.wrap = WRAPPED | frozenset(wrap)
        self.hide = frozenset(hide)  # left out of the table (JSON keeps every field)
        self.shown = shown  # a row as the table shows it (JSON keeps the row as it is)

    def row(self, row: dict[str, Any]) -> dict[str, Any]:
        """`row` as the table shows it: reshaped (`shown`), its hidden columns left out."""
        row = self.shown(row) if self.shown is not None else row
        return {k: v for k, v in row.items() if k not in self.hide}

    def spec(self, name: str) -> tuple[int, int]:
        return self.columns.get(name) or spec(name)


def pairs(label: str, values: dict[str, Any], width: int = WIDE_WIDTH) -> Shown:
    """A titled key/value list: keys dim, times in full. On a terminal (`width`), each value
    folded at its spaces only: a word too long for its place (a path) goes whole on a line
    of its own, never split (the terminal wraps it if it is wider than the terminal)."""
    if width < WIDE_WIDTH:
        return _pair_lines(label, values, width)
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
    return [grid]


def _pair_lines(label: str, values: dict[str, Any], width: int) -> Shown:
    heads = [escape_controls(k.replace("_", " ")) for k in values]
    key = max((cell_len(h) for h in heads), default=0)
    room = max(width - key - 2, 10)
    title = fold(escape_controls(label), width, False) if label else []
    lines: Shown = [Text(t, style="bold") for t in title]
    for head, (name, value) in zip(heads, values.items(), strict=True):
        text = escape_controls(cells.cell_value(name, value, True))
        free = isinstance(value, str | list | dict) and not name.endswith("_at")  # not a time
        first, *more = fold(text, room, False) if free else [text]
        indent = key + 2
        if cell_len(first) > room:  # a path beside its key would pass the width: under it
            lines.append(Text(head, style="dim"))
            indent = 2
            more = [first, *more]
        else:
            lines.append(Text.assemble((head + " " * (indent - cell_len(head)), "dim"), first))
        lines.extend(Text(" " * indent + part) for part in more)
    return lines


def table(
    rows: list[dict[str, Any]],
    label: str,
    width: int,
    layout: Layout | None = None,
    full: bool = False,
) -> tuple[Shown, list[str]]:
    """Rows laid out no wider than `width`, and the headers of the columns left out. Every
    value shows whole on one line: the least important columns are left out first, then the
    free-text ones (`Layout.wrap`) narrowed, folded at spaces, never below their narrowest
    readable width; when even the first column and those of priority 1 do not fit, one
    record per block (`header  value` lines), every column kept. Under --wide, every column
    and every cell whole; `full`: every cell whole, a session's id in full, no text capped
    (`--all` on a terminal), its columns kept as they fit."""
    whole = width >= WIDE_WIDTH
    layout = layout or Layout()
    rows = [cells.marked(layout.row(row)) for row in rows]
    names = list(rows[0])
    wrapped = [n in layout.wrap and not whole for n in names]
    texts = [
        [
            escape_controls(
                cells.cell_value(
                    n, row.get(n), cap=_cap(wrapped[i], whole or full), whole=whole or full
                )
            )
            for i, n in enumerate(names)
        ]
        for row in rows
    ]
    headers = [header(n) for n in names]
    specs = [layout.spec(n) for n in names]
    if whole:
        widths: dict[int, int] | None = dict(enumerate(widest(headers, texts)))
    else:
        widths = arrange(headers, texts, specs, wrapped, width)
    kept = list(range(len(names))) if widths is None else sorted(widths)
    times = any(n.endswith("_at") and n not in cells.RECENT for n in (names[i] for i in kept))
    title = escape_controls(label) + (f" (times in {cells.zone()})" if times else "")
    # On a terminal, the title on lines of its own, folded at spaces only (a grid folds its
    # title at the grid's width: an id or a path in it would be split).
    apart = bool(label) and not whole
    shown: Shown = [Text(line, style="bold") for line in fold(title, width, False)] if apart else []
    if widths is None:
        return shown + blocks(headers, texts, wrapped, width), []
    grid = Table(
        title=Text(title) if label and whole else None,
        title_justify="left",
        title_style="bold",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )
    for i in kept:
        grid.add_column(Text(headers[i]), width=widths[i], no_wrap=True, overflow="ignore")
    for row in texts:  # escaped: measured as shown; a free-text cell folded at its spaces
        grid.add_row(
            *(Text("\n".join(fold(row[i], widths[i])) if wrapped[i] else row[i]) for i in kept)
        )
    return [*shown, grid], [headers[i] for i in range(len(names)) if i not in kept]


def arrange(
    headers: list[str],
    texts: list[list[str]],
    specs: list[tuple[int, int]],
    wrapped: list[bool],
    width: int,
) -> dict[int, int] | None:
    """The columns kept (by index) and their widths, or None when a table cannot show the
    must-keep columns (the first, which names the row, and those of priority 1) with every
    value whole. A value that is not free text is never narrowed: its column is as wide as
    its widest cell, or left out."""
    natural = widest(headers, texts)
    must = {0} | {i for i, (priority, _) in enumerate(specs) if priority <= 1}
    priorities = [p for p, _ in specs]
    for cap in WORD_CAPS:
        words = [_longest_word(texts, i, cap) if wrapped[i] else 0 for i in range(len(headers))]
        floors = [
            min(natural[i], max(specs[i][1], cell_len(h), words[i])) if wrapped[i] else natural[i]
            for i, h in enumerate(headers)
        ]
        kept = fit(priorities, floors, width, must)
        if kept is not None:
            break
    else:
        return None
    widths = shrink({i: natural[i] for i in kept}, floors, width)
    # Room the free text does not need goes to the columns left out, most important first.
    for i in sorted(set(range(len(headers))) - set(kept), key=lambda i: (priorities[i], i)):
        room = width - sum(widths.values()) - 3 * len(widths)
        if floors[i] <= room:
            widths[i] = min(natural[i], room)
    return widths


def _longest_word(texts: list[list[str]], column: int, cap: int) -> int:
    """The widest word of a free-text column, up to `cap` cells (WORD_CAPS)."""
    return min(max((cell_len(w) for row in texts for w in row[column].split(" ")), default=0), cap)


def widest(headers: list[str], texts: list[list[str]]) -> list[int]:
    """Each column's natural width: its widest cell or its header, in terminal cells."""
    return [max([cell_len(h)] + [cell_len(row[i]) for row in texts]) for i, h in enumerate(headers)]


def blocks(headers: list[str], texts: list[list[str]], wrapped: list[bool], width: int) -> Shown:
    """One record per block: a line per column, its header then its value, blocks apart by
    an empty line. Free text folds at spaces under its first line; any other value too long
    to sit beside its header goes whole on the next line (the terminal wraps it if it is
    wider than the terminal: it is never cut nor split)."""
    key = max(cell_len(h) for h in headers)
    room = max(width - key - 2, 10)
    lines: Shown = []
    for n, row in enumerate(texts):
        if n:
            lines.append(Text(""))
        for i, value in enumerate(row):
            head = headers[i] + " " * (key - cell_len(headers[i]) + 2)
            if wrapped[i]:
                first, *more = fold(value, room)
                lines.append(Text.assemble((head, "dim"), first))
                lines.extend(Text(" " * (key + 2) + part) for part in more)
            elif cell_len(value) <= room:
                lines.append(Text.assemble((head, "dim"), value))
            else:
                lines.append(Text(head.rstrip(), style="dim"))
                lines.append(Text("  " + value))
    return lines


def fold(text: str, width: int, break_words: bool = True) -> list[str]:
    """Free text in lines of at most `width` cells, broken at spaces; a word wider than
    `width` alone (a long path in a prompt) is folded where it must be, or with
    `break_words=False` left whole on a line of its own."""
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        if not word:
            continue
        joined = f"{line} {word}" if line else word
        if cell_len(joined) <= width:
            line = joined
            continue
        if line:
            lines.append(line)
        line = word
        while break_words and cell_len(line) > width:
            part = chop_cells(line, width)[0]
            lines.append(part)
            line = line[len(part) :]
    return [*lines, line] if line or not lines else lines


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


def fit(priorities: list[int], floors: list[int], width: int, must: set[int]) -> list[int] | None:
    """Indexes of the columns to show, in order: drop the least important (the last of equal
    priority) until the narrowest widths of the rest, with the gaps between them, fit; None
    when that would drop one of `must`."""
    kept = list(range(len(priorities)))
    while sum(floors[i] for i in kept) + 3 * (len(kept) - 1) > width:
        droppable = [i for i in kept if i not in must]
        if not droppable:
            return None
        kept.remove(max(droppable, key=lambda i: (priorities[i], i)))
    return kept


def shrink(widths: dict[int, int], floors: list[int], width: int) -> dict[int, int]:
    """Narrow the widest free-text columns (only theirs are above their floors), one cell at
    a time, until the table fits `width` (`fit` made sure it can)."""
    room = width - 3 * (len(widths) - 1)
    while sum(widths.values()) > room:
        wide = [i for i in widths if widths[i] > floors[i]]
        if not wide:
            break
        widest = max(wide, key=lambda i: widths[i] - floors[i])
        widths[widest] -= 1
    return widths
