"""What a `Project` writes, each verb in one `BEGIN IMMEDIATE` transaction and answered with a
dataclass saying what it did: `refresh` (migrate, take in the spool, read the transcripts'
new bytes), memories (add, edit, forget, accept, outcome, verify, used), the project's state
(set, unset) and trust. The CLI and the MCP server call these: one writer of each thing."""

from __future__ import annotations

import getpass
import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import apsw

from ..core import db, memories, memory_files, recall
from ..core import state as project_state
from ..core.spool import backlog as spool_backlog
from ..core.spool import ingest as ingest_spool
from ..records import (
    Memory,
    MemoryAdded,
    MemoryChanged,
    Refreshed,
    StateSet,
    TrustChanged,
)
from .opening import NotFound, ProjectBase, ProjectError, Untrusted


def user_cause(command: str) -> str:
    """A change's cause in the history when the user made it: the command and who ran it."""
    try:
        who = getpass.getuser()
    except (KeyError, OSError):
        who = "unknown user"
    return f"{command} (by {who})"


class ProjectWrites(ProjectBase):
    """The write side of `Project`."""

    # -- refresh --------------------------------------------------------------------------

    def refresh(
        self,
        session: str | None = None,
        *,
        recent_seconds: float | None = None,
        transcripts: bool = True,
        latest: bool = False,
        spool: bool = True,
    ) -> Refreshed:
        """Bring the record up to date before reading it: the database migrated to this
        version, the spool's events taken in (a database is made when some wait), and the new
        bytes of Claude Code's transcripts read for cost: of `session` (an id), else of the
        sessions active in the last `recent_seconds` (None: every session; 0: the live ones);
        `latest`: of the session active last, once the spool is in. `spool=False` leaves the
        spool to the hooks and the daemon (what the CLI's reads do: `status` says what waits
        there). Without a database and with nothing spooled, nothing is made."""
        root = str(self.root)
        waiting = spool_backlog(root) if spool else 0
        if not self.exists and not waiting:
            return Refreshed(None, 0, {})
        before = self._version_on_disk()
        with self.writing(create=True, ingest=False) as conn:
            ingested = ingest_spool(conn, root) if waiting else 0
            read: dict[str, Any] = {}
            if latest:
                from ..services.queries import latest_session

                session = latest_session(conn)
            if transcripts and (session or not latest):
                from ..services.cost import transcripts as reader

                read = reader.catch_up(conn, session, recent_seconds=recent_seconds)
        migrated = before if before is not None and before < db.SCHEMA_VERSION else None
        return Refreshed(migrated, ingested, read)

    def upgrade(self) -> int | None:
        """Migrate the database when an older claude-session wrote it, and do nothing else:
        one of this version is not opened for writing, so no file is touched (what `status`
        needs: it writes nothing). The version it was upgraded from, or None."""
        from ..core.paths import Reading

        with Reading():  # the look itself makes no -wal or -shm
            before = self._version_on_disk()
        if before is None or before >= db.SCHEMA_VERSION:
            return None
        return self.refresh(transcripts=False, spool=False).migrated_from

    def _version_on_disk(self) -> int | None:
        """The schema version of the database as it is (None: none, or not readable)."""
        if not self.exists:
            return None
        try:
            conn = db.connect(self.path, create=False, readonly=True)
        except db.DatabaseError:
            return None
        try:
            return db.schema_version(conn)
        finally:
            conn.close()

    # -- memories -------------------------------------------------------------------------

    @contextmanager
    def _memories_of(self, scope: str, create: bool = False) -> Iterator[apsw.Connection]:
        """The database holding memories of `scope`: the user's global one, or the project's."""
        if scope != "global":
            with self.writing(create=create) as conn:
                yield conn
            return
        found = recall.open_global(create=create)
        if found is None and create:
            raise ProjectError("the user-level memory database cannot be opened")
        if found is None:
            raise NotFound("there are no global memories yet")
        try:
            yield found
        finally:
            found.close()

    def add_memory(
        self,
        text: str,
        category: str = "fact",
        scope: str = "project",
        *,
        tags: Iterable[str] = (),
        files: Iterable[str] = (),
        session_id: str | None = None,
        hypothesis: bool = False,
        source: str = "user",
        agent_id: str | None = None,
        tool_use_id: str | None = None,
        turn_no: int | None = None,
        error_id: int | None = None,
        files_inferred: bool = False,
    ) -> MemoryAdded:
        """Remember `text` (redacted like everything recorded), or strengthen the same memory.
        `scope`: project, session (of `session_id`, default the latest session) or global
        (every project; one an agent adds waits for the user's `accept_memory`). `files`:
        project files it is about (relative to the project, or absolute inside it), recorded
        with their content hash so the memory is marked possibly stale when they change."""
        root = str(self.root)
        if source != "user" and self.exists and not self.trusted:
            # a global memory from here would carry what a clone's database said elsewhere
            raise Untrusted(
                f"{self.path} was not made by this user on this machine: `claude-session"
                " trust` adopts it"
            )
        try:
            paths = list(dict.fromkeys(memory_files.relative(root, f) for f in files))
        except memory_files.FileProblem as exc:
            raise ProjectError(str(exc)) from exc
        commit = memory_files.head_commit(root) if paths else None
        now = time.time()
        try:
            with self._memories_of(scope, create=True) as conn:
                if scope == "session" and not session_id:
                    from ..services.queries import latest_session

                    session_id = latest_session(conn)
                    if session_id is None:
                        raise NotFound(
                            "no session recorded yet to attach a session memory to: give"
                            " a session, or use the project scope"
                        )
                with db.Immediate(conn):
                    memory_id, new = memories.add(
                        conn,
                        text,
                        category,
                        scope,
                        now,
                        tags=list(tags),
                        source=source,
                        session_id=session_id,
                        agent_id=agent_id,
                        tool_use_id=tool_use_id,
                        project=root if scope == "global" else None,
                        trusted=True,  # the user's own word, or an agent of a trusted project
                        turn_no=turn_no,
                        error_id=error_id,
                        outcome="hypothesis" if hypothesis else None,
                        files_inferred=files_inferred if paths else None,
                    )
                    if paths and (new or not files_inferred):
                        memory_files.record(conn, memory_id, root, paths, now, commit)
                stored = memories.get(conn, memory_id)
        except memories.MemoryProblem as exc:
            raise ProjectError(str(exc)) from exc
        review = memories.PENDING if stored and stored["review"] == memories.PENDING else None
        shown = tuple(paths) if paths and (new or not files_inferred) else ()
        return MemoryAdded(
            memories.label(scope, memory_id),
            scope,
            new,
            session_id if scope == "session" else None,
            review,
            shown,
            files_inferred and bool(shown),
        )

    def _memory_verb(self, memory_id: str) -> tuple[str, int]:
        found = memories.parse_label(memory_id)
        if found is None:
            raise ProjectError(
                f"{memory_id!r} is not a memory id (12 for this project, g12 global)"
            )
        return found

    def _found(self, conn: apsw.Connection, number: int, memory_id: str) -> dict[str, Any]:
        row = memories.get(conn, number)
        if row is None:
            raise NotFound(f"no memory {memory_id!r} (see `claude-session memory list`)")
        return row

    def forget_memory(self, memory_id: str) -> MemoryChanged:
        """Forget a memory (`12`, `g12`): it is never shown or given again."""
        scope, number = self._memory_verb(memory_id)
        with self._memories_of(scope) as conn, db.Immediate(conn):
            if not memories.forget(conn, number, time.time()):
                raise NotFound(f"no memory {memory_id!r}")
        return MemoryChanged(memory_id, "forgotten")

    def accept_memory(self, memory_id: str) -> MemoryChanged:
        """Accept a memory held for the user's review: given and found from now on."""
        scope, number = self._memory_verb(memory_id)
        with self._memories_of(scope) as conn:
            row = self._found(conn, number, memory_id)
            with db.Immediate(conn):
                accepted = memories.accept(conn, number)
            if not accepted:
                raise ProjectError(
                    f"memory {memory_id!r} does not await review (review:"
                    f" {row['review'] or 'none'})"
                )
            return MemoryChanged(memory_id, "accepted", memories.get(conn, number))

    def edit_memory(
        self,
        memory_id: str,
        *,
        text: str | None = None,
        category: str | None = None,
        tags: Iterable[str] | None = None,
    ) -> MemoryChanged:
        """Change a memory's text, category or tags."""
        scope, number = self._memory_verb(memory_id)
        with self._memories_of(scope) as conn:
            self._found(conn, number, memory_id)
            try:
                with db.Immediate(conn):
                    memories.edit(
                        conn,
                        number,
                        time.time(),
                        text=text,
                        category=category,
                        tags=list(tags) if tags is not None else None,
                    )
            except memories.MemoryProblem as exc:
                raise ProjectError(str(exc)) from exc
            return MemoryChanged(memory_id, "edited", memories.get(conn, number))

    def memory_outcome(
        self, memory_id: str, outcome: str | None, reason: str | None = None
    ) -> MemoryChanged:
        """What became of a memory: verified, disproved (kept as a dead end, never given as
        fact), hypothesis; None clears it. `reason`: why (stored redacted, shown by `memory
        show` and with the memory wherever a session is given it)."""
        scope, number = self._memory_verb(memory_id)
        with self._memories_of(scope) as conn:
            self._found(conn, number, memory_id)
            try:
                with db.Immediate(conn):
                    memories.set_outcome(conn, number, outcome, time.time(), reason)
            except memories.MemoryProblem as exc:
                raise ProjectError(str(exc)) from exc
            return MemoryChanged(memory_id, "outcome", memories.get(conn, number))

    def verify_memory(self, memory_id: str) -> MemoryChanged:
        """The user checked the memory against today's files: their hashes are taken again, so
        it is no longer possibly stale (until they change). `memory` holds `verified_at` and
        `files` (path, sha256 as taken now)."""
        scope, number = self._memory_verb(memory_id)
        now = time.time()
        with self._memories_of(scope) as conn:
            row = self._found(conn, number, memory_id)
            base: str | None = str(self.root)
            if scope == "global":
                project = row.get("project")
                base = project if isinstance(project, str) and os.path.isdir(project) else None
            paths = [str(f["path"]) for f in memory_files.files_of(conn, number)]
            if paths and base is None:
                raise ProjectError(
                    f"memory {memory_id} is about files of {row.get('project')}, not found here"
                )
            commit = memory_files.head_commit(base) if paths and base else None
            with db.Immediate(conn):
                memories.mark_verified(conn, number, now)
                if paths and base:
                    memory_files.record(conn, number, base, paths, now, commit)
            files = [
                {"path": f["path"], "sha256": f["sha256"]}
                for f in memory_files.files_of(conn, number)
            ]
        return MemoryChanged(memory_id, "verified", {"verified_at": now, "files": files})

    def memories_used(self, found: Iterable[Memory]) -> None:
        """The memories given to an agent (a search's answer) count as used, strengthening
        them, each in the database that holds it. Never in a database that is not trusted."""
        now = time.time()
        chosen = list(found)
        for where in ("project", "global"):
            ids = [int(m.id.removeprefix("g")) for m in chosen if m.where == where]
            if not ids or (where == "project" and not self.trusted):
                continue
            try:
                with self._memories_of(where) as conn, db.Immediate(conn):
                    memories.count_use(conn, ids, now)
            except NotFound:
                continue

    # -- the project's state --------------------------------------------------------------

    def set_state(self, key: str, value: str, *, cause: str | None = None) -> StateSet:
        """Set `key` to `value` (recorded in the history with `cause`, by default the user's
        command); `changed` is empty when it held that value already."""
        why = cause or user_cause("claude-session state set")
        with self.writing(create=True) as conn, db.Immediate(conn):
            changed = project_state.set_values(conn, {key: value}, time.time(), why)
        return StateSet({key: value}, (key,) if changed else ())

    def unset_state(self, key: str, *, cause: str | None = None) -> StateSet:
        """Remove `key` (recorded in the history); `NotFound` when it is not set."""
        why = cause or user_cause("claude-session state unset")
        with self.writing() as conn, db.Immediate(conn):
            if not project_state.delete(conn, key, time.time(), why):
                raise NotFound(f"no state key {key!r}")
        return StateSet({}, (), (key,))

    # -- failed paths -------------------------------------------------------------------

    def record_failed_path(
        self,
        approach: str,
        reason: str,
        *,
        file_path: str | None = None,
        session_id: str | None = None,
    ) -> int:
        """Record an approach that failed, so no agent tries it again (redacted; `session_id`
        default: the session active last; `file_path` relative to the project or inside it);
        its id."""
        from ..core import ladder
        from ..core.config import number
        from ..core.paths import relative_to_root
        from ..core.redact import redact
        from ..services import config_file
        from ..services.queries import latest_session

        root = str(self.root)
        relative = relative_to_root(root, file_path) if file_path else None
        ttl = number(config_file.load_or_defaults(root).values, "failed_path_ttl_days")
        with self.writing(create=True) as conn:
            session_id = session_id or latest_session(conn)
            with db.Immediate(conn):
                return ladder.add_failed_path(
                    conn,
                    session_id,
                    redact(approach),
                    redact(reason),
                    relative,
                    "recorded by hand",
                    time.time(),
                    ttl,
                )

    def resolve_failed_path(self, failed_path_id: int) -> None:
        """Failed path `failed_path_id` is no longer shown to agents; `NotFound` if none."""
        from ..core import ladder

        with self.writing() as conn, db.Immediate(conn):
            if not ladder.resolve_failed_path(conn, failed_path_id):
                raise NotFound(f"no failed path {failed_path_id}")

    # -- trust ----------------------------------------------------------------------------

    def trust(self) -> TrustChanged:
        """Adopt this project's database and `.claude-session.json` as the user's own, as
        they are now (a clone's are never injected nor run until then)."""
        from ..services import config_file

        root = str(self.root)
        pending = config_file.adoption(root)
        trusted = tuple(config_file.trust_project(root))
        self._let_go()  # a read sees the database as trusted from now on
        return TrustChanged(trusted, pending, None, config_file.trust_state(root))

    def revoke_trust(self) -> TrustChanged:
        """Stop trusting them: the records of this user's trust are removed."""
        from ..services import config_file

        root = str(self.root)
        gone = config_file.revoke(root)
        self._let_go()
        return TrustChanged((), None, gone, config_file.trust_state(root))
