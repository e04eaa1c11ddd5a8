"""The command reference (docs/reference/commands.md), generated from the click commands' own
--help, so the two cannot drift.

    python -m tools.cli_docs --write   # rewrite the block between the cli markers
    python -m tools.cli_docs --check   # exit 1 when the page is not what --help says

Every command and subcommand is listed, in the order `claude-session --help` gives, with its
help exactly as printed at 88 columns (its --json option says the shape of the JSON).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

import click

from tools.doc_block import updated, write_or_check

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "reference" / "commands.md"
START = "<!-- cli:start -->"
END = "<!-- cli:end -->"
NOTE = (
    "<!-- generated from the commands' --help by `python -m tools.cli_docs --write`;"
    " edit the click commands, not this block -->"
)
WIDTH = 88


def commands(
    command: click.Command, name: str, parent: click.Context | None = None
) -> Iterator[tuple[click.Context, click.Command]]:
    """(context, command) for `command` and everything under it, depth first."""
    ctx = click.Context(
        command, info_name=name, parent=parent, terminal_width=WIDTH, max_content_width=WIDTH
    )
    yield ctx, command
    if isinstance(command, click.Group):
        for sub in command.list_commands(ctx):
            found = command.get_command(ctx, sub)
            if found is not None and not found.hidden:
                yield from commands(found, sub, ctx)


def render() -> str:
    """The markdown block, markers included."""
    from claude_session.cli import cli

    out = [START, NOTE]
    for ctx, command in commands(cli, "claude-session"):
        out += ["", f"### `{ctx.command_path}`", "", "```text"]
        out += [line.rstrip() for line in command.get_help(ctx).splitlines()]
        out.append("```")
    return "\n".join([*out, "", END])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite the page's block")
    mode.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    parser.add_argument(
        "--page", type=Path, default=PAGE, help=f"default: {PAGE.relative_to(ROOT)}"
    )
    args = parser.parse_args(argv)
    page = args.page.read_text(encoding="utf-8")
    wanted = updated(page, START, END, render())
    return write_or_check(
        args.page,
        page,
        wanted,
        args.write,
        f"{args.page} does not match the commands' --help: run python -m tools.cli_docs --write",
    )


if __name__ == "__main__":
    sys.exit(main())
