"""The tier table of docs/testing.md, from the tests as pytest collects them, so its counts
cannot drift.

    python -m tools.tier_docs --write   # rewrite the block between the tiers markers
    python -m tools.tier_docs --check   # exit 1 when the page's counts are not the suite's

It collects the suite once (`pytest --co`, with this module as a plugin that notes each test's
tier marker: the same markers `pytest -m TIER` selects by) and counts the tests and modules of
each tier, listing the modules. The wall times are measured by hand (MEASURED): a run of
`./test.sh TIER` on the 2-core development machine, other jobs running beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from tools.doc_block import updated, write_or_check

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "testing.md"
START = "<!-- tiers:start -->"
END = "<!-- tiers:end -->"
NOTE = (
    "<!-- generated from the collected tests by `python -m tools.tier_docs --write`;"
    " edit tests/tiers.py (or MEASURED in tools/tier_docs.py), not this block -->"
)
TIERS = ("lint", "fast", "integration", "e2e")
OUT = "CLAUDE_SESSION_TIER_DOCS_OUT"

# Wall time of `./test.sh TIER` on the 2-core machine (measured by hand: a fresh clone's
# `TEST_REQUIRE_EVERY_PYTHON=1 ./install.sh --dev && ./test.sh` in a 0700 folder, 2026-11-29,
# nothing else running; the whole run, its install with warm package caches included, took
# 18 min 25 s). fast-3.12 and fast-3.13 (6 min 19 s and 6 min 14 s) run beside e2e.
MEASURED = {
    "lint": "48 s",
    "fast": "1 min 40 s",
    "integration": "8 min 25 s",
    "e2e": "6 min 14 s",
    "all": "about 17 min 15 s",
}


def pytest_collection_finish(session: Any) -> None:
    """As a pytest plugin (`-p tools.tier_docs`): each collected test's tier markers, to $OUT."""
    out = os.environ.get(OUT)
    if not out:
        return
    found = {
        item.nodeid: sorted({m.name for m in item.iter_markers() if m.name in TIERS})
        for item in session.items
    }
    Path(out).write_text(json.dumps(found), encoding="utf-8")


def collected() -> dict[str, list[str]]:
    """node id -> its tiers, for every test of the suite."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "tiers.json"
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--co", "-q", "-p", "tools.tier_docs"],
            cwd=ROOT,
            env=os.environ | {OUT: str(out)},
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0 or not out.exists():
            raise SystemExit(f"pytest --co failed:\n{done.stdout}{done.stderr}")
        value: dict[str, list[str]] = json.loads(out.read_text(encoding="utf-8"))
        return value


def block(tests: dict[str, list[str]]) -> str:
    per_tier: Counter[str] = Counter()
    modules: dict[str, Counter[str]] = defaultdict(Counter)  # tier -> module -> tests
    per_module: Counter[str] = Counter()
    for nodeid, tiers in tests.items():
        module = nodeid.split("::", 1)[0].removeprefix("tests/")
        per_module[module] += 1
        for tier in tiers:
            per_tier[tier] += 1
            modules[tier][module] += 1
    lines = [
        START,
        NOTE,
        "",
        "| Stage | Command | Modules | Tests | Wall time, 2 cores |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for tier in TIERS:
        lines.append(
            f"| {tier} | `./test.sh {tier}` | {len(modules[tier])} | {per_tier[tier]} "
            f"| {MEASURED[tier]} |"
        )
    lines.append(
        f"| all | `./test.sh` | {len(per_module)} | {len(tests)} "
        f"| {MEASURED.get('all', 'the sum')} |"
    )
    lines.append("")
    for tier in TIERS:
        names = []
        for module, n in sorted(modules[tier].items()):
            whole = n == per_module[module]
            names.append(f"`{module}`" if whole else f"`{module}` ({n} of {per_module[module]})")
        lines.append(f"- **{tier}**: {', '.join(names)}.")
    lines.append(END)
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true")
    action.add_argument("--check", action="store_true")
    args = parser.parse_args()
    tests = collected()
    untiered = sorted(n for n, t in tests.items() if len(t) != 1)
    if untiered:
        print(f"tests in no tier or in two: {', '.join(untiered)}", file=sys.stderr)
        return 1
    page = PAGE.read_text(encoding="utf-8")
    wanted = updated(page, START, END, block(tests))
    stale = "docs/testing.md: the tier table is stale: run python -m tools.tier_docs --write"
    return write_or_check(PAGE, page, wanted, args.write, stale)


if __name__ == "__main__":
    sys.exit(main())
