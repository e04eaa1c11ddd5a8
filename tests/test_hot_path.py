"""The hook hot path imports only the standard library and apsw: no click, pydantic, rich..."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import HOOKS, PYTHON, fixture, hook_env


def imported_modules(event: str, payload: dict[str, object], project: Path) -> set[str]:
    done = subprocess.run(
        [PYTHON, "-I", "-S", "-X", "importtime", str(HOOKS / f"{event}.py")],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=hook_env(project, CLAUDE_SESSION_NO_DAEMON=""),  # the daemon check is measured too
    )
    assert done.returncode == 0
    names = set()
    for line in done.stderr.decode().splitlines():
        if line.startswith("import time:") and "|" in line and "imported package" not in line:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


def test_hooks_import_only_stdlib_and_apsw(project: Path, reap_daemons: None) -> None:
    cases = [
        ("session_start", "SessionStart.startup"),
        ("pre_tool_use", "PreToolUse.Bash"),
        ("post_tool_use", "PostToolUse.Edit"),
        ("post_tool_use_failure", "PostToolUseFailure.Bash"),
        ("subagent_stop", "SubagentStop"),
        ("session_start", "SessionStart.compact"),
    ]
    for script, name in cases:
        modules = imported_modules(script, fixture(name, project), project)
        assert "claude_session.hookrt" in modules  # the measurement saw the hook's imports
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
            "claude_session.payloads",
            "claude_session.queries",
        }
        assert not heavy


def test_hot_path_avoids_costly_stdlib_modules(project: Path, reap_daemons: None) -> None:
    """json (~5 ms), typing (~3 ms), subprocess (~5 ms), enum via signal (~2.5 ms),
    dataclasses and hashlib stay off the path of ordinary tool events and of SessionStart
    (daemon check included): these budgets are why hooks meet their speed target."""
    costly = {"json", "typing", "subprocess", "dataclasses", "hashlib", "re", "enum", "signal"}
    cases = [
        ("pre_tool_use", "PreToolUse.Bash"),
        ("pre_tool_use", "PreToolUse.Edit"),
        ("post_tool_use", "PostToolUse.Edit"),
        ("session_start", "SessionStart.startup"),
        ("post_tool_use_failure", "PostToolUseFailure.Bash"),  # the error ladder too
        ("stop", "Stop"),
    ]
    for script, name in cases:
        modules = imported_modules(script, fixture(name, project), project)
        assert not modules & costly, (script, sorted(modules & costly))
