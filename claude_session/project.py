"""The library API: what claude-session recorded about a project, read from Python.

    from claude_session import Project

    with Project(".") as project:
        for session in project.sessions():
            print(session.session_id, session.status, session.tool_calls)

`Project(path)` finds the database the way the CLI does (`path` itself, else the nearest folder
up holding a `.claude-session.db`) and reads it. Reading never writes, anywhere (the project,
the per-user state and data folders): no database is created where there is none
(`Project.exists` is False and every method answers empty), the spool is not ingested, nothing
is migrated (a database an older version wrote is refused with the command that upgrades it),
Claude Code's transcripts are not read for costs (what the hooks, the daemon or a CLI command
already read is what there is), no state folder nor snapshot store is made, and no git that
writes is run. A database nobody has open (no -wal) is read as it is on disk (SQLite's
`immutable`, so not even a -wal or -shm file is made), and read through SQLite's own -wal and
-shm again as soon as a writer appears; one in use is read through the files its writers made.

Trust: every record comes from the project's database, whose trust `Project.trusted` says (a
database that came with a clone is not: core/trust.py). Memories mix two databases (the
project's and the user's global one): each Memory's `trusted` is 1 only when its row says so
and its database is trusted; a row of an untrusted database is 0, whatever it claims.

Every method returns frozen dataclasses whose fields are the names the CLI's `--json` prints:
`dataclasses.asdict(row)` gives the row that command shows. The CLI, the MCP server and the
web page read through the same functions (services/queries and friends); this module converts
their rows at the boundary, and holds the one memory search (project and global) and the one
list of problems (`status` shows it; `doctor` shows the same checks as rows, and more).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import apsw

from .core import db, injections, memories, trust
from .core import state as project_state
from .core.paths import DB_NAME, Reading, db_path, global_db_path
from .records import (
    Agent,
    Claim,
    CostReport,
    Diff,
    Error,
    FailedPath,
    Frame,
    HooksReport,
    Injection,
    Listing,
    Memory,
    Session,
    SessionRow,
    StateChange,
    StateValue,
)

if TYPE_CHECKING:
    from .services.queries import Query

__all__ = [
    "Agent",
    "Claim",
    "CostReport",
    "Diff",
    "Error",
    "FailedPath",
    "Frame",
    "HooksReport",
    "Injection",
    "Listing",
    "Memory",
    "Project",
    "ProjectError",
    "Session",
    "StateChange",
    "StateValue",
    "find_root",
    "search_memories",
]


class ProjectError(Exception):
    """The project's database cannot be read (an older schema, a damaged file, a session or
    frame that names nothing)."""


# The row type of each listing `Project.page` and `Project.each` read.
_ROWS: dict[str, type[Any]] = {
    "agents": Agent,
    "claims": Claim,
    "errors": Error,
    "failed_paths": FailedPath,
    "sessions": SessionRow,
}


T = TypeVar("T")


def _row_type(listing: str) -> type[Any]:
    if listing not in _ROWS:
        raise ValueError(f"no listing {listing!r}: one of {', '.join(_ROWS)}")
    return _ROWS[listing]


def _make(cls: type[T], row: dict[str, Any], **changed: Any) -> T:
    """A dataclass from a row: its fields by name (a field the row lacks: None)."""
    values = {f.name: row.get(f.name) for f in fields(cls)}  # type: ignore[arg-type]
    return cls(**(values | changed))


def find_root(path: str | os.PathLike[str] = ".") -> Path:
    """`path`, or the nearest folder up from it that holds a claude-session database."""
    here = Path(path).resolve()
    for folder in (here, *here.parents):
        if (folder / DB_NAME).exists():
            return folder
    return here


def memory(where: str, row: dict[str, Any], trusted: bool = True) -> Memory:
    """A memories row (`where`: 'project' or 'global') as a Memory; from a database that is not
    `trusted`, its `trusted` is 0 whatever the row says."""
    label = f"g{row['id']}" if where == "global" else str(row["id"])
    tags = tuple(json.loads(str(row.get("tags") or "[]")))
    return _make(Memory, row, id=label, tags=tags, **({} if trusted else {"trusted": 0}))


def search_memories(
    conn: apsw.Connection | None,
    global_conn: apsw.Connection | None,
    query: str,
    limit: int = 10,
    trusted: tuple[bool, bool] = (True, True),
) -> list[Memory]:
    """The one memory search: this project's memories and the global ones matching `query`,
    best first across both (bm25 rank), at most `limit`; none awaiting the user's review.
    Either connection may be None (no database, or one not to read); `trusted`: whether each
    database is (core/trust.py), its memories marked untrusted when not."""
    found: list[Memory] = []
    sources = (("project", conn, trusted[0]), ("global", global_conn, trusted[1]))
    for where, source, believed in sources:
        if source is not None:
            rows = memories.search(source, query, limit=limit)
            found += [memory(where, row, believed) for row in rows]
    found.sort(key=lambda m: float(m.rank or 0.0))
    return found[:limit]


def open_to_read(path: str) -> tuple[apsw.Connection, bool]:
    """A read-only connection to the database at `path` that makes and changes no file, and
    whether it reads the file as it is (`immutable`: nobody has it open, there is no -wal;
    such a connection must be opened again once a writer appears). A database with a -wal
    but no -shm (a crash's leftover) is read as SQLite must, which makes the -shm."""
    immutable = not os.path.exists(path + "-wal")
    conn = db.connect(path, create=False, readonly=True, immutable=immutable)
    return conn, immutable


def _identity(path: str) -> tuple[int, int, int] | None:
    """What tells a database file changed under an immutable reader: inode, size, mtime."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def _global_to_read() -> apsw.Connection | None:
    """The user's global memories, read without a write (None: none, or not readable yet: a
    database of an older version is upgraded by the next hook or command, not by a read)."""
    try:
        path = global_db_path()
        if not os.path.exists(path):
            return None
        conn, _ = open_to_read(path)
    except (OSError, db.DatabaseError):
        return None
    if db.schema_version(conn) < db.SCHEMA_VERSION:
        conn.close()
        return None
    return conn


class Project:
    """A project recorded by claude-session, read-only. `Project(path)`: `path` or the nearest
    folder up with a database; `exists` says whether there is one (without, every method
    answers empty). Close it (`close()`, or use it as a context manager)."""

    def __init__(self, path: str | os.PathLike[str] = ".") -> None:
        self.root = find_root(path)
        self.path = db_path(str(self.root))
        self._conn: apsw.Connection | None = None
        self._read_as_is: tuple[int, int, int] | None = None  # an immutable read: the file then
        self._retired: list[apsw.Connection] = []
        self._closed = False

    # -- the database ---------------------------------------------------------------------

    @property
    def exists(self) -> bool:
        """Whether the project has a claude-session database (reading never creates one)."""
        return os.path.exists(self.path)

    @property
    def trusted(self) -> bool:
        """Whether this user made the database on this machine (one that came with a clone
        is not: the hooks inject nothing from it; core/trust.py)."""
        return self.exists and trust.database_problem(self.path) is None

    def connection(self) -> apsw.Connection | None:
        """The read-only connection (None without a database). One that reads the file as it
        is (nobody had it open) is opened again once a writer appears (a -wal, or the file
        changed): it would not see the writes, and must not read a page mid-checkpoint."""
        if self._closed:
            raise ProjectError("this Project is closed")
        seen = self._read_as_is
        if self._conn is not None and seen is not None and self._writer_came(seen):
            self._retired.append(self._conn)  # a method may still hold it: closed at close()
            self._conn = self._read_as_is = None
        if self._conn is None and self.exists:
            try:
                seen = _identity(self.path)
                conn, immutable = open_to_read(self.path)
            except db.DatabaseError as exc:
                raise ProjectError(f"cannot read {self.path}: {exc}") from exc
            self._read_as_is = seen if immutable else None
            if db.schema_version(conn) < db.SCHEMA_VERSION:
                conn.close()
                raise ProjectError(
                    f"{self.path} was written by an older claude-session: run any"
                    " `claude-session` command in the project once to upgrade it"
                )
            self._conn = conn
        return self._conn

    def _writer_came(self, seen: tuple[int, int, int]) -> bool:
        """Whether the file read as it is has a writer now (a -wal) or changed since."""
        return os.path.exists(self.path + "-wal") or _identity(self.path) != seen

    def close(self) -> None:
        for conn in self._retired:
            conn.close()
        self._retired.clear()
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._closed = True

    def __enter__(self) -> Project:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Project({str(self.root)!r}, exists={self.exists})"

    # -- listings: a page (with what more there is and what the filter hides), or each row --

    def _query(self, conn: apsw.Connection, listing: str, options: dict[str, Any]) -> Query:
        from .services import queries

        every = bool(options.get("all"))
        if listing == "agents":
            return queries.agents_query(include_all=every, session=options.get("session"))
        if listing == "claims":
            return queries.claims_query(conn, include_released=every)
        if listing == "errors":
            return queries.errors_query(open_only=bool(options.get("open_only")))
        if listing == "failed_paths":
            return queries.failed_paths_query(include_all=every)
        if listing == "sessions":
            return queries.sessions_query()
        raise ValueError(f"no listing {listing!r}")

    def page(self, listing: str, limit: int = 50, **options: Any) -> Listing[Any]:
        """The newest `limit` rows of a listing ('agents', 'claims', 'errors',
        'failed_paths', 'sessions'; `options` as its method takes them), how many matched in
        all, and how many the default filter hides."""
        from .services import queries

        kind = _row_type(listing)
        conn = self.connection()
        if conn is None:
            return Listing([], 0)
        query = self._query(conn, listing, options)
        found = queries.page(conn, query, limit)
        what = query.hidden.what if query.hidden is not None else None
        rows = [_make(kind, row) for row in found.rows]
        return Listing(rows, found.total, queries.hidden(conn, query), what)

    def each(self, listing: str, **options: Any) -> Iterator[Any]:
        """Every row of a listing, as it is read (none held)."""
        from .services import queries

        kind = _row_type(listing)
        conn = self.connection()
        if conn is None:
            return
        for row in queries.stream(conn, self._query(conn, listing, options)):
            yield _make(kind, row)

    # -- sessions and agents --------------------------------------------------------------

    def sessions(self, limit: int = 20) -> list[Session]:
        """The most recent sessions first, with their counters."""
        from .services import queries

        conn = self.connection()
        if conn is None:
            return []
        return [_make(Session, row) for row in queries.sessions(conn, limit=limit)]

    def session(self, session_id: str) -> Session | None:
        """One session, by its id or a unique prefix of it (None: no such session)."""
        conn = self.connection()
        if conn is None:
            return None
        found = db.rows(
            conn,
            "SELECT session_id FROM sessions WHERE session_id >= ? AND session_id < ? || x'ff'"
            " LIMIT 2",
            (session_id, session_id),
        )
        if len(found) != 1:
            return None
        from .services import queries

        rows = queries.sessions(conn, limit=1, only=str(found[0]["session_id"]))
        return _make(Session, rows[0]) if rows else None

    def latest_session(self) -> str | None:
        """The id of the session active last (None: none recorded)."""
        from .services import queries

        conn = self.connection()
        return None if conn is None else queries.latest_session(conn)

    def agents(
        self, session: str | None = None, all: bool = False, limit: int = 200
    ) -> list[Agent]:
        """The agent registry, running first: by default the real agents of active sessions
        and anything still running; `all` adds finished sessions' agents and Claude Code's
        internal helpers. `session`: one session's (an id or a prefix)."""
        return self.page("agents", limit, session=session, all=all).rows

    def claims(self, all: bool = False, limit: int = 200) -> list[Claim]:
        """File claims, live and contested first; `all` adds released ones."""
        return self.page("claims", limit, all=all).rows

    def errors(self, open_only: bool = False, limit: int = 200) -> list[Error]:
        """Failures, newest first, with their ladder step and what its climb cost;
        `open_only`: the ones not fixed (abandoned by an ended session included)."""
        return self.page("errors", limit, open_only=open_only).rows

    def failed_paths(self, all: bool = False, limit: int = 200) -> list[FailedPath]:
        """Approaches tried and rejected, newest first: those still shown to agents, or
        (`all`) resolved and expired ones too."""
        return self.page("failed_paths", limit, all=all).rows

    # -- time travel ----------------------------------------------------------------------

    def timeline(self, session: str = "") -> list[Frame]:
        """The frames of a session (default: the latest; else an id, a prefix or any frame
        address of it), in order, each with what the model responses since the one before
        cost."""
        from .services.cost import surfaces
        from .services.timetravel import timetravel

        conn = self.connection()
        session_id = self.session_at(session)
        if conn is None or session_id is None:
            return []
        spent = surfaces.frame_figures(conn, session_id)
        answered = {t["turn"]: t["result_text"] for t in surfaces.turn_figures(conn, session_id)}
        none = {"cost_usd": None, "tokens": None, "messages": 0}
        return [
            _make(
                Frame,
                f | spent.get(int(f["frame"]), none),
                files=tuple(f["files"]),
                result_text=answered.get(f["turn"]) if f["kind"] == "turn_end" else None,
            )
            for f in timetravel.timeline(conn, session_id)
        ]

    frames = timeline

    def session_at(self, address: str = "") -> str | None:
        """The session an address names: '' the latest, else a session id or prefix, or any
        frame address (`<session>:<frame>`, `@<commit>`...). None: no session recorded yet;
        `ProjectError` when the address names nothing."""
        from .services.timetravel import timetravel

        conn = self.connection()
        if conn is None:
            return None
        try:
            return timetravel.find_session(conn, address)
        except timetravel.FrameError as exc:
            if not address and self.latest_session() is None:
                return None
            raise ProjectError(str(exc)) from exc

    def diff(
        self,
        a: str,
        b: str,
        stat_only: bool = False,
    ) -> Diff:
        """What changed between frames `a` and `b` (addresses as `claude-session diff` takes
        them): the recorded state, then the files from their snapshots."""
        from .services.timetravel import timetravel

        conn = self.connection()
        if conn is None:
            raise ProjectError(f"no claude-session database at {self.path}")
        try:
            return Diff(*timetravel.diff(conn, str(self.root), a, b, stat_only, read_only=True))
        except timetravel.FrameError as exc:
            raise ProjectError(str(exc)) from exc

    # -- cost -----------------------------------------------------------------------------

    def cost(
        self,
        session: str | None = None,
        by: str | None = None,
        since: float | None = None,
        limit: int | None = 50,
    ) -> CostReport:
        """What each session (or, for one `session`, each turn) cost, or grouped `by` turn,
        agent, tool, model or day; `since` a Unix time; `limit` groups (None: every one).
        One session's report has its dead ends: what went to errors never fixed and to
        approaches that failed."""
        from .services.cost import costs

        by = by or ("turn" if session else "session")
        conn = self.connection()
        if conn is None:
            zero: dict[str, Any] = {"messages": 0, "cost_usd": 0.0}
            return CostReport(by, session, since, (), 0, zero, None, [], None)
        if session:
            found = self.session(session)
            if found is None:
                raise ProjectError(f"no session {session!r} recorded")
            session = found.session_id
        report = costs.report(conn, by, session, since, limit)
        if session:
            total = report["total"]["cost_usd"] if report["rows"] else None
            report["dead_ends"] = costs.dead_ends(conn, session, since, total)
        return _make(CostReport, report, rows=tuple(report["rows"]))

    def hooks(
        self, session: str | None = None, turn: int | None = None, limit: int | None = 50
    ) -> HooksReport:
        """Every hook that ran (ours and others'), timed by Claude Code, by command and event:
        of every session, one `session`, or its `turn` (1, 2, ...); `limit` groups, the
        largest total first (None: every one)."""
        from .services.cost import hooks_report

        conn = self.connection()
        if conn is None:
            return HooksReport(
                session, turn, hooks_report.CLOCK, None, hooks_report.WALL_SOURCE, (), 0, {}
            )
        if session:
            found = self.session(session)
            if found is None:
                raise ProjectError(f"no session {session!r} recorded")
            session = found.session_id
        try:
            report = hooks_report.report(conn, session, turn, limit)
        except ValueError as exc:
            raise ProjectError(str(exc)) from None
        return _make(HooksReport, report, rows=tuple(report["rows"]))

    # -- memories and state ---------------------------------------------------------------

    def memories(
        self,
        query: str | None = None,
        limit: int = 10,
        *,
        scope: str | None = None,
        category: str | None = None,
    ) -> list[Memory]:
        """With `query`: the memories matching it, best first across this project's and the
        global ones (what `claude-session memory search` and the MCP tool `search_memories`
        find: this is their one search). Without: the memories in use, most used and
        strongest first. `scope`: 'project' or 'global' alone. Never one awaiting review.
        A memory of an untrusted database has `trusted` 0 (the module's docstring)."""
        conn = self.connection() if scope in (None, "project") else None
        global_conn = _global_to_read() if scope in (None, "global") else None
        trusted = (
            conn is None or self.trusted,
            global_conn is None or trust.database_problem(global_db_path()) is None,
        )
        try:
            if query is not None:
                return search_memories(conn, global_conn, query, limit, trusted)
            found: list[Memory] = []
            sources = (("project", conn, trusted[0]), ("global", global_conn, trusted[1]))
            for where, source, believed in sources:
                if source is not None:
                    rows = memories.listed(source, category=category, limit=limit)
                    found += [memory(where, row, believed) for row in rows]
            return found
        finally:
            if global_conn is not None:
                global_conn.close()

    def state(self) -> list[StateValue]:
        """Every key of the project's state with its value."""
        conn = self.connection()
        if conn is None:
            return []
        return [_make(StateValue, row) for row in project_state.all_values(conn)]

    def state_history(self, key: str | None = None, limit: int = 200) -> list[StateChange]:
        """Changes of the state (of one `key`, or all), newest first."""
        conn = self.connection()
        if conn is None:
            return []
        return [_make(StateChange, row) for row in project_state.history(conn, key, limit)]

    def injections(self, session: str | None = None) -> list[Injection]:
        """Every text put before the model of `session` (default: the latest), oldest first."""
        conn = self.connection()
        if conn is None:
            return []
        session = session or self.latest_session()
        if session is None:
            return []
        found = self.session(session)
        session_id = found.session_id if found is not None else session
        return [_make(Injection, row) for row in injections.of_session(conn, session_id)]

    # -- health ---------------------------------------------------------------------------

    def problems(self) -> list[str]:
        """Anything wrong with the installation, one sentence each: what `status` lists under
        problems (`doctor` makes the same checks, and more). No folder is made for the
        per-project files it looks for (a daemon's lock and status, the spool's)."""
        with Reading():
            return self._problems()

    def _problems(self) -> list[str]:
        from .services import status_report

        conn = self.connection()
        root = str(self.root)
        database: dict[str, Any] = {
            "moved_aside": status_report.corrupt_copies(root) if self.exists else [],
            "filesystem": None,
            "wal_unsafe_filesystem": False,
        }
        if conn is None:  # no database: what stops one from being made
            return status_report.problems(None, root, database, {"running": False}, time.time())
        from .core.paths import filesystem_type, unsafe_filesystem

        database["filesystem"] = filesystem_type(root)
        database["wal_unsafe_filesystem"] = unsafe_filesystem(root) is not None
        daemon = status_report.daemon_state(root)
        return status_report.problems(conn, root, database, daemon, time.time())
