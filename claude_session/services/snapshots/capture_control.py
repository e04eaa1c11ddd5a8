"""Starting the workspace capture process, and waiting for it (stdlib only: hooks call this).

A frame that may follow a change of files asks for a workspace snapshot (`vcs_tags` row
'pending'); the hook that committed it then makes sure a capture process runs
(`ensure_running`, ~0.5 ms: a lock probe and a posix_spawn). One capture process per project,
decided by an OS lock (a POSIX record lock) on a lock file in our per-user state folder, and,
while it starts, by a marker file; it captures until nothing has been pending for a moment.

No hook waits for a capture: a tool that starts while a snapshot is pending keeps what it
will change instead (services/snapshots/before_images.py). `wait_for_pending` serves the demo, and a
tool that names no file where `snapshot_wait_seconds` is set above 0.
"""

import os
import sys
import time

from ...core.paths import project_file

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    import apsw

NICE = "/usr/bin/nice"
SH = "/bin/sh"
START_DELAY_SECONDS = 0.1
STARTING_SECONDS = 5.0  # a capture process started this recently is taken to be on its way
POLL_SECONDS = 0.02
MAX_STARTS = 3


def lock_path(root: str) -> str:
    return project_file(root, ".capture.lock")


def starting_path(root: str) -> str:
    """Touched by `spawn`, removed by the capture process once it holds the lock: until then
    (its start delay and imports) the lock is free, and every hook would start another."""
    return project_file(root, ".capture.starting")


def try_lock(root: str) -> int | None:
    """Take the project's capture lock without waiting: its fd (closing it releases the lock),
    or None when another process holds it. A POSIX record lock (`os.lockf`): the hook that
    probes it does not pay for importing `fcntl` (~0.4 ms)."""
    fd = os.open(lock_path(root), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        os.lockf(fd, os.F_TLOCK, 0)
    except OSError:
        os.close(fd)
        return None
    return fd


def is_running(root: str) -> bool:
    """Whether a capture process (or a revert) holds the project's capture lock."""
    try:
        fd = try_lock(root)
    except OSError:
        return False
    if fd is None:
        return True
    os.close(fd)  # closing drops the lock we just took
    return False


def ensure_running(root: str) -> bool:
    """Start a capture process unless one runs; True if one was started. Not waited for.

    Safe against the race with a process about to exit: it re-reads the pending rows after
    releasing its lock, and this hook committed its row before probing the lock."""
    if is_running(root) or _starting(root):
        return False
    spawn(root)
    return True


def wanted_path(root: str) -> str:
    """Present while someone waits for the lock (`take_lock`): a capture process lingering
    for more frames lets it go at once."""
    return project_file(root, ".capture.wanted")


def take_lock(root: str, timeout: float) -> int | None:
    """The capture lock, waited for at most `timeout` seconds (a revert: no snapshot may be
    taken while it restores files); its fd, or None. A capture at work finishes its round."""
    deadline = time.monotonic() + timeout
    fd = os.open(wanted_path(root), os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    os.close(fd)
    try:
        while (lock := try_lock(root)) is None:
            if time.monotonic() >= deadline:
                return None
            time.sleep(POLL_SECONDS)
        return lock
    finally:
        try:
            os.unlink(wanted_path(root))
        except OSError:
            pass


def lock_wanted(root: str) -> bool:
    return os.path.lexists(wanted_path(root))


def _starting(root: str) -> bool:
    try:
        age = time.time() - os.stat(starting_path(root), follow_symlinks=False).st_mtime
    except OSError:
        return False
    return 0 <= age < STARTING_SECONDS


def started(root: str) -> None:
    """Called by the capture process holding the lock: the next hook may start one again."""
    try:
        os.unlink(starting_path(root))
    except OSError:
        pass


def spawn(root: str) -> int:
    """`python -m claude_session.services.snapshots.capture ROOT`, detached (its own session, stdio
    on /dev/null) and niced: it must not compete with the agent's own processes."""
    # -P: the working directory (a project, perhaps a cloned one) is never put on sys.path, so a
    # `claude_session` folder planted there is not what runs.
    argv = [sys.executable, "-P", "-m", "claude_session.services.snapshots.capture", root]
    if os.path.exists(NICE):
        argv = [NICE, "-n", "5", *argv]
    # Its start-up (~40 ms of imports) must not compete with the hook that started it: a
    # moment's delay (measured: started at once, it made PostToolUse ~2.5 ms slower). A tool
    # that starts meanwhile keeps what it changes for the snapshot (before_images).
    if os.path.exists(SH):
        quoted = " ".join("'" + arg.replace("'", "'\\''") + "'" for arg in argv)
        argv = [SH, "-c", f"sleep {START_DELAY_SECONDS}; exec {quoted}"]
    fd = os.open(starting_path(root), os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        os.utime(fd)  # its age is what counts: one left by a start that failed expires
    finally:
        os.close(fd)
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
    ]
    return os.posix_spawn(argv[0], argv, dict(os.environ), file_actions=actions, setsid=True)


def wait_for_pending(conn: "apsw.Connection", root: str, timeout: float) -> float:
    """Block until no workspace snapshot is pending, at most `timeout` seconds; starts the
    capture process if none runs. Returns the seconds waited (0.0 when nothing was pending)."""
    from ...core.executions import snapshot_pending

    if timeout <= 0 or not snapshot_pending(conn):
        return 0.0
    started = time.monotonic()
    deadline = started + timeout
    starts = 1 if ensure_running(root) else 0
    while snapshot_pending(conn):
        if time.monotonic() >= deadline:
            break
        time.sleep(POLL_SECONDS)
        # It exited (or crashed) with work left: start another, a few times at most.
        if starts < MAX_STARTS and not is_running(root) and snapshot_pending(conn):
            starts += 1 if ensure_running(root) else 0
    return time.monotonic() - started
