"""Open connections to a project's database, kept between events by a long-lived process
(the daemon, the MCP hook server): reopening one per event would cost what the
hook process costs."""

import os
import stat
import threading

import apsw

from ..core import db
from ..core.paths import db_path


class Connections:
    """Open connections to the project database, one per working thread at a time, reopened
    when the file at the path is no longer the one they hold (moved aside, deleted, replaced
    by a link: `db.connect` then creates or refuses exactly as a hook would)."""

    def __init__(self, root: str) -> None:
        self.path = db_path(root)
        self.idle: list[tuple[apsw.Connection, tuple[int, int]]] = []
        self.lock = threading.Lock()

    def take(self, busy_timeout_ms: int) -> tuple[apsw.Connection, tuple[int, int]]:
        identity = _identity(self.path)
        with self.lock:
            while self.idle:
                conn, opened = self.idle.pop()
                if opened == identity:
                    db.poll_when_busy(conn, busy_timeout_ms)
                    return conn, opened
                _close_replaced(conn)
        # SQLite's own auto-checkpoint stays on: under 8 writers at once a checkpoint run after
        # each answer instead let the WAL grow past 100 MB (tests/test_relay.py).
        conn = db.connect(self.path, busy_timeout_ms=busy_timeout_ms)
        db.poll_when_busy(conn, busy_timeout_ms)
        return conn, _identity(self.path)

    def give_back(self, conn: apsw.Connection, identity: tuple[int, int]) -> None:
        if conn.in_transaction:  # never: every write is one `with Immediate` block
            conn.close()
            return
        with self.lock:
            self.idle.append((conn, identity))

    def close(self) -> None:
        with self.lock:
            for conn, _ in self.idle:
                conn.close()
            self.idle.clear()


def _close_replaced(conn: apsw.Connection) -> None:
    """Close a connection whose file was replaced at its path (a `git checkout`): SQLite's
    last close removes the -wal and -shm *by name*, which would now be the new file's. Its
    WAL is kept (SQLITE_FCNTL_PERSIST_WAL): folded into the file it was written for, which
    only this connection still holds, and never deleted by name."""
    import ctypes

    keep = ctypes.c_int(1)
    try:
        conn.file_control("main", apsw.SQLITE_FCNTL_PERSIST_WAL, ctypes.addressof(keep))
    except apsw.Error:
        pass
    conn.close()


def _identity(path: str) -> tuple[int, int]:
    try:
        found = os.lstat(path)
    except OSError:
        return (0, 0)
    if stat.S_ISLNK(found.st_mode):
        return (0, 0)
    return (found.st_dev, found.st_ino)
