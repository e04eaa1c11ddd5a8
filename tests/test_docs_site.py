"""The documentation: the MkDocs site under docs/ builds with no warning (every link, anchor and
nav entry resolves), and the README stays a short front page whose links all lead somewhere."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MAX_README_LINES = 220
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "index.html").exists()
    assert (tmp_path / "reference" / "commands" / "index.html").exists()
    # SECURITY.md is included as it is, not copied
    assert "Who can write what" in (tmp_path / "security" / "index.html").read_text()


def test_the_readme_is_a_short_front_page() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines: move text to docs/"
    # the two commands a reader runs first; .ci/run runs the second as it is written here
    assert lines[0] == "# claude-session"
    head = "\n".join(lines[:6])
    assert "./install.sh && .venv/bin/claude-session demo" in head
    assert "./install.sh --dev && ./test.sh " in head
    assert "./install.sh --dev && ./test.sh\n" in (ROOT / ".ci" / "run").read_text()


def test_every_relative_link_of_the_readme_leads_somewhere() -> None:
    targets = [t for t in LINK.findall(_without_code(README.read_text())) if _relative(t)]
    assert targets, "the README links to no documentation page"
    for target in targets:
        path, _, anchor = target.partition("#")
        found = (ROOT / path) if path else README
        assert found.exists(), f"README.md links to {target}: {path} does not exist"
        if anchor:
            assert found.suffix == ".md", f"README.md links to {target}: an anchor in a non-page"
            assert anchor in _anchors(found), f"README.md links to {target}: no such heading"


def test_the_status_picture_is_shown() -> None:
    picture = ROOT / "docs" / "images" / "status.svg"
    assert picture.exists(), "run python -m tools.demo_image --write"
    assert picture.read_text().lstrip().startswith("<svg")
    assert "docs/images/status.svg" in README.read_text()
    assert "images/status.svg" in (ROOT / "docs" / "index.md").read_text()


def _relative(target: str) -> bool:
    return not re.match(r"^[a-z][a-z0-9+.-]*:", target) and not target.startswith("//")


def _without_code(text: str, spans: bool = True) -> str:
    """The text with its fenced blocks (and code spans) taken out: no links are in them."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text) if spans else text


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings: lower case, punctuation dropped, spaces as
    hyphens, a repeated one numbered."""
    seen: dict[str, int] = {}
    anchors = set()
    for line in _without_code(page.read_text(), spans=False).splitlines():
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors
