"""Looking after the project: `doctor`, `config`, `daemon`, `fail`, `prune`, `ingest`, `demo`.
Each prints its result as JSON with --json."""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

import click

from ..core import durations, spool
from ..core.figures import plural
from ..core.paths import log_path
from . import demo_view, lookup, output
from .group import cli, json_option, listing_group, opened


@cli.command(name="doctor")
@click.option("--full", is_flag=True, help="Also read every page (PRAGMA quick_check): slow.")
@click.option("--fsck", is_flag=True, help="Also run git fsck on the snapshot store.")
@json_option("a list of checks: check, ok, detail")
@output.wide_option
@click.pass_obj
def doctor_command(root: Path, full: bool, fsck: bool) -> None:
    """Run every hook claude-session installed for you as Claude Code would (a command with
    its marker that it did not write is reported, never run), check the database and the
    snapshot store (stale locks of killed captures are removed)."""
    from ..services.setup import doctor

    results = doctor.check(root, full, fsck)
    output.emit(results, title="doctor")
    if not all(r["ok"] for r in results):
        sys.exit(1)


@cli.command(name="config")
@click.option(
    "--set",
    "assignments",
    multiple=True,
    metavar="KEY=VALUE",
    help="Change a value in .claude-session.json (validated).",
)
@json_option("an object: path, settings (key, value, source), problems")
@output.wide_option
@click.pass_obj
def config_command(root: Path, assignments: tuple[str, ...]) -> None:
    """Show the project configuration (.claude-session.json, with defaults), or change it."""
    from ..services import config_file

    try:
        if assignments:
            loaded = config_file.set_values(str(root), list(assignments))
        else:
            loaded = config_file.load(str(root))
    except config_file.ConfigError as exc:
        raise click.ClickException(str(exc)) from exc
    rows = [
        {
            "key": key,
            "value": config_file.shown_setting(key, value),
            "source": "file" if key in loaded.written else "default",
        }
        for key, value in loaded.values.items()
    ]
    for warning in loaded.warnings:
        click.echo(f"warning: {output.escape_controls(warning)}", err=True)

    def say() -> None:
        output.emit(rows, title=f"configuration ({loaded.path})")
        for problem in loaded.problems:
            click.echo(f"invalid, default used: {output.escape_controls(problem)}", err=True)

    output.emit({"path": loaded.path, "settings": rows, "problems": loaded.problems}, text=say)
    if loaded.problems:
        sys.exit(1)


@listing_group("status", "as `daemon status --json`: an object: running, pid, and what it reports")
def daemon() -> None:
    """The project's daemon: marks silent agents stale, ingests the spool. Without a
    command: `daemon status`."""


@daemon.command(name="start")
@json_option("an object: started, pid")
@click.pass_obj
def daemon_start(root: Path) -> None:
    """Start it in the background (no-op when it runs)."""
    from ..services.background import daemon_control

    started = daemon_control.ensure_running(str(root), throttle=False)
    deadline = time.monotonic() + 10
    while daemon_control.running_pid(str(root)) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    pid = daemon_control.running_pid(str(root))
    if pid is None:
        raise click.ClickException(f"the daemon did not start; see {log_path(str(root))}")
    output.reply(
        {"started": started, "pid": pid},
        f"daemon {'started' if started else 'already running'} (pid {pid})",
    )


@daemon.command(name="stop")
@json_option("an object: stopped (false: it was not running)")
@click.pass_obj
def daemon_stop(root: Path) -> None:
    """Stop it (SIGTERM, then SIGKILL after 10 s)."""
    from ..services.background import daemon_control

    stopped = daemon_control.stop(str(root))
    output.reply({"stopped": stopped}, "daemon stopped" if stopped else "daemon not running")


@daemon.command(name="status")
@json_option("an object: running, pid, and what the running daemon reports")
@output.wide_option
@click.pass_obj
def daemon_status(root: Path) -> None:
    """Is it running, and what has it done."""
    from ..project import Project

    with Project(root) as project:
        state = project.daemon()
    output.emit(state, title="daemon")


@daemon.command(name="run")
@json_option("an object, when it exits: exit_code")
@click.pass_obj
def daemon_run(root: Path) -> None:
    """Run it in the foreground (until Ctrl+C, `daemon stop`, or idle exit)."""
    import signal
    import subprocess

    # The very process `daemon start` runs in the background: its sweeps and the hook relay.
    argv = [sys.executable, "-P", "-m", "claude_session.daemon", "--project", str(root)]
    with subprocess.Popen(argv) as child:
        # `kill` (SIGTERM) or a closed terminal (SIGHUP) reaches this process only: passed
        # on, so that the daemon stops with it instead of running on, orphaned.
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, lambda sig, _frame: child.send_signal(sig))
        try:
            code = child.wait()
        except KeyboardInterrupt:  # Ctrl+C reached it too: it stops by itself
            code = child.wait()
    output.emit({"exit_code": code}, text=lambda: None)  # people saw the daemon itself
    sys.exit(code)


@cli.command()
@click.argument("approach", required=False)
@click.option("--reason", help="Why it failed.")
@click.option("--file", "file_path", help="The file it concerns.")
@click.option("--session", help="Session id (default: the most recently active).")
@click.option("--resolve", type=int, metavar="ID", help="Mark failed path ID no longer relevant.")
@json_option("an object: id, and recorded or resolved (true)")
@click.pass_obj
def fail(
    root: Path,
    approach: str | None,
    reason: str | None,
    file_path: str | None,
    session: str | None,
    resolve: int | None,
) -> None:
    """Record an approach that failed, so no agent tries it again (agents may run this too)."""
    from ..project import NotFound, Project

    with Project(root) as project:
        if resolve is not None:
            try:
                project.resolve_failed_path(resolve)
            except NotFound as exc:
                raise click.ClickException(str(exc)) from None
            output.reply(
                {"id": resolve, "resolved": True},
                f"failed path {resolve} is no longer shown",
            )
            return
        if not approach or not reason:
            raise click.UsageError('give the approach and --reason "why it failed"')
        if session:
            project.refresh(transcripts=False, spool=False)
            session = lookup.session(lookup.readable(project), session)
        new_id = project.record_failed_path(
            approach, reason, file_path=file_path, session_id=session
        )
    output.reply({"id": new_id, "recorded": True}, f"failed path {new_id} recorded")


@cli.command()
@click.option(
    "--older-than",
    "older_than",
    metavar="WHEN",
    default="30d",
    show_default=True,
    help=f"Sessions that ended more than this long ago: {durations.EXAMPLES} (a bare number:"
    " days; 0d: every session that ended), or before a date (2026-11-01). A session not ended"
    " is never pruned.",
)
@click.option("--vacuum", is_flag=True, help="Give the freed space back to the filesystem.")
@click.option(
    "--purge",
    "purge_paths",
    multiple=True,
    metavar="PATH",
    help="Instead: take this file's (or folder's) content out of every workspace snapshot."
    " Repeatable.",
)
@click.option("--dry-run", is_flag=True, help="Show what would be deleted; delete nothing.")
@click.option("--yes", is_flag=True, help="Delete without asking (needed when not on a terminal).")
@json_option(
    "an object: would_remove (sessions, rows, snapshot_store_bytes, database_bytes) before"
    " deleting; then rows_removed (rows per table), workspace_snapshots (dropped,"
    " bytes_before, bytes_after), database_bytes_before, database_bytes_after,"
    " free_inside_bytes. With --purge: would_purge, then purged, each a list of (path,"
    " snapshots_holding or snapshots_rewritten and snapshots_still_holding, bytes_before,"
    " bytes_after, left_out_by_rule: the snapshot rule that keeps it out from now on, or null)"
)
@click.pass_obj
def prune(
    root: Path,
    older_than: str,
    vacuum: bool,
    purge_paths: tuple[str, ...],
    dry_run: bool,
    yes: bool,
) -> None:
    """Drop old sessions' raw events, audit rows and workspace snapshots; what was learned
    from them (agents, errors, failed paths, frames and their states) stays. Shows what would
    go and asks first. With --purge PATH, only that path's content leaves the snapshots."""
    from ..services import prune as pruning

    if purge_paths:
        _purge(root, purge_paths, dry_run, yes)
        return
    try:
        before = durations.moment(older_than, bare_unit="d")
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--older-than") from None
    ended = f"that ended {durations.said(older_than, bare_unit='d')}"
    with opened(root, ingest=True) as conn:
        plan = pruning.plan(conn, str(root), before)
        said = (
            f"would remove, from {plural(plan['sessions'], 'session')} {ended}"
            " (sessions not ended stay): "
            + ", ".join(f"{n} {table} rows" for table, n in plan["rows"].items())
            + f"; workspace snapshot store: {plan['snapshot_store_bytes'] / 1e6:.1f} MB,"
            f" database: {plan['database_bytes'] / 1e6:.1f} MB"
        )
        output.emit_plan(
            {"would_remove": plan}, lambda: output.echo_wrapped(said), final=dry_run or not yes
        )
        if not (yes or vacuum or dry_run) and not any(plan["rows"].values()):
            # nothing to ask about, nothing to refuse: a success
            output.tell(f"nothing to prune: no rows of sessions {ended}")
            return
        if dry_run or not _go_ahead(yes, "delete", "delete them?"):
            return
        from ..core.trust import NotOurs

        try:
            done = pruning.run(conn, str(root), before, vacuum)
        except NotOurs as exc:
            click.echo(f"claude-session: {output.escape_controls(str(exc))}", err=True)
            sys.exit(1)
    output.emit(done, text=lambda: _say_pruned(done, vacuum))


def _say_pruned(done: dict[str, Any], vacuum: bool) -> None:
    counts, snapshots = done["rows_removed"], done["workspace_snapshots"]
    output.echo_wrapped(", ".join(f"{n} {table} rows" for table, n in counts.items()) + " removed")
    freed = done["database_bytes_before"] - done["database_bytes_after"]
    output.echo_wrapped(
        f"database and WAL: {done['database_bytes_before'] / 1e6:.1f} MB ->"
        f" {done['database_bytes_after'] / 1e6:.1f} MB ({freed / 1e6:.1f} MB given back)"
        + (
            ""
            if vacuum
            else f"; {done['free_inside_bytes'] / 1e6:.1f} MB free inside the file for new"
            " rows (--vacuum gives it back to the disk)"
        )
    )
    output.echo_wrapped(
        f"workspace snapshots: {snapshots['dropped']} dropped,"
        f" {snapshots['bytes_before'] / 1e6:.1f} MB -> {snapshots['bytes_after'] / 1e6:.1f} MB"
    )


def _go_ahead(yes: bool, verb: str, question: str) -> bool:
    """Whether to go on: `--yes`, or the person at the terminal says so. Off a terminal
    without `--yes`, nothing is done and the command exits 1."""
    if yes:
        return True
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        click.echo(f"not on a terminal: nothing {verb}d; pass --yes to {verb}", err=True)
        sys.exit(1)
    if not click.confirm(question, default=False):
        click.echo(f"nothing {verb}d")
        return False
    return True


def _purge(root: Path, given: tuple[str, ...], dry_run: bool, yes: bool) -> None:
    from ..services import prune as pruning

    try:
        paths = [pruning.purge_path(str(root), p) for p in given]
    except pruning.PurgeError as exc:
        raise click.ClickException(str(exc)) from exc
    with opened(root, ingest=True) as conn:
        plans = [pruning.purge_plan(str(root), p) for p in paths]

        def say() -> None:
            for plan in plans:
                output.echo_wrapped(
                    f"{plan['path']}: kept in {plan['snapshots_holding']} workspace snapshots;"
                    " its content would be taken out of them"
                )

        output.emit_plan({"would_purge": plans}, say, final=dry_run or not yes)
        if dry_run or not _go_ahead(yes, "purge", "purge it?"):
            return
        done = [pruning.purge(conn, str(root), p) for p in paths]
    output.emit({"purged": done}, text=lambda: _say_purged(root, done))


def _say_purged(root: Path, done: list[dict[str, Any]]) -> None:
    for item in done:
        output.echo_wrapped(
            f"{item['path']}: taken out of {item['snapshots_rewritten']} snapshots"
            f" ({item['snapshots_still_holding']} still hold it); store"
            f" {item['bytes_before'] / 1e6:.1f} MB -> {item['bytes_after'] / 1e6:.1f} MB"
        )
        if item["left_out_by_rule"] is None:
            from ..services import config_file

            now = str(config_file.load_or_defaults(str(root)).values["snapshot_exclude"])
            wanted = ",".join([*filter(None, [now.strip()]), "/" + item["path"]])
            output.echo_wrapped(
                f"{item['path']} will be captured again while it is in the project; to keep it"
                f" out: claude-session config --set 'snapshot_exclude={wanted}'"
            )


@cli.command()
@json_option("an object: ingested, waiting (events still in the spool)")
@click.pass_obj
def ingest(root: Path) -> None:
    """Replay events waiting in the spool into the database."""
    before = spool.backlog(str(root))
    with opened(root, ingest=True):  # opening ingests
        waiting = spool.backlog(str(root))
    output.reply(
        {"ingested": max(0, before - waiting), "waiting": waiting},
        f"{plural(waiting, 'event')} still waiting in the spool",
    )


@cli.command()
@click.option("--keep", is_flag=True, help="Keep the scratch project and print its path.")
@json_option(
    "an object: project, played, composed (of those, the events made from recorded payloads),"
    " hook_failures, status (as `status --json`), session_id, compacted_at, context, kept,"
    " deleted"
)
def demo(keep: bool) -> None:
    """Play a recorded real Claude Code session through the hooks (installed in a scratch
    project, a git repository, as `install` writes them), then show the result."""
    import tempfile  # here: it imports random and hashlib (~30 ms for every other command)

    from ..services.setup import demo as player

    scratch = Path(tempfile.mkdtemp(prefix="claude-session-demo-"))
    project = scratch / "project"
    project.mkdir()
    try:
        played = player.play(project)
    except player.NoRepository as exc:
        player.remove(scratch, project)
        raise click.ClickException(str(exc)) from exc
    failed = [p["hook_event_name"] for p, run in played if run.returncode != 0]
    from ..project import Project

    with Project(project) as played_in:
        played_in.refresh(transcripts=False)
        found = dataclasses.asdict(played_in.status())
        given = played_in.compaction_restored()  # as the model got it, and when
    gone = keep or player.remove(scratch, project)
    result: dict[str, Any] = {
        "project": str(project),
        "played": len(played),
        "composed": sum(1 for p, _ in played if player.COMPOSED in p),
        "hook_failures": failed,
        "status": found,
        "session_id": given.session_id if given else "",
        "compacted_at": given.at if given else None,
        "context": given.text if given else "",
        "kept": keep,
        "deleted": not keep and gone,
    }
    output.emit(result, text=lambda: demo_view.show(result))
    if failed:
        sys.exit(1)
