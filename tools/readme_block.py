"""One generated block of the README (between two markers): replaced, or checked for drift.
Shared by `tools.schema_docs` and `tools.cli_docs`."""

from __future__ import annotations

import sys
from pathlib import Path


def updated(readme: str, start: str, end: str, block: str) -> str:
    """The README with the block between `start` and `end` (markers included) replaced."""
    if start not in readme or end not in readme:
        raise SystemExit(f"README has no {start} ... {end} block")
    head, _, rest = readme.partition(start)
    _, _, tail = rest.partition(end)
    return head + block + tail


def write_or_check(path: Path, readme: str, wanted: str, write: bool, stale: str) -> int:
    """`--write`: put `wanted` in place (0). `--check`: 0 when it is there, else say `stale`
    and 1."""
    if write:
        if wanted != readme:
            path.write_text(wanted, encoding="utf-8")
        return 0
    if wanted != readme:
        print(stale, file=sys.stderr)
        return 1
    return 0
