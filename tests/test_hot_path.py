"""The hook hot path imports only the standard library and apsw: no click, pydantic, rich..."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import PYTHON, fixture, hook_argv, hook_env


def imported_modules(event: str, payload: dict[str, object], project: Path) -> set[str]:
    done = subprocess.run(
        [PYTHON, "-I", "-S", "-X", "importtime", *hook_argv(event)[3:]],
        input=json.dumps(payload).encode(),
        capture_output=True,
        # The daemon check is measured too; the hook does its work itself (no relay: see
        # test_relay for what a relayed hook loads).
        env=hook_env(project, CLAUDE_SESSION_NO_DAEMON="", CLAUDE_SESSION_NO_RELAY="1"),
    )
    assert done.returncode == 0
    names = set()
    for line in done.stderr.decode().splitlines():
        if line.startswith("import time:") and "|" in line and "imported package" not in line:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


def test_hooks_import_only_stdlib_and_apsw(project: Path, reap_daemons: None) -> None:
    cases = [
        ("SessionStart", "SessionStart.startup"),
        ("PreToolUse", "PreToolUse.Bash"),
        ("PostToolUse", "PostToolUse.Edit"),
        ("PostToolUseFailure", "PostToolUseFailure.Bash"),
        ("SubagentStop", "SubagentStop"),
        ("SessionStart", "SessionStart.compact"),
    ]
    for script, name in cases:
        modules = imported_modules(script, fixture(name, project), project)
        assert "claude_session.runtime.hookrt" in modules  # the measurement saw the hook's imports
        third_party = {
            m
            for m in modules
            if m.split(".")[0] not in sys.stdlib_module_names
            and m.split(".")[0] not in ("apsw", "claude_session")
        }
        assert not third_party, f"{script}: {sorted(third_party)}"
        heavy = modules & {
            "click",
            "pydantic",
            "rich",
            "watchfiles",
            "claude_session.cli",
            "claude_session.services.setup.payloads",
            "claude_session.services.queries",
        }
        assert not heavy


def test_hot_path_avoids_costly_stdlib_modules(project: Path, reap_daemons: None) -> None:
    """json (~5 ms), typing (~3 ms), subprocess (~5 ms), enum via signal (~2.5 ms),
    dataclasses and hashlib stay off the path of ordinary tool events and of SessionStart
    (daemon check included), and so does the `collections` package (~2 ms) that apsw's init
    would pull in (hook.py gives it the ABCs alone): these budgets are why hooks meet their
    speed target."""
    costly = {"json", "typing", "subprocess", "dataclasses", "hashlib", "re", "enum", "signal"}
    costly |= {"collections", "operator", "reprlib", "keyword"}
    cases = [
        ("PreToolUse", "PreToolUse.Bash"),
        ("PreToolUse", "PreToolUse.Edit"),
        ("PostToolUse", "PostToolUse.Edit"),
        ("SessionStart", "SessionStart.startup"),
        ("PostToolUseFailure", "PostToolUseFailure.Bash"),  # the error ladder too
        ("Stop", "Stop"),
    ]
    for script, name in cases:
        modules = imported_modules(script, fixture(name, project), project)
        assert not modules & costly, (script, sorted(modules & costly))


def test_a_hook_on_its_own_leaves_the_wal_and_keeps_it_short(project: Path) -> None:
    """A hook with no daemon leaves the WAL in place when it ends (closing the last
    connection used to checkpoint it, fsync twice and delete it, ~3 ms, for the next hook to
    make it anew), and empties it once it passes TRIM_WAL_FRAMES, so the next hook's
    rebuilding of the WAL index stays short. Every event is stored."""
    from conftest import count, run_hook

    from claude_session.runtime.effects import TRIM_WAL_FRAMES

    wal = project / ".claude-session.db-wal"
    frames_after = []
    for n in range(30):
        payload = fixture("PostToolUse.Edit", project)
        payload["tool_use_id"] = f"wal-{n}"
        payload["tool_input"]["file_path"] = str(project / f"src/m{n}.py")
        result = run_hook("PostToolUse", payload, project, hook_env(project))
        assert result.returncode == 0 and result.stdout == ""
        assert wal.exists(), f"hook {n} deleted the WAL"
        frames_after.append(wal.stat().st_size // (4096 + 24))
    assert count(project, "events") == 30
    assert max(frames_after) < TRIM_WAL_FRAMES + 100, frames_after
    trims = [n for n in range(1, 30) if frames_after[n] < frames_after[n - 1]]
    assert trims, frames_after  # emptied at least once on the way
