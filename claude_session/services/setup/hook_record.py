"""The hook commands claude-session wrote for this user: what `doctor` may run.

A settings file is the repository's to write (a clone commits `.claude/settings.json`), and
our marker at the end of a command (`# claude-session`) is text anyone can copy. So every
writer of ours (`install` in each scope, `install --plugin`, a fork's `_carry_hooks`, the demo)
first records the sha256 of each command it writes, here: `<state>/hook-commands`, in the
user's private state folder (0700, the file 0600, opened without following a link, as the
trust record is), which no repository can write. `doctor` runs a command only when it is in
this record or is exactly one this install writes (`installer.this_install_commands`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable

from ...core.paths import user_state_dir

RECORD_NAME = "hook-commands"


def record_path() -> str:
    return os.path.join(user_state_dir(), RECORD_NAME)


def digest(command: str) -> str:
    try:  # the builtin one: `hashlib` would load OpenSSL (~4 ms of `status`, measured)
        from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # Python 3.12+
        from _sha2 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
    return str(sha256(command.encode("utf-8", "surrogatepass")).hexdigest())


def recorded() -> set[str]:
    """The digests in the record; none when it is missing, a link, not this user's, or
    writable by others (then it proves nothing)."""
    try:
        fd = os.open(record_path(), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return set()
    try:
        info = os.fstat(fd)
        if info.st_uid != os.getuid() or info.st_mode & 0o022 or not stat.S_ISREG(info.st_mode):
            return set()
        data = b""
        while chunk := os.read(fd, 1 << 16):
            data += chunk
    finally:
        os.close(fd)
    return {line.strip() for line in data.decode("ascii", "replace").splitlines() if line.strip()}


def remember(commands: Iterable[str]) -> None:
    """Add each command's digest to the record (those already there are not repeated)."""
    wanted = [digest(c) for c in dict.fromkeys(commands)]
    known = recorded()
    new = [d for d in wanted if d not in known]
    if not new:
        return
    os.makedirs(user_state_dir(), mode=0o700, exist_ok=True)
    fd = os.open(record_path(), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, "".join(f"{d}\n" for d in new).encode("ascii"))
    finally:
        os.close(fd)


def is_recorded(command: str, known: set[str] | None = None) -> bool:
    return digest(command) in (recorded() if known is None else known)
