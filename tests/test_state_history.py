"""project_state with its history: every change with its cause, written by triggers (hooks,
the CLI, the capture process's detection, and SQL from outside all leave their trace)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import apsw
from conftest import PYTHON, fixture, hook_env, query, run_hook, wait_for

from claude_session.core import facts

CLI = str(Path(PYTHON).parent / "claude-session")
SESSION = "state-session-01"


def cli(project: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [CLI, "--project", str(project), *args],
        capture_output=True,
        text=True,
        env=hook_env(project),
    )
    if ok:
        assert done.returncode == 0, done.stderr
    return done


def as_json(project: Path, *args: str) -> Any:
    return json.loads(cli(project, *args, "--json").stdout)


def test_every_change_is_in_the_history_with_its_cause(project: Path) -> None:
    (project / "pyproject.toml").write_text("[project]\nname='x'\n[tool.ruff]\nline-length=100\n")
    run_hook(
        "SessionStart", fixture("SessionStart.startup", project) | {"session_id": SESSION}, project
    )
    assert wait_for(
        lambda: not query(project, "SELECT 1 FROM vcs_tags WHERE status = 'pending'"), 30
    )
    bash = fixture("PostToolUse.Bash", project) | {"session_id": SESSION, "tool_use_id": "t-77"}
    bash["tool_input"] = {"command": "uv run pytest -q tests"}
    run_hook("PostToolUse", bash, project)
    cli(project, "state", "set", "deploy_target", "staging")
    cli(project, "state", "set", "deploy_target", "staging")  # unchanged: no history row
    cli(project, "state", "set", "deploy_target", "production")
    conn = apsw.Connection(str(project / ".claude-session.db"))
    conn.setbusytimeout(5000)
    conn.execute("UPDATE project_state SET value = 'by hand' WHERE key = 'deploy_target'")
    conn.close()
    cli(project, "state", "unset", "deploy_target")

    values = {row["key"]: row["value"] for row in as_json(project, "state", "list")}
    assert values["last_session_id"] == SESSION
    assert values["language"] == "python" and values["lint_command"] == "ruff check ."
    assert values["test_command"] == "uv run pytest -q tests"  # what the agent ran beats a guess
    assert "deploy_target" not in values
    history = as_json(project, "state", "history", "deploy_target")
    assert [(h["old_value"], h["new_value"]) for h in history] == [
        ("by hand", None),
        ("production", "by hand"),
        ("staging", "production"),
        (None, "staging"),
    ]
    causes = [h["cause"] for h in history]
    assert causes[0].startswith("claude-session state unset (by ")
    assert causes[1] == "direct SQL"
    assert causes[2].startswith("claude-session state set (by ")
    test_command = as_json(project, "state", "history", "test_command")
    assert test_command[0]["cause"].startswith(
        f"Bash tool call t-77 by the main thread in session {SESSION}"
    )
    assert test_command[-1]["cause"] == "detected from the project's files"
    started = as_json(project, "state", "history", "last_session_id")[0]["cause"]
    assert started.startswith(f"SessionStart (startup) of session {SESSION} (event ")
    assert cli(project, "state", "get", "language").stdout.strip() == "python"
    missing = cli(project, "state", "get", "langauge", ok=False)
    assert missing.returncode == 1 and "did you mean 'language'" in missing.stderr


def test_commands_are_classified_by_the_tool_they_run() -> None:
    assert facts.classify_command("cd app && npm test -- --watch=false") == "test"
    assert facts.classify_command("uv run pytest -q") == "test"
    assert facts.classify_command("ruff check . && mypy src") == "lint"
    assert facts.classify_command("cargo test --all") == "test"
    assert facts.classify_command("ls -la") is None
    assert facts.classify_command("pytester") is None
