"""Provenance: what this user's claude-session wrote carries a MAC under a per-user key.

A repository controls every path and inode in the project (a committed database, spool or
fork record; a `git checkout` that hands a freed inode to its own file), so neither proves who
wrote a file. What it cannot forge is a tag under a secret only this user's install holds: a
random key in the user's private state folder (0600, never inside a project, never exported).
The database's identity, the spool's and the MCP hook server's envelopes and the fork records are
tagged with it; anything whose tag does not verify belongs to someone else and is never
ingested, injected, run, exported or acted on.

The MAC is the standard library's keyed BLAKE2b (`hashlib.blake2b(key=...)`, which Python's
documentation gives as the faster and simpler replacement for HMAC), taken from `_blake2` as
`paths.py` takes `_sha256`: `import hmac` (or `hashlib`) loads OpenSSL, 13.5M instructions in
every hook process that checks a database (callgrind: `python -I -S -c 'import hmac'` against
`-c pass`), where `_blake2` costs 0.5M. The key comes from `os.urandom`, which
`secrets.token_bytes` calls (`secrets` itself costs ~20 ms to import). No cryptography of our
own; nothing here is loaded by a hook that merely stores an event.
"""

import os

from .paths import user_state_dir

KEY_NAME = "key"
KEY_BYTES = 32
PERSON = b"claude-session"  # BLAKE2b's personalisation: these MACs are ours alone

_key: "bytes | None" = None
_key_path: "str | None" = None


class NoKey(OSError):
    """No per-user key can be had (no state folder, a key not ours): nothing can be tagged,
    and nothing tagged can be verified, so everything counts as not ours."""


def key_path() -> str:
    return os.path.join(user_state_dir(), KEY_NAME)


def key(create: bool = True) -> bytes:
    """This user's key, made at first use: 32 random bytes, 0600, in the private state folder.
    A check (`create` False) makes none: without a key nothing was ever vouched for, and a
    read writes nothing.

    Made under a temporary name and linked into place, so two hooks making it at once agree on
    one (the second reads the first's). A key that is a link, not a regular file of this user,
    or readable by others is refused: someone else could know it."""
    global _key, _key_path
    path = key_path()
    if _key is not None and _key_path == path:
        return _key
    try:
        found = _read_key(path)
    except FileNotFoundError:
        if not create:
            raise NoKey(f"no key at {path} yet") from None
        found = _make_key(path)
    _key, _key_path = found, path
    return found


def _read_key(path: str) -> bytes:
    import stat

    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            raise NoKey(f"refusing {path}: not a regular file of this user")
        if info.st_mode & 0o077:
            raise NoKey(f"refusing {path}: readable or writable by others")
        data = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) != KEY_BYTES:
        raise NoKey(f"refusing {path}: not a key of ours ({len(data)} bytes)")
    return data


def _make_key(path: str) -> bytes:
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError as exc:
        raise NoKey(f"no private state folder for the key: {exc}") from exc
    tmp = f"{path}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, os.urandom(KEY_BYTES))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)  # never replaces a key another process made first
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)
    return _read_key(path)


def _message(purpose: str, parts: "tuple[str | bytes, ...]") -> bytes:
    """Each part length-prefixed, so no two lists of parts give the same bytes."""
    out = [purpose.encode()]
    for part in parts:
        data = part if isinstance(part, bytes) else part.encode("utf-8", "surrogatepass")
        out.append(b"%d:" % len(data) + data)
    return b"\0".join(out)


def tag(purpose: str, *parts: "str | bytes", create: bool = True) -> str:
    """The MAC (hex, 256 bits) of `parts` for `purpose` under this user's key; NoKey when
    there is none (and, with `create` False, when none was made yet)."""
    from _blake2 import blake2b

    mac = blake2b(_message(purpose, parts), key=key(create), digest_size=32, person=PERSON)
    return str(mac.hexdigest())


def verify(found: object, purpose: str, *parts: "str | bytes") -> bool:
    """Whether `found` is our MAC of `parts` for `purpose` (compared in constant time, as
    `hmac.compare_digest` does where OpenSSL is not loaded). False without a key: what cannot be
    checked is not ours."""
    from _operator import _compare_digest

    if not isinstance(found, str) or len(found) != 64 or not found.isascii():
        return False
    try:
        wanted = tag(purpose, *parts, create=False)
    except OSError:
        return False
    return bool(_compare_digest(found, wanted))
