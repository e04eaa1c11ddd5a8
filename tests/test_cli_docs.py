"""The command reference (docs/reference/commands.md) is generated from the commands' --help and
cannot drift; every command has a help text and --json, but for the exceptions named here with
their reason."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner

from claude_session.cli import cli
from tools.cli_docs import commands

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "reference" / "commands.md"

# Commands without --json, and why.
NO_JSON = {
    "claude-session": "the group itself: it only holds the commands",
    "claude-session memory export": "its output is data already: --format jsonl or markdown",
}


def cli_docs(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools.cli_docs", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )


def test_the_command_reference_matches_the_commands_help() -> None:
    done = cli_docs("--check")
    assert done.returncode == 0, done.stderr


def test_a_stale_reference_fails_the_check_until_written(tmp_path: Path) -> None:
    page = tmp_path / "commands.md"
    text = PAGE.read_text()
    page.write_text(text.replace("Print JSON instead of text: an object: key, value.", "", 1))
    assert page.read_text() != text
    stale = cli_docs("--check", "--page", str(page))
    assert stale.returncode == 1 and "--write" in stale.stderr
    assert cli_docs("--write", "--page", str(page)).returncode == 0
    assert cli_docs("--check", "--page", str(page)).returncode == 0
    assert page.read_text() == text


def test_every_command_has_help_and_json_but_the_named_exceptions() -> None:
    seen = set()
    for ctx, command in commands(cli, "claude-session"):
        path = ctx.command_path
        seen.add(path)
        assert command.help and command.help.strip(), f"{path} has no help text"
        words = path.split()[1:]
        result = CliRunner().invoke(cli, [*words, "--help"])
        assert result.exit_code == 0, path
        options = {o for p in command.params if isinstance(p, click.Option) for o in p.opts}
        if path in NO_JSON:
            assert "--json" not in options, f"{path} has --json now: drop it from NO_JSON"
            continue
        assert "--json" in options, f"{path} has no --json"
        json_help = next(p.help for p in command.params if "--json" in getattr(p, "opts", []))
        assert json_help and ": " in json_help, f"{path}: --json does not say its shape"
    assert set(NO_JSON) <= seen, set(NO_JSON) - seen
    assert len(seen) > 40


def test_project_is_moved_to_the_front_but_never_past_a_double_dash() -> None:
    from claude_session.cli import hoist_project

    assert hoist_project(["memory", "list", "--project", "/p"]) == [
        "--project",
        "/p",
        "memory",
        "list",
    ]
    assert hoist_project(["state", "get", "k", "--project=/p"]) == [
        "--project=/p",
        "state",
        "get",
        "k",
    ]
    args = ["replay", "s:1", "--", "--project", "/child"]
    assert hoist_project(args) == args
