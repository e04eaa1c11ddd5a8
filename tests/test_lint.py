"""The codebase stays ruff clean (lint and format), checked with the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUFF = str(Path(sys.executable).parent / "ruff")


def test_ruff_check() -> None:
    done = subprocess.run([RUFF, "check", str(ROOT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_format() -> None:
    done = subprocess.run([RUFF, "format", "--check", str(ROOT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
