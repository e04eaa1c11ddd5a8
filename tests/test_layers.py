"""The direction of imports is the architecture: cli and the hook runtime above services, the
services above the core, and the core (what every hook process runs) on the standard library and
apsw alone. Inside the core, what is said to an agent above `events`, above the writers, above
the base, with no circle. The contracts live in pyproject.toml; import-linter checks them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def test_import_contracts_are_kept() -> None:
    done = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "4 kept, 0 broken" in done.stdout
