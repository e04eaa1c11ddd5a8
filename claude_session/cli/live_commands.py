"""`watch` and `serve`: the project's agents, claims and errors as they change.

`watch` redraws a terminal view (rich's `Live`) when the database changes (`PRAGMA
data_version`, polled) and once a second for the ages; `serve` is a read-only local web page
(web/web_server.py). Both open the database read-only. Recorded text is hostile: every
cell is a `rich.text.Text` with its control characters escaped, never markup.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from pathlib import Path
from typing import Any

import click
from rich import box
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from ..core import spool
from ..core.paths import db_path
from ..core.terminal import escape_controls
from ..project import Project, ProjectError
from . import output
from .cells import ago as age_text
from .group import (
    Refused,
    cli,
    damaged,
    hooks_installed,
    require_database,
    storage_problem,
    waiting_lines,
)

STATE_STYLES = {
    "running": "bold green",
    "completed": "dim",
    "failed": "bold red",
    "aborted_stale": "yellow",
}
AGES_EVERY_SECONDS = 1.0  # redraw at least this often, for the ages (from the last read)
READ_EVERY_SECONDS = 5.0  # read again at least this often: leases expire without a write


def _text(value: Any, style: str = "") -> Text:
    return Text("-" if value is None else escape_controls(str(value)), style=style)


def render(
    data: dict[str, Any],
    width: int,
    now: float | None = None,
    once: bool = False,
    whole: bool = False,
) -> RenderableType:
    """One frame of the view for a terminal `width` columns wide: the least important columns
    (silent time, files, the session) go first when it is narrow; the rest are cut with `…`.
    `whole` (off a terminal, or --wide): every column, every cell whole, nothing cut.
    The footer says how to quit, but not for `once` (one frame, `--once`)."""
    wide = whole or width >= 110
    cut: dict[str, Any] = {} if whole else {"overflow": "ellipsis"}

    def most(cells: int) -> dict[str, Any]:
        return {} if whole else {"max_width": cells}

    def name(agent: str, session: str) -> str:
        return "main" if agent == session else agent if whole else agent[:10]

    later = max(0.0, (now or data["taken_at"]) - data["taken_at"])  # since the read

    def ago(seconds: float | None) -> Text:
        return _text(age_text(None if seconds is None else seconds + later))

    agents = _table("agents", len(data["agents"]), whole)
    agents.add_column("state", no_wrap=True, **most(9))
    agents.add_column("agent", no_wrap=True, **most(10))
    agents.add_column("type", no_wrap=True, **most(24), **cut)
    agents.add_column("task", no_wrap=True, **cut, ratio=1)
    agents.add_column("age", no_wrap=True, justify="right", min_width=7)
    if wide:
        agents.add_column("silent", no_wrap=True, justify="right")
        agents.add_column("files", no_wrap=True, justify="right")
    for row in data["agents"]:
        style = STATE_STYLES.get(str(row["state"]), "")
        cells = [
            _text("live" if row["state"] == "running" else row["state"], style),
            _text(name(str(row["agent"]), str(row["session_id"]))),
            _text(row["type"]),
            _text(row["task"]),
            ago(row["age_seconds"]),
        ]
        if wide:
            cells += [ago(row["silent_seconds"]), _text(row["files"])]
        agents.add_row(*cells)

    claims = _table("file claims", len(data["claims"]), whole)
    claims.add_column("file", no_wrap=True, **cut, ratio=1)
    claims.add_column("agent", no_wrap=True, **most(10))
    claims.add_column("lease", no_wrap=True, **cut, **most(18))
    claims.add_column("touched", no_wrap=True, justify="right", min_width=7)
    for row in data["claims"]:
        mark = "! " if row["contested"] else ""
        claims.add_row(
            _text(mark + str(row["file_path"]), "bold red" if row["contested"] else ""),
            _text(name(str(row["agent"]), str(row["session_id"]))),
            _text("CONTESTED" if row["contested"] else row["lease"]),
            ago(row["touched_seconds"]),
        )

    errors = _table("open errors", len(data["open_errors"]), whole)
    errors.add_column("step", no_wrap=True, min_width=4)
    errors.add_column("tries", no_wrap=True, justify="right")
    errors.add_column("kind", no_wrap=True, **most(8), **cut)
    errors.add_column("what", no_wrap=True, **cut, ratio=1)
    errors.add_column("last", no_wrap=True, justify="right", min_width=7)
    for row in data["open_errors"]:
        attempts = int(row["attempts"] or 0)
        style = "bold red" if attempts >= 3 else "yellow"
        errors.add_row(
            _text(row["step"], style),
            _text(attempts),
            _text(row["category"]),
            _text(row["what"]),
            ago(row["last_seconds"]),
        )
    scope = f"session {data['session']}*" if data["session"] else "all sessions"
    header = Text.assemble(
        ("claude-session watch", "bold"),
        " · ",
        escape_controls(f"{scope} · {data['project']}"),
        overflow="ellipsis" if not whole else "ignore",
        no_wrap=True,
    )
    quit_hint = "" if once else " · q or Ctrl+C to quit"
    footer = Text(time.strftime("updated %H:%M:%S") + quit_hint, style="dim")
    parts: list[RenderableType] = [header]
    for table in (agents, claims, errors):
        parts.append(Text(""))
        if table.row_count:
            parts.append(table)
        else:  # an empty table would only take rows of the screen
            parts.append(Text.assemble((str(table.title).split(" (")[0], "bold"), ": none"))
    return Group(*parts, footer)


def _table(title: str, rows: int, whole: bool) -> Table:
    return Table(
        title=Text(f"{title} ({rows})"),
        title_justify="left",
        title_style="bold",
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        pad_edge=False,
        show_edge=False,
        expand=not whole,  # off a terminal, no padding out to a width nobody has
    )


def unreadable(exc: ProjectError, root: Path) -> click.ClickException:
    """A database that cannot be read: a damaged one said as every command says it."""
    if exc.__cause__ is not None and damaged(exc.__cause__):
        return Refused(storage_problem(exc.__cause__, root))
    return click.ClickException(str(exc))


def opened_to_watch(root: Path) -> Project:
    """The project, its database readable (a clear error otherwise: a view never makes one)."""
    require_database(root)
    project = Project(root)
    try:
        project.connection()
    except ProjectError as exc:
        project.close()
        raise unreadable(exc, root) from exc
    return project


@cli.command()
@click.option("--session", help="Only this session (an id prefix is enough).")
@click.option(
    "--interval",
    type=click.FloatRange(0.05, 60),
    default=0.5,
    show_default=True,
    help="Seconds between checks for new events.",
)
@click.option("--once", is_flag=True, help="Draw one frame and exit.")
@output.json_flag("With --once: the same data as JSON.")
@output.wide_option
@click.pass_obj
def watch(root: Path, session: str | None, interval: float, once: bool) -> None:
    """A live view of the agents, file claims and open errors, redrawn as events arrive."""
    if output.json_wanted() and not once:
        raise click.UsageError("--json needs --once")
    if not once:
        _wait_for_database(root, interval)
    project = opened_to_watch(root)
    try:
        if once:
            data = _seen(project, session)
            output.emit(data, text=lambda: _print_once(data))
            return
        _run(project, session, interval)
    finally:
        project.close()


def _wait_for_database(root: Path, interval: float) -> None:
    """Started before the first session (the README has `watch` started in a terminal of its
    own right after `install`): say so and wait for the database the first hook creates, then
    watch as usual; `q` or Ctrl+C ends the wait, exit 0. Without hooks nothing would create
    it: `opened_to_watch` then says what to do."""
    path = db_path(str(root))
    if os.path.exists(path) or spool.backlog(str(root)):
        return
    hooks = hooks_installed(root)
    if hooks is None:
        return
    try:  # Ctrl+C from the first line said on
        out = output.console()
        for line in waiting_lines(root, hooks):
            output.say(out, line)
        output.say(out, "waiting for the first session… (q or Ctrl+C to quit)")
        sys.stdout.flush()
        with _Keys() as keys:
            while not os.path.exists(path):
                if keys.quit_pressed(interval):
                    sys.exit(0)
    except KeyboardInterrupt:
        sys.exit(0)


def _print_once(data: dict[str, Any]) -> None:
    console = output.console()  # a terminal's width; off one, lines whole
    console.print(render(data, console.width, once=True, whole=output.whole()))  # nothing to quit


def _seen(project: Project, session: str | None) -> dict[str, Any]:
    return dataclasses.asdict(project.live(session))


def _run(project: Project, session: str | None, interval: float) -> None:
    """Redraw on a change, or every second for the ages, until Ctrl+C (or `q` on a terminal)."""
    console = Console(highlight=False)
    changed = project.changed
    changed()
    data = _seen(project, session)
    read = drawn = time.monotonic()
    keys = _Keys()
    try:
        with (
            keys,
            Live(
                render(data, console.width),
                console=console,
                auto_refresh=False,
                screen=console.is_terminal,
                redirect_stdout=False,
                redirect_stderr=False,
            ) as view,
        ):
            while not keys.quit_pressed(interval):
                if changed() or time.monotonic() - read >= READ_EVERY_SECONDS:
                    data = _seen(project, session)
                    read = time.monotonic()
                elif time.monotonic() - drawn < AGES_EVERY_SECONDS:
                    continue
                view.update(render(data, console.width, time.time()), refresh=True)
                drawn = time.monotonic()
    except KeyboardInterrupt:
        pass
    sys.exit(0)


class _Keys:
    """`q` on the terminal quits: stdin in cbreak mode (Ctrl+C still interrupts), restored
    on the way out; off a terminal, only a pause."""

    def __init__(self) -> None:
        self.saved: Any = None

    def __enter__(self) -> _Keys:
        if sys.stdin.isatty():
            import termios
            import tty

            self.saved = termios.tcgetattr(sys.stdin.fileno())
            tty.setcbreak(sys.stdin.fileno())
        return self

    def __exit__(self, *exc: object) -> None:
        if self.saved is not None:
            import termios

            termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, self.saved)

    def quit_pressed(self, seconds: float) -> bool:
        """Wait up to `seconds`; True when `q` was pressed."""
        if self.saved is None:
            time.sleep(seconds)
            return False
        import os
        import select

        ready, _, _ = select.select([sys.stdin], [], [], seconds)
        return bool(ready) and b"q" in os.read(sys.stdin.fileno(), 64).lower()


@cli.command()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Only 127.0.0.1: the pages are for this machine's user.",
)
@click.option("--port", type=click.IntRange(0, 65535), default=0, help="Default: a free one.")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the browser.")
@output.json_flag(
    "Say where it listens as one JSON line (keys: url, host, port, project), then serve."
)
@click.pass_obj
def serve(root: Path, host: str, port: int, open_browser: bool) -> None:
    """A local, read-only web page: sessions, agent trees, timelines and diffs of frames.

    It listens on 127.0.0.1 only and answers only URLs holding the random token it prints."""
    from ..web import web_server

    if host != web_server.HOST:
        raise click.UsageError(f"--host must be {web_server.HOST}: serve never listens beyond it")
    opened_to_watch(root).close()
    try:
        server, thread = web_server.start(str(root), port)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc}") from exc
    bound = server.server_address
    where = {"url": server.url, "host": bound[0], "port": bound[1], "project": str(root)}
    output.emit(where, text=f"claude-session serve: {server.url}  (Ctrl+C to stop)", line=True)
    sys.stdout.flush()
    import signal

    try:
        # Stopped as by Ctrl+C: `finally` runs. SIGINT too: a shell starts a background job
        # (`serve &`, a script's) with SIGINT ignored, and `kill -INT` must still stop it.
        for stop in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(stop, signal.default_int_handler)
        if open_browser:  # a private redirect file, never the token on a command line
            try:
                opened = web_server.open_in_browser(server)
                problem = "" if opened else "no browser could be started"
            except OSError as exc:
                problem = escape_controls(f"cannot write the page for the browser: {exc}")
            if problem:
                click.echo(f"claude-session serve: {problem}; open the URL above", err=True)
        while thread.is_alive():
            thread.join(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()  # removes the redirect file if the browser never used it
