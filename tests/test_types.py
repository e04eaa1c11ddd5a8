"""`mypy --strict` is clean on the package: the type hints are checked, not decoration."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MYPY = Path(sys.executable).parent / "mypy"


def test_mypy_strict_is_clean_on_the_package() -> None:
    done = subprocess.run(
        [str(MYPY), "--strict", "claude_session"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
