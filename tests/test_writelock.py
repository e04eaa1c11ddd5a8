"""The write lock across our long-lived processes (core/writelock.py): a writer waits on it in
the kernel and gets it when the holder lets go; a holder that never lets go costs a waiter its
busy timeout and nothing more; a planted link is never followed.

`flock` locks belong to an open file, not to a process, so a second descriptor of the lock
file opened here stands for another process: the two exclude each other as two processes do."""

import fcntl
import os
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from claude_session.core import db, writelock
from claude_session.core.paths import db_path


class Holder:
    """Another process's hold on the lock file (a descriptor of its own)."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)

    def take(self) -> bool:
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def let_go(self) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)

    def close(self) -> None:
        os.close(self.fd)


@pytest.fixture
def lock_file(tmp_path: Path) -> str:
    return str(tmp_path / "writers.lock")


@pytest.fixture
def other(lock_file: str) -> Iterator[Holder]:
    holder = Holder(lock_file)
    yield holder
    holder.close()


def test_held_excludes_another_process_until_released(lock_file: str, other: Holder) -> None:
    lock = writelock.WriterLock(lock_file)
    fd = lock.acquire(1.0)
    assert fd >= 0
    assert not other.take()
    lock.release(fd)
    assert other.take()


def test_a_waiter_gets_the_lock_when_the_holder_lets_go(lock_file: str, other: Holder) -> None:
    assert other.take()
    lock = writelock.WriterLock(lock_file)
    got: list[tuple[int, float]] = []
    waiting = threading.Thread(target=lambda: got.append((lock.acquire(5.0), time.monotonic())))
    waiting.start()
    time.sleep(0.2)
    assert not got  # still waiting: the other holds it
    let_go_at = time.monotonic()
    other.let_go()
    waiting.join(5.0)
    assert got and got[0][0] >= 0 and got[0][1] >= let_go_at
    assert not other.take()  # now ours
    lock.release(got[0][0])
    assert other.take()


def test_a_holder_that_never_lets_go_costs_the_timeout_and_leaves_no_lock_behind(
    lock_file: str, other: Holder
) -> None:
    assert other.take()
    lock = writelock.WriterLock(lock_file)
    started = time.monotonic()
    with pytest.raises(writelock.Timeout):
        lock.acquire(0.2)
    assert time.monotonic() - started < 3.0
    # the abandoned wait goes on in the lock's thread: once the holder lets go, it takes the
    # lock and lets go at once, so nobody is locked out by a waiter that left
    other.let_go()
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        if other.take():
            break
        time.sleep(0.01)
    else:
        pytest.fail("the abandoned wait kept the lock")
    other.let_go()
    fd = lock.acquire(1.0)
    assert fd >= 0 and not other.take()
    lock.release(fd)


def test_an_abandoned_wait_hands_the_lock_to_the_next_waiter(lock_file: str, other: Holder) -> None:
    assert other.take()
    lock = writelock.WriterLock(lock_file)
    with pytest.raises(writelock.Timeout):
        lock.acquire(0.1)
    got: list[int] = []
    waiting = threading.Thread(target=lambda: got.append(lock.acquire(5.0)))
    waiting.start()
    time.sleep(0.1)
    other.let_go()
    waiting.join(5.0)
    assert got and got[0] >= 0
    assert not other.take()
    lock.release(got[0])
    assert other.take()


def test_a_transaction_inside_another_keeps_the_lock_until_the_outer_ends(
    lock_file: str, other: Holder
) -> None:
    lock = writelock.WriterLock(lock_file)
    outer = lock.acquire(1.0)
    inner = lock.acquire(1.0)
    lock.release(inner)
    assert not other.take()
    lock.release(outer)
    assert other.take()


def test_a_planted_link_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "victim"
    target.write_bytes(b"keep")
    link = tmp_path / "writers.lock"
    link.symlink_to(target)
    lock = writelock.WriterLock(str(link))
    assert lock.acquire(1.0) == -1  # nothing held: SQLite's busy handler does the waiting
    assert target.read_bytes() == b"keep"
    assert link.is_symlink()


@pytest.fixture
def serialized(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process writes as the MCP hook server and the daemon do."""
    monkeypatch.setattr(db, "_writers", threading.RLock())


def test_a_writer_waits_for_the_lock_before_it_begins(
    project: Path, serialized: None, isolated_state: Path
) -> None:
    conn = db.connect(db_path(str(project)))
    lock = writelock.for_database(conn.filename)
    assert lock.path.startswith(str(isolated_state))  # with the runtime files, not the project
    with db.Immediate(conn):  # the lock file is made at the first write
        conn.execute("CREATE TABLE IF NOT EXISTS probe (n INTEGER)")
    mode = os.stat(lock.path).st_mode
    assert stat.S_IMODE(mode) == 0o600
    other = Holder(lock.path)
    try:
        assert other.take()
        began: list[float] = []

        def write() -> None:
            with db.Immediate(conn):
                began.append(time.monotonic())
                conn.execute("INSERT INTO probe VALUES (1)")

        writer = threading.Thread(target=write)
        writer.start()
        time.sleep(0.2)
        assert not began
        let_go_at = time.monotonic()
        other.let_go()
        writer.join(10.0)
        assert began and began[0] >= let_go_at
        assert conn.execute("SELECT count(*) FROM probe").fetchall() == [(1,)]
        assert other.take()  # the writer let go once it committed
    finally:
        other.close()
        conn.close()


def test_a_writer_past_the_busy_timeout_gives_up_as_with_sqlites_lock(
    project: Path, serialized: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(db, "BUSY_TIMEOUT_MS", 200)
    conn = db.connect(db_path(str(project)))
    other = Holder(writelock.for_database(conn.filename).path)
    try:
        assert other.take()
        with pytest.raises(apsw.BusyError), db.Immediate(conn):
            conn.execute("CREATE TABLE never (n INTEGER)")
        assert db._writers.acquire(blocking=False)  # the process's own lock was given back
        db._writers.release()
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master")]
        assert "never" not in names
    finally:
        other.close()
        conn.close()
