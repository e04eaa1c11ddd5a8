"""Recorded text made safe for the pages of `claude-session serve` (see web_pages)."""

from __future__ import annotations

import html
import time

from ..core.terminal import escape_controls


def esc(value: object, keep_newlines: bool = False) -> str:
    """Recorded text for HTML text and quoted attributes: its controls and bidi marks escaped
    by the CLI's one rule (`\\x1b`, `\\u202e`), then HTML-escaped. `keep_newlines`: for
    lines of files (tabs as spaces, as the CLI's `diff` shows them)."""
    text = "-" if value is None else str(value)
    return html.escape(escape_controls(text, keep_newlines), quote=True)


def cut(value: object, limit: int, keep_newlines: bool = False) -> str:
    """At most `limit` characters as shown: escaped first, so an escape counts its width.
    `keep_newlines`: line breaks stay (for `lines`), each counted as one character."""
    text = "" if value is None else escape_controls(str(value), keep_newlines)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def lines(value: object, limit: int | None = None) -> str:
    """Recorded text of several lines (a prompt, an answer) as HTML: at most `limit`
    characters (`cut`; None: all), each line escaped as `esc` does, the lines joined by
    `<br>`, so a newline shows as a line break, never as a literal `\\n`. None: empty."""
    if value is None:
        return ""
    shown = escape_controls(str(value), True) if limit is None else cut(value, limit, True)
    return "<br>".join(esc(line, keep_newlines=True) for line in shown.split("\n"))


def when(seconds: object) -> str:
    if not isinstance(seconds, int | float):
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds))
