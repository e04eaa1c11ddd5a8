"""How one recorded value reads in a cell of a table or a key/value section (cli/output lays
the cells out): booleans `yes`/`no` (SQLite's 0/1 too, by column name), durations (`45s`,
`2h03m`), times (the local time, or an age where recency matters), USD, token counts, and a
cost that is partly an estimate marked `~`. Text is capped here; escaping is the caller's."""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text

from ..core.figures import token_count, usd
from ..core.terminal import escape_controls

# Columns whose 0/1 is a yes/no.
BOOLEANS = frozenset(
    {
        "ok",
        "running",
        "contested",
        "is_internal",
        "is_main",
        "interrupted",
        "still_relevant",
        "wal_unsafe_filesystem",
        "live",
        "new",
        "changed",
        "removed",
        "forgotten",
    }
)
# Times where recency matters: shown as an age in tables.
RECENT = frozenset(
    {
        "last_activity_at",
        "last_seen_at",
        "last_at",
        "last_touched_at",
        "expires_at",
        "last_run_at",
        "updated_at",
    }
)
TEXT_CAP = 400  # characters of one value that a table ever looks at


def marked(row: dict[str, Any]) -> dict[str, Any]:
    """A row for people: a cost that is partly an estimate (its `estimated`: a model no price
    is known for) shown as `~$0.12`, the flag itself not a column of its own."""
    if "estimated" not in row:
        return row
    rough = bool(row["estimated"])
    return {
        k: "~" + usd(v) if rough and k.endswith("_usd") and isinstance(v, int | float) else v
        for k, v in row.items()
        if k != "estimated"
    }


def cell_text(column: str, value: Any, whole: bool = False) -> str:
    """One cell as the tables show it, escaped, for rows streamed as text (`--all`); `whole`:
    every character of it (a session's full id, no cap)."""
    cap = None if whole else TEXT_CAP
    return escape_controls(cell_value(column, value, full_time=True, cap=cap, whole=whole))


def cell(column: str, value: Any, full_time: bool = False) -> Text:
    return Text(escape_controls(cell_value(column, value, full_time)))


def cell_value(
    column: str,
    value: Any,
    full_time: bool = False,
    cap: int | None = TEXT_CAP,
    whole: bool = False,
) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool) or (column in BOOLEANS and value in (0, 1)):
        return "yes" if value else "no"
    if column == "session_id" and isinstance(value, str) and len(value) > 13 and not whole:
        return value[:8] + "…"  # tables show a prefix; --json and `events --session` take it
    if column.endswith("_seconds") and isinstance(value, int | float):
        return duration(value)
    if column.endswith("_usd") and isinstance(value, int | float):
        return usd(value)
    if column == "tokens" and isinstance(value, int | float):
        return token_count(value)
    if column.endswith("_at") and isinstance(value, int | float):
        if full_time:
            return local_time(value)
        if column in RECENT:
            return age(value)
        return local_time(value, zone=False)
    if isinstance(value, float):
        return f"{value:.1f}"
    if isinstance(value, dict):
        return ", ".join(
            f"{k}: {cell_value(str(k), v, full_time, cap, whole)}" for k, v in value.items()
        )
    if isinstance(value, list):
        return ", ".join(cell_value(column, v, full_time, cap, whole) for v in value) or "none"
    text = str(value)
    return text if cap is None or len(text) <= cap else text[: cap - 1] + "…"


def duration(seconds: float) -> str:
    """`45s`, `1m05s`, `2h03m`, `3d04h`: the one format of a span of time."""
    whole = int(seconds)
    if whole < 0:
        return "-"
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    if whole < 86400:
        return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
    return f"{whole // 86400}d{whole % 86400 // 3600:02d}h"


def age(when: float, now: float | None = None) -> str:
    """`3m05s ago`, or `in 12m00s` for a time still to come."""
    delta = (time.time() if now is None else now) - when
    return f"{duration(delta)} ago" if delta >= 0 else f"in {duration(-delta)}"


def local_time(when: float, zone: bool = True) -> str:
    """`2026-11-23 17:20:05 UTC+01:00`: the local time, with its offset from UTC."""
    shown = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(when))
    return f"{shown} {_offset(time.localtime(when).tm_gmtoff)}" if zone else shown


def zone() -> str:
    """This machine's offset from UTC now, as tables name it in their title."""
    return _offset(time.localtime().tm_gmtoff)


def _offset(seconds: int) -> str:
    sign = "+" if seconds >= 0 else "-"
    seconds = abs(seconds)
    return f"UTC{sign}{seconds // 3600:02d}:{seconds % 3600 // 60:02d}"


def ago(seconds: float | None) -> str:
    """An age as a person reads it: `now`, `42s ago`, `3m ago`, `2h ago`, `4d ago`."""
    if seconds is None:
        return "-"
    seconds = int(seconds)
    if seconds < 2:
        return "now"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"
