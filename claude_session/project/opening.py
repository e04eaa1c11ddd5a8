"""How a `Project` finds and opens its databases: the read-only connection that writes no file,
re-opened once a writer appears, and a write connection (migrated) for `refresh` and the write
verbs. One policy: reading never migrates nor creates; writing migrates first."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import apsw

from ..core import db, memories, spool, trust
from ..core.paths import db_path, find_project, global_db_path
from ..records import Memory

T = TypeVar("T")


class ProjectError(Exception):
    """The project's database cannot be read or written as asked (an older schema, a damaged
    file, a session, frame or memory that names nothing, a write the database refuses)."""


class NotFound(ProjectError):
    """An id or address that names nothing recorded (a session, a frame, a memory, a key)."""


class Untrusted(ProjectError):
    """A write refused: the project's database was not made by this user on this machine
    (core/trust.py); `claude-session trust` adopts it."""


def no_database(path: str) -> str:
    """What a view says of a project with no database yet, and how to get one."""
    return (
        f"no claude-session database at {path}: install the hooks with"
        " `claude-session install` and start Claude Code, or try `claude-session demo`"
    )


def make(cls: type[T], row: dict[str, Any], **changed: Any) -> T:
    """A dataclass from a row: its fields by name (a field the row lacks: None)."""
    values = {f.name: row.get(f.name) for f in fields(cls)}  # type: ignore[arg-type]
    return cls(**(values | changed))


def find_root(path: str | os.PathLike[str] = ".") -> Path:
    """`path`, or the nearest folder up from it that holds a claude-session database."""
    return Path(find_project(os.fspath(path)))


def memory(where: str, row: dict[str, Any], trusted: bool = True) -> Memory:
    """A memories row (`where`: 'project' or 'global') as a Memory; from a database that is not
    `trusted`, its `trusted` is 0 whatever the row says."""
    label = f"g{row['id']}" if where == "global" else str(row["id"])
    tags = tuple(json.loads(str(row.get("tags") or "[]")))
    return make(Memory, row, id=label, tags=tags, **({} if trusted else {"trusted": 0}))


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


def global_to_read() -> apsw.Connection | None:
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


class ProjectBase:
    """The databases of one project: `root`, `path`, whether it `exists` and is `trusted`, the
    read-only `connection()`, and `writing()` for a write (migrated first)."""

    def __init__(self, path: str | os.PathLike[str] = ".") -> None:
        self.root = find_root(path)
        self.path = db_path(str(self.root))
        self._conn: apsw.Connection | None = None
        self._read_as_is: tuple[int, int, int] | None = None  # an immutable read: the file then
        self._retired: list[apsw.Connection] = []
        self._closed = False

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
            self._let_go()
        if self._conn is None and self.exists:
            try:
                seen = _identity(self.path)
                conn, immutable = open_to_read(self.path)
            except db.DatabaseError as exc:
                raise ProjectError(f"cannot open {self.path} to read it: {exc}") from exc
            self._read_as_is = seen if immutable else None
            if db.schema_version(conn) < db.SCHEMA_VERSION:
                conn.close()
                raise ProjectError(
                    f"{self.path} was written by an older claude-session: `Project.refresh()`"
                    " (or any `claude-session` command in the project) upgrades it"
                )
            self._conn = conn
        return self._conn

    def _let_go(self) -> None:
        """Drop the read connection (a method may still hold it: closed at close())."""
        if self._conn is not None:
            self._retired.append(self._conn)
        self._conn = self._read_as_is = None

    def _writer_came(self, seen: tuple[int, int, int]) -> bool:
        """Whether the file read as it is has a writer now (a -wal) or changed since."""
        return os.path.exists(self.path + "-wal") or _identity(self.path) != seen

    @contextmanager
    def writing(self, create: bool = False, ingest: bool = True) -> Iterator[apsw.Connection]:
        """A write connection to the project's database, migrated (made when `create`), the
        spool's events taken in first (`ingest`: a write lands after what the hooks saw
        before it); the read connection is opened again afterwards, so reads see it."""
        if self._closed:
            raise ProjectError("this Project is closed")
        root = str(self.root)
        if not create and not self.exists and not (ingest and spool.backlog(root)):
            raise NotFound(f"no claude-session database at {self.path}")
        try:
            conn = db.connect(self.path, create=True)
        except db.DatabaseError as exc:
            raise ProjectError(f"cannot open {self.path}: {exc}") from exc
        try:
            if ingest and spool.backlog(root):
                spool.ingest(conn, root)
            yield conn
        finally:
            conn.close()
            self._let_go()

    def close(self) -> None:
        for conn in self._retired:
            conn.close()
        self._retired.clear()
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._closed = True

    def __enter__(self: T) -> T:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.root)!r}, exists={self.exists})"
