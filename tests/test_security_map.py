"""SECURITY.md maps each promise to its tests: every numbered promise is in the table, and
every test file the page names exists (a renamed test would otherwise leave a promise
unchecked without a word)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_promise_is_mapped_to_test_files_that_exist() -> None:
    text = (ROOT / "SECURITY.md").read_text()
    promises = {int(n) for n in re.findall(r"^(\d+)\. \*\*", text, re.MULTILINE)}
    table = text.split("## Promise to test", 1)[1]
    mapped = {int(n) for n in re.findall(r"^\| (\d+)\. ", table, re.MULTILINE)}
    assert promises and promises == mapped
    named = set(re.findall(r"(test_\w+\.py)", text))
    missing = sorted(n for n in named if not (ROOT / "tests" / n).is_file())
    assert not missing
    for row in re.findall(r"^\| \d+\. .*$", table, re.MULTILINE):
        assert "test_" in row, row
