"""The README's picture (docs/images/status.svg) is drawn from `claude-session demo` by
tools/demo_image.py: the committed one is what the demo prints now, and a stale one fails the
check until written again. (The tool fixes the times, the scratch folder and three measured
figures the same way on both sides: see its docstring.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import run_tmp

ROOT = Path(__file__).resolve().parent.parent
PICTURE = ROOT / "docs" / "images" / "status.svg"


def demo_image(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools.demo_image", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=os.environ | {"TMPDIR": str(run_tmp())},  # the demo's scratch: the run's end looks
        timeout=600,
    )


def test_the_readme_picture_is_what_the_demo_prints_now() -> None:
    done = demo_image("--check")
    assert done.returncode == 0, done.stderr
    drawn = PICTURE.read_text()
    # the compacted session's block, as drawn: its error, its subagent, its file, its git HEAD
    for said in ("560819af", "nonexistent_mod", "a026341fa5086f41e", "hello.py", "c5fc097194f0"):
        assert said in drawn, said
    assert "unavailable" not in drawn


def test_a_stale_picture_fails_the_check_until_written(tmp_path: Path) -> None:
    picture = tmp_path / "status.svg"
    picture.write_text(PICTURE.read_text().replace("hello.py", "hullo.py"))
    stale = demo_image("--check", "--out", str(picture))
    assert stale.returncode == 1 and "--write" in stale.stderr
    assert demo_image("--write", "--out", str(picture)).returncode == 0
    assert picture.read_text() == PICTURE.read_text()
