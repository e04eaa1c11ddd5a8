"""`fork`: a new working directory with the files as at a frame; `fork --list` the forks made
from this project, `fork --remove FOLDER` one of them with its worktree registration.

The other time-travel commands (revert, diff, timeline, replay) are in timetravel_commands."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..services.snapshots import workspace
from ..services.timetravel import fork as forking
from ..services.timetravel import timetravel
from . import output
from .group import cli, json_option, opened


def _fail(exc: Exception) -> click.ClickException:
    return click.ClickException(str(exc))  # escaped where every error is: Group.invoke


@cli.command(name="fork", epilog=f"Frames are addressed as {timetravel.ADDRESS_SYNTAX}.")
@click.argument("frame", required=False)
@click.option("--label", help="A name for the fork.")
@click.option("--path", "path", type=click.Path(file_okay=False), help="Where (default: beside).")
@click.option("--list", "listing", is_flag=True, help="The forks made from this project.")
@click.option(
    "--remove",
    "remove",
    type=click.Path(file_okay=False),
    help="Remove this fork's folder and its worktree registration in your repository (only a"
    " fork claude-session made here).",
)
@click.option("--yes", is_flag=True, help="With --remove: remove without asking.")
@click.option(
    "--force", is_flag=True, help="With --remove: even when work done in the fork would be lost."
)
@json_option(
    "an object: branch, kind, from, path, made_with, snapshot_commit, label, hooks (where a"
    " session there gets claude-session's hooks from), next, remove_with; with --list, a list:"
    " branch, kind, path, label, parent_session_id, parent_frame_no, created_at,"
    " child_session_id, ours (the record carries our MAC), untagged (it carries none), exists,"
    " worktree (registered in your repository), remove_with (only for ours); with"
    " --remove: branch, path, was_worktree, lost (what --force let go)"
)
@click.pass_obj
def fork_command(
    root: Path,
    frame: str | None,
    label: str | None,
    path: str | None,
    listing: bool,
    remove: str | None,
    yes: bool,
    force: bool,
) -> None:
    """A new working directory with the files as at FRAME; its first session gets its state.
    `--list` shows the forks made here, `--remove FOLDER --yes` removes one."""
    chosen = [
        name for name, on in (("FRAME", frame), ("--list", listing), ("--remove", remove)) if on
    ]
    if len(chosen) != 1:
        raise click.UsageError("give a FRAME to fork, or --list, or --remove FOLDER")
    if (yes or force) and not remove:
        raise click.UsageError("--yes and --force only apply to --remove")
    if listing:
        _list(root)
    elif remove:
        _remove(root, remove, yes, force)
    else:
        _fork(root, str(frame), label, path)


def _fork(root: Path, frame: str, label: str | None, path: str | None) -> None:
    with opened(root, ingest=True) as conn:
        try:
            made = forking.fork(conn, str(root), frame, label=label, path=path)
        except (timetravel.FrameError, forking.ForkError, workspace.WorkspaceError) as exc:
            raise _fail(exc) from exc
    made["remove_with"] = forking.remove_hint(made["path"])

    def say() -> None:
        output.echo_wrapped(f"forked {made['from']} into {made['path']} ({made['made_with']})")
        output.echo_wrapped(f"hooks there: {made['hooks']}")
        output.echo_wrapped(f"next: {made['next']}")
        output.echo_wrapped(f"when done with it: {made['remove_with']}")

    output.emit(made, text=say)


def _list(root: Path) -> None:
    with opened(root) as conn:
        found = forking.forks(conn, str(root))

    def say() -> None:
        if not found:
            output.echo_wrapped("no forks made from this project")
            return
        for row in found:
            where = "worktree" if row["worktree"] else "folder" if row["exists"] else "gone"
            if not row["ours"]:
                where += "; not written by this user's claude-session: never removed"
                if row["untagged"]:
                    where += " (no MAC: an earlier version's fork, or planted)"
            name = f" [{output.escape_controls(str(row['label']))}]" if row["label"] else ""
            output.echo_wrapped(
                f"{row['kind']} {row['branch']}{name} of"
                f" {output.escape_controls(str(row['parent_session_id']))}:"
                f"{row['parent_frame_no']}: {output.escape_controls(row['path'])} ({where})"
            )
            if row["remove_with"]:
                output.echo_wrapped(f"  remove: {row['remove_with']}")

    output.emit(found, text=say)


def _remove(root: Path, folder: str, yes: bool, force: bool) -> None:
    if not yes:
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            click.echo("not on a terminal: nothing removed; pass --yes to remove", err=True)
            sys.exit(1)
        if not click.confirm(f"remove the fork {folder} and its worktree?", default=False):
            click.echo("nothing removed")
            return
    with opened(root, ingest=True) as conn:
        try:
            done = forking.remove(conn, str(root), folder, force=force)
        except forking.ForkError as exc:
            raise _fail(exc) from exc

    def say() -> None:
        registration = " and its worktree registration" if done["was_worktree"] else ""
        output.echo_wrapped(f"removed {done['path']}{registration}")
        if done["lost"]:
            output.echo_wrapped(f"let go (--force): {len(done['lost'])} change(s)")

    output.emit(done, text=say)
