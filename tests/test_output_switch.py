"""One output switch: a command hands its outcome to `cli/output` as data, and `--json` is
decided there alone. Every command of the CLI has the same `--json`, none of them sees it, and
one command's `--json` does not leak into the next command run in the same process (click's
runner, a test, a user's script calling `cli.main`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
from click.testing import CliRunner

from claude_session.cli import output
from claude_session.cli.group import cli

CLI = Path(__file__).resolve().parent.parent / "claude_session" / "cli"


def every_command(group: click.Group, ctx: click.Context) -> list[tuple[str, click.Command]]:
    found = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        if isinstance(command, click.Group):
            sub = click.Context(command, parent=ctx, info_name=name)
            found += [(f"{name} {n}", c) for n, c in every_command(command, sub)]
        if command.callback is not None:
            found.append((name, command))
    return found


def test_no_command_sees_json() -> None:
    """`--json` is never a parameter a command reads: its callback tells `output`."""
    ctx = click.Context(cli, info_name="claude-session")
    with_json = 0
    for name, command in every_command(cli, ctx):
        for param in command.params:
            if "--json" in param.opts:
                with_json += 1
                assert not param.expose_value, f"`{name}` reads --json itself"
                assert param.callback is output.json_chosen, name
            assert param.name != "as_json", name
    assert with_json >= 40  # the listings, reports, verbs and setup commands all have it


def test_no_module_but_output_branches_on_the_format() -> None:
    for path in sorted(CLI.glob("*.py")):
        if path.name == "output.py":
            continue
        text = path.read_text()
        assert not re.search(r"\bas_json\b", text), path.name
        assert 'SETTINGS["json"]' not in text, path.name
        assert not re.search(r'emit\([^)]*"(json|table)"', text), path.name


def test_json_is_asked_for_once_and_does_not_leak(tmp_path: Path) -> None:
    root = str(tmp_path)
    runner = CliRunner()
    done = runner.invoke(cli, ["--project", root, "state", "set", "phase", "build", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output) == {"key": "phase", "value": "build", "changed": True}
    listed = runner.invoke(cli, ["--project", root, "state", "list"])  # no --json this time
    assert listed.exit_code == 0, listed.output
    assert "phase" in listed.output and "build" in listed.output
    assert not listed.output.lstrip().startswith(("[", "{")), listed.output
    rows = json.loads(runner.invoke(cli, ["--project", root, "state", "list", "--json"]).output)
    assert [(r["key"], r["value"]) for r in rows] == [("phase", "build")]
    said = runner.invoke(cli, ["--project", root, "state", "get", "phase"])
    assert said.output == "build\n"


def test_dataclasses_are_shown_as_their_fields(tmp_path: Path) -> None:
    """A library answer (a frozen dataclass) goes to `emit` as it is: JSON has its fields."""
    root = str(tmp_path)
    runner = CliRunner()
    added = runner.invoke(cli, ["--project", root, "memory", "add", "use the VPN", "--json"])
    assert added.exit_code == 0, added.output
    label = json.loads(added.output)["id"]
    found = json.loads(
        runner.invoke(cli, ["--project", root, "memory", "search", "VPN", "--json"]).output
    )
    assert [m["id"] for m in found] == [label]
    assert found[0]["text"] == "use the VPN" and found[0]["tags"] == []
    table = runner.invoke(cli, ["--project", root, "memory", "search", "VPN"]).output
    assert "use the VPN" in table and "rank" not in table  # the table's own columns
