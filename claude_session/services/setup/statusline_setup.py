"""Claude Code's `statusLine` setting: writing ours, and taking exactly ours out again.

Claude Code has one status line. A user's own is never replaced unless they say `--force` (and
the settings file is backed up first, as every write of the installer does). Ours is known by
its command: it runs our entry, `claude_session/statusline.py`, and ends with the installer's
`# claude-session` marker, as our hook commands do. The command is an absolute interpreter
path and the entry inside this very install, like the hooks: nothing depends on PATH.
"""

from __future__ import annotations

import copy
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

from ...core import hook_contract
from . import installer

ENTRY_TAIL = "claude_session/statusline.py"
PROBE_LINES = 3  # what Claude Code shows comfortably; ours prints one


class ForeignStatusLine(Exception):
    """The settings file holds a status line that is not ours."""

    def __init__(self, existing: Any) -> None:
        super().__init__(describe(existing))
        self.existing = existing


def entry() -> Path:
    """The status-line entry inside this installed package (beside the hook entry)."""
    return installer.hook_entry().parent / hook_contract.STATUSLINE_ENTRY


def argv(python: str | None = None, path: Path | None = None) -> list[str]:
    """The status-line process as Claude Code starts it (less the marker)."""
    interpreter = os.path.abspath(python or sys.executable)  # not resolved: keep the venv path
    return [interpreter, *hook_contract.INTERPRETER_FLAGS, str(path or entry())]


def command(python: str | None = None, path: Path | None = None) -> str:
    return f"{shlex.join(argv(python, path))} {installer.MARKER}"


def setting(python: str | None = None) -> dict[str, Any]:
    """The `statusLine` value we write; no refreshInterval: Claude Code's own refresh on
    every message is when something can have changed."""
    return {"type": "command", "command": command(python), "padding": 0}


def is_ours(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    text = str(value.get("command", ""))
    return text.endswith(installer.MARKER) or ENTRY_TAIL in text


def describe(value: Any) -> str:
    if isinstance(value, dict) and "command" in value:
        return str(value["command"])
    return json.dumps(value)


def with_ours(settings: dict[str, Any], *, force: bool = False) -> dict[str, Any]:
    """A copy of `settings` with our status line; ForeignStatusLine if another is there and
    `force` is not given."""
    existing = settings.get("statusLine")
    if existing is not None and not is_ours(existing) and not force:
        raise ForeignStatusLine(existing)
    result = copy.deepcopy(settings)
    result["statusLine"] = setting()
    return result


def without_ours(settings: dict[str, Any]) -> dict[str, Any]:
    """A copy of `settings` without our status line (anyone else's stays)."""
    result = copy.deepcopy(settings)
    if is_ours(result.get("statusLine")):
        del result["statusLine"]
    return result


def cannot_run(python: str | None = None) -> str | None:
    """Why this install cannot write a working status-line command, or None."""
    problem = installer.cannot_run(python)
    if problem is None and not entry().is_file():
        problem = f"the status-line entry {entry()} is missing from this install"
    return problem


def probe(status_command: str) -> tuple[installer.Probe, str]:
    """Run `status_command` as Claude Code would, against a scratch project our SessionStart
    hook has just recorded a session into: it must exit 0 and print our line, in a few lines
    at most. A probe of nothing would prove little: this one reads a real database. Returns
    the verdict and the first line printed."""
    with tempfile.TemporaryDirectory(prefix="claude-session-probe-") as scratch:
        folder = Path(scratch)
        made = installer.probe_in(folder, installer.hook_command("SessionStart"))
        if not made.ok:
            return installer.Probe(False, 0.0, f"no sample database to show: {made.problem}"), ""
        sample = {
            "session_id": installer.PROBE_SESSION,
            "cwd": scratch,
            "workspace": {"current_dir": scratch, "project_dir": scratch},
            "model": {"id": "claude-probe", "display_name": "Probe"},
            "version": "probe",
        }
        run = installer.run_hook_command(
            status_command,
            json.dumps(sample).encode(),
            folder,
            extra_env=installer.probe_env(folder),
        )
    milliseconds = run.seconds * 1000
    lines = [line for line in run.stdout.splitlines() if line.strip()]
    if run.returncode != 0:
        problem = f"exit {run.returncode}: {run.stderr.strip()[-300:]}"
    elif not lines or not lines[0].startswith("cs: "):
        problem = f"it printed {run.stdout[:120]!r}, not a status line: {run.stderr[-300:]}"
    elif len(lines) > PROBE_LINES:
        problem = f"it printed {len(lines)} lines"
    else:
        return installer.Probe(True, milliseconds, None), lines[0]
    return installer.Probe(False, milliseconds, problem), ""
