"""Finding, starting and stopping the project's daemon (stdlib only: the
SessionStart hook calls `ensure_running`, so this costs ~0.3 ms when the daemon runs).

One daemon per project, decided by an OS lock (flock) on its lock file, never by a pid
check: a pid in a file can be stale or reused. The pid in the lock file is for `stop` and
`status` only. The lock, status and stop files live in our per-user state folder
(`paths.project_file`), never in the user's project.
"""

import fcntl
import os
import sys
import time

from ...core.paths import project_file

SH = "/bin/sh"
START_DELAY_SECONDS = 0.5


def lock_path(root: str) -> str:
    return project_file(root, ".daemon.lock")


def status_path(root: str) -> str:
    return project_file(root, ".daemon.json")


def stop_marker_path(root: str) -> str:
    return project_file(root, ".daemon.stop")


def request_stop(root: str) -> None:
    """Say when the last stop was asked for: a daemon requested before that (one a SessionStart
    hook is still starting, behind its start delay) gives up instead of running."""
    try:  # and a start asked for after this stop is not held back by an earlier one
        os.unlink(lock_path(root) + ".spawned")
    except OSError:
        pass
    path = stop_marker_path(root)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, f"{time.time():.6f}".encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)


def stopped_since(root: str, requested_at: float) -> bool:
    """A stop was asked for at or after `requested_at`."""
    try:
        fd = os.open(stop_marker_path(root), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        text = os.read(fd, 64).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    try:
        return float(text) >= requested_at
    except ValueError:
        return False


def is_running(root: str) -> bool:
    """True while some process holds the project's daemon lock."""
    return locked(lock_path(root))


def locked(path: str) -> bool:
    """True while some process holds the flock on `path` (probed without waiting). The probe
    creates nothing: no lock file, no daemon holding it."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # closing also drops a lock we just took
    return False


def running_pid(root: str) -> int | None:
    if not is_running(root):
        return None
    try:
        fd = os.open(lock_path(root), os.O_RDONLY | os.O_NOFOLLOW)
        try:
            text = os.read(fd, 64).decode("ascii", "replace").strip()
        finally:
            os.close(fd)
    except OSError:
        return None
    return int(text) if text.isdigit() else None


SPAWN_GRACE_SECONDS = 5.0  # a daemon started this recently is still on its way up


def ensure_running(root: str, throttle: bool = True) -> bool:
    """Start the daemon unless one runs, or one was started moments ago and is still on its
    way (its start delay and imports take ~0.7 s: the hooks of that moment must not each start
    one; `daemon start` asks with throttle off); returns True if one was started. Not waited
    for."""
    if is_running(root) or (throttle and _spawned_recently(root)):
        return False
    spawn(root)
    return True


def _spawned_recently(root: str) -> bool:
    """True within SPAWN_GRACE_SECONDS of the last start; marks this moment when not."""
    marker = lock_path(root) + ".spawned"
    try:
        if time.time() - os.lstat(marker).st_mtime < SPAWN_GRACE_SECONDS:
            return True
        os.unlink(marker)
    except FileNotFoundError:
        pass
    except OSError:
        return False
    try:
        os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    except FileExistsError:
        return True  # another hook marked it first: that one starts the daemon
    except OSError:
        pass
    return False


def spawn(root: str) -> int:
    """Start `python -m claude_session.daemon` detached: its own session, stdio on
    /dev/null, so neither Claude Code's process group signals nor its pipes reach it.
    posix_spawn, not subprocess: importing subprocess would cost the SessionStart hook ~5 ms."""
    python = sys.executable
    # The daemon: its sweeps and the hook relay.
    # -P: the working directory (the hook's: a project, perhaps a cloned one) is never put on
    # sys.path, so a `claude_session` folder planted there is not what runs.
    argv = [python, "-P", "-m", "claude_session.daemon", "--project", root]
    argv += ["--requested-at", f"{time.time():.6f}"]
    env = dict(os.environ)  # started without -I -S: `site` finds watchfiles and pydantic
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
    ]
    # Its start-up (~150 ms of imports) must not compete with the hook that started it, nor
    # with the burst of hooks that follows a SessionStart: measured here, a daemon starting
    # alongside made the SessionStart hook 3 ms slower; started half a second later it costs
    # nothing measurable. Not niced: once up, it answers the project's hooks (the relay), and a
    # niced process on a busy machine would make them wait.
    if os.path.exists(SH):
        quoted = " ".join("'" + arg.replace("'", "'\\''") + "'" for arg in argv)
        argv = [SH, "-c", f"sleep {START_DELAY_SECONDS}; exec {quoted}"]
    return os.posix_spawn(argv[0], argv, env, file_actions=actions, setsid=True)


def stop(root: str, timeout: float = 10.0) -> bool:
    """SIGTERM the daemon and wait for its lock to be released (SIGKILL after `timeout`)."""
    import signal  # not at the top: it pulls in enum, ~2.5 ms for every SessionStart hook

    request_stop(root)  # first: a daemon still starting up must not outlive this stop
    pid = running_pid(root)
    if pid is None:
        return False
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not is_running(root) and not _alive(pid):
            return True
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return True


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie (an init that does not reap leaves those)."""
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (ProcessLookupError, FileNotFoundError):
        return False
    except (OSError, IndexError):
        return True
