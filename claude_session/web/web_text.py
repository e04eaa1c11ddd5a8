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


def cut(value: object, limit: int) -> str:
    """At most `limit` characters as shown: escaped first, so an escape counts its width."""
    text = "" if value is None else escape_controls(str(value))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def when(seconds: object) -> str:
    if not isinstance(seconds, int | float):
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds))
