"""The `claude-session` command: thin click commands over queries, installer and output."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import apsw
import click

from .. import __version__
from ..core import context, db, spool
from ..core.paths import DB_NAME, db_path
from ..services import queries
from . import output
from .listing import emit_page, limit_option, stream_rows


def find_root(explicit: str | None) -> Path:
    """--project, else $CLAUDE_PROJECT_DIR, else the nearest folder up with a database, else cwd."""
    if explicit:
        return Path(explicit).resolve()
    if os.environ.get("CLAUDE_PROJECT_DIR"):
        return Path(os.environ["CLAUDE_PROJECT_DIR"]).resolve()
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / DB_NAME).exists():
            return folder
    return here


@contextmanager
def opened(root: Path, create: bool = False) -> Iterator[apsw.Connection]:
    """The project database, migrated and with the spool ingested; a clear error otherwise."""
    path = db_path(str(root))
    if not create and not os.path.exists(path) and not spool.backlog(str(root)):
        raise click.ClickException(
            f"no claude-session database at {path} yet: install the hooks with "
            "`claude-session install` and start Claude Code, or try `claude-session demo`"
        )
    try:
        conn = db.connect(path)
    except db.SchemaTooNew as exc:
        raise click.ClickException(str(exc)) from exc
    except db.DatabaseError as exc:
        raise click.ClickException(f"cannot open {path}: {exc}") from exc
    try:
        spool.ingest(conn, str(root))
        yield conn
    finally:
        conn.close()


def format_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """--json on every command that prints data (the one switch lives in output.emit)."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")(
        command
    )


class LazyGroup(click.Group):
    """Commands defined in the other cli modules load when one of them runs (or for --help):
    `status` and the listings do not pay ~50 ms importing time travel, memory and install."""

    MODULES: ClassVar[dict[str, str]] = {
        "install": "setup_commands",
        "uninstall": "setup_commands",
        "trust": "setup_commands",
        "memory": "memory_commands",
        "state": "state_commands",
        "statusline": "statusline_command",
        "timeline": "timetravel_commands",
        "diff": "timetravel_commands",
        "fork": "timetravel_commands",
        "replay": "timetravel_commands",
        "revert": "timetravel_commands",
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        for module in set(self.MODULES.values()):
            self._load(module)
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.MODULES:
            self._load(self.MODULES[cmd_name])
        return super().get_command(ctx, cmd_name)

    @staticmethod
    def _load(module: str) -> None:
        import importlib

        importlib.import_module(f"{__name__}.{module}")  # its commands register on `cli`


@click.group(cls=LazyGroup)
@click.version_option(__version__, prog_name="claude-session")
@click.option("--project", type=click.Path(file_okay=False), help="Project root (default: found).")
@click.pass_context
def cli(ctx: click.Context, project: str | None) -> None:
    """Session, agent and failure memory for Claude Code, from its hook events."""
    ctx.obj = find_root(project)


@cli.command(name="doctor")
@click.option("--full", is_flag=True, help="Also read every page (PRAGMA quick_check): slow.")
@format_option
@click.pass_obj
def doctor_command(root: Path, full: bool, as_json: bool) -> None:
    """Run every installed hook as Claude Code would and check the database."""
    from ..services import doctor

    results = doctor.check(root, full)
    output.emit(results, "json" if as_json else "table", title="doctor")
    if not all(r["ok"] for r in results):
        sys.exit(1)


@cli.command()
@format_option
@click.pass_obj
def status(root: Path, as_json: bool) -> None:
    """Sessions, agents, claims, errors, failed paths, snapshots, database and spool."""
    with opened(root) as conn:
        output.emit(queries.status(conn, str(root)), "json" if as_json else "table")


@cli.command()
@click.option(
    "--all",
    "include_all",
    is_flag=True,
    help="Every agent, finished sessions' and internal helpers too, streamed.",
)
@click.option("--session", help="Session id (a prefix is enough).")
@limit_option
@format_option
@click.pass_obj
def agents(root: Path, include_all: bool, session: str | None, limit: int, as_json: bool) -> None:
    """The agent registry: agent, type, task, state, age, last seen, files, reason."""
    hide = () if as_json else ("session_id", "tool_uses", "is_internal")  # what a person scans
    query = queries.agents_query(include_all=include_all, session=session)
    with opened(root) as conn:
        if include_all:
            stream_rows(queries.stream(conn, query), as_json, hide)
            return
        found = queries.page(conn, query, limit)
    emit_page(found, as_json, "agents", "agents", hide)


@cli.command()
@click.option("--all", "include_all", is_flag=True, help="Every claim, released too, streamed.")
@limit_option
@format_option
@click.pass_obj
def claims(root: Path, include_all: bool, limit: int, as_json: bool) -> None:
    """File claims (leases) by agent; files held by two live agents are marked contested."""
    query = queries.claims_query(include_released=include_all)
    with opened(root) as conn:
        if include_all:
            stream_rows(queries.stream(conn, query), as_json)
            return
        found = queries.page(conn, query, limit)
    emit_page(found, as_json, "claims", "claims")


@cli.command(name="config")
@click.option(
    "--set",
    "assignments",
    multiple=True,
    metavar="KEY=VALUE",
    help="Change a value in .claude-session.json (validated).",
)
@format_option
@click.pass_obj
def config_command(root: Path, assignments: tuple[str, ...], as_json: bool) -> None:
    """Show the project configuration (.claude-session.json, with defaults), or change it."""
    from ..services import configuration

    try:
        if assignments:
            loaded = configuration.set_values(str(root), list(assignments))
        else:
            loaded = configuration.load(str(root))
    except configuration.ConfigError as exc:
        raise click.ClickException(str(exc)) from exc
    rows = [
        {"key": key, "value": value, "source": "file" if key in loaded.written else "default"}
        for key, value in loaded.values.items()
    ]
    if as_json:
        output.emit({"path": loaded.path, "settings": rows, "problems": loaded.problems}, "json")
    else:
        output.emit(rows, "table", title=f"configuration ({loaded.path})")
        for problem in loaded.problems:
            click.echo(f"invalid, default used: {output.escape_controls(problem)}", err=True)
    if loaded.problems:
        sys.exit(1)


@cli.group()
def daemon() -> None:
    """The project's background process: marks silent agents stale, ingests the spool."""


@daemon.command(name="start")
@click.pass_obj
def daemon_start(root: Path) -> None:
    """Start it in the background (no-op when it runs)."""
    from ..services import daemon_control

    started = daemon_control.ensure_running(str(root))
    deadline = time.monotonic() + 10
    while daemon_control.running_pid(str(root)) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    pid = daemon_control.running_pid(str(root))
    if pid is None:
        raise click.ClickException(f"the daemon did not start; see {root / (DB_NAME + '.log')}")
    click.echo(f"daemon {'started' if started else 'already running'} (pid {pid})")


@daemon.command(name="stop")
@click.pass_obj
def daemon_stop(root: Path) -> None:
    """Stop it (SIGTERM, then SIGKILL after 10 s)."""
    from ..services import daemon_control

    click.echo("daemon stopped" if daemon_control.stop(str(root)) else "daemon not running")


@daemon.command(name="status")
@format_option
@click.pass_obj
def daemon_status(root: Path, as_json: bool) -> None:
    """Is it running, and what has it done."""
    output.emit(queries.daemon_state(str(root)), "json" if as_json else "table", title="daemon")


@daemon.command(name="run")
@click.pass_obj
def daemon_run(root: Path) -> None:
    """Run it in the foreground (until Ctrl+C, `daemon stop`, or idle exit)."""
    from ..services import daemon as background

    sys.exit(background.run(str(root)))


@cli.command(name="errors")
@click.option("--open", "open_only", is_flag=True, help="Only errors not fixed yet.")
@click.option("--all", "every", is_flag=True, help="Every one, streamed.")
@limit_option
@format_option
@click.pass_obj
def errors_command(root: Path, open_only: bool, every: bool, limit: int, as_json: bool) -> None:
    """Failures with their escalation step (attempt) and resolution."""
    hide = () if as_json else ("error_message", "command", "file_path", "task_id", "interrupted")
    query = queries.errors_query(open_only=open_only)
    with opened(root) as conn:
        if every:
            stream_rows(queries.stream(conn, query), as_json, hide)
            return
        found = queries.page(conn, query, limit)
    emit_page(found, as_json, "errors", "errors", hide)


@cli.command()
@click.argument("approach", required=False)
@click.option("--reason", help="Why it failed.")
@click.option("--file", "file_path", help="The file it concerns.")
@click.option("--session", help="Session id (default: the most recently active).")
@click.option("--resolve", type=int, metavar="ID", help="Mark failed path ID no longer relevant.")
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
    from ..core import ladder
    from ..core.config import number
    from ..core.redact import redact
    from ..services import configuration

    with opened(root, create=True) as conn:
        if resolve is not None:
            with db.Immediate(conn):
                found = ladder.resolve_failed_path(conn, resolve)
            if not found:
                raise click.ClickException(f"no failed path {resolve}")
            click.echo(f"failed path {resolve} is no longer shown")
            return
        if not approach or not reason:
            raise click.UsageError('give the approach and --reason "why it failed"')
        session = session or queries.latest_session(conn)
        relative = None
        if file_path:
            from ..core.paths import relative_to_root

            relative = relative_to_root(str(root), file_path)  # relative: to the project
        with db.Immediate(conn):
            new_id = ladder.add_failed_path(
                conn,
                session,
                redact(approach),
                redact(reason),
                relative,
                "recorded by hand",
                time.time(),
                number(configuration.load_or_defaults(str(root)).values, "failed_path_ttl_days"),
            )
    click.echo(f"failed path {new_id} recorded")


@cli.command(name="failed-paths")
@click.option(
    "--all", "include_all", is_flag=True, help="Every one, resolved and expired too, streamed."
)
@limit_option
@format_option
@click.pass_obj
def failed_paths(root: Path, include_all: bool, limit: int, as_json: bool) -> None:
    """Approaches tried and rejected, newest first."""
    query = queries.failed_paths_query(include_all=include_all)
    with opened(root) as conn:
        if include_all:
            stream_rows(queries.stream(conn, query), as_json)
            return
        found = queries.page(conn, query, limit)
    emit_page(found, as_json, "failed paths", "failed-paths")


@cli.command(name="verdicts")
@click.option("--all", "every", is_flag=True, help="Every one, streamed.")
@limit_option
@format_option
@click.pass_obj
def verdicts_command(root: Path, every: bool, limit: int, as_json: bool) -> None:
    """The judge's verdicts on finished work."""
    hide = () if as_json else ("raw", "verdict_json")
    with opened(root) as conn:
        if every:
            stream_rows(queries.stream(conn, queries.verdicts_query()), as_json, hide)
            return
        found = queries.page(conn, queries.verdicts_query(), limit)
    emit_page(found, as_json, "verdicts", "verdicts", hide)


@cli.command()
@click.option("--session", help="Session id (a prefix is enough).")
@click.option("--event", help="Hook event name, e.g. PostToolUse.")
@click.option("--tool", help="Tool name, e.g. Bash.")
@click.option("--agent", help="Subagent id.")
@click.option("--payload", is_flag=True, help="Include the stored (redacted) payload.")
@click.option("--all", "every", is_flag=True, help="Every matching event, newest first, streamed.")
@limit_option
@format_option
@click.pass_obj
def events(
    root: Path,
    session: str | None,
    event: str | None,
    tool: str | None,
    agent: str | None,
    limit: int,
    payload: bool,
    every: bool,
    as_json: bool,
) -> None:
    """List recorded events, the newest page oldest first, filtered."""
    query = queries.events_query(
        session=session, event=event, tool=tool, agent=agent, payload=payload
    )
    with opened(root) as conn:
        if every:
            stream_rows(queries.stream(conn, query), as_json)
            return
        found = queries.page(conn, query, limit)
    found.rows.reverse()
    emit_page(found, as_json, "events", "events")


@cli.command()
@click.option("--session", help="Session id (default: the most recently active).")
@click.pass_obj
def restore(root: Path, session: str | None) -> None:
    """Print the state SessionStart puts back into the model's context after a compaction."""
    with opened(root) as conn:
        session = session or queries.latest_session(conn)
        if not session:
            raise click.ClickException("no session recorded yet")
        output.echo_text(context.for_compaction(conn, session, time.time()))


@cli.command()
@click.option(
    "--older-than",
    "days",
    type=float,
    default=30.0,
    show_default=True,
    help="Sessions that ended more than this many days ago.",
)
@click.option("--vacuum", is_flag=True, help="Give the freed space back to the filesystem.")
@click.option("--dry-run", is_flag=True, help="Show what would be deleted; delete nothing.")
@click.option("--yes", is_flag=True, help="Delete without asking (needed when not on a terminal).")
@format_option
@click.pass_obj
def prune(root: Path, days: float, vacuum: bool, dry_run: bool, yes: bool, as_json: bool) -> None:
    """Drop old sessions' raw events, audit rows and workspace snapshots; what was learned
    from them (agents, errors, failed paths, frames and their states) stays. Shows what would
    go and asks first."""
    from ..services import prune as pruning

    with opened(root) as conn:
        plan = pruning.plan(conn, str(root), days)
        if as_json and (dry_run or not yes):
            output.emit({"would_remove": plan}, "json")
        elif not as_json:
            click.echo(
                f"would remove, from {plan['sessions']} sessions that ended more than {days:g}"
                " days ago: "
                + ", ".join(f"{n} {table} rows" for table, n in plan["rows"].items())
                + f"; workspace snapshot store: {plan['snapshot_store_bytes'] / 1e6:.1f} MB,"
                f" database: {plan['database_bytes'] / 1e6:.1f} MB"
            )
        if dry_run:
            return
        if not yes:
            if not (sys.stdin.isatty() and sys.stdout.isatty()):
                click.echo("not on a terminal: nothing deleted; pass --yes to delete", err=True)
                sys.exit(1)
            if not click.confirm("delete them?", default=False):
                click.echo("nothing deleted")
                return
        done = pruning.run(conn, str(root), days, vacuum)
    if as_json:
        output.emit(done, "json")
        return
    counts, snapshots = done["rows_removed"], done["workspace_snapshots"]
    click.echo(", ".join(f"{n} {table} rows" for table, n in counts.items()) + " removed")
    freed = done["database_bytes_before"] - done["database_bytes_after"]
    click.echo(
        f"database and WAL: {done['database_bytes_before'] / 1e6:.1f} MB ->"
        f" {done['database_bytes_after'] / 1e6:.1f} MB ({freed / 1e6:.1f} MB given back)"
        + (
            ""
            if vacuum
            else f"; {done['free_inside_bytes'] / 1e6:.1f} MB free inside the file for new"
            " rows (--vacuum gives it back to the disk)"
        )
    )
    click.echo(
        f"workspace snapshots: {snapshots['dropped']} dropped,"
        f" {snapshots['bytes_before'] / 1e6:.1f} MB -> {snapshots['bytes_after'] / 1e6:.1f} MB"
    )


@cli.command()
@click.pass_obj
def ingest(root: Path) -> None:
    """Replay events waiting in the spool into the database."""
    with opened(root):  # opening ingests
        click.echo(f"{spool.backlog(str(root))} events still waiting in the spool")


@cli.command()
@click.option("--keep", is_flag=True, help="Keep the scratch project and print its path.")
def demo(keep: bool) -> None:
    """Play a recorded real Claude Code session through the hooks, then show the result."""
    import tempfile  # here: it imports random and hashlib (~30 ms for every other command)

    from ..services import demo as player

    scratch = Path(tempfile.mkdtemp(prefix="claude-session-demo-"))
    project = scratch / "project"
    project.mkdir()
    played = player.play(project)
    failed = [p["hook_event_name"] for p, run in played if run.returncode != 0]
    click.echo(
        f"played {len(played)} recorded Claude Code 2.1.330 events through the hooks "
        f"into {project} ({len(failed)} hook failures)\n"
    )
    with opened(project) as conn:
        output.emit(queries.status(conn, str(project)))
        session = queries.latest_session(conn)
        click.echo("\nWhat SessionStart puts back into the model's context after a compaction:\n")
        output.echo_text(context.for_compaction(conn, session or "", time.time()))
    if keep:
        click.echo(f"\nscratch project kept: {project}")
    else:
        import shutil

        shutil.rmtree(scratch, ignore_errors=True)
    if failed:
        sys.exit(1)


def main() -> None:
    """The installed command: click's own errors as click prints them; a database or file
    system that refuses (full, read-only, locked past every deadline) as one clear line and
    exit 1, never a traceback."""
    try:
        cli.main(prog_name="claude-session")
    except (apsw.Error, db.DatabaseError, OSError) as exc:
        click.echo(f"claude-session: error: {storage_problem(exc)}", err=True)
        sys.exit(1)


def storage_problem(exc: BaseException) -> str:
    """What went wrong with the database or the disk, in words."""
    cause = exc.__cause__ if isinstance(exc, db.DatabaseError) and exc.__cause__ else exc
    if isinstance(cause, apsw.FullError) or getattr(cause, "errno", None) in (28, 27):
        what = "the disk is full (or the file size limit was reached)"
    elif isinstance(cause, apsw.ReadOnlyError) or getattr(cause, "errno", None) in (30, 13):
        what = "the database or its folder is read-only"
    elif isinstance(cause, apsw.BusyError | apsw.LockedError):
        what = "the database is locked by another process past every deadline; try again"
    else:
        what = f"{type(cause).__name__}: {cause}"
    return output.escape_controls(what)


if __name__ == "__main__":
    main()
