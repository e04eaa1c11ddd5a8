"""The count of possibly stale memories `status` shows (core/memory_files.stale_count) is
incremental and stays true (issue 45): a file is only stat'ed when it is as recorded or as the
daemon's look last saw it (`keep_seen`), hashed again only once it moved, and the count equals
a full recomputation (every file hashed and compared with what was recorded) over any run of
edits, restores, deletions, links, memories forgotten and daemon looks.

A change that keeps a file's size and modification time to the nanosecond is the one a stat
cannot see (git's "racily clean" rule, core/memory_files.py): every write here gets a time of
its own, as a real one does."""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from claude_session.core import db, memories, memory_files

FILES = [f"src/f{i}.py" for i in range(5)] + ["ghost.py"]  # ghost.py: none when recorded
ABOUT = [[0], [1, 2], [2, 3], [4], [5], [0, 4]]  # the files of each memory, by index
OPENED: list[str] | None = None  # while set: the files opened (the `open` audit event)


def _audit(event: str, args: tuple[object, ...]) -> None:
    if OPENED is not None and event == "open" and isinstance(args[0], str):
        OPENED.append(args[0])


sys.addaudithook(_audit)


@contextmanager
def files_opened() -> Iterator[list[str]]:
    global OPENED
    OPENED = []
    try:
        yield OPENED
    finally:
        OPENED = None


_EMPTY: list[bytes] = []  # a new database's bytes, made once: each example copies them


def empty_database(root: Path) -> str:
    path = root / ".claude-session.db"
    if not _EMPTY:
        with tempfile.TemporaryDirectory() as folder:
            made = Path(folder) / ".claude-session.db"
            conn = db.connect(str(made))
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            conn.close()
            _EMPTY.append(made.read_bytes())
    path.write_bytes(_EMPTY[0])
    return str(path)


class Scene:
    """A project with memories about its files, and the clock of its writes: each write gets
    a modification time of its own (`utime`), in the past unless `now` asks for the present
    (a write a check cannot trust its stat for yet)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.original: dict[str, bytes] = {}
        self.tick = 0
        self.base = time.time() - 100_000
        for i, path in enumerate(FILES[:-1]):
            self.write(path, f"# file {i}\n".encode() * (i + 3))
            self.original[path] = (root / path).read_bytes()
        self.conn = db.connect(empty_database(root))
        now = time.time()
        with db.Immediate(self.conn):
            for n, files in enumerate(ABOUT):
                memory_id, _ = memories.add(self.conn, f"fact {n}", "fact", "project", now)
                paths = [FILES[i] for i in files]
                memory_files.record(self.conn, memory_id, str(root), paths, now, None)

    def write(self, path: str, content: bytes, now: bool = False) -> None:
        full = self.root / path
        full.parent.mkdir(parents=True, exist_ok=True)
        if full.is_symlink():
            full.unlink()
        full.write_bytes(content)
        if not now:
            self.tick += 1
            os.utime(full, ns=(0, int((self.base + self.tick) * 1e9)))

    def apply(self, op: str, which: int, n: int) -> None:
        path = FILES[which]
        full = self.root / path
        if op == "edit":  # another content: the same size or not
            body = self.original.get(path, b"x" * 10)
            self.write(path, (f"v{n}".encode() + body)[: len(body) + n % 2])
        elif op == "edit now":
            self.write(path, f"now {n}".encode(), now=True)
        elif op == "restore":
            if path in self.original:
                self.write(path, self.original[path], now=n % 2 == 0)
        elif op == "touch" and full.is_file():
            self.write(path, full.read_bytes())
        elif op == "delete" and (full.exists() or full.is_symlink()):
            full.unlink()
        elif op == "link inside":  # a link to another file of the project
            if full.exists() or full.is_symlink():
                full.unlink()
            full.parent.mkdir(parents=True, exist_ok=True)
            full.symlink_to(self.root / FILES[(which + 1) % 5])
        elif op == "link outside":
            if full.exists() or full.is_symlink():
                full.unlink()
            full.parent.mkdir(parents=True, exist_ok=True)
            full.symlink_to(self.root.parent / "outside.py")
        elif op == "forget":
            with db.Immediate(self.conn):
                self.conn.execute(
                    "UPDATE memories SET forgotten_at = 1 WHERE id = ?", (which % len(ABOUT) + 1,)
                )
        elif op == "daemon looks":
            memory_files.keep_seen(self.conn, str(self.root), most=1 + n % 3)

    def recomputed(self) -> tuple[int, int]:
        """The count done the long way: every file of every memory in use hashed now."""
        inside = str(self.root.resolve()) + os.sep
        about, stale = 0, 0
        for (memory_id,) in self.conn.execute(
            "SELECT DISTINCT f.memory_id FROM memory_files f JOIN memories m ON m.id ="
            " f.memory_id WHERE m.forgotten_at IS NULL"
        ).fetchall():
            about += 1
            for path, recorded in self.conn.execute(
                "SELECT path, sha256 FROM memory_files WHERE memory_id = ?", (memory_id,)
            ).fetchall():
                real = os.path.realpath(self.root / str(path))
                now = None
                if real.startswith(inside) and os.path.isfile(real):
                    now = hashlib.sha256(Path(real).read_bytes()).hexdigest()
                if now != recorded:
                    stale += 1
                    break
        return about, stale


OPS = st.sampled_from(
    [
        "edit",
        "edit now",
        "restore",
        "touch",
        "delete",
        "link inside",
        "link outside",
        "forget",
        "daemon looks",
    ]
)


@settings(max_examples=int(os.environ.get("STALE_EXAMPLES", "100")), deadline=None)
@given(
    steps=st.lists(
        st.tuples(OPS, st.integers(0, len(FILES) - 1), st.integers(0, 9), st.booleans()),
        max_size=15,
    )
)
def test_the_count_equals_the_full_recomputation_after_any_changes(
    steps: list[tuple[str, int, int, bool]],
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "outside.py").write_text("not the project's\n")
        root = Path(folder) / "project"
        root.mkdir()
        scene = Scene(root)
        try:
            assert memory_files.stale_count(scene.conn, str(root)) == scene.recomputed()
            for op, which, n, look in steps:
                scene.apply(op, which, n)
                assert memory_files.stale_count(scene.conn, str(root)) == scene.recomputed(), op
                if look:  # the daemon's look between two changes, as its timer comes
                    scene.apply("daemon looks", which, n)
                    assert memory_files.stale_count(scene.conn, str(root)) == scene.recomputed()
        finally:
            scene.conn.close()


def test_once_the_daemon_looked_the_count_reads_no_file(tmp_path: Path) -> None:
    """Files recorded just after they were written (an agent's edit, then its memory) cannot
    be trusted by their stat: until a look kept what they hold, each count hashed them all
    again. After `keep_seen` (the daemon's, on its timer) the count opens none."""
    root = tmp_path / "project"
    root.mkdir()
    conn = db.connect(str(root / ".claude-session.db"))
    paths = [f"m{i:02d}.py" for i in range(60)]
    for path in paths:
        (root / path).write_text(f"# {path}\n")
    recorded_at = time.time()
    with db.Immediate(conn):
        for path in paths:
            memory_id, _ = memories.add(conn, f"about {path}", "fact", "project", recorded_at)
            memory_files.record(conn, memory_id, str(root), [path], recorded_at, None)
    settled = recorded_at - memory_files.RACY_S - 1
    for path in paths:  # as the clock moves on: their times settled, not newer than recorded
        os.utime(root / path, (settled, settled))
    (root / paths[0]).write_text("# changed, the same size\n"[: len(f"# {paths[0]}\n")])
    os.utime(root / paths[0], (settled + 0.5, settled + 0.5))
    with files_opened() as opened:
        assert memory_files.stale_count(conn, str(root)) == (60, 1)
    assert len(opened) == 60  # every file hashed: none as recorded, none seen yet
    assert memory_files.keep_seen(conn, str(root)) == 60
    with files_opened() as opened:
        assert memory_files.stale_count(conn, str(root)) == (60, 1)
    assert opened == []
    # Put back as it was recorded (the same size as the change the look saw): read again.
    (root / paths[0]).write_text(f"# {paths[0]}\n")
    os.utime(root / paths[0], (settled + 1, settled + 1))
    with files_opened() as opened:
        assert memory_files.stale_count(conn, str(root)) == (60, 0)
    assert opened == [str(root.resolve() / paths[0])]
    conn.close()


def test_the_daemons_pass_keeps_what_the_count_needs(tmp_path: Path) -> None:
    """The daemon's pass (services/background/sweeps.py) looks at the memories' files on its
    own timer: a file recorded just after it was written is hashed there once, not by every
    `status`."""
    from claude_session.services.background.sweeps import Daemon

    root = tmp_path / "project"
    root.mkdir()
    (root / "app.py").write_text("PORT = 8080\n")
    conn = db.connect(str(root / ".claude-session.db"))
    with db.Immediate(conn):
        memory_id, _ = memories.add(conn, "the port is 8080", "fact", "project", time.time())
        memory_files.record(conn, memory_id, str(root), ["app.py"], time.time(), None)
    settled = time.time() - memory_files.RACY_S - 1
    os.utime(root / "app.py", (settled, settled))  # its time settled: what a look sees is kept
    daemon = Daemon(str(root))
    try:
        daemon.pass_once()
    finally:
        daemon.close()
    assert daemon.stats["memory_files_seen"] == 1
    with files_opened() as opened:
        assert memory_files.stale_count(conn, str(root)) == (1, 0)
    assert opened == []
    conn.close()
