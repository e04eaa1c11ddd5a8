"""The internal error log beside the database: what went wrong inside claude-session.

Hooks never print diagnostics to stdout (SessionStart stdout would reach the model); they
append one redacted line here and one to stderr, which Claude Code keeps in its debug log.
`claude-session status` counts the ERROR lines.
"""

from __future__ import annotations

import os
import sys
import time

from .paths import log_path, user_state_dir
from .redact import redact
from .terminal import escape_controls

LOG_CAP_BYTES = 1024 * 1024


def where(root: str | None) -> str:
    """The log file for a project, or the per-user one when the project is unknown."""
    return log_path(root) if root else os.path.join(user_state_dir(), "claude-session.log")


def write(root: str | None, level: str, hook: str, message: str) -> None:
    """Append one line; never raises (a logger that crashes the hook would defeat its purpose)."""
    # Messages quote payloads (a cwd, a tool's error): their controls (ESC, BEL, bidi marks)
    # are shown escaped, never written raw to a terminal reading stderr or the log.
    line = escape_controls(redact(" ".join(message.split())))[:2000]
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    text = f"{stamp} {level} [{hook} pid={os.getpid()}] {line}\n"
    try:
        sys.stderr.write(f"claude-session: {level.lower()}: {line}\n")
    except Exception:
        pass
    try:
        path = where(root)
        if not root:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        try:
            if os.path.getsize(path) > LOG_CAP_BYTES:
                os.replace(path, path + ".1")
        except OSError:
            pass
        # O_NOFOLLOW: a link planted at the log path is refused, never written through.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, text.encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except Exception:
        pass


def error(root: str | None, hook: str, message: str) -> None:
    write(root, "ERROR", hook, message)


def warning(root: str | None, hook: str, message: str) -> None:
    write(root, "WARNING", hook, message)


def count_errors(root: str | None) -> tuple[int, str | None]:
    """How many ERROR lines the log holds (current file and one rotation), and the last one."""
    total, last = 0, None
    path = where(root)
    for name in (path + ".1", path):
        try:
            with open(name, encoding="utf-8", errors="replace") as f:
                for line in f:
                    if " ERROR [" in line:
                        total += 1
                        last = line.strip()
        except OSError:
            continue
    return total, last
