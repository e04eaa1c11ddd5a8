"""The library API: what claude-session recorded about a project, read from Python.

    from claude_session import Project

    with Project(".") as project:
        for session in project.sessions():
            print(session.session_id, session.status, session.tool_calls)

`Project(path)` finds the database the way the CLI does (`path` itself, else the nearest folder
up holding a `.claude-session.db`) and reads it. Reading never writes: no database is created
where there is none (`Project.exists` is False and every method answers empty), the spool is not
ingested, nothing is migrated (a database an older version wrote is refused with the command
that upgrades it), Claude Code's transcripts are not read for costs (what the hooks, the
daemon or a CLI command already read is what there is).

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
from dataclasses import dataclass, fields
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import apsw

from .core import db, injections, memories, recall, trust
from .core import state as project_state
from .core.paths import DB_NAME, db_path

__all__ = [
    "Agent",
    "Claim",
    "CostReport",
    "Diff",
    "Error",
    "FailedPath",
    "Frame",
    "Injection",
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


@dataclass(frozen=True)
class Session:
    """A session with its counters (`claude-session status --json`'s `sessions`)."""

    session_id: str
    status: str | None
    source: str | None
    started_at: float | None
    last_activity_at: float | None
    end_reason: str | None
    events: int | None
    prompts: int | None
    tool_calls: int | None
    tool_failures: int | None
    file_edits: int | None
    subagents: int | None
    compactions: int | None


@dataclass(frozen=True)
class Agent:
    """An agent of the registry (`claude-session agents --json`)."""

    agent: str
    type: str | None
    task: str | None
    state: str | None
    age_seconds: float | None
    silent_seconds: float | None
    files: int
    tokens: int | None
    cost_usd: float | None
    reason: str | None
    session_id: str
    tool_uses: int | None
    is_internal: int


@dataclass(frozen=True)
class Claim:
    """A file claim (lease) of an agent (`claude-session claims --json`)."""

    file_path: str
    agent: str
    session_id: str
    operation: str | None
    edits: int | None
    last_touched_at: float | None
    expires_at: float | None
    lease: str
    contested: int


@dataclass(frozen=True)
class Error:
    """A failure on its error ladder (`claude-session errors --json`)."""

    id: int
    session_id: str
    agent_id: str | None
    tool_name: str | None
    error_category: str | None
    attempt_number: int | None
    resolution: str | None
    interrupted: int
    what: str | None
    command: str | None
    file_path: str | None
    exit_code: int | None
    task_id: str | None
    error_message: str | None
    occurred_at: float | None
    resolved_at: float | None
    tokens: int | None
    cost_usd: float | None


@dataclass(frozen=True)
class FailedPath:
    """An approach tried and rejected (`claude-session failed-paths --json`)."""

    id: int
    approach: str
    reason_failed: str | None
    file_path: str | None
    session_id: str | None
    still_relevant: int
    created_at: float | None
    expires_at: float | None
    context: str | None
    tokens: int | None
    cost_usd: float | None


@dataclass(frozen=True)
class Frame:
    """A frame of a session's timeline: what happened, when, what changed, what it cost."""

    frame: int
    created_at: float
    kind: str
    agent: str
    tool_name: str | None
    summary: str | None
    files: tuple[str, ...]
    state_hash: str | None
    turn: int | None
    snapshot: str | None
    snapshot_commit: str | None
    snapshot_note: str | None
    tool_status: str | None
    duration_ms: float | None
    open_errors: int | None
    cost_usd: float | None
    tokens: int | None
    messages: int


@dataclass(frozen=True)
class Diff:
    """What changed between two frames (`claude-session diff --json`): `state`, the session's
    recorded state (agents, claims, errors, failed_paths: added, removed, changed; task;
    counters); `files`, `stat` (and `diff` unless `stat_only`), or `error`."""

    a: str
    b: str
    state: dict[str, Any]
    files: dict[str, Any]


@dataclass(frozen=True)
class CostReport:
    """Cost and tokens grouped `by` session, turn, agent, tool, model or day
    (`claude-session cost --json`, without the transcripts read: a Project reads none)."""

    by: str
    session_id: str | None
    since: float | None
    rows: tuple[dict[str, Any], ...]
    groups: int
    total: dict[str, Any]
    claude_code_total_usd: float | None
    price_table_models: Any
    dead_ends: dict[str, Any] | None = None


@dataclass(frozen=True)
class Memory:
    """A memory (`claude-session memory search --json`): `id` as the CLI names it (`12` in
    this project, `g12` global); `rank` from a search (lower is better), None in a listing."""

    id: str
    category: str
    scope: str
    text: str
    tags: tuple[str, ...]
    source: str | None
    session_id: str | None
    agent_id: str | None
    tool_use_id: str | None
    project: str | None
    strength: float | None
    created_at: float | None
    updated_at: float | None
    last_used_at: float | None
    use_count: int
    supersedes: int | None
    trusted: int | None
    review: str | None
    imported_at: float | None
    rank: float | None = None

    @property
    def where(self) -> str:
        """'project' or 'global': which database holds it."""
        return "global" if self.id.startswith("g") else "project"


@dataclass(frozen=True)
class StateValue:
    """A key of the project's state."""

    key: str
    value: str | None
    updated_at: str | None  # as SQLite's datetime() writes it, UTC


@dataclass(frozen=True)
class StateChange:
    """A change of a state key, newest first in `state_history`."""

    id: int
    key: str
    old_value: str | None
    new_value: str | None
    changed_at: float
    cause: str | None


@dataclass(frozen=True)
class Injection:
    """A text put before a session's model (the injection log: `claude-session restore --all`)."""

    id: int
    at: float
    session_id: str
    agent_id: str | None
    event: str
    kind: str
    source: str | None
    event_id: int | None
    tool_use_id: str | None
    text: str
    chars: int | None


T = TypeVar("T")


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


def memory(where: str, row: dict[str, Any]) -> Memory:
    """A memories row (`where`: 'project' or 'global') as a Memory."""
    label = f"g{row['id']}" if where == "global" else str(row["id"])
    tags = tuple(json.loads(str(row.get("tags") or "[]")))
    return _make(Memory, row, id=label, tags=tags)


def search_memories(
    conn: apsw.Connection | None,
    global_conn: apsw.Connection | None,
    query: str,
    limit: int = 10,
) -> list[Memory]:
    """The one memory search: this project's memories and the global ones matching `query`,
    best first across both (bm25 rank), at most `limit`; none awaiting the user's review.
    Either connection may be None (no database, or one not to read)."""
    found: list[Memory] = []
    for where, source in (("project", conn), ("global", global_conn)):
        if source is not None:
            found += [memory(where, row) for row in memories.search(source, query, limit=limit)]
    found.sort(key=lambda m: float(m.rank or 0.0))
    return found[:limit]


class Project:
    """A project recorded by claude-session, read-only. `Project(path)`: `path` or the nearest
    folder up with a database; `exists` says whether there is one (without, every method
    answers empty). Close it (`close()`, or use it as a context manager)."""

    def __init__(self, path: str | os.PathLike[str] = ".") -> None:
        self.root = find_root(path)
        self.path = db_path(str(self.root))
        self._conn: apsw.Connection | None = None
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
        """The read-only connection (None without a database)."""
        if self._closed:
            raise ProjectError("this Project is closed")
        if self._conn is None and self.exists:
            try:
                conn = db.connect(self.path, create=False, readonly=True)
            except db.DatabaseError as exc:
                raise ProjectError(f"cannot read {self.path}: {exc}") from exc
            if db.schema_version(conn) < db.SCHEMA_VERSION:
                conn.close()
                raise ProjectError(
                    f"{self.path} was written by an older claude-session: run any"
                    " `claude-session` command in the project once to upgrade it"
                )
            self._conn = conn
        return self._conn

    def close(self) -> None:
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
        for row in self.sessions(limit=1_000_000):
            if row.session_id == found[0]["session_id"]:
                return row
        return None

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
        from .services import queries

        conn = self.connection()
        if conn is None:
            return []
        query = queries.agents_query(include_all=all, session=session)
        return [_make(Agent, row) for row in queries.page(conn, query, limit).rows]

    def claims(self, all: bool = False, limit: int = 200) -> list[Claim]:
        """File claims, live and contested first; `all` adds released ones."""
        from .services import queries

        conn = self.connection()
        if conn is None:
            return []
        query = queries.claims_query(conn, include_released=all)
        return [_make(Claim, row) for row in queries.page(conn, query, limit).rows]

    def errors(self, open_only: bool = False, limit: int = 200) -> list[Error]:
        """Failures, newest first, with their ladder step and what its climb cost;
        `open_only`: the ones not fixed (abandoned by an ended session included)."""
        from .services import queries

        conn = self.connection()
        if conn is None:
            return []
        return [_make(Error, row) for row in queries.errors(conn, open_only=open_only, limit=limit)]

    def failed_paths(self, all: bool = False, limit: int = 200) -> list[FailedPath]:
        """Approaches tried and rejected, newest first: those still shown to agents, or
        (`all`) resolved and expired ones too."""
        from .services import queries

        conn = self.connection()
        if conn is None:
            return []
        found = queries.all_failed_paths(conn, include_all=all, limit=limit)
        return [_make(FailedPath, row) for row in found]

    # -- time travel ----------------------------------------------------------------------

    def timeline(self, session: str = "") -> list[Frame]:
        """The frames of a session (default: the latest; else an id, a prefix or any frame
        address of it), in order, each with what the model responses since the one before
        cost."""
        from .services.cost import costs
        from .services.timetravel import timetravel

        conn = self.connection()
        session_id = self.session_at(session)
        if conn is None or session_id is None:
            return []
        spent = costs.frame_figures(conn, session_id)
        none = {"cost_usd": None, "tokens": None, "messages": 0}
        return [
            _make(Frame, f | spent.get(int(f["frame"]), none), files=tuple(f["files"]))
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

    def diff(self, a: str, b: str, stat_only: bool = False) -> Diff:
        """What changed between frames `a` and `b` (addresses as `claude-session diff` takes
        them): the recorded state, then the files from their snapshots."""
        from .services.snapshots import snapshot_files, workspace
        from .services.timetravel import timetravel

        conn = self.connection()
        if conn is None:
            raise ProjectError(f"no claude-session database at {self.path}")
        try:
            ref_a, ref_b = timetravel.resolve(conn, a), timetravel.resolve(conn, b)
            frame_a, frame_b = timetravel.frame(conn, ref_a), timetravel.frame(conn, ref_b)
        except timetravel.FrameError as exc:
            raise ProjectError(str(exc)) from exc
        state = timetravel.state_diff(frame_a["state"], frame_b["state"])
        files: dict[str, Any] = {}
        try:
            commit_a, _ = timetravel.pointer(conn, ref_a)
            commit_b, _ = timetravel.pointer(conn, ref_b)
        except timetravel.FrameError as exc:
            files = {"error": str(exc)}
        else:
            root = str(self.root)
            try:
                files["stat"] = snapshot_files.diff_stat(root, commit_a, commit_b)
                if not stat_only:
                    files["diff"] = snapshot_files.unified_diff(root, commit_a, commit_b)
            except workspace.WorkspaceError as exc:
                files = {"error": str(exc)}
        return Diff(str(ref_a), str(ref_b), state, files)

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
        strongest first. `scope`: 'project' or 'global' alone. Never one awaiting review."""
        conn = self.connection() if scope in (None, "project") else None
        global_conn = recall.open_global() if scope in (None, "global") else None
        try:
            if query is not None:
                return search_memories(conn, global_conn, query, limit)
            found: list[Memory] = []
            for where, source in (("project", conn), ("global", global_conn)):
                if source is not None:
                    rows = memories.listed(source, category=category, limit=limit)
                    found += [memory(where, row) for row in rows]
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
        problems (`doctor` makes the same checks, and more)."""
        from .services import queries

        conn = self.connection()
        root = str(self.root)
        database: dict[str, Any] = {
            "moved_aside": queries.corrupt_copies(root) if self.exists else [],
            "filesystem": None,
            "wal_unsafe_filesystem": False,
        }
        if conn is None:  # no database: what stops one from being made
            return queries.problems(None, root, database, {"running": False}, time.time())
        from .core.paths import filesystem_type, unsafe_filesystem

        database["filesystem"] = filesystem_type(root)
        database["wal_unsafe_filesystem"] = unsafe_filesystem(root) is not None
        daemon = queries.daemon_state(root)
        return queries.problems(conn, root, database, daemon, time.time())
