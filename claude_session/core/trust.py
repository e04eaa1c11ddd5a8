"""Trust, as direnv's `allow` or git's `safe.directory`: a database or configuration that this
user's claude-session did not write is data, never instructions.

A database is trusted when the per-user record holds the MAC, under this user's key
(core/provenance.py), of its real path and the random identity it holds (made when we created
it), and this user owns it. A path or an inode proves nothing: a repository controls both (a
committed database, or a `git checkout` that hands the freed inode to its own file). A
`.claude-session.json` is trusted when its content is the one this user wrote through
`claude-session config --set` or accepted with `claude-session trust`. A database that arrived
with a clone is never put in front of the model, and a cloned configuration never sets a
command we run, until the user says `claude-session trust`.

The record is one line per trusted file in `<state>/trusted` (0600, in the user's private state
folder): kind, real path, MAC (a database) or content hash (a configuration). Standard library
and apsw only: hooks read it (only a project with something to inject pays for it).
"""

import os

from .paths import immutable_uri, user_state_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    import apsw

RECORD_NAME = "trusted"
DATABASE = "database"  # a line: kind, real path, MAC of (real path, identity)


def _record_path() -> str:
    return os.path.join(user_state_dir(), RECORD_NAME)


def _lines() -> "list[list[str]]":
    try:
        fd = os.open(_record_path(), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return []
    try:
        data = b""
        while chunk := os.read(fd, 1 << 16):
            data += chunk
    finally:
        os.close(fd)
    return [line.split("\t") for line in data.decode("utf-8", "replace").splitlines() if line]


def _append(kind: str, path: str, identity: str) -> None:
    folder = user_state_dir()
    os.makedirs(folder, mode=0o700, exist_ok=True)
    fd = os.open(_record_path(), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, f"{kind}\t{path}\t{identity}\n".encode())
    finally:
        os.close(fd)


def database_id(conn: "apsw.Connection") -> "str | None":
    """The identity the database holds (migration 28), or None: a database of an earlier
    version not migrated yet, or not one of ours."""
    import apsw

    try:
        found = conn.execute("SELECT id FROM database_identity ORDER BY rowid LIMIT 1").fetchall()
    except apsw.Error:
        return None
    value = found[0][0] if found else None
    return value if isinstance(value, str) and value else None


def _read_id(path: str) -> "str | None":
    """The identity of the database at `path`, read through a read-only connection by its
    real path (SQLite's no-follow open refuses a link anywhere on the way; a project reached
    through a linked folder is the user's own, core/db.py). As the file is when no process has
    it open (no -wal: SQLite's `immutable`), so a check makes no -wal or -shm; the identity
    never changes once made. Opened here, not through `db.connect`, which imports this module
    to record the databases it creates."""
    import apsw

    real = os.path.realpath(path)
    flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_NOFOLLOW
    name = real
    if not os.path.exists(real + "-wal"):
        flags |= apsw.SQLITE_OPEN_URI
        name = immutable_uri(real)
    try:
        conn = apsw.Connection(name, flags=flags)
    except apsw.Error:
        return None
    try:
        return database_id(conn)
    finally:
        conn.close()


def _database_tag(real: str, identity: str, create: bool = False) -> "str | None":
    """The MAC recorded for this database; a check (`create` False) makes no key."""
    from .provenance import tag

    try:
        return tag("database", real, identity, create=create)
    except OSError:  # no per-user key: nothing can be vouched for
        return None


def record_database(path: str, conn: "apsw.Connection | None" = None) -> bool:
    """The database at `path` is ours: record the MAC of its identity and real path in the
    per-user record. False when it has no identity to record (not migrated) or no key."""
    identity = database_id(conn) if conn is not None else _read_id(path)
    real = os.path.realpath(path)
    mac = _database_tag(real, identity, create=True) if identity else None
    if mac is None:
        return False
    if [DATABASE, real, mac] not in _lines():
        _append(DATABASE, real, mac)
    return True


def database_problem(path: str, conn: "apsw.Connection | None" = None) -> "str | None":
    """Why the database at `path` must not be trusted, or None when it may be.

    Trusted when the per-user record holds the MAC, under this user's key, of its real path and
    the identity it holds (read through `conn` when given). Neither the path nor the inode
    counts: a repository controls both."""
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return None  # nothing there yet: the first hook creates (and trusts) it
    if info.st_uid != os.getuid():
        return f"the database is owned by uid {info.st_uid}, not by this user"
    real = os.path.realpath(path)
    identity = database_id(conn) if conn is not None else _read_id(path)
    try:
        lines = _lines()
        if identity:
            mac = _database_tag(real, identity)
            if mac is not None and [DATABASE, real, mac] in lines:
                return None
    except OSError:
        pass
    return (
        "the database was not created by claude-session for this user (it came with a clone,"
        " a copy or a checkout); run `claude-session trust` if it is yours"
    )


class NotOurs(Exception):
    """An action that would delete or change files on the word of a database this user's
    claude-session did not write: refused, whatever the flags."""


def require_ours(path: str, conn: "apsw.Connection | None", action: str) -> None:
    """Raise NotOurs when the database at `path` is not trusted: what it names (frames,
    snapshots, forks) is never acted on. Checked by the code that deletes, not its callers."""
    why = database_problem(path, conn)
    if why is not None:
        raise NotOurs(f"not {action}: the database is not trusted ({why})")


def content_hash(text: str) -> str:
    from hashlib import sha256  # only when a configuration file exists

    return sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def record_config(path: str, text: str) -> None:
    _append("config", os.path.realpath(path), content_hash(text))


def config_problem(path: str, text: str) -> "str | None":
    """Why the configuration with this content must not be trusted, or None."""
    try:
        info = os.stat(path, follow_symlinks=False)
        if info.st_uid != os.getuid():
            return f"the configuration is owned by uid {info.st_uid}, not by this user"
        if ["config", os.path.realpath(path), content_hash(text)] in _lines():
            return None
    except OSError:
        pass
    return (
        "the configuration was not written by claude-session config nor trusted since it"
        " last changed (a clone, or an edit by hand); run `claude-session trust` to use it"
    )


def forget(paths: "list[str]") -> int:
    """Drop every record of these files; returns how many lines went."""
    real = {os.path.realpath(p) for p in paths}
    lines = _lines()
    kept = [line for line in lines if len(line) < 2 or line[1] not in real]
    tmp = f"{_record_path()}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, "".join("\t".join(line) + "\n" for line in kept).encode())
    finally:
        os.close(fd)
    os.replace(tmp, _record_path())
    return len(lines) - len(kept)
