"""The project's daemon: its sweeps (`services/background/sweeps.py`) and the relay server that
answers relayed hooks (`runtime/relay.py`) with the same `hookrt.process` a hook runs by itself.
`claude-session daemon start|stop|status` and `doctor` call it the daemon; so does this code.

Why a module of its own, above the hook runtime: serving a hook means running the hook's own
work, and the sweeps below know nothing of hooks; the hook runtime itself must stay free of
the sweeps' libraries (watchfiles). `daemon_control.spawn` starts this module
(`python -m claude_session.daemon`).

Each relayed hook gets a thread: it reads the request (runtime/request.py, each field by its
name), checks that it comes from this very install (same code) under the same environment
(same state folders and switches) for this project, acknowledges it, applies it on one of the
process's open connections, answers, and only then carries out its effects (the writes the
answer calls for, the injection log, starting a capture: runtime/effects.py), on a pooled
connection taken for them.
"""

from __future__ import annotations

import argparse
import os
import queue
import socket
import stat
import struct
import threading
import time
from collections.abc import Callable

import apsw

from .core import db
from .runtime import hookrt, relay, request
from .runtime.connections import Connections
from .services.background import sweeps

MAX_REQUEST_BYTES = relay.STDIN_CAP_BYTES + 64 * 1024
READ_SECONDS = 5.0  # a client that stops sending mid-request is dropped
MAX_WORKING = 8  # hooks applied at once; the others wait (their acknowledgement is sent)
WORKER_IDLE_SECONDS = 30.0  # a serving thread with nothing to do this long ends


class Declined(Exception):
    """A request this server must not serve: the hook does the work itself."""


class RelayServer:
    """Listens on the project's relay socket and serves each connection in a thread."""

    def __init__(self, root: str, stop: threading.Event, status: sweeps.Daemon) -> None:
        self.root = root
        self.stop = stop
        self.status = status  # its status file shows what the relay did
        status.stats.update(relay_served=0, relay_declined=0, relay_socket=None)
        self.fingerprint = relay.fingerprint()
        self.environment = relay.environment()
        self.connections = Connections(root)
        self.working = threading.BoundedSemaphore(MAX_WORKING)
        self.pool_lock = threading.Lock()
        self.idle_workers = 0  # threads waiting on `handoff` for a connection
        self.handoff: queue.SimpleQueue[socket.socket] = queue.SimpleQueue()
        self.scratch: list[apsw.Connection] = []  # in-memory SQLite for JSON, reused
        self.path = relay.socket_path(root)
        self.listener: socket.socket | None = None

    def start(self) -> bool:
        """Bind and start accepting; False when this project gets no relay (address too long,
        state folder not ours), which only means hooks work by themselves."""
        if self.path is None:
            return False
        folder = os.path.dirname(self.path)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        found = os.lstat(folder)
        if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid():
            hookrt.write_log("ERROR", self.root, "daemon", f"relay folder {folder} is not ours")
            return False
        os.chmod(folder, 0o700)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # Bound under a name no longer than the final one (a socket address is short), then
        # renamed into place: we hold the project's daemon lock, so no other server binds now.
        staging = os.path.join(folder, "relay.new")
        try:
            os.unlink(staging)
        except FileNotFoundError:
            pass
        listener.bind(staging)
        os.chmod(staging, 0o600)
        listener.listen(128)
        os.replace(staging, self.path)
        self.listener = listener
        self.status.stats["relay_socket"] = self.path
        threading.Thread(target=self._accept, name="relay-accept", daemon=True).start()
        return True

    def close(self) -> None:
        """Stop listening and take the socket's name away (before the daemon lock is let go)."""
        listener, self.listener = self.listener, None
        if listener is None or self.path is None:
            return
        try:  # we still hold the project's daemon lock: no other server has bound this name
            os.unlink(self.path)
        except OSError:
            pass
        listener.close()
        self.connections.close()

    def _accept(self) -> None:
        while not self.stop.is_set() and self.listener is not None:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                if self.listener is None:
                    return
                time.sleep(0.01)
                continue
            with self.pool_lock:
                if self.idle_workers:  # a thread that served a hook before takes this one
                    self.idle_workers -= 1
                    self.handoff.put(conn)
                    continue
            # None idle: a new thread, so the acknowledgement is never kept waiting.
            threading.Thread(target=self._work, args=(conn,), daemon=True).start()

    def _work(self, conn: socket.socket | None) -> None:
        """Serve a connection, then wait a while for the next one: starting a thread per hook
        was a twelfth of this process's time under 8 hooks at once (measured)."""
        while conn is not None:
            self._serve(conn)
            with self.pool_lock:
                self.idle_workers += 1
            try:
                conn = self.handoff.get(timeout=WORKER_IDLE_SECONDS)
            except queue.Empty:
                with self.pool_lock:
                    try:  # handed over just as the wait ended
                        conn = self.handoff.get_nowait()
                    except queue.Empty:
                        self.idle_workers -= 1
                        conn = None

    def _serve(self, conn: socket.socket) -> None:
        """One relayed hook; any failure closes the connection unanswered, and the hook does
        the work itself."""
        try:
            with conn:
                conn.settimeout(READ_SECONDS)
                try:
                    found = self._request(conn)
                except Declined as exc:
                    try:
                        conn.sendall(b"NO " + str(exc).encode("utf-8", "replace")[:200] + b"\n")
                    except OSError:
                        pass  # the hook gave up already and does the work itself
                    self.status.count("relay_declined", relay_last_declined=str(exc))
                    return
                conn.sendall(b"ACK\n")
                with self.working:
                    if _gone(conn):
                        return  # it gave up waiting for its turn: it does the work itself
                    outcome = self._apply(found)
                conn.sendall(
                    b"OK %d %d %d\n"
                    % (outcome.code, len(outcome.out.encode()), len(outcome.err.encode()))
                    + outcome.out.encode()
                    + outcome.err.encode()
                )
            self._finish(outcome)
            self.status.count("relay_served")
        except Exception as exc:  # the client falls back; say why here
            hookrt.internal_error(self.root, "relay", exc)

    def _request(self, conn: socket.socket) -> request.Request:
        _check_peer(conn)
        head, body = _read_head(conn, request.MAX_HEAD_BYTES)
        try:
            announced = request.sizes(head)
        except request.Refused as exc:  # another version's request: the hook does the work
            if relay.fingerprint() != self.fingerprint:
                self.stop.set()  # our own code was replaced (a newer hook): make way for it
            raise Declined(str(exc)) from None
        wanted = sum(size for _, size in announced)
        if wanted > MAX_REQUEST_BYTES:
            raise Declined("request too large")
        if len(body) > wanted:
            raise Declined("more than the request")
        body += _read_exactly(conn, wanted - len(body))
        try:
            fields = request.split(announced, body)
            found = request.decode(fields)
        except request.Refused as exc:
            raise Declined(str(exc)) from None
        fingerprint, environment, root = (
            fields.get(name, b"").decode("utf-8", "surrogateescape")
            for name in ("install", "environment", "root")
        )
        if fingerprint != self.fingerprint:
            if fingerprint.split("|")[1:2] == self.fingerprint.split("|")[1:2]:
                self.stop.set()  # our own install was replaced: make way for its new code
            raise Declined("another install of claude-session")
        if environment != self.environment:
            raise Declined("another environment")
        if root != self.root:
            raise Declined("another project")
        found.root_hint = self.root
        found.transport = "relay"
        return found

    def _apply(self, found: request.Request) -> hookrt.Outcome:
        outcome = hookrt.Outcome()
        taken: list[tuple[apsw.Connection, tuple[int, int]]] = []

        def connect(root: str, busy_timeout_ms: int) -> apsw.Connection:
            taken.append(self.connections.take(busy_timeout_ms))
            return taken[-1][0]

        with self.pool_lock:
            scratch = self.scratch.pop() if self.scratch else apsw.Connection(":memory:")
        try:
            hookrt.process(outcome, found, connect=connect, scratch=scratch)
        finally:
            for conn, identity in taken:
                self.connections.give_back(conn, identity)
            with self.pool_lock:
                self.scratch.append(scratch)
        return outcome

    def _finish(self, outcome: hookrt.Outcome) -> None:
        """Carry out a hook's effects once its answer is sent, on a connection of the pool,
        given back after (never one given back already, which another thread may hold)."""
        taken: list[tuple[apsw.Connection, tuple[int, int]]] = []

        def connect(root: str, busy_timeout_ms: int) -> apsw.Connection:
            taken.append(self.connections.take(busy_timeout_ms))
            return taken[-1][0]

        try:
            outcome.finish(connect)
        finally:
            for conn, held in taken:
                self.connections.give_back(conn, held)


def _gone(conn: socket.socket) -> bool:
    """The hook closed its end (it stopped waiting): nothing more to read, at once."""
    timeout = conn.gettimeout()
    conn.setblocking(False)  # with a timeout set, recv would first wait for data
    try:
        return conn.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        conn.settimeout(timeout)


def _check_peer(conn: socket.socket) -> None:
    """Only processes of this user: the folder is 0700 already; this says so again."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _, uid, _ = struct.unpack("3i", creds)
    if uid != os.getuid():
        raise Declined("another user")


def _read_head(conn: socket.socket, limit: int = 4096) -> tuple[bytes, bytes]:
    """The request's first line, and what came after it in the same reads (the body's start).
    Read in blocks: a byte per `recv` cost ~50 system calls a request."""
    got = b""
    while b"\n" not in got:
        chunk = conn.recv(1 << 16)
        if not chunk or len(got) > limit:
            raise Declined("incomplete request")
        got += chunk
    head, _, rest = got.partition(b"\n")
    if len(head) > limit:
        raise Declined("incomplete request")
    return head, rest


def _read_exactly(conn: socket.socket, size: int) -> bytes:
    chunks, got = [], 0
    while got < size:
        chunk = conn.recv(min(1 << 20, size - got))
        if not chunk:
            raise Declined("incomplete request")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def serve_hooks(root: str, stop: threading.Event, status: sweeps.Daemon) -> Callable[[], None]:
    """The daemon's companion: start the relay server; returns how to close it."""
    server = RelayServer(root, stop, status)
    try:
        started = server.start()
    except OSError as exc:
        hookrt.write_log("ERROR", root, "daemon", f"relay not started: {exc}")
        started = False
    return server.close if started else (lambda: None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m claude_session.daemon")
    parser.add_argument("--project", required=True)
    parser.add_argument("--requested-at", type=float, default=None)
    args = parser.parse_args(argv)
    # The project by its real path, as hooks name it when they relay (core/paths.py): one
    # started with a linked folder's path would decline them all as "another project".
    root = os.path.realpath(args.project)
    os.chdir("/")  # never keep a project directory busy
    # Relayed hooks, the sweeps and the spool ingest write from threads of this one process:
    # they take turns on a lock rather than through SQLite's sleeping busy handler.
    db.serialize_writers(threading.RLock())
    return sweeps.run(root, requested_at=args.requested_at, companion=serve_hooks)


if __name__ == "__main__":
    raise SystemExit(main())
