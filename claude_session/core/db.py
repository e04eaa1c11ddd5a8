"""Opening the database: the only module that does it, and the one list of migrations.

apsw and the standard library only: hooks import this. Pragmas are set by hand (no
`apsw.bestpractice`, which costs ~40 ms). WAL is set once, when the file is created.
"""

import os

import apsw

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

SCHEMA_VERSION = 33  # the highest migration number; a test checks schema.sql sets the same
BUSY_TIMEOUT_MS = 5000
JOURNAL_SIZE_LIMIT = 16 * 1024 * 1024
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class DatabaseError(Exception):
    """The database cannot be used now; the caller spools or reports, never crashes."""


class SchemaTooNew(DatabaseError):
    """Written by a newer claude-session: never write to it, upgrade instead."""

    def __init__(self, found: int) -> None:
        super().__init__(
            f"database schema version {found} is newer than this claude-session supports "
            f"({SCHEMA_VERSION}); upgrade claude-session"
        )
        self.found = found


class Immediate:
    """`with Immediate(conn):` runs the block in one BEGIN IMMEDIATE transaction.

    apsw's own `with conn:` is a deferred savepoint: a read followed by a write in it fails
    with SQLITE_BUSY_SNAPSHOT at once under concurrency, whatever the busy timeout.

    In a process whose threads write at once (the daemon, the MCP hook server), they first queue
    on the process's writer lock (`serialize_writers`), then on the database's lock across
    such processes (core/writelock.py): a waiter at either wakes the moment the writer before
    it commits, where SQLite's busy handler sleeps between tries and hands the lock to
    whoever polls at the right moment (measured: 8 relayed writers had a p90 of 70 ms and a
    worst case past a second; 8 MCP hook servers a p99 of 71-95 ms, 19-36 ms with the lock).
    """

    def __init__(
        self,
        conn: apsw.Connection,
        *,
        unless: "Callable[[], bool] | None" = None,
        after_commit: "Callable[[], None] | None" = None,
    ) -> None:
        self.conn = conn
        self.within: Any = None
        self.across: Any = None
        self.across_fd = -1
        self.joined = False  # inside a transaction of this connection already: part of it
        self.skipped = False
        self.unless = unless  # asked once the locks are held: True means no transaction
        self.after_commit = after_commit  # run after COMMIT, before the locks are let go

    def __enter__(self) -> apsw.Connection:
        if not self.conn.getautocommit():  # a group commit's transaction (core/group_commit)
            self.joined = True
            return self.conn
        lock = _writers
        if lock is not None:
            if not lock.acquire(timeout=BUSY_TIMEOUT_MS / 1000):
                raise apsw.BusyError("another thread of this process holds the write lock")
            self.within = lock
            self._take_across()
        try:
            if self.unless is not None and self.unless():
                self.skipped = True
                return self.conn
            self.conn.execute("BEGIN IMMEDIATE")
        except BaseException:
            self._release()
            raise
        return self.conn

    @property
    def ordered(self) -> bool:
        """Whether this transaction holds the database's lock across processes (writelock)."""
        return self.across_fd >= 0

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if self.joined:
            return
        try:
            if self.skipped:
                return
            if exc_type is None:
                self.conn.execute("COMMIT")
                if self.after_commit is not None:
                    self.after_commit()
            elif not self.conn.getautocommit():
                self.conn.execute("ROLLBACK")
        finally:
            self._release()

    def _take_across(self) -> None:
        path = self.conn.filename
        if not path:  # in memory: no other process to wait for
            return
        try:
            from . import writelock
        except ImportError:  # no fcntl (Windows): SQLite's busy handler alone, as before
            return

        across = writelock.for_database(path)
        try:
            self.across_fd = across.acquire(BUSY_TIMEOUT_MS / 1000)
        except writelock.Timeout as exc:
            self._release()
            raise apsw.BusyError(f"another process holds the write lock: {exc}") from exc
        self.across = across

    def _release(self) -> None:
        if self.across is not None:
            self.across.release(self.across_fd)
            self.across, self.across_fd = None, -1
        if self.within is not None:
            self.within.release()
            self.within = None


# The process's writer lock, when its threads write at once; hooks (one thread) have none and
# never import `threading` (~1 ms) or take the lock across processes.
_writers: "Any" = None


def serialize_writers(lock: "Any") -> None:
    """From now on every `Immediate` of this process holds `lock` (a threading.RLock) for the
    length of its transaction, and the database's lock across such processes."""
    global _writers
    _writers = lock


def writers_busy(conn: apsw.Connection) -> bool:
    """Whether another writer of this database (a thread of this process, or a process that
    serializes its writers) holds its lock now: the moment a group commit pays for itself
    (core/group_commit.py). False where writers are not serialized."""
    lock = _writers
    if lock is None or not conn.filename:
        return False
    if not lock.acquire(blocking=False):
        return True
    try:
        from . import writelock
    except ImportError:  # no fcntl
        lock.release()
        return False
    try:
        return writelock.for_database(conn.filename).busy()
    finally:
        lock.release()


def poll_when_busy(conn: apsw.Connection, timeout_ms: int) -> None:
    """Wait for another process's write lock in steps of 0.5 to 5 ms, up to `timeout_ms`,
    instead of SQLite's own busy handler, whose sleeps grow to 100 ms: a lock released just
    after such a sleep began is left idle for most of it (measured in the daemon
    under 8 agents with the capture process writing: hand-overs of 0.85-1.5 s). For a process
    that waits often (the daemon); a hook waits rarely and keeps SQLite's."""
    import time

    started = [0.0]

    def busy(tries: int) -> bool:
        now = time.monotonic()
        if tries == 0:
            started[0] = now
        elif now - started[0] >= timeout_ms / 1000:
            return False
        time.sleep(min(0.0005 * (tries + 1), 0.005))
        return True

    conn.setbusyhandler(busy)


def connect(
    path: str,
    *,
    create: bool = True,
    readonly: bool = False,
    busy_timeout_ms: int = BUSY_TIMEOUT_MS,
    migrate: bool = True,
    immutable: bool = False,
) -> apsw.Connection:
    """Open (and if asked, create or migrate) the database at `path`.

    A new file is created with mode 0600 before SQLite opens it, so no other user can read it
    even for a moment; SQLite gives the -wal and -shm files the same mode. A symbolic link
    planted at the database, its -wal, -shm or -journal is refused: we never write through one.
    A link among the folders on the way is the user's (a project reached through a linked
    folder, macOS /tmp): the file is opened by its folder's real path, as SQLite's no-follow
    open requires (it refuses a link anywhere in the path, not only at the file).
    `immutable` (read-only, and made so inside `paths.Reading` when there is no -wal): the file
    read as it is, no lock taken and no -wal or -shm made; for a reader that writes nothing
    and reopens once a writer appears (project.Project).
    """
    from .paths import canonical, immutable_uri, reading

    folder, name = os.path.split(os.path.abspath(path))
    path = os.path.join(canonical(folder), name)
    _refuse_links(path)
    if os.path.isdir(path):  # SQLite would say "disk I/O error"
        raise DatabaseError("a folder is there, not a database file")
    if not os.path.lexists(path):
        if not create or readonly:
            raise DatabaseError(f"no database at {path}")
        if _create_whole(path):
            keep_out_of_git(path)
    elif not readonly:
        _set_aside_foreign_wal(path)
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE
    flags |= apsw.SQLITE_OPEN_NOFOLLOW
    name = path
    if readonly and reading() and not os.path.exists(path + "-wal"):
        immutable = True  # nobody has it open: read the file as it is, make no -wal nor -shm
    if immutable:  # read-only, no lock, no -wal or -shm made (`open_to_read` says when)
        flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_NOFOLLOW | apsw.SQLITE_OPEN_URI
        name, readonly = immutable_uri(path), True
    try:
        # Every event runs ~18 distinct statements and the event types differ: apsw's default
        # cache of 16 prepared statements thrashed across a session's mix, and 128 still let a
        # long-lived process (the daemon) drop the rarer events' statements.
        conn = apsw.Connection(name, flags=flags, statementcachesize=512)
        conn.setbusytimeout(busy_timeout_ms)
        # SQLite 3.54 re-plans a statement on every new binding of `col = ?` (the planner
        # peeks at the value to size its estimate): a full re-prepare on each execute, 3-5x
        # the cost of running it. The stability guarantee keeps one plan per statement.
        conn.config(apsw.SQLITE_DBCONFIG_ENABLE_QPSG, 1)
        if not readonly:
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(f"PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT}").fetchall()
        if migrate and not readonly:
            ensure_schema(conn)
            _own_wal(path)
        elif schema_version(conn) > SCHEMA_VERSION:
            raise SchemaTooNew(schema_version(conn))
    except apsw.Error as exc:
        raise DatabaseError(f"{type(exc).__name__}: {exc}") from exc
    return conn


class PlantedLink(DatabaseError):
    """A symbolic link where our database file should be: refused, never followed."""


def _refuse_links(path: str) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        if os.path.islink(path + suffix):
            raise PlantedLink(f"refusing {path + suffix}: it is a symbolic link we did not make")


def _create_whole(path: str) -> bool:
    """Make the database at `path` whole, then put it there: built under a temporary name
    (0600, never through a link) with its schema and identity, its identity recorded as this
    user's (core/trust.py), then linked into place, which fails if another process put one
    there first (then False, and theirs is used). So no process ever opens a database of ours
    that has no identity yet, or one whose trust is not recorded yet (8 hooks racing to make
    it: one of them took the new database for a clone's)."""
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f"{name}.creating-{os.getpid()}-{os.urandom(4).hex()}")
    try:
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    except OSError as exc:  # a read-only or full filesystem, a missing directory
        raise DatabaseError(f"cannot create {path}: {exc}") from exc
    try:
        conn = apsw.Connection(tmp, flags=apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_NOFOLLOW)
        try:
            ensure_schema(conn)
            _trust_new(conn, path)
        finally:
            conn.close()  # the last connection: its WAL folded in and removed
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError:  # a file system without hard links: renamed, unless one came first
            if os.path.lexists(path):
                return False
            os.rename(tmp, path)
        return True
    except (apsw.Error, OSError) as exc:
        raise DatabaseError(f"cannot create {path}: {exc}") from exc
    finally:
        for suffix in ("", "-wal", "-shm", "-journal"):
            try:
                os.unlink(tmp + suffix)
            except OSError:
                pass


def _trust_new(conn: apsw.Connection, path: str) -> None:
    """We made this database here: record its identity as trusted (see core/trust.py)."""
    from . import trust

    try:
        trust.record_database(path, conn)
    except OSError:
        pass  # no per-user state (HOME unset): the database stays untrusted, nothing injected


WAL_OWNER_SUFFIX = ".wal-owner"  # per project, in the user's state: the file the WAL is for
SET_ASIDE = ".set-aside-"  # beside the database: `<db>.set-aside-<ns>-wal` (and -shm)


def _set_aside_foreign_wal(path: str) -> None:
    """A WAL holding frames written for another file than the one now at `path` (a `git
    checkout` replaced the database while a process of ours held it open) is never replayed
    onto it, which would mix the pages of two databases: the -wal and -shm are renamed aside
    (`<db>.set-aside-<ns>-wal`), where `status` finds them (`set_aside_notes`).

    The WAL's owner is the database file (device:inode) our last opener saw; while any
    connection holds that file open its inode cannot be handed to another file, so a
    different one at the path is another file. A stat when a WAL with frames is there, a
    small read then; nothing when there is none (the last connection's close removes it)."""
    try:
        if os.lstat(path + "-wal").st_size == 0:
            return
        info = os.lstat(path)
    except OSError:
        return
    owner = _read_small(_wal_owner_file(path))
    now = f"{info.st_dev}:{info.st_ino}"
    if owner is None or owner == now:
        return
    import time

    stamp = time.time_ns()
    for suffix in ("-wal", "-shm"):
        try:
            os.rename(path + suffix, f"{path}{SET_ASIDE}{stamp}{suffix}")
        except FileNotFoundError:
            continue
        except OSError:
            return  # cannot set it aside: SQLite's own open decides, as before
    from . import log

    log.error(os.path.dirname(path), "database", _set_aside_note(f"{path}{SET_ASIDE}{stamp}-wal"))


def _own_wal(path: str) -> None:
    """Remember which file the WAL is written for (see `_set_aside_foreign_wal`): rewritten
    only when it changed, so an open reads one small file and writes nothing."""
    try:
        info = os.lstat(path)  # the file the connection just opened (no link: refused above)
    except OSError:
        return
    owner_file = _wal_owner_file(path)
    now = f"{info.st_dev}:{info.st_ino}"
    if _read_small(owner_file) == now:
        return
    tmp = f"{owner_file}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, now.encode())
        finally:
            os.close(fd)
        os.replace(tmp, owner_file)
    except OSError:
        pass


def _wal_owner_file(path: str) -> str:
    from .paths import project_file

    return project_file(os.path.dirname(path), WAL_OWNER_SUFFIX)


def _read_small(path: str) -> "str | None":
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        return os.read(fd, 4096).decode("utf-8", "replace").strip()
    finally:
        os.close(fd)


def set_aside_notes(root: str) -> "list[str]":
    """What `_set_aside_foreign_wal` did for this project, oldest first (for `status`): one
    sentence per WAL it set aside that is still there."""
    from .paths import DB_NAME

    prefix = DB_NAME + SET_ASIDE
    try:
        names = os.listdir(root)
    except OSError:
        return []
    return [
        _set_aside_note(os.path.join(root, name))
        for name in sorted(names)
        if name.startswith(prefix) and name.endswith("-wal")
    ]


def _set_aside_note(wal: str) -> str:
    return (
        "the database file was replaced (a git checkout or a copy) while its WAL held changes"
        f" for the one before; the WAL was set aside, not replayed onto it: {wal}"
    )


def keep_out_of_git(path: str) -> None:
    """A new database in a git checkout goes into `.git/info/exclude` (local, never committed),
    so it stays out of git even where `install` did not write a .gitignore (user scope)."""
    folder, name = os.path.split(path)
    exclude = os.path.join(folder, ".git", "info", "exclude")
    if not os.path.isdir(os.path.join(folder, ".git")):
        return
    try:
        os.makedirs(os.path.dirname(exclude), exist_ok=True)
        fd = os.open(exclude, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "r+", encoding="utf-8") as f:
            if f"{name}*" not in f.read().splitlines():
                f.write(f"\n# claude-session database, WAL, spool and log\n{name}*\n")
    except OSError:
        pass  # best effort: `install` also writes .gitignore


def schema_version(conn: apsw.Connection) -> int:
    version = conn.execute("PRAGMA user_version").fetchall()[0][0]
    return version if isinstance(version, int) else 0


def ensure_schema(conn: apsw.Connection) -> None:
    """Bring the schema to SCHEMA_VERSION: a cheap header read when it is already there.

    Creation and migrations run inside one BEGIN IMMEDIATE transaction, which serialises racing
    hooks; the version is read again inside it. A failure rolls back the version too.
    """
    version = schema_version(conn)
    if version == SCHEMA_VERSION:
        return
    if version > SCHEMA_VERSION:
        raise SchemaTooNew(version)
    if version == 0:
        # WAL (persistent; set outside a transaction), except on a network or VM-shared file
        # system, where its shared memory and locks are not safe: a rollback journal there.
        from .paths import unsafe_filesystem

        unsafe = unsafe_filesystem(os.path.dirname(conn.filename) or ".")
        conn.execute(f"PRAGMA journal_mode = {'DELETE' if unsafe else 'WAL'}").fetchall()
    with Immediate(conn):
        version = schema_version(conn)
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(version)
        if version == 0:
            if conn.execute("SELECT count(*) FROM sqlite_master").fetchall()[0][0]:
                raise DatabaseError("the file holds tables but is not a claude-session database")
            _run_script(conn, read_schema())
        else:
            for number, sql in migrations():
                if number > version:
                    _run_script(conn, sql)
                    conn.execute(f"PRAGMA user_version = {number}")


def schema_path() -> str:
    """The one schema: the checkout's top-level `schema.sql`, which the wheel build copies into
    this package (`core/schema.sql`); a clone or editable install reads the original."""
    shipped = os.path.join(_PACKAGE_DIR, "schema.sql")
    if os.path.exists(shipped):
        return shipped
    return os.path.join(os.path.dirname(os.path.dirname(_PACKAGE_DIR)), "schema.sql")


def read_schema() -> str:
    with open(schema_path(), encoding="utf-8") as f:
        return f.read()


def migrations() -> list[tuple[int, str]]:
    """(version, sql) for every migration file, in order."""
    folder = os.path.join(_PACKAGE_DIR, "migrations")
    found = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".sql") and name[:4].isdigit():
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                found.append((int(name[:4]), f.read()))
    return found


def _run_script(conn: apsw.Connection, sql: str) -> None:
    # apsw runs a multi-statement script lazily, one row-returning statement at a time.
    for _ in conn.execute(sql):
        pass


def as_text(value: object) -> str:
    """A column value as text (apsw types every value as any SQLite type)."""
    return value if isinstance(value, str) else "" if value is None else str(value)


def as_opt_text(value: object) -> str | None:
    return None if value is None else as_text(value)


def as_int(value: object) -> int:
    """A column value as an integer: counts, ids and flags (NULL is 0)."""
    if isinstance(value, bool | int):
        return int(value)
    if isinstance(value, float):
        return int(value)
    try:
        return int(str(value or 0))
    except ValueError:
        return 0


def rows(conn: apsw.Connection, sql: str, params: "Any" = ()) -> "list[dict[str, Any]]":
    """Run a query and return plain dict rows (for readers: CLI, context, daemon)."""
    cursor = conn.execute(sql, params)
    try:
        names = [d[0] for d in cursor.getdescription()]
    except apsw.ExecutionCompleteError:
        return []
    return [dict(zip(names, row, strict=True)) for row in cursor]
