"""The package builds as users build it (`pip wheel`), without a single warning."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import PYTHON, ROOT


def test_the_wheel_builds_without_warnings(tmp_path: Path) -> None:
    done = subprocess.run(
        [PYTHON, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # pip's own notes about this machine's package index configuration are not the build's
    lines = [
        line
        for line in (done.stdout + done.stderr).splitlines()
        if "warning" in line.lower()
        and "is ignored: it is neither a file nor a directory" not in line
    ]
    assert lines == []
    assert list(tmp_path.glob("claude_session-*.whl"))
