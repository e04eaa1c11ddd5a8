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


def _raw_bytes(project: Path) -> bytes:
    """The database file and its WAL as they lie on disk."""
    return b"".join(
        p.read_bytes()
        for p in (project / ".claude-session.db", project / ".claude-session.db-wal")
        if p.exists()
    )


def test_secrets_in_state_are_redacted_on_every_write_path(project: Path) -> None:
    """The CLI, the MCP server and the hooks' own detection all write through one writer that
    redacts (the same scanner as events): no secret reaches the table, its history or the WAL,
    and a value that only its key says is secret is hidden too."""
    import asyncio

    from claude_session import mcp_server

    github = "ghp_" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2"
    plain = "Zq8wV3nR7tY2pL5k"  # nothing but its key says it is a secret
    payload = fixture("SessionStart.startup", project) | {"session_id": SESSION}
    assert run_hook("SessionStart", payload, project).returncode == 0
    cli(project, "state", "set", "deploy_token", github)
    cli(project, "state", "set", "db_password", plain)
    server = mcp_server.build(str(project))
    asyncio.run(server.call_tool("set_state", {"key": "ci_token", "value": f"token {github}"}))
    asyncio.run(server.call_tool("set_state", {"key": "git_head", "value": "a" * 40}))
    values = dict(query(project, "SELECT key, value FROM project_state"))
    assert values["deploy_token"].startswith("[REDACTED:")
    assert values["db_password"].startswith("[REDACTED:")
    assert values["ci_token"].startswith("token [REDACTED:")
    assert values["git_head"] == "a" * 40  # a commit id under a plain name is kept
    history = query(project, "SELECT key, old_value, new_value FROM state_history")
    assert history and all(github not in str(row) and plain not in str(row) for row in history)
    raw = _raw_bytes(project)
    assert github.encode() not in raw and plain.encode() not in raw
    shown = cli(project, "state", "history", "deploy_token").stdout
    assert github not in shown and "REDACTED" in shown
