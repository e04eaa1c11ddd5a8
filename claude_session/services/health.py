"""The health checks `status` and `doctor` share, computed once: the spool (events waiting,
files set aside), internal errors logged, and trust in the database and the configuration.

Each check is a `Check`: its name, whether it passed, the detail `doctor` prints in its row,
and the one sentence `status` lists among its problems when it failed. `status_report.problems`
(what `status` and `Project.problems()` list) keeps the failed ones' sentences; `doctor` shows
every one as a row and adds its install-level checks (settings files, hooks run, the
snapshot store) on top.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core import log, spool
from ..core.figures import plural
from ..core.paths import spool_dir


@dataclass(frozen=True)
class Check:
    """One check: `check` (its name), `ok`, `detail` (doctor's row), `problem` (status's
    sentence when not ok, else None)."""

    check: str
    ok: bool
    detail: str
    problem: str | None = None

    def row(self) -> dict[str, Any]:
        """The row `doctor` prints: check, ok, detail."""
        return {"check": self.check, "ok": self.ok, "detail": self.detail}


def spool_checks(root: str) -> list[Check]:
    """Events waiting in the spool, and spool files set aside (quarantined)."""
    backlog = spool.backlog(root)
    set_aside, reason = spool.quarantined(root)
    detail = f"{plural(set_aside, 'spool file')} set aside in {spool_dir(root)}/rejected"
    return [
        Check(
            "spool backlog",
            backlog == 0,
            f"{plural(backlog, 'event')} waiting",
            f"{plural(backlog, 'event')} {'waits' if backlog == 1 else 'wait'} in the spool"
            " (the hooks and the daemon take them in; now: `claude-session ingest`)"
            if backlog
            else None,
        ),
        Check(
            "spool set aside",
            set_aside == 0,
            detail + (f"; last: {reason}" if reason else ""),
            f"{set_aside} spool files were set aside (quarantined): {reason or 'see doctor'}"
            if set_aside
            else None,
        ),
    ]


def replaced_database(root: str) -> Check:
    """WALs set aside because the database file was replaced under them (core/db.py)."""
    from ..core.db import set_aside_notes

    notes = set_aside_notes(root)
    return Check(
        "database replaced under its WAL",
        not notes,
        f"{len(notes)} time(s); last: {notes[-1]}" if notes else "never",
        notes[-1] if notes else None,
    )


def internal_errors(root: str) -> Check:
    """claude-session's own errors in its log."""
    count, last = log.count_errors(root)
    return Check(
        "internal errors",
        count == 0,
        f"{count} logged" + (f"; last: {last}" if last else ""),
        f"{count} internal errors logged" if count else None,
    )


def configuration_check(root: str) -> Check:
    """`.claude-session.json` through the one validation the hooks use: each invalid value is
    named, and falls back to its default there while the file's other values apply; a file
    that is not a JSON object at all means the defaults."""
    from . import config_file

    try:
        loaded = config_file.load(root)
    except config_file.ConfigError as exc:
        return Check(
            "configuration",
            False,
            f"{exc}; hooks use the defaults",
            f"the configuration cannot be used, the defaults are: {exc}",
        )
    # Trust is its own check (trust_checks): not said twice.
    invalid = [p for p in loaded.problems if not p.startswith("untrusted: ")]
    if loaded.problems:
        detail = f"{loaded.path}: " + "; ".join(loaded.problems)
        if invalid:
            detail += " (the default is used for each of these; the file's other values apply)"
        problem = None
        if invalid:
            problem = f"invalid in {loaded.path}, the default used instead: " + "; ".join(invalid)
        return Check("configuration", False, detail, problem)
    where = loaded.path if loaded.written else "no .claude-session.json (defaults)"
    return Check("configuration", True, where)


def trust_checks(root: str) -> list[Check]:
    """The database and the configuration: trusted, or why not."""
    from . import config_file

    return [
        Check(
            f"trust: {kind}",
            why is None,
            why or "trusted",
            None if why is None else f"the {kind} is not trusted: {why}",
        )
        for kind, why in config_file.trust_state(root).items()
    ]
