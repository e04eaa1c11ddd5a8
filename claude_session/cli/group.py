"""The `claude-session` group and what every command module shares: the project it runs on
(`find_root`, `--project` anywhere: `hoist_project`), the database opened (`opened`), `--json`
(`json_option`), and the lazy loading of command modules (`Group`). The command modules import
this module, never the package, so nothing imports in a circle."""

from __future__ import annotations

import errno
import functools
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import apsw
import click

from .. import __version__
from ..core import db, spool
from ..core.figures import plural
from ..core.paths import DB_NAME, db_path, find_project, global_db_path
from . import output

F = TypeVar("F", bound=Callable[..., Any])


def find_root(explicit: str | None) -> Path:
    """--project, else $CLAUDE_PROJECT_DIR, else the nearest folder up with a database, else cwd."""
    return Path(find_project(explicit=explicit))


def require_database(root: Path, reading: bool = True) -> str:
    """The project database's path; when there is none (a read never makes one), what to do.

    Hooks installed and no session yet is the first minute, not an error: a read (`reading`)
    says so and ends the command, exit 0 (`waiting_for_first_session`); a command that needs
    a record to act on, or asks for one thing by name, fails saying the same. Events waiting
    in the spool, or no hooks anywhere, are an error that says what to do, exit 1."""
    path = db_path(str(root))
    if os.path.exists(path):
        return path
    waiting = spool.backlog(str(root))
    if waiting:
        raise click.ClickException(
            f"no claude-session database at {path} yet ({plural(waiting, 'event')}"
            f" {'waits' if waiting == 1 else 'wait'} in its spool: the daemon takes them in,"
            " or `claude-session ingest`)"
        )
    hooks = hooks_installed(root)
    if hooks is None:
        raise click.ClickException(
            f"no claude-session database at {path} yet: install the hooks with"
            " `claude-session install` and start Claude Code, or try `claude-session demo`"
        )
    if not reading:
        raise click.ClickException(
            f"nothing recorded yet: the hooks are installed and wait for the first session"
            f" (start Claude Code in {root}); hooks: {hooks}"
        )
    waiting_for_first_session(root, hooks)
    raise click.exceptions.Exit(0)


def hooks_installed(root: Path) -> str | None:
    """Where the claude-session hooks that reach a session started in `root` are, in words;
    None when none do (loaded only when there is no database: a read pays nothing for it)."""
    from ..services.setup import hook_sources

    found = hook_sources.Found(root)
    return found.describe() if found.files or found.plugin is not None else None


def waiting_lines(root: Path, hooks: str) -> list[str]:
    """What the first minute looks like, before Claude Code has sent a first event."""
    return [
        "claude-session: hooks installed, waiting for the first session",
        f"hooks: {hooks}",
        f"start Claude Code in {root} (if it is running, restart it or open /hooks):"
        f" its first event creates {db_path(str(root))}",
    ]


def waiting_for_first_session(root: Path, hooks: str) -> None:
    """Say that the hooks wait for the first session: those lines, or under --json one object
    that says so, the same for every read (`waiting_for_first_session: true`)."""
    output.emit(
        {
            "waiting_for_first_session": True,
            "project": str(root),
            "database": db_path(str(root)),
            "hooks_installed_in": hooks,
        },
        text=lambda: _say_each(waiting_lines(root, hooks)),
    )


def _say_each(lines: list[str]) -> None:
    out = output.console()
    for line in lines:
        output.say(out, line)


@contextmanager
def opened(root: Path, create: bool = False, ingest: bool = False) -> Iterator[apsw.Connection]:
    """The project database, migrated; a clear error when there is none.

    Reads open it as it is: no database is made (`create` is for commands that record), and
    the spool is left to the hooks and the daemon. A command that acts on what
    was recorded (revert, fork, prune, ...) asks for the spool's events first (`ingest`)."""
    path = db_path(str(root))
    if not create and not (ingest and spool.backlog(str(root))):
        require_database(root, reading=not ingest)
    try:
        conn = db.connect(path)
    except db.SchemaTooNew as exc:
        raise click.ClickException(str(exc)) from exc
    except db.DatabaseError as exc:
        if damaged(exc):
            raise Refused(storage_problem(exc, root)) from exc
        raise click.ClickException(f"cannot open {path}: {exc}") from exc
    try:
        if ingest:
            spool.ingest(conn, str(root))
        yield conn
    finally:
        conn.close()


def json_option(shape: str) -> Callable[[F], F]:
    """--json, with the shape of what it prints (the generated command reference shows it);
    `output.emit` reads it, the command does not."""
    return output.json_flag("Print JSON instead of text" + (f": {shape}." if shape else "."))


def format_option(command: F) -> F:
    """--json on a command whose JSON is the rows its table shows (kept for commands that have
    not said their shape yet; `json_option` says it)."""
    return json_option("the rows of the table, every field included")(command)


def run_listing(ctx: click.Context, name: str) -> None:
    """A group named without a command runs its listing, with its defaults (`state` is
    `state list`, `memory` is `memory list`, `daemon` is `daemon status`), as `prices` shows
    its table: a person asking for the group wants to see it, not a usage error."""
    if ctx.invoked_subcommand is not None:
        return
    group = ctx.command
    assert isinstance(group, click.Group)
    command = group.get_command(ctx, name)
    assert command is not None, name
    ctx.invoke(command)


def listing_group(listing: str, shape: str) -> Callable[[Callable[[], None]], click.Group]:
    """A group of `cli` (named and described by the function it decorates, whose body is its
    docstring) that runs its `listing` when named without a command (`run_listing`), with
    that listing's --json (`shape`) and --wide."""

    def make(function: Callable[[], None]) -> click.Group:
        @cli.group(invoke_without_command=True)
        @json_option(shape)
        @output.wide_option
        @click.pass_context
        @functools.wraps(function)
        def group(ctx: click.Context) -> None:
            run_listing(ctx, listing)

        return group

    return make


def hoist_project(args: list[str]) -> list[str]:
    """`--project DIR` / `--project=DIR` anywhere before `--`, moved to the front, where the
    group reads it: `claude-session memory list --project X` works as `--project X memory list`."""
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest += args[i:]
            break
        if arg == "--project" and i + 1 < len(args):
            front += args[i : i + 2]
            i += 2
            continue
        if arg.startswith("--project="):
            front.append(arg)
        else:
            rest.append(arg)
        i += 1
    return front + rest


class Group(click.Group):
    """The top-level group: `--project` is accepted anywhere on the command line, and the
    commands of the other cli modules load when one of them runs (or for --help): `status` and
    the listings do not pay ~50 ms importing time travel, memory, install and the live views."""

    MODULES: ClassVar[dict[str, str]] = {
        "install": "setup_commands",
        "uninstall": "setup_commands",
        "trust": "trust_commands",
        "memory": "memory_commands",
        "state": "state_commands",
        "statusline": "statusline_command",
        "timeline": "timetravel_commands",
        "diff": "timetravel_commands",
        "fork": "fork_commands",
        "replay": "timetravel_commands",
        "revert": "timetravel_commands",
        "cost": "cost_commands",
        "prices": "cost_commands",
        "hooks": "hooks_commands",
        "export-otel": "otel_commands",
        "watch": "live_commands",
        "serve": "live_commands",
    }

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist_project(args))

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.ClickException as exc:  # a usage error quotes what was typed
            shown = escaped_error(exc)
            if shown is exc:
                raise
            raise shown from exc

    def invoke(self, ctx: click.Context) -> Any:
        """Every command's outcome: an error message escaped (it may quote recorded text), and
        a database or disk that refuses (full, read-only, locked, damaged) one clear line and
        exit 1, never a traceback, for the installed command and click's runner alike."""
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            shown = escaped_error(exc)
            if shown is exc:
                raise
            raise shown from exc
        except Exception as exc:
            from ..project.opening import ProjectError

            found = storage_fault(exc)
            if isinstance(exc, ProjectError) and (found is None or not named(found)):
                # what the library refused (a database it cannot open), in its own words
                raise escaped_error(click.ClickException(str(exc))) from exc
            if found is None:
                raise
            root = ctx.obj if isinstance(ctx.obj, Path) else None
            raise Refused(storage_problem(found, root)) from exc

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

        importlib.import_module(f"{__package__}.{module}")  # its commands register on `cli`


@click.group(cls=Group)
@click.version_option(__version__, prog_name="claude-session")
@click.option(
    "--project",
    type=click.Path(file_okay=False),
    help="Project root (default: $CLAUDE_PROJECT_DIR, else the nearest folder up with a"
    " database, else the current one); accepted before or after the command.",
)
@click.pass_context
def cli(ctx: click.Context, project: str | None) -> None:
    """Session, agent and failure memory for Claude Code, from its hook events."""
    output.reset()  # before the command's own options set them
    ctx.obj = find_root(project)


def escaped_error(exc: click.ClickException) -> click.ClickException:
    """`exc`, or, when its message holds a control character (it may quote recorded text or
    what was typed), a plain error of the same exit code with the message escaped. A group
    run with nothing (`claude-session` alone) is its help, our own text: its lines stay lines."""
    if isinstance(exc, _HELP_FOR_NOTHING):
        return exc
    message = exc.format_message()
    shown = output.escape_controls(message)
    if shown == message:
        return exc
    return WrongUse(shown) if exc.exit_code == WrongUse.exit_code else click.ClickException(shown)


# click 8.2 and later: the help a group prints when run with no command at all.
_HELP_FOR_NOTHING: tuple[type[click.ClickException], ...] = tuple(
    getattr(click.exceptions, name)
    for name in ("NoArgsIsHelpError",)
    if hasattr(click.exceptions, name)
)


class WrongUse(click.ClickException):
    """A usage error (exit 2), its message escaped: printed without the usage lines."""

    exit_code = 2


class Refused(click.ClickException):
    """The database or the disk refused: `claude-session: error: ...` on stderr, exit 1."""

    def show(self, file: Any = None) -> None:
        click.echo(f"claude-session: error: {self.format_message()}", err=True)


SHARED_MEMORY_WONT_GROW = 4874  # SQLITE_IOERR_SHMSIZE: the -shm file could not be extended


def storage_fault(exc: BaseException) -> BaseException | None:
    """The database or file system error behind `exc` (itself, or what it was raised from, as
    the library's ProjectError is), or None for anything else (a bug keeps its traceback). A
    closed pipe is click's to handle."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, apsw.Error | db.DatabaseError):
            return seen
        if isinstance(seen, OSError) and seen.errno != errno.EPIPE:
            return seen
        seen = seen.__cause__
    return None


def underlying(exc: BaseException) -> BaseException:
    """SQLite's own error behind one `db.connect` wrapped, else `exc` itself."""
    return exc.__cause__ if isinstance(exc, db.DatabaseError) and exc.__cause__ else exc


def damaged(exc: BaseException) -> bool:
    """Whether SQLite found the file damaged or no database at all."""
    cause = underlying(exc)
    return isinstance(cause, apsw.CorruptError | apsw.NotADBError)


def damaged_file(root: Path | None) -> str | None:
    """Which of our databases SQLite cannot read, asked again on a fresh read-only connection:
    the project's, else the user-level one of the global memories (the error does not say)."""
    for path in ([db_path(str(root))] if root else []) + [global_db_path()]:
        if not os.path.isfile(path):
            continue
        try:
            conn = apsw.Connection(
                path, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_NOFOLLOW
            )
            try:
                if conn.execute("PRAGMA quick_check(1)").fetchall()[0][0] != "ok":
                    return path
            finally:
                conn.close()
        except (apsw.CorruptError, apsw.NotADBError):
            return path
        except apsw.Error:
            continue
    return None


def full(cause: BaseException) -> bool:
    return (
        isinstance(cause, apsw.FullError)
        or getattr(cause, "errno", None) in (28, 27)
        or getattr(cause, "extendedresult", None) == SHARED_MEMORY_WONT_GROW
    )


def read_only(cause: BaseException) -> bool:
    return isinstance(cause, apsw.ReadOnlyError) or getattr(cause, "errno", None) in (30, 13)


def named(exc: BaseException) -> bool:
    """Whether `storage_problem` has words of its own for this fault (damaged, full,
    read-only, locked); else the error's own message says more."""
    cause = underlying(exc)
    busy = isinstance(cause, apsw.BusyError | apsw.LockedError)
    return damaged(cause) or full(cause) or read_only(cause) or busy


def storage_problem(exc: BaseException, root: Path | None = None) -> str:
    """What went wrong with the database or the disk, in words (`root`: the project, whose
    database is named when it is the damaged one)."""
    cause = underlying(exc)
    if damaged(cause):
        path = damaged_file(root)
        fix = "move it aside to start afresh"
        if path is not None and root is not None and path == db_path(str(root)):
            fix = (  # the daemon's quarantine (services/background/sweeps.py)
                f"`claude-session daemon start` moves it aside (kept as {DB_NAME}.corrupt-<time>)"
                " and starts a fresh one"
            )
        what = (
            f"{path or 'a database'} is damaged, or is no SQLite database"
            f" ({type(cause).__name__}: {cause}): {fix}"
        )
    elif full(cause):
        what = "the disk is full (or the file size limit was reached)"
    elif read_only(cause):
        what = "the database or its folder is read-only"
    elif isinstance(cause, apsw.BusyError | apsw.LockedError):
        what = "the database is locked by another process past every deadline; try again"
    else:
        what = f"{type(cause).__name__}: {cause}"
    return output.escape_controls(what)
