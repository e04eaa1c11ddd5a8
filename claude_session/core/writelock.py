"""The write lock our long-lived processes of one database take turns on (the MCP hook servers of
each session, the daemon), beside SQLite's own.

SQLite gives its write lock to whoever polls at the right moment: a process that finds it taken
sleeps and tries again, and under 8 sessions writing at once an unlucky one lost round after
round (bench/hook_server.py: a p99 hand-over of 71-95 ms and a worst case of 160-290 ms). A
process waiting on this lock instead sleeps in the kernel (`flock`) and wakes the moment the
holder lets go: 19-36 ms and 38-58 ms. Each process's threads already queue on its own lock
first (`db.serialize_writers`), so one thread per process is ever here.

`flock` has no timeout, and a holder may never let go (a stopped process): past the busy
timeout a waiter gives up (the event goes to the spool, as with SQLite's busy timeout) and a
thread of the lock's finishes the wait on its behalf, letting go at once, or handing the lock
to whoever waits by then. A lock file that cannot be opened (a planted link, a read-only
folder) leaves SQLite's busy handler to do the waiting, as before.

Only for processes that serialize their writers: the standard library, no cost to a hook.
"""

import fcntl
import os
import queue
import threading

from .paths import DB_NAME, project_file

LOCK_SUFFIX = ".writers.lock"


class Timeout(Exception):
    """The lock was not had within the time asked."""


class _Ticket:
    __slots__ = ("cancelled", "fd", "granted")

    def __init__(self) -> None:
        self.granted = threading.Event()
        self.cancelled = False
        self.fd = -1


class WriterLock:
    """One database's lock across processes. `acquire` returns a descriptor to give back to
    `release`; -1 when no lock file can be had (nothing held, nothing to release)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.mutex = threading.Lock()
        self.fd: int | None = None  # the quick path's descriptor, opened at first use
        self.holding = -1  # the descriptor holding it now
        self.depth = 0  # a transaction inside another one of this thread: held once
        self.waits: queue.SimpleQueue[_Ticket] = queue.SimpleQueue()
        self.waiter: threading.Thread | None = None

    def acquire(self, timeout: float) -> int:
        """Hold the lock; Timeout past `timeout` seconds."""
        if self.depth:  # this thread holds it already (its process's writer lock says so)
            self.depth += 1
            return self.holding
        if self.fd is None:
            fd = self._open()
            if fd < 0:
                return -1
            self.fd = fd
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fd = self.fd
        except BlockingIOError:
            fd = self._wait(timeout)
        except OSError:
            return -1
        if fd >= 0:
            self.holding, self.depth = fd, 1
        return fd

    def busy(self) -> bool:
        """Whether another process holds the lock now (looked at, not taken); False when no
        lock file can be had, or this thread holds it."""
        if self.depth:
            return False
        if self.fd is None:
            fd = self._open()
            if fd < 0:
                return False
            self.fd = fd
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        return False

    def release(self, fd: int) -> None:
        if fd < 0:
            return
        self.depth -= 1
        if self.depth > 0:
            return
        self.holding = -1
        if fd == self.fd:
            fcntl.flock(fd, fcntl.LOCK_UN)
        else:
            os.close(fd)  # a descriptor the waiting thread got it on: closing lets go

    def _wait(self, timeout: float) -> int:
        """Wait in the kernel on a descriptor of its own (its own open file: the lock it gets
        is not the quick path's), through the waiting thread, for at most `timeout`."""
        ticket = _Ticket()
        with self.mutex:
            if self.waiter is None:
                self.waiter = threading.Thread(target=self._serve, name="writers-lock", daemon=True)
                self.waiter.start()
        self.waits.put(ticket)
        if ticket.granted.wait(timeout):
            return ticket.fd
        with self.mutex:
            if ticket.granted.is_set():  # granted as the wait ran out
                return ticket.fd
            ticket.cancelled = True
        raise Timeout(f"{self.path} held past {timeout:g} s")

    def _serve(self) -> None:
        while True:
            ticket = self.waits.get()
            if ticket.cancelled:
                continue
            fd = self._open()
            if fd >= 0:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                except OSError:
                    os.close(fd)
                    fd = -1
            if not self._grant(ticket, fd):
                self._hand_on(fd)

    def _grant(self, ticket: _Ticket, fd: int) -> bool:
        with self.mutex:
            if ticket.cancelled:
                return False
            ticket.fd = fd
            ticket.granted.set()
            return True

    def _hand_on(self, fd: int) -> None:
        """The lock came after its waiter gave up: to the next one still waiting, else let go."""
        while True:
            try:
                ticket = self.waits.get_nowait()
            except queue.Empty:
                break
            if self._grant(ticket, fd):
                return
        if fd >= 0:
            os.close(fd)

    def _open(self) -> int:
        try:
            return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError:  # a planted link (ELOOP), a read-only folder: SQLite's waiting alone
            return -1


_LOCKS: dict[str, WriterLock] = {}
_LOCKS_MUTEX = threading.Lock()


def for_database(db_file: str) -> WriterLock:
    """The lock of the database at `db_file` (one per process and file), among the project's
    runtime files (core/paths.py, `project_file`)."""
    with _LOCKS_MUTEX:
        found = _LOCKS.get(db_file)
        if found is None:
            folder, name = os.path.split(db_file)
            suffix = LOCK_SUFFIX if name == DB_NAME else f"-{name}{LOCK_SUFFIX}"
            found = _LOCKS[db_file] = WriterLock(project_file(folder, suffix))
        return found
