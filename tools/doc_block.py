"""One generated block of a documentation page (between two markers): replaced, or checked for
drift. Shared by `tools.schema_docs` (docs/reference/schema.md) and `tools.cli_docs`
(docs/reference/commands.md)."""

from __future__ import annotations

import sys
from pathlib import Path


def updated(page: str, start: str, end: str, block: str) -> str:
    """The page with the block between `start` and `end` (markers included) replaced."""
    if start not in page or end not in page:
        raise SystemExit(f"the page has no {start} ... {end} block")
    head, _, rest = page.partition(start)
    _, _, tail = rest.partition(end)
    return head + block + tail


def write_or_check(path: Path, page: str, wanted: str, write: bool, stale: str) -> int:
    """`--write`: put `wanted` in place (0). `--check`: 0 when it is there, else say `stale`
    and 1."""
    if write:
        if wanted != page:
            path.write_text(wanted, encoding="utf-8")
        return 0
    if wanted != page:
        print(stale, file=sys.stderr)
        return 1
    return 0
