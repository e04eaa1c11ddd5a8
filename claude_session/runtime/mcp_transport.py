"""The MCP hook server: Claude Code's `mcp_tool` hooks delivered to a process that is already
running, instead of a Python process started per event.

Claude Code starts this server itself, as a stdio MCP server of the session (`install`
registers it as `claude-session-hooks`, local scope), so it is a child of the very `claude`
process and private to it: no port another user could take, no proxy in between, no secret to
leak. Each hook calls its tool HOOK_TOOL, which the server never lists: the model is offered
no such tool and cannot call it; only a hook can (Claude Code calls a hook's tool by name).
Its name says so because Claude Code still shows it to the model: from the first mcp_tool hook
on, the session's list of tools used holds `mcp__claude-session-hooks__<tool>`, and a
compaction's summary lists them all (docs/limitations.md).

A call is the payload's fields (core/mcp_hook_input.py); the server puts the payload back
together and runs `hookrt.process` on it, the same work a hook process does, on connections
it keeps open, and answers with what the hook would have printed. The side effects (starting
a capture, the daemon) run after the answer, in order, on a thread of their own.

A SubagentStart, and a SubagentStop no judge looks at, are answered as soon as they are kept
on disk, and stored right after (`handlers.answers_nothing`, `hookrt.process`, `reply_early`):
their answer is empty whatever the store holds, so their transaction is kept off Claude
Code's clock.
An event that arrives after such an answer is stored after that event (`_in_order`), as it
would have been had the answer waited; one the server stops before storing goes into the
spool when the next server of the project starts, or the spool is next ingested (core/spool.py,
`recover_answered`).

Refused, like the relay declines: a call written by another install (its package folder is in
the call), and everything while CLAUDE_SESSION_DISABLED is set. When this install's code
changed on disk since the server started (an upgrade in place), each call is handed to a hook
process of the new code (the command transport) rather than applied by the old one.

Only the standard library, apsw and our core: this is the hot path now.
"""

import json
import os
import queue
import sys
import threading
import time

from ..core.hook_contract import (
    BLOCK_EXIT,
    HOOK_ENTRY,
    HOOK_TOOL,
    INTERPRETER_FLAGS,
    MCP_HOOK_SERVER,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    import apsw

    from . import hookrt
    from .connections import Connections

NAME = MCP_HOOK_SERVER  # as `install` registers it
LEGACY_TOOLS = ("hook",)  # what the hooks of an earlier install call, until install runs again
PROTOCOLS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
MAX_LINE_BYTES = 64 * 1024 * 1024  # a payload past the hook's own cap (32 MB) is no event
WORKERS = 8  # hooks applied at once: a judge on Stop must not hold up a subagent's PreToolUse
DRAIN_SECONDS = 5.0  # at the end of the session, how long the side effects may still run
STOP_GRACE_SECONDS = 0.3  # stopped by a signal: Claude Code kills us 0.5 s after the first


class McpHookServer:
    """One session's server: reads JSON-RPC lines, answers them, applies hook calls."""

    def __init__(self, stdout: "Callable[[bytes], None]") -> None:
        from ..core import db
        from ..core.paths import project_root
        from . import relay

        self.write_out = stdout
        self.out_lock = threading.Lock()
        self.package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
        self.fingerprint = relay.fingerprint()
        self.root = project_root()
        self.connections: dict[str, Connections] = {}
        self.pool_lock = threading.Lock()
        self.calls: queue.SimpleQueue[
            tuple[int, object, dict[str, object], float, float] | None
        ] = queue.SimpleQueue()
        self.arrived = 0  # calls numbered in the order they arrived (the reading thread's)
        self.storing: set[int] = set()  # calls answered early, not stored yet
        self.order = threading.Condition()
        self.after: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self.scratch = threading.local()
        self.claude_process = _claude_process()
        # Hooks and side effects write from threads of this one process: they take turns on
        # a lock rather than through SQLite's sleeping busy handler (as the daemon does).
        db.serialize_writers(threading.RLock())
        self._recover()
        self.workers = [
            threading.Thread(target=self._work, name=f"hook-{n}", daemon=True)
            for n in range(WORKERS)
        ]
        for worker in self.workers:
            worker.start()
        self.side = threading.Thread(target=self._side_effects, name="after", daemon=True)
        self.side.start()
        self.warmed = threading.Event()
        threading.Thread(target=self._warm, name="warm", daemon=True).start()

    # --- the protocol ------------------------------------------------------------------------

    def serve(self, lines: "Callable[[], bytes]") -> None:
        """Until stdin ends, or Claude Code stops the server (on Linux it sends SIGINT, then
        SIGTERM 100 ms later, SIGKILL 400 ms after that, never closing stdin first); then let
        the hooks in hand and the side effects finish, within that grace, and return."""
        grace = DRAIN_SECONDS
        try:
            self._read(lines)
        except KeyboardInterrupt:  # SIGINT, or SIGTERM (main): Claude Code is stopping us
            grace = STOP_GRACE_SECONDS
        deadline = time.monotonic() + grace
        for _ in self.workers:
            self.calls.put(None)
        for worker in self.workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        self.after.put(None)
        self.side.join(max(0.0, deadline - time.monotonic()))

    def _read(self, lines: "Callable[[], bytes]") -> None:
        while True:
            line = lines()
            if not line:
                return
            if len(line) > MAX_LINE_BYTES:  # its rest follows and does not read as JSON either
                self._log("ERROR", f"an MCP message of {len(line)} bytes was not read")
                continue
            received_at, started_clock = time.time(), time.perf_counter()
            try:
                message = json.loads(line)
            except (ValueError, RecursionError):  # nested past Python's limit: not ours either
                continue
            if isinstance(message, dict):
                self._dispatch(message, received_at, started_clock)

    def _dispatch(self, message: "dict[str, object]", received_at: float, clock: float) -> None:
        method = message.get("method")
        ident = message.get("id")
        if ident is None:
            return  # a notification (initialized, cancelled): nothing to answer
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if method == "initialize":
            asked = params.get("protocolVersion")
            self._reply(
                ident,
                {
                    "protocolVersion": asked if asked in PROTOCOLS else PROTOCOLS[0],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": NAME, "version": _version()},
                },
            )
        elif method == "ping":
            self._reply(ident, {})
        elif method == "tools/list":
            self._reply(ident, {"tools": []})  # HOOK_TOOL is for hooks only: never offered
        elif method == "tools/call" and params.get("name") in (HOOK_TOOL, *LEGACY_TOOLS):
            arguments = params.get("arguments")
            arguments = arguments if isinstance(arguments, dict) else {}
            self.arrived += 1
            self.calls.put((self.arrived, ident, arguments, received_at, clock))
        elif method == "tools/call":
            self._reply(ident, _tool_result(f"no tool {params.get('name')!r} here", True))
        else:
            self._error(ident, -32601, f"method {method!r} not served")

    def _reply(self, ident: object, result: "dict[str, object]") -> None:
        self._send({"jsonrpc": "2.0", "id": ident, "result": result})

    def _error(self, ident: object, code: int, message: str) -> None:
        self._send({"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}})

    def _send(self, message: "dict[str, object]") -> None:
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
        with self.out_lock:
            self.write_out(data.encode("utf-8", "surrogateescape"))

    # --- the hooks ---------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            call = self.calls.get()
            if call is None:
                return
            self._one(*call)

    def _one(
        self,
        number: int,
        ident: object,
        arguments: "dict[str, object]",
        received_at: float,
        clock: float,
    ) -> None:
        outcome = None
        replied = []

        def reply_early() -> None:
            with self.order:
                self.storing.add(number)
            replied.append(True)
            try:
                self._reply(ident, _tool_result("", False))
            except Exception as exc:  # Claude Code gone, say: the event is stored all the same
                self.internal_error("MCP hook server reply", exc)

        try:
            text, failed, outcome = self.hook(
                arguments, received_at, clock, number=number, reply_early=reply_early
            )
        except BaseException as exc:  # fail open: Claude Code goes on without an answer
            self.internal_error("MCP hook server", exc)
            text, failed = "", False
        finally:
            with self.order:
                self.storing.discard(number)
                self.order.notify_all()
        if not replied:
            self._reply(ident, _tool_result(text, failed))
        if outcome is not None and outcome.effects:  # carried out once the answer is out
            done = outcome
            self.after.put(lambda: self._finish(done))

    def hook(
        self,
        arguments: "dict[str, object]",
        received_at: float,
        clock: float,
        *,
        number: int = 0,
        reply_early: "Callable[[], None] | None" = None,
    ) -> "tuple[str, bool, hookrt.Outcome | None]":
        """(what the hook answers, whether Claude Code is to see it as the hook's failure, and
        the outcome whose side effects are to run once that answer is written). `number`: the
        call's place in arrival order; `reply_early`: gives the empty answer before the event
        is stored, when its answer cannot depend on the store (then the text returned is
        empty and is not to be sent again)."""
        from ..core import mcp_hook_input
        from . import hookrt, relay
        from .request import Request

        if os.environ.get("CLAUDE_SESSION_DISABLED"):
            return "", False, None
        install = arguments.get(mcp_hook_input.INSTALL_ARGUMENT)
        if not isinstance(install, str) or os.path.realpath(install) != self.package:
            why = f"a hook of another install of claude-session ({install!r}) was refused"
            self._log("ERROR", why)
            return f"claude-session: {why}; run `claude-session install` again", True, None
        name = arguments.get("hook_event_name")
        event_name = name if isinstance(name, str) else ""
        if relay.dropped(event_name):
            return "", False, None
        scratch = self._scratch()
        # The payload's text from the call's fields as they are: parsed once, by the hook's
        # own work (event.load), as a command hook's stdin is.
        raw = mcp_hook_input.payload_bytes(arguments, lambda text: _valid_json(scratch, text))
        if relay.fingerprint() != self.fingerprint:
            return self._new_code(event_name, raw), False, None
        request = Request(
            event_name,
            raw,
            received_at,
            clock,
            os.urandom(12).hex(),
            root_hint=self.root,
            transport="mcp",
            claude_process=self.claude_process if event_name in relay.NAMES_PROCESS else None,
        )
        outcome = hookrt.Outcome()
        taken: list[tuple[apsw.Connection, tuple[int, int], Connections]] = []

        def connect(root: str, busy_timeout_ms: int) -> "apsw.Connection":
            self._in_order(number)
            chosen = self._pool(root)
            conn, identity = chosen.take(busy_timeout_ms)
            taken.append((conn, identity, chosen))
            return conn

        try:
            hookrt.process(
                outcome, request, connect=connect, scratch=scratch, reply_early=reply_early
            )
        finally:
            for conn, identity, chosen in taken:
                chosen.give_back(conn, identity)
        if outcome.code == BLOCK_EXIT:  # never for the events this transport carries
            block = {"decision": "block", "reason": outcome.err.strip()}
            return json.dumps(block), False, outcome
        return outcome.out, False, outcome

    def _new_code(self, event_name: str, raw: bytes) -> str:
        """This install was upgraded under us: its own hook entry (never a path from a call)
        applies the event with the new code, as the command transport would."""
        import subprocess

        entry = os.path.join(self.package, HOOK_ENTRY)
        done = subprocess.run(
            [sys.executable, *INTERPRETER_FLAGS, entry, event_name],
            input=raw,
            capture_output=True,
            timeout=60,
            check=False,
        )
        return done.stdout.decode("utf-8", "replace")

    def _finish(self, outcome: "hookrt.Outcome") -> None:
        """Carry out a hook's effects on the connections of its project's pool, given back
        after (a connection is never used by two threads at once)."""
        taken: list[tuple[apsw.Connection, tuple[int, int], Connections]] = []

        def connect(root: str, busy_timeout_ms: int) -> "apsw.Connection":
            chosen = self._pool(root)
            conn, identity = chosen.take(busy_timeout_ms)
            taken.append((conn, identity, chosen))
            return conn

        try:
            outcome.finish(connect)
        finally:
            for conn, identity, chosen in taken:
                chosen.give_back(conn, identity)

    def _in_order(self, number: int) -> None:
        """Wait until the calls that arrived before this one and were answered early are
        stored: Claude Code sent this one after such an answer, so it is stored after that
        event (a PreToolUse sees the snapshot the PostToolUse before it asked for). Calls that
        arrived together keep no order, as before. Not waited for past the busy timeout."""
        from ..core.db import BUSY_TIMEOUT_MS

        with self.order:
            self.order.wait_for(
                lambda: not any(n < number for n in self.storing), BUSY_TIMEOUT_MS / 1000
            )

    def _warm(self) -> None:
        """Load what the session's first hook would load (~5 ms of modules) and open its first
        connection while Claude Code is still starting the session, not on that hook's
        answer path. A database that is not there yet is left to the first hook to make."""
        try:
            from ..core import (  # noqa: F401
                encoded,
                facts,
                frames,
                group_commit,
                liveness,
                mcp_hook_input,
                redact,
                relations,
                secret_files,
                state,
                writelock,
            )
            from ..core.db import BUSY_TIMEOUT_MS
            from ..core.paths import db_path
            from ..services.snapshots import before_images  # noqa: F401
            from . import connections, effects, handlers, hookrt, request  # noqa: F401

            if self.root is not None and os.path.isfile(db_path(self.root)):
                pool = self._pool(self.root)
                pool.give_back(*pool.take(BUSY_TIMEOUT_MS))
        except Exception as exc:  # the first hook loads and opens them itself
            self.internal_error("MCP hook server warm-up", exc)
        finally:
            self.warmed.set()

    def _recover(self) -> None:
        """Events an earlier server of this project answered but did not store: to the spool."""
        if self.root is None:
            return
        try:
            from ..core import spool

            spool.recover_answered(self.root)
        except Exception as exc:
            self.internal_error("MCP hook server start", exc)

    def _pool(self, root: str) -> "Connections":
        from .connections import Connections

        with self.pool_lock:
            pool = self.connections.get(root)
            if pool is None:
                pool = self.connections[root] = Connections(root)
            return pool

    def _scratch(self) -> "apsw.Connection":
        import apsw

        conn = getattr(self.scratch, "conn", None)
        if conn is None:
            conn = self.scratch.conn = apsw.Connection(":memory:")
        return conn

    def _side_effects(self) -> None:
        while True:
            step = self.after.get()
            if step is None:
                return
            try:
                step()
            except BaseException as exc:
                self.internal_error("MCP hook server side effect", exc)

    def _log(self, level: str, message: str) -> None:
        from . import hookrt

        hookrt.write_log(level, self.root, "MCP hook server", message)

    def internal_error(self, where: str, exc: BaseException) -> None:
        from . import hookrt

        try:
            hookrt.internal_error(self.root, where, exc)
        except BaseException:
            pass


def _valid_json(scratch: "apsw.Connection", text: str) -> bool:
    """Whether `text` is JSON (SQLite's strict reading, the one `event.load` makes of it)."""
    import apsw

    try:
        return bool(scratch.execute("SELECT json_valid(?1)", (text,)).fetchall()[0][0])
    except (
        apsw.Error,
        ValueError,
    ):  # nested past SQLite's depth, say: kept as the string it arrived as
        return False


def _tool_result(text: str, failed: bool) -> "dict[str, object]":
    result: dict[str, object] = {"content": [{"type": "text", "text": text}]}
    if failed:
        result["isError"] = True
    return result


def _claude_process() -> "tuple[int, int, str] | None":
    """The Claude Code process that started this server (its parent): recorded with the
    events that name it, for the daemon's exit check."""
    try:
        from ..core.processes import claude_code

        return claude_code()
    except Exception:
        return None


def _version() -> str:
    from .. import __version__

    return __version__


def main() -> None:
    """Serve stdin/stdout until Claude Code closes stdin."""
    out = sys.stdout.buffer

    def write(data: bytes) -> None:
        out.write(data)
        out.flush()

    import signal

    signal.signal(signal.SIGTERM, signal.default_int_handler)  # stopped like SIGINT
    stdin = sys.stdin.buffer
    server = McpHookServer(write)
    try:
        server.serve(lambda: stdin.readline(MAX_LINE_BYTES + 1))
    except KeyboardInterrupt:  # a second signal while finishing: nothing more to do
        pass
    os._exit(0)  # the daemon threads and open connections go with the process
