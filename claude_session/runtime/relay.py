"""The hook process's first step: read stdin, then hand the event to the project's daemon
if one serves it; otherwise (or if it fails in any way) do the work here.

Why: a hook is on the agent's critical path, and most of an in-process hook's cost is loading
apsw and our core and opening the database, which the project's daemon has done already. Over
a Unix socket in the user's state folder the hook sends what it read and gets back exactly what
it would have printed (`claude_session/daemon.py` serves it). This module imports only
`os`, `sys`, `time` (loaded with the interpreter), `_socket` and `request` (which imports
nothing): the request's wire format is `runtime/request.py`'s.

Nothing is lost and nothing is done twice: the server acknowledges a request before working on
it and answers only once the event is committed (or spooled). No acknowledgement in time, no
answer in time, a refusal (another install, another environment, another request version) or
a broken connection: the
hook applies the event itself, under the same delivery id, which the store deduplicates.
"""

import os
import sys
import time

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    import _socket
    from collections.abc import Callable

    from .request import Request

STDIN_CAP_BYTES = 32 * 1024 * 1024  # past this the payload cannot be a real event
# Claude Code writes the payload at once; the shortest timeout we install is 5 s (SessionEnd).
STDIN_FIRST_BYTE_SECONDS = 3.0  # nothing at all for this long: nobody is going to write
STDIN_IDLE_SECONDS = 2.0  # data flowed, then nothing for this long: the writer is gone
CONNECT_SECONDS = 0.2
# A live server acknowledges within a millisecond or two (each request has its own thread),
# a few hundred on a machine loaded past its cores: one that has not in a second is hung, and
# the hooks of the next while do without it. A stopped one is seen at once (`_stopped`).
ACK_SECONDS = 1.0
HUNG_SKIP_SECONDS = 10.0
# How long the server may take to answer once it has the request: a little less than the
# timeout `install` writes for the event, so that a hung server still leaves the hook time.
ANSWER_SECONDS = {
    "SessionStart": 12.0,
    "PreCompact": 17.0,
    "SessionEnd": 3.0,
    "TaskCompleted": 170.0,
    "Stop": 170.0,
    "SubagentStop": 170.0,
}
DEFAULT_ANSWER_SECONDS = 8.0
SUN_PATH_MAX = 107  # bytes in a Unix socket address (Linux), without the final NUL
# The environment a hook's work depends on: a server started under another one declines.
ENV_PREFIX = "CLAUDE_SESSION_"
ENV_NAMES = ("PATH", "HOME", "XDG_STATE_HOME", "XDG_DATA_HOME")
# The events whose hook names the Claude Code process above it (core/processes.py): a start
# records it for the daemon's exit check, a prompt fills it in for a session begun without.
NAMES_PROCESS = ("SessionStart", "UserPromptSubmit")


def main(event_hint: str, import_apsw: "Callable[[], None]") -> None:
    """Run one hook and exit 0 whatever happens (3 only for a deliberate block). The answer is
    written first; the effects of a hook applied here are carried out after it
    (`Outcome.finish`)."""
    started_clock = time.perf_counter()
    received_at = time.time()
    code, out, err = 0, "", ""
    outcome = None
    if not os.environ.get("CLAUDE_SESSION_DISABLED") and not dropped(event_hint):
        try:
            from .request import Request

            raw, why_short = read_stdin()
            request = Request(
                event_hint,
                raw,
                received_at,
                started_clock,
                os.urandom(12).hex(),
                why_short=why_short,
                dispatcher="plugin" if os.environ.get("CLAUDE_PLUGIN_ROOT") else "settings",
                traceparent=os.environ.get("TRACEPARENT"),
                claude_process=claude_process(event_hint),
            )
            answered = None
            root = _root()
            if root is not None and raw.strip() and not os.environ.get("CLAUDE_SESSION_NO_RELAY"):
                answered, request.daemon_missed = deliver(root, request)
            if answered is None:
                import_apsw()
                from .hookrt import run_here

                outcome = run_here(request)
                answered = outcome.code, outcome.out, outcome.err
            code, out, err = answered
        except BaseException as exc:  # fail open, always
            code, out, err = 0, "", ""
            try:
                from .hookrt import internal_error

                internal_error(None, event_hint, exc)
            except BaseException:
                pass
    try:
        if out:
            sys.stdout.write(out)
            sys.stdout.flush()
        if err:
            sys.stderr.write(err)
            sys.stderr.flush()
    except Exception:
        code = 0
    if outcome is not None:
        try:
            outcome.finish()  # after the answer, as the daemon and the MCP hook server do
        except BaseException as exc:  # each step logs its own failure; this is a last guard
            try:
                from .hookrt import internal_error

                internal_error(None, event_hint, exc)
            except BaseException:
                pass
    # Skip interpreter teardown: everything is committed or spooled already.
    os._exit(code)


def dropped(event_hint: str) -> bool:
    """`CLAUDE_SESSION_DROP_EVENTS=PreToolUse,PostToolUse`: those events exit 0 unrecorded, as
    if their hook had been lost (drills and tests of the transcript reconciliation)."""
    names = os.environ.get("CLAUDE_SESSION_DROP_EVENTS")
    if not names:
        return False
    return event_hint in [name.strip() for name in names.split(",")]


def _root() -> str | None:
    """$CLAUDE_PROJECT_DIR when it is a directory: only then can the hook name its project
    before parsing the payload (Claude Code always sets it). Named by its real path, as the
    daemon knows it: a project reached through a linked folder is served too."""
    root = os.environ.get("CLAUDE_PROJECT_DIR")
    if not root or not root.strip():
        return None
    from ..core.paths import project_root

    return project_root()


def claude_process(event_hint: str) -> "tuple[int, int, str] | None":
    """The Claude Code process above this hook, for the events that record it. Found here, in
    the hook's own process: the daemon that may apply the event has other parents."""
    if event_hint not in NAMES_PROCESS:
        return None
    from ..core.processes import claude_code

    return claude_code()


def socket_path(root: str) -> str | None:
    """Where the project's daemon listens: in the project's own folder of the user's
    state folder (0700, never in the project), or None when the address would be too long for
    a Unix socket."""
    from ..core.paths import project_state_dir

    path = os.path.join(project_state_dir(root), "relay.sock")
    return path if len(path.encode("utf-8", "surrogateescape")) <= SUN_PATH_MAX else None


def fingerprint() -> str:
    """This install's code: its version, its folder, and when its hook runtime was written.
    A server whose code differs (an upgrade in place, another install) declines."""
    from .. import __version__

    package = __file__.rpartition("/runtime/")[0]
    try:
        written = os.stat(os.path.join(package, "runtime", "hookrt.py")).st_mtime_ns
    except OSError:
        written = 0
    return f"{__version__}|{package}|{written}"


def environment() -> str:
    """The variables a hook's work depends on, as one comparable string."""
    pairs = sorted(
        (name, value)
        for name, value in os.environ.items()
        if name.startswith(ENV_PREFIX) or name in ENV_NAMES
    )
    return "\n".join(f"{name}={value}" for name, value in pairs)


def deliver(root: str, request: "Request") -> "tuple[tuple[int, str, str] | None, bool]":
    """(exit code, stdout, stderr) from the project's daemon, or None; and whether no server
    was there at all (so the hook may start one)."""
    path = socket_path(root)
    if path is None:
        return None, False
    import _socket

    from .request import encode

    wire = encode(request, install=fingerprint(), environment=environment(), root=root)
    if _hung_lately(path):
        return None, False
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_SECONDS)
        try:
            sock.connect(path)
        except (FileNotFoundError, ConnectionRefusedError):
            return None, True
        if _stopped(sock):
            return None, False  # SIGSTOPped or dying: never wait for it
        sock.sendall(wire)
        sock.settimeout(ACK_SECONDS)
        try:
            ack = _read_line(sock)
        except TimeoutError:
            _mark_hung(path)
            return None, False
        if ack != b"ACK":
            if ack == OLD_DECLINE:
                _retire_old(path)
            return None, False  # declined: not this install, or not this environment
        sock.settimeout(ANSWER_SECONDS.get(request.event_hint, DEFAULT_ANSWER_SECONDS))
        return _read_answer(sock), False
    except OSError:  # timed out, reset, refused midway: do it here
        return None, False
    finally:
        sock.close()


# What a daemon of an install before request version 2 answers a request it cannot read.
OLD_DECLINE = b"NO not a relay request"


def _retire_old(path: str) -> None:
    """Make a daemon of this install's earlier code (it reads only the positional requests of
    before version 2, `CSR1` and 12 lengths) see that its code was replaced, as it checks: a
    request of that shape whose first field is this code's fingerprint. It then exits, and
    the next hook starts the daemon of the new code. A daemon of another install declines it."""
    import _socket

    mark = fingerprint().encode("utf-8", "surrogateescape")
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_SECONDS)
        sock.connect(path)
        sock.sendall(b"CSR1 %d" % len(mark) + b" 0" * 11 + b"\n" + mark)
        sock.settimeout(ACK_SECONDS)
        _read_line(sock)
    except OSError:
        pass
    finally:
        sock.close()


def _stopped(sock: "_socket.socket") -> bool:
    """The listening process is stopped (SIGSTOP, a debugger), a zombie or dead: its pid from
    the socket's peer credentials, its state from /proc (~30 µs, no waiting)."""
    import _socket

    try:
        creds = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
        pid = int.from_bytes(creds[:4], sys.byteorder)
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except (OSError, AttributeError):
        return False  # no /proc or no peer credentials here: the acknowledgement decides
    try:
        state = os.read(fd, 512).rpartition(b")")[2][1:2]
    finally:
        os.close(fd)
    return state in (b"T", b"t", b"Z", b"X")


def _hung_lately(path: str) -> bool:
    """A hook found the server hung moments ago: do without it for a while."""
    try:
        return time.time() - os.stat(path + ".hung").st_mtime < HUNG_SKIP_SECONDS
    except OSError:
        return False


def _mark_hung(path: str) -> None:
    try:
        fd = os.open(path + ".hung", os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        os.utime(fd)
        os.close(fd)
    except OSError:
        pass


def _read_line(sock: "_socket.socket") -> bytes:
    line = b""
    while not line.endswith(b"\n"):
        chunk = sock.recv(1)
        if not chunk or len(line) > 4096:
            return b""
        line += chunk
    return line[:-1]


def _read_answer(sock: "_socket.socket") -> "tuple[int, str, str] | None":
    """`OK <code> <stdout bytes> <stderr bytes>\\n` and the two texts; None for anything else."""
    head = _read_line(sock).split(b" ")
    if len(head) != 4 or head[0] != b"OK" or not all(part.isdigit() for part in head[1:]):
        return None
    code, out_len, err_len = (int(part) for part in head[1:])
    wanted = out_len + err_len
    chunks: list[bytes] = []
    got = 0
    while got < wanted:
        chunk = sock.recv(min(1 << 20, wanted - got))
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    body = b"".join(chunks)
    out = body[:out_len].decode("utf-8", "surrogateescape")
    err = body[out_len:].decode("utf-8", "surrogateescape")
    return code, out, err


def read_stdin() -> "tuple[bytes, str | None]":
    """All of stdin, unless it passes the size cap or stalls; then (what was read, why).

    Non-blocking reads with a short sleep when the pipe is momentarily empty: a deadline
    without importing `select`, and a slow writer that keeps delivering is never cut off.
    """
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):
        return b"", None
    try:
        was_blocking = os.get_blocking(fd)
        os.set_blocking(fd, False)
    except OSError:
        was_blocking = None
    chunks: list[bytes] = []
    size = 0
    pause = 0.0005
    start = last = time.monotonic()
    try:
        while True:
            try:
                chunk = os.read(fd, 1 << 20)
            except BlockingIOError:
                now = time.monotonic()
                # A pipe still delivering is never cut off (only the size cap bounds it); a
                # silent one is given up on: before the first byte, or after the last.
                if chunks and now - last > STDIN_IDLE_SECONDS:
                    return b"".join(chunks), "stdin left open after the payload"
                if not chunks and now - start > STDIN_FIRST_BYTE_SECONDS:
                    return b"", "stdin left open with no data"
                time.sleep(pause)
                pause = min(pause * 2, 0.02)  # back off: a waiting hook must not burn a core
                continue
            pause = 0.0005
            if not chunk:
                return b"".join(chunks), None
            chunks.append(chunk)
            size += len(chunk)
            last = time.monotonic()
            if size > STDIN_CAP_BYTES:
                return b"", f"oversized payload (over {STDIN_CAP_BYTES} bytes)"
    finally:
        if was_blocking:
            try:
                os.set_blocking(fd, True)
            except OSError:
                pass
