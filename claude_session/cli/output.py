"""The one place that turns query results into terminal output: JSON or rich tables.

Rows are plain dicts. Columns ending in `_at` hold Unix times: JSON keeps the number, tables
show the UTC time. rich renders the tables (aligned columns, wrapping, no hand-written layout).

Recorded text is hostile input: every cell is a `rich.text.Text` (never parsed as markup, so
`[/tmp]` or `[link=...]` print as they are) and every control character (ESC, OSC, BEL, C1,
carriage return, bidirectional overrides) is shown escaped, never sent raw to the terminal.
"""

from __future__ import annotations

import json
import time
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..core.terminal import escape_controls, is_control

FORMATS = ("table", "json")
__all__ = ["FORMATS", "cell_text", "echo_text", "emit", "escape_controls", "to_json"]


def emit(data: Any, fmt: str = "table", title: str | None = None) -> None:
    """Print `data` (rows, or a dict of sections holding rows, dicts or scalars)."""
    if fmt == "json":
        print(to_json(data))
        return
    console = Console(highlight=False, soft_wrap=False)
    if not console.is_terminal:
        console.width = max(console.width, 140)
    if isinstance(data, dict) and any(isinstance(v, dict | list) for v in data.values()):
        for name, section in data.items():
            _section(console, name, section)
    else:
        _section(console, title or "", data)


def _section(console: Console, name: str, section: Any) -> None:
    label = name.replace("_", " ")
    if isinstance(section, list):
        if not section:
            console.print(Text.assemble((label, "bold"), ": none"))
            return
        table = Table(title=Text(label), title_justify="left", title_style="bold")
        columns = list(section[0])
        for column in columns:
            table.add_column(Text(column.replace("_", " ")), overflow="fold")
        for row in section:
            table.add_row(*(_cell(column, row.get(column)) for column in columns))
        console.print(table)
    elif isinstance(section, dict):
        table = Table(
            title=Text(label), title_justify="left", title_style="bold", show_header=False
        )
        table.add_column("key", style="dim")
        table.add_column("value", overflow="fold")
        for key, value in section.items():
            table.add_row(Text(escape_controls(key.replace("_", " "))), _cell(key, value))
        console.print(table)
    else:
        console.print(Text.assemble((label, "bold"), ": ", _cell(name, section)))


def to_json(data: Any) -> str:
    """JSON for a terminal or a pipe: C0 controls are escaped by `json`; C1 and bidi controls,
    which `ensure_ascii=False` would pass through raw, are escaped here too."""
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    return "".join(f"\\u{ord(c):04x}" if ord(c) >= 0x7F and is_control(c) else c for c in text)


def echo_text(text: str) -> None:
    """Print multi-line recorded text (the restored context) with its controls escaped."""
    Console(highlight=False, soft_wrap=True, markup=False).print(
        Text(escape_controls(text, keep_newlines=True))
    )


def _cell(column: str, value: Any) -> Text:
    return Text(cell_text(column, value))


def cell_text(column: str, value: Any) -> str:
    """One cell as a table shows it (times, durations, prefixes), controls escaped."""
    return escape_controls(_cell_text(column, value))


def _cell_text(column: str, value: Any) -> str:
    if value is None:
        return "-"
    if column == "session_id" and isinstance(value, str) and len(value) > 13:
        return value[:8] + "…"  # tables show a prefix; --json and `events --session` take it
    if column.endswith("_seconds") and isinstance(value, int | float):
        return _duration(value)
    if column.endswith("_at") and isinstance(value, int | float):
        return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(value))
    if isinstance(value, float):
        return f"{value:.1f}"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    text = str(value)
    return text if len(text) <= 160 else text[:157] + "..."


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 0:
        return "-"
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"
