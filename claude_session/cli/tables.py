"""A table fit to a width: which columns a table keeps (rich cannot drop a column) and how
wide each is (rich narrows a table without regard to a column's narrowest readable width);
rich measures the cells (a wide character takes two cells) and folds them.

Every column has a priority (`COLUMNS`); the least important go first, then the widest are
narrowed, their cells folded onto more lines, never cut. Headers are never cut. At
WIDE_WIDTH (--wide, or off a terminal) every column is kept and every cell whole.

Recorded text is hostile input: every cell is a `rich.text.Text` (never parsed as markup)
and every control character is shown escaped (cli/cells, core/terminal).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from rich import box
from rich.cells import cell_len
from rich.table import Table
from rich.text import Text

from ..core.terminal import escape_controls
from . import cells

WIDE_WIDTH = 1_000_000  # the console's width under --wide: nothing is cut, nothing wraps

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


def pairs(label: str, values: dict[str, Any]) -> Table:
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
    return grid


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
    rows = [cells.marked(layout.row(row)) for row in rows]
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
    natural = [
        max([cell_len(headers[i])] + [cell_len(c[i]) for c in texts]) for i in range(len(names))
    ]
    if whole:
        kept, widths = list(range(len(names))), dict(enumerate(natural))
    else:
        natural = [min(width, n) for n in natural]
        specs = [layout.spec(n) for n in names]
        least = [
            cell_len(h) if keep else max(specs[i][1], cell_len(h)) for i, h in enumerate(headers)
        ]
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
