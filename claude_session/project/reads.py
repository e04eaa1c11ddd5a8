"""What a `Project` reads: listings, sessions, time travel, cost, memories, state, what the
model was given, and the status report. Nothing here writes (see `opening` for why a read
makes no file), so every front end can read while hooks write."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import apsw

from ..core import db, injections, memories, trust
from ..core import state as project_state
from ..core.paths import Reading, global_db_path
from ..core.readings import PAGE
from ..records import (
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
    LiveView,
    Memory,
    RecordedEvent,
    Session,
    SessionRow,
    StateChange,
    StateValue,
    Status,
    Verdict,
)
from .opening import (
    NotFound,
    ProjectBase,
    ProjectError,
    global_to_read,
    make,
    memory,
    search_memories,
)

if TYPE_CHECKING:
    from ..services.queries import Query

T = TypeVar("T")


class ProjectReads(ProjectBase):
    """The read side of `Project`."""

    _watched: apsw.Connection | None = None  # the connection `changed` last looked at
    _data_version: int | None = None

    # -- listings: a page (with what more there is and what the filter hides), or each row --

    def _query(self, conn: apsw.Connection, listing: str, options: dict[str, Any]) -> Query:
        from ..services import queries

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
        if listing == "verdicts":
            return queries.verdicts_query()
        if listing == "events":
            wanted = ("session", "event", "tool", "agent")
            return queries.events_query(
                **{k: options.get(k) for k in wanted},
                payload=bool(options.get("payload")),
                oldest_first=bool(options.get("oldest_first")),
            )
        raise ValueError(f"no listing {listing!r}")

    def _page(self, kind: type[T], listing: str, limit: int, options: dict[str, Any]) -> Listing[T]:
        """The newest `limit` rows of a listing, how many matched in all, and how many its
        default filter hides."""
        from ..services import queries

        conn = self.connection()
        if conn is None:
            return Listing([], 0)
        query = self._query(conn, listing, options)
        found = queries.page(conn, query, limit)
        what = query.hidden.what if query.hidden is not None else None
        rows = [make(kind, row) for row in found.rows]
        return Listing(rows, found.total, queries.hidden(conn, query), what)

    def _each(self, kind: type[T], listing: str, options: dict[str, Any]) -> Iterator[T]:
        """Every row of a listing, as it is read (none held)."""
        from ..services import queries

        conn = self.connection()
        if conn is None:
            return
        for row in queries.stream(conn, self._query(conn, listing, options)):
            yield make(kind, row)

    # Each listing as a page (the newest `limit` rows, with what more there is and what the
    # default filter hides: what the CLI's listings print) and as every row, streamed.

    def sessions_page(self, limit: int = PAGE) -> Listing[SessionRow]:
        """The sessions, the latest active first (`claude-session sessions`)."""
        return self._page(SessionRow, "sessions", limit, {})

    def each_session(self) -> Iterator[SessionRow]:
        return self._each(SessionRow, "sessions", {})

    def agents_page(
        self, limit: int = PAGE, *, session: str | None = None, all: bool = False
    ) -> Listing[Agent]:
        """The agent registry (`agents`, `Project.agents` says which)."""
        return self._page(Agent, "agents", limit, {"session": session, "all": all})

    def each_agent(self, *, session: str | None = None, all: bool = False) -> Iterator[Agent]:
        return self._each(Agent, "agents", {"session": session, "all": all})

    def claims_page(self, limit: int = PAGE, *, all: bool = False) -> Listing[Claim]:
        return self._page(Claim, "claims", limit, {"all": all})

    def each_claim(self, *, all: bool = False) -> Iterator[Claim]:
        return self._each(Claim, "claims", {"all": all})

    def errors_page(self, limit: int = PAGE, *, open_only: bool = False) -> Listing[Error]:
        return self._page(Error, "errors", limit, {"open_only": open_only})

    def each_error(self, *, open_only: bool = False) -> Iterator[Error]:
        return self._each(Error, "errors", {"open_only": open_only})

    def failed_paths_page(self, limit: int = PAGE, *, all: bool = False) -> Listing[FailedPath]:
        return self._page(FailedPath, "failed_paths", limit, {"all": all})

    def each_failed_path(self, *, all: bool = False) -> Iterator[FailedPath]:
        return self._each(FailedPath, "failed_paths", {"all": all})

    def verdicts_page(self, limit: int = PAGE) -> Listing[Verdict]:
        """The judge's verdicts, newest first."""
        return self._page(Verdict, "verdicts", limit, {})

    def each_verdict(self) -> Iterator[Verdict]:
        return self._each(Verdict, "verdicts", {})

    def events_page(self, limit: int = PAGE, **filters: Any) -> Listing[RecordedEvent]:
        """The newest recorded hook events matching `filters` (session: an id or prefix;
        event, tool, agent: exact; payload: True to include the stored payload), newest
        first."""
        return self._page(RecordedEvent, "events", limit, filters)

    def each_event(self, **filters: Any) -> Iterator[RecordedEvent]:
        """Every recorded hook event matching `filters` (as `events_page` takes them), oldest
        first: in the order they happened, as a log reads and `events` prints its page."""
        return self._each(RecordedEvent, "events", filters | {"oldest_first": True})

    # -- sessions and agents --------------------------------------------------------------

    def sessions(self, limit: int = 20) -> list[Session]:
        """The most recent sessions first, with their counters."""
        from ..services import queries

        conn = self.connection()
        if conn is None:
            return []
        return [make(Session, row) for row in queries.sessions(conn, limit=limit)]

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
        from ..services import queries

        rows = queries.sessions(conn, limit=1, only=str(found[0]["session_id"]))
        return make(Session, rows[0]) if rows else None

    def latest_session(self) -> str | None:
        """The id of the session active last (None: none recorded)."""
        from ..services import queries

        conn = self.connection()
        return None if conn is None else queries.latest_session(conn)

    def agents(
        self, session: str | None = None, all: bool = False, limit: int = 200
    ) -> list[Agent]:
        """The agent registry, running first: by default the real agents of active sessions
        and anything still running; `all` adds finished sessions' agents and Claude Code's
        internal helpers. `session`: one session's (an id or a prefix)."""
        return self.agents_page(limit, session=session, all=all).rows

    def claims(self, all: bool = False, limit: int = 200) -> list[Claim]:
        """File claims, live and contested first; `all` adds released ones."""
        return self.claims_page(limit, all=all).rows

    def errors(self, open_only: bool = False, limit: int = 200) -> list[Error]:
        """Failures, newest first, with their ladder step and what its climb cost;
        `open_only`: the ones not fixed (abandoned by an ended session included)."""
        return self.errors_page(limit, open_only=open_only).rows

    def failed_paths(self, all: bool = False, limit: int = 200) -> list[FailedPath]:
        """Approaches tried and rejected, newest first: those still shown to agents, or
        (`all`) resolved and expired ones too."""
        return self.failed_paths_page(limit, all=all).rows

    # -- time travel ----------------------------------------------------------------------

    def timeline(self, session: str = "") -> list[Frame]:
        """The frames of a session (default: the latest; else an id, a prefix or any frame
        address of it), in order, each with what the model responses since the one before
        cost."""
        from ..services.cost import surfaces
        from ..services.timetravel import timetravel

        conn = self.connection()
        session_id = self.session_at(session)
        if conn is None or session_id is None:
            return []
        spent = surfaces.frame_figures(conn, session_id)
        answered = {t["turn"]: t["result_text"] for t in surfaces.turn_figures(conn, session_id)}
        none = {"cost_usd": None, "tokens": None, "messages": 0}
        return [
            make(
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
        from ..services.timetravel import timetravel

        conn = self.connection()
        if conn is None:
            return None
        try:
            return timetravel.find_session(conn, address)
        except timetravel.FrameError as exc:
            if not address and self.latest_session() is None:
                return None
            raise NotFound(str(exc)) from exc

    def diff(
        self,
        a: str,
        b: str,
        stat_only: bool = False,
    ) -> Diff:
        """What changed between frames `a` and `b` (addresses as `claude-session diff` takes
        them): the recorded state, then the files from their snapshots."""
        from ..services.timetravel import timetravel

        conn = self.connection()
        if conn is None:
            raise ProjectError(f"no claude-session database at {self.path}")
        try:
            return Diff(*timetravel.diff(conn, str(self.root), a, b, stat_only, read_only=True))
        except timetravel.FrameError as exc:
            raise NotFound(str(exc)) from exc

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
        from ..services.cost import costs

        by = by or ("turn" if session else "session")
        conn = self.connection()
        if conn is None:
            zero: dict[str, Any] = {"messages": 0, "cost_usd": 0.0}
            return CostReport(by, session, since, (), 0, zero, None, [], None)
        if session:
            found = self.session(session)
            if found is None:
                raise NotFound(f"no session {session!r} recorded")
            session = found.session_id
        report = costs.report(conn, by, session, since, limit)
        if session:
            total = report["total"]["cost_usd"] if report["rows"] else None
            report["dead_ends"] = costs.dead_ends(conn, session, since, total)
        return make(CostReport, report, rows=tuple(report["rows"]))

    def hooks(
        self, session: str | None = None, turn: int | None = None, limit: int | None = 50
    ) -> HooksReport:
        """Every hook that ran (ours and others'), timed by Claude Code, by command and event:
        of every session, one `session`, or its `turn` (1, 2, ...); `limit` groups, the
        largest total first (None: every one)."""
        from ..services.cost import hooks_report

        conn = self.connection()
        if conn is None:
            return HooksReport(
                session, turn, hooks_report.CLOCK, None, hooks_report.WALL_SOURCE, (), 0, {}
            )
        if session:
            found = self.session(session)
            if found is None:
                raise NotFound(f"no session {session!r} recorded")
            session = found.session_id
        try:
            report = hooks_report.report(conn, session, turn, limit)
        except ValueError as exc:
            raise ProjectError(str(exc)) from None
        return make(HooksReport, report, rows=tuple(report["rows"]))

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
        global_conn = global_to_read() if scope in (None, "global") else None
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
        return [make(StateValue, row) for row in project_state.all_values(conn)]

    def state_value(self, key: str) -> StateValue | None:
        """One key of the project's state (looked up as it is stored: redacted, capped), or
        None when it is not set."""
        conn = self.connection()
        if conn is None:
            return None
        found = db.rows(
            conn,
            "SELECT key, value, updated_at FROM project_state WHERE key = ?",
            (project_state.stored_key(key),),
        )
        return make(StateValue, found[0]) if found else None

    def state_history(self, key: str | None = None, limit: int = 200) -> list[StateChange]:
        """Changes of the state (of one `key`, or all), newest first."""
        conn = self.connection()
        if conn is None:
            return []
        return [make(StateChange, row) for row in project_state.history(conn, key, limit)]

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
        return [make(Injection, row) for row in injections.of_session(conn, session_id)]

    # -- now: the status report and the live view --------------------------------------

    def status(self) -> Status:
        """Everything `claude-session status` shows (`refresh()` first for the latest cost).
        Needs a database: `ProjectError` without one."""
        from ..services import status_report

        conn = self.connection()
        if conn is None:
            raise NotFound(f"no claude-session database at {self.path}")
        with Reading():
            return make(Status, status_report.status(conn, str(self.root)))

    def live(self, session: str | None = None) -> LiveView:
        """What `watch` and the web page show now: agents, claims and open errors (of the
        sessions whose id starts with `session`)."""
        from ..services import live

        conn = self.connection()
        if conn is None:
            raise NotFound(f"no claude-session database at {self.path}")
        return make(LiveView, live.snapshot(conn, str(self.root), session))

    def changed(self) -> bool:
        """Whether anything was committed since the last call (True the first time): one
        pragma, no table read, so a view that polls costs an idle project nothing."""
        conn = self.connection()
        if conn is None:
            return False
        if conn is not self._watched:
            self._watched, self._data_version = conn, None
        value = db.as_int(conn.execute("PRAGMA data_version").fetchall()[0][0])
        changed, self._data_version = value != self._data_version, value
        return changed

    def restored(self, session_id: str) -> Injection | None:
        """What SessionStart last put back into the model of a session (None: nothing)."""
        conn = self.connection()
        if conn is None:
            return None
        found = injections.latest(conn, session_id, injections.RESTORE)
        return None if found is None else make(Injection, found)

    def compaction_restored(self) -> Injection | None:
        """The latest text put back into a model after a compaction, in any session."""
        conn = self.connection()
        if conn is None:
            return None
        found = injections.latest_compaction_restore(conn)
        return None if found is None else make(Injection, found)

    def daemon(self) -> dict[str, Any]:
        """Whether the project's daemon runs (pid), and what it reports of its work."""
        from ..services import status_report

        with Reading():
            return status_report.daemon_state(str(self.root))

    def restore_preview(self, session_id: str) -> str | None:
        """What a compaction of the session would put back now."""
        from ..core import context

        conn = self.connection()
        return None if conn is None else context.for_compaction(conn, session_id, time.time())

    def pending_trust(self) -> dict[str, Any]:
        """What `trust` would adopt: the database and configuration not trusted now, why, and
        what of them would reach the model (empty: everything is trusted already)."""
        from ..services import config_file

        with Reading():  # its counts read the file as it is: no -wal or -shm made
            return config_file.adoption(str(self.root))

    # -- health ---------------------------------------------------------------------------

    def problems(self) -> list[str]:
        """Anything wrong with the installation, one sentence each: what `status` lists under
        problems (`doctor` makes the same checks, and more). No folder is made for the
        per-project files it looks for (a daemon's lock and status, the spool's)."""
        with Reading():
            return self._problems()

    def _problems(self) -> list[str]:
        from ..services import status_report

        conn = self.connection()
        root = str(self.root)
        database: dict[str, Any] = {
            "moved_aside": status_report.corrupt_copies(root) if self.exists else [],
            "filesystem": None,
            "wal_unsafe_filesystem": False,
        }
        if conn is None:  # no database: what stops one from being made
            return status_report.problems(None, root, database, {"running": False}, time.time())
        from ..core.paths import filesystem_type, unsafe_filesystem

        database["filesystem"] = filesystem_type(root)
        database["wal_unsafe_filesystem"] = unsafe_filesystem(root) is not None
        daemon = status_report.daemon_state(root)
        return status_report.problems(conn, root, database, daemon, time.time())
