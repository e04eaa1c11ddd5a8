"""Trust, as direnv's `allow` or git's `safe.directory`: a database or configuration that this
user did not make on this machine is data, never instructions.

A database is trusted when claude-session created it here (its identity, device and inode, is
in the per-user record) and this user owns it; a `.claude-session.json` when its content is the
one this user wrote through `claude-session config --set` or accepted with `claude-session
trust`. A database that arrived with a clone is never put in front of the model, and a cloned
configuration never sets a command we run, until the user says `claude-session trust`.

The record is one line per trusted file in `<state>/trusted`: kind, real path, identity.
Standard library only: hooks read it (only a project with something to inject pays for it).
"""

import os

from .paths import user_state_dir

RECORD_NAME = "trusted"


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


def _identity(path: str) -> "str | None":
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return f"{info.st_dev}:{info.st_ino}"


def record_database(path: str) -> None:
    """The database at `path` was just created by us, here: trusted from birth."""
    identity = _identity(path)
    if identity is not None:
        _append("db", os.path.realpath(path), identity)


def database_problem(path: str) -> "str | None":
    """Why the database at `path` must not be trusted, or None when it may be."""
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return None  # nothing there yet: the first hook creates (and trusts) it
    if info.st_uid != os.getuid():
        return f"the database is owned by uid {info.st_uid}, not by this user"
    wanted = ["db", os.path.realpath(path), f"{info.st_dev}:{info.st_ino}"]
    try:
        if wanted in _lines():
            return None
    except OSError:
        pass
    return (
        "the database was not created by claude-session on this machine (it came with a clone"
        " or a copy); run `claude-session trust` if it is yours"
    )


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
