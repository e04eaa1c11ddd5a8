"""A moment given on the command line: `90m`, `2h`, `3d`, `1w` ago, or a local date or time.
One reading for every command that takes one (`cost --since`, `export-otel --since`,
`prune --older-than`), so what one accepts the others accept too. Standard library only."""

from __future__ import annotations

import re
import time
from datetime import datetime

__all__ = ["EXAMPLES", "moment", "said"]

EXAMPLES = "90m, 2h, 3d, 1w"
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*")


def moment(value: str, now: float | None = None, bare_unit: str | None = None) -> float:
    """The Unix time `value` names: a duration before `now` (`0d` is `now` itself), or a date
    (`2026-11-01`) or time (ISO 8601) read in local time. `bare_unit`: what a number without a
    unit counts (prune's `--older-than 30`: days); without it a bare number is refused.
    ValueError says what is accepted."""
    now = time.time() if now is None else now
    found = _DURATION.fullmatch(value)
    if found and (found.group(2) or bare_unit):
        unit = UNITS[found.group(2) or str(bare_unit)]
        return now - float(found.group(1)) * unit
    try:
        return datetime.fromisoformat(value.strip()).timestamp()
    except ValueError:
        bare = f", a number of {_NAMES[bare_unit]}" if bare_unit else ""
        raise ValueError(
            f"{value!r} is neither a duration ({EXAMPLES}{bare}) nor a date (2026-11-01)"
        ) from None


def said(value: str, bare_unit: str | None = None) -> str:
    """`value` as a person reads it after "ended": `more than 3d ago`, `before 2026-11-01`."""
    found = _DURATION.fullmatch(value)
    if found and (found.group(2) or bare_unit):
        number, unit = found.group(1), found.group(2) or str(bare_unit)
        if not float(number):
            return "before now"
        return f"more than {number}{found.group(2) or ' ' + _NAMES[unit]} ago"
    return f"before {value.strip()}"


_NAMES = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
