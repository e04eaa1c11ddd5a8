"""The Claude Code process behind a hook, and whether a recorded one still runs: /proc only.

Claude Code runs a hook command through a shell (`sh -c`), or directly in the exec form: the
hook's first ancestor that is not a shell is Claude Code. A process is named by its pid and its
start time (clock ticks since boot, /proc/<pid>/stat field 22), so a pid that a later process
reuses is not mistaken for it. Both mean something only on this boot of this host and in this
pid namespace (a project folder may be shared with another machine or a container): the pid
space is recorded with them, and a daemon in another one never judges them.

Standard library only, a few reads of small /proc files (tens of microseconds): the
SessionStart and UserPromptSubmit hooks call `claude_code`, the daemon `alive` every second.
"""

import os

# What may stand between Claude Code and the hook (their `comm`, the executable's name).
SHELLS = frozenset(
    ("sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "busybox", "fish")
)
MAX_SHELLS = 4  # shells in shells beyond this: no launch we know, so no process recorded
BOOT_ID = "/proc/sys/kernel/random/boot_id"

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    Process = tuple[int, int, str]  # (pid, start time in clock ticks, pid space)


def _read(path: str) -> bytes:
    """A small /proc file at once (no buffered text file: a hook pays for every object)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 2048)
    finally:
        os.close(fd)


def _stat(pid: int) -> tuple[str, str, int, int]:
    """(comm, state, parent pid, start ticks) of a process; OSError when it is not there."""
    data = _read(f"/proc/{pid}/stat")
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses, the last ")" ends it
    head, _, tail = data.rpartition(b")")
    fields = tail.split()
    comm = head.partition(b"(")[2].decode("utf-8", "replace")
    return comm, fields[0].decode("ascii", "replace"), int(fields[1]), int(fields[19])


def pid_space() -> str | None:
    """Where this process's pids mean what they say: the boot id and the pid namespace."""
    try:
        boot = _read(BOOT_ID).decode("ascii").strip()
        namespace = os.readlink("/proc/self/ns/pid")
    except (OSError, ValueError):
        return None
    return f"{boot}/{namespace}" if boot else None


def claude_code() -> "Process | None":
    """The Claude Code process running this hook: the first ancestor that is not a shell.
    None when it cannot be known: no /proc, shells nested too deep, or an ancestor that is
    init (the hook outlived its parent, or Claude Code is a container's pid 1)."""
    space = pid_space()
    if space is None:
        return None
    pid = os.getppid()
    for _ in range(MAX_SHELLS + 1):
        if pid <= 1:
            return None
        try:
            comm, _, parent, started = _stat(pid)
        except (OSError, ValueError, IndexError):
            return None
        if comm not in SHELLS:
            return pid, started, space
        pid = parent
    return None


def alive(pid: int, start_ticks: int) -> bool | None:
    """True while that very process runs; False once it is gone, a zombie, or its pid is a
    later process's; None when /proc cannot say (then nobody may act on it)."""
    try:
        _, state, _, started = _stat(pid)
    except (FileNotFoundError, ProcessLookupError):
        return False
    except (OSError, ValueError, IndexError):
        return None
    return state not in ("Z", "X") and started == start_ticks
