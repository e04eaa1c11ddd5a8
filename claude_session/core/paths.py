"""Where things live: the project root, its database, spool and log (standard library only)."""

import os
from contextvars import ContextVar

DB_NAME = ".claude-session.db"
# Everything beside the database shares its prefix, so one `.gitignore` line covers them all.
SPOOL_SUFFIX = ".spool"
LOG_SUFFIX = ".log"


def nearest(start: str, markers: tuple[str, ...], skip: str | None = None) -> str | None:
    """The nearest folder at or above `start` holding one of `markers` (`skip`: a folder that
    never counts, as the home folder's `.claude` is the user's settings, not a project)."""
    here = os.path.realpath(start)
    while True:
        if here != skip and any(os.path.lexists(os.path.join(here, m)) for m in markers):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def find_project(start: str | None = None, *, explicit: str | None = None) -> str:
    """The project a command, the library or the MCP server works on (the hook's own is
    `project_root`, from its payload): `explicit` as given; else, with no `start`,
    $CLAUDE_PROJECT_DIR, else the current folder; from `start`, the nearest folder up holding
    a claude-session database, else `start` itself. Real paths, as the database is named."""
    if explicit:
        return os.path.realpath(explicit)
    if start is None:
        given = os.environ.get("CLAUDE_PROJECT_DIR")
        if given and given.strip():
            return os.path.realpath(given)
        start = os.getcwd()
    here = os.path.realpath(start)
    return nearest(here, (DB_NAME,)) or here


def intended_root(payload_cwd: object = None) -> str | None:
    """$CLAUDE_PROJECT_DIR, else the payload's cwd, whether or not it exists.

    Never the process cwd: hooks run in Claude's current directory, which follows `cd`.
    """
    for candidate in (os.environ.get("CLAUDE_PROJECT_DIR"), payload_cwd):
        if isinstance(candidate, str) and candidate.strip():
            return os.path.abspath(candidate)
    return None


def project_root(payload_cwd: object = None) -> str | None:
    """The intended root if it is a directory, else None; with its symbolic links resolved.

    One spelling for every consumer (database, spool, state folder, relay, claims): a project
    reached through a link (a linked code folder, macOS /tmp and /var) is the project reached
    by its real path, into one database. SQLite's no-follow open refuses a link anywhere in the
    path, so the database is only ever opened by its real path anyway. The spelling given is
    remembered, so file paths written through it stay relative to the project.
    A root that does not exist is not created: that would scatter databases over the disk.
    """
    path = intended_root(payload_cwd)
    if path is None or not os.path.isdir(path):
        return None
    real = canonical(path)
    if real != path:
        _learn_alias(real, path)
    return real


_CANONICAL: dict[str, str] = {}  # path -> its realpath (a few lstat calls: once per process)
_ALIASES: dict[str, tuple[str, ...]] = {}  # real root -> other spellings seen for it


def immutable_uri(path: str) -> str:
    """SQLite's URI for reading the file at `path` as it is (`immutable`: no lock, no -wal or
    -shm made): the path's %, ? and # escaped, as a URI needs them."""
    escaped = path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    return f"file:{escaped}?immutable=1"


def canonical(path: str) -> str:
    """`path` absolute, with every symbolic link on the way resolved (os.path.realpath),
    worked out once per process and path."""
    real = _CANONICAL.get(path)
    if real is None:
        if len(_CANONICAL) > 64:  # a long-lived process (the daemon) sees few roots
            _CANONICAL.clear()
        real = _CANONICAL[path] = os.path.realpath(path)
    return real


def _learn_alias(real: str, spelling: str) -> None:
    """Remember another spelling of the root `real` (a tuple, replaced whole: the daemon's
    threads read it without a lock)."""
    known = _ALIASES.get(real, ())
    if spelling not in known:
        if len(_ALIASES) > 64:
            _ALIASES.clear()
        _ALIASES[real] = (*known, spelling)[-8:]


def db_path(root: str) -> str:
    return os.path.join(root, DB_NAME)


def spool_dir(root: str) -> str:
    return db_path(root) + SPOOL_SUFFIX


def log_path(root: str) -> str:
    """The project's log of internal errors: with our per-user state, out of the project."""
    return project_file(root, LOG_SUFFIX)


def user_state_dir() -> str:
    """Per-user state (spool and log for events whose project directory is missing)."""
    return _user_dir("CLAUDE_SESSION_STATE_DIR", "XDG_STATE_HOME", ".local/state", "state")


def user_data_dir() -> str:
    """Per-user data: the global memories' database (`global.db`)."""
    return _user_dir("CLAUDE_SESSION_DATA_DIR", "XDG_DATA_HOME", ".local/share", "data")


def _user_dir(explicit_var: str, xdg_var: str, under_home: str, what: str) -> str:
    explicit = os.environ.get(explicit_var)
    if explicit:
        return explicit
    base = os.environ.get(xdg_var)
    if not base:
        # HOME unset (cron, some sandboxes): the account's home from the password database,
        # never a guessable folder in /tmp that another user could have prepared.
        home = os.environ.get("HOME") or _passwd_home()
        if not home:
            raise OSError(f"no home directory for per-user {what} (HOME unset, no passwd entry)")
        base = os.path.join(home, under_home)
    return os.path.join(base, "claude-session")


def project_state_dir(root: str) -> str:
    """Our per-user folder for one project's runtime files (daemon lock, status and stop
    marker, the capture lock): kept out of the user's project, keyed by a hash of the project
    root. Not created here; `ensure_project_state_dir` makes it when something is written."""
    return os.path.join(user_state_dir(), "projects", key_of(canonical(root)))


def key_of(text: str) -> str:
    """A short name for `text` in a file name: the start of its SHA-256."""
    try:
        from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # Python 3.12+ (`hashlib` would load OpenSSL, ~10 ms per hook)
        from _sha2 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
    return str(sha256(text.encode("utf-8", "surrogateescape")).hexdigest())[:24]


_READING: "ContextVar[bool]" = ContextVar("claude_session_reading", default=False)


class Reading:
    """`with Reading():` nothing in the block makes a folder for a per-project file, and a
    read-only open of a database nobody has open makes no -wal or -shm (core/db.connect): the
    library's reads (`Project`) write nothing; a file that is not there is read as absent."""

    def __enter__(self) -> None:
        self.token = _READING.set(True)

    def __exit__(self, *exc: object) -> None:
        _READING.reset(self.token)


def reading() -> bool:
    """Whether this runs inside `Reading`."""
    return _READING.get()


def project_file(root: str, suffix: str) -> str:
    """A per-project runtime file (`suffix`: ".daemon.lock", ...) in `project_state_dir`, its
    folder made (0700) on the way (not inside `Reading`); beside the database only where there
    is no per-user state folder (HOME unset), as before."""
    try:
        folder = project_state_dir(root)
        if not _READING.get():
            os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return db_path(root) + suffix
    return os.path.join(folder, DB_NAME.lstrip(".") + suffix)


def global_db_path() -> str:
    """The user-level database: global memories (the project schema, in its own file)."""
    return os.path.join(user_data_dir(), "global.db")


def _passwd_home() -> str | None:
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_dir or None
    except (ImportError, KeyError):
        return None


def relative_to_root(root: str, file_path: str) -> str:
    """Canonical claim path: relative to the project root when inside it, else absolute.

    Inside means under the root as given, its real path, or another spelling of it (through
    a symbolic link): the same file edited by one agent through a linked folder and by another
    through the real path is one claim."""
    path = os.path.normpath(os.path.join(root, file_path))
    real = canonical(root)
    for base in (root, real, *_ALIASES.get(real, ())):
        inside = _under(base, path)
        if inside is not None:
            return inside
    return _through_link(real, path) or path


def _under(base: str, path: str) -> str | None:
    if path == base:
        return "."
    prefix = base.rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) else None


def _through_link(real: str, path: str) -> str | None:
    """`path` relative to the root `real` when one of its folders is the root itself reached
    through a symbolic link: the shallowest folder that is the same directory (stat, which
    follows links) is learnt as a spelling of the root. One stat per folder on the way, for a
    path outside the root as written; a folder that does not exist ends the walk."""
    if not path.startswith("/"):
        return None
    try:
        here = os.stat(real)
    except OSError:
        return None
    parts = path.split("/")
    for depth in range(2, len(parts) + 1):
        folder = "/".join(parts[:depth])
        try:
            info = os.stat(folder)
        except OSError:
            return None
        if info.st_ino == here.st_ino and info.st_dev == here.st_dev:
            _learn_alias(real, folder)
            return _under(folder, path)
    return None


# Where SQLite's WAL (shared memory, POSIX locks) is not safe: network and VM-shared mounts.
UNSAFE_FILESYSTEMS = frozenset(
    (
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "9p",
        "v9fs",
        "drvfs",
        "afs",
        "ncpfs",
        "glusterfs",
        "fuse.glusterfs",
        "fuse.sshfs",
        "sshfs",
        "fuse.rclone",
        "fuse.s3fs",
        "davfs",
        "lustre",
        "gpfs",
    )
)


def filesystem_type(path: str) -> str | None:
    """The type of the file system holding `path` (from /proc/self/mountinfo), or None.
    `CLAUDE_SESSION_FS_TYPE` overrides it, for tests and for mounts the table cannot tell."""
    forced = os.environ.get("CLAUDE_SESSION_FS_TYPE")
    if forced:
        return forced
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            mounts = f.read().splitlines()
    except OSError:
        return None
    target = os.path.realpath(path)
    best, kind = "", None
    for line in mounts:
        fields = line.split(" ")
        if " - " not in line or len(fields) < 5:
            continue
        point = fields[4].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, line.split(" - ", 1)[1].split(" ")[0]
    return kind


def unsafe_filesystem(path: str) -> str | None:
    """The file system type when it is one where WAL must not be used, else None."""
    kind = filesystem_type(path)
    return kind if kind in UNSAFE_FILESYSTEMS else None
