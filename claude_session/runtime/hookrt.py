"""The hook's work: payload -> redact -> parse -> one transaction -> answer.

`process` is that work wherever it runs: in the hook process (`run_here`, when no daemon
served the hook, see `relay`), in the project's daemon for a relayed hook
(`claude_session/daemon.py`), or in the MCP hook server for an mcp_tool hook (`mcp_transport`).
It takes a `Request` (runtime/request.py), whichever transport built it. Its answer is empty
or exactly one JSON object for stdout, exit code 0, or 3 for the one deliberate, configured
block (the judge; the installed command makes it 2). Its side effects are data (core/effects.py:
the answer's own writes, and the hook run's), carried out once the answer is out
(`Outcome.finish`, runtime/effects.py).
Anything that goes wrong inside is logged beside the database; the event goes to the spool
when the database cannot take it. Imports: the standard library and apsw only.
"""

import gc
import os
import time

from ..core.hook_contract import BLOCK_EXIT  # not 2: python exits 2 when it cannot open a file

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    import apsw

    from ..core.apply_types import Applied, Context, Delivery
    from ..core.effects import Effect, Effects
    from ..core.event import Event
    from .handlers import ExitBlock, Handler
    from .request import Request

    Connect = Callable[[str, int], apsw.Connection]  # (root, busy timeout ms) -> connection


class Outcome:
    """What one hook run gives back: its exit code and texts, and its effects, left to carry
    out once the answer is out, as data (core/effects.py): the writes its answer calls for
    (memories marked given and counted, the judge's verdict and the exit code of its audit
    row), the injection log's row, starting a capture or the daemon, ingesting the spool,
    trimming the WAL. Whoever runs the hook writes the answer first, then calls `finish`."""

    __slots__ = ("code", "conn", "effects", "err", "out", "root")

    def __init__(self) -> None:
        self.code = 0
        self.out = ""
        self.err = ""
        self.effects: list[Effect] = []
        self.root: str | None = None  # the project the effects are for
        self.conn: apsw.Connection | None = None  # a hook process's own connection

    def answer(self, value: "str | ExitBlock | None") -> None:
        if isinstance(value, str):
            self.out = value
        elif value is not None:  # a deliberate, configured block (the judge)
            self.err = value.reason + "\n"
            self.code = BLOCK_EXIT  # the installed command turns it into 2 (see installer)

    def finish(self, connect: "Connect | None" = None) -> None:
        """Carry out the effects, in order (runtime/effects.py); each one's failure is logged,
        never raised. `connect`: a long-lived caller's way to lend one of its connections (it
        takes it back after); a hook process uses its own."""
        if self.effects and self.root is not None:
            from . import effects

            effects.run(self.effects, self.root, self.conn, connect)


def run_here(request: "Request") -> Outcome:
    """The hook's work in this process (no daemon served it). The caller writes the answer,
    then runs `outcome.finish()`: the effects come after the answer, as on every path."""
    # A hook lives ~15 ms and leaves no cycles worth collecting: without the cyclic GC, the
    # imports below stop paying for collections that scan every object so far (measured).
    gc.disable()
    outcome = Outcome()
    try:
        process(outcome, request)
    except BaseException as exc:  # fail open, always
        internal_error(None, request.event_hint, exc)
    return outcome


def process(
    outcome: Outcome,
    request: "Request",
    *,
    connect: "Connect | None" = None,
    scratch: "apsw.Connection | None" = None,
    reply_early: "Callable[[], None] | None" = None,
) -> None:
    """One hook run, wherever it runs (a hook process, the daemon for a relayed hook, the hook
    server for an mcp_tool hook): the answer goes into `outcome`, and every side effect (a
    second transaction, a process started) into `outcome.effects` as data, for the caller to
    carry out once the answer is out (`Outcome.finish`).

    `request`: the event and how it came (runtime/request.py); `connect`: the caller's own open
    connections (the daemon's, the MCP hook server's); `scratch`: an in-memory connection to use
    for JSON (a long-lived caller reuses its own); `reply_early`: the caller's way to give the
    empty answer at once, for an event whose answer cannot depend on the store
    (`handlers.answers_nothing`: a SubagentStart, an unjudged SubagentStop): it is called
    once the event is held on disk (core/spool.py, `hold`), before it is stored, and the
    event is then stored as usual; `outcome` then holds no answer."""
    import apsw

    from ..core import apply_types, config, db, effects, event
    from ..core.paths import db_path, intended_root, project_root, spool_dir
    from .handlers import DEFAULT, HANDLERS, answers_nothing
    from .handlers import start_daemon as restart_daemon

    event_hint, raw, why_short = request.event_hint, request.raw, request.why_short
    root_hint, dispatcher = request.root_hint, request.dispatcher
    known_root = root_hint or project_root()  # from $CLAUDE_PROJECT_DIR: where to log early
    if why_short and not raw:
        write_log("ERROR", known_root, event_hint, f"{why_short}; event not stored")
        return
    if why_short:  # whatever arrived is recorded below: a whole payload, or spooled raw text
        write_log("WARNING", known_root, event_hint, f"{why_short}: {len(raw)} bytes read")
    if not raw.strip():
        write_log("WARNING", known_root, event_hint, "empty stdin: nothing to record")
        return
    if scratch is None:
        scratch = apsw.Connection(":memory:")  # SQLite is the JSON parser and encoder here
    try:
        ev, truncated = event.load(scratch, raw, event_hint)
    except event.BadPayload as exc:
        write_log(
            "ERROR", known_root, event_hint, f"{exc}; {len(raw)} bytes, sha256 {_sha256(raw)[:16]}"
        )
        if why_short:  # cut off by a writer that went silent: keep what came, for the record
            _spool_partial(known_root, event_hint, raw, request.received_at, f"{why_short}; {exc}")
        return
    if dispatcher is None:
        # Claude Code gives a plugin's hooks CLAUDE_PLUGIN_ROOT; a settings.json hook has none.
        dispatcher = "plugin" if os.environ.get("CLAUDE_PLUGIN_ROOT") else "settings"
    delivery = apply_types.Delivery(
        request.delivery_id,
        request.received_at,
        len(raw),
        _sha256(raw) if truncated else None,
        truncated,
        started_clock=request.started_clock,
        dispatcher=dispatcher,
        transport=request.transport or "process",
        traceparent=valid_traceparent(request.traceparent),
    )
    root = root_hint or project_root(ev.get("cwd"))
    if root is None:
        missing = intended_root(ev.get("cwd"))
        reason = f"project directory {missing} missing" if missing else "no project directory"
        from ..core import spool

        _spool(spool.user_spool_dir(), ev, delivery, missing, None, reason)
        return
    # An event of no session (another tool's payload) is stored, and nothing more: no answer,
    # no daemon or capture started for a session that does not exist.
    handler = DEFAULT if ev.unattributed is not None else HANDLERS.get(ev.name, DEFAULT)
    outcome.root = root
    prepared = None
    if handler.prepare is not None:
        try:
            prepared = handler.prepare(root)
        except Exception as exc:
            internal_error(root, ev.name, exc)
    conn = None
    reader = None
    applied = None
    try:
        settings = config.for_hooks(root, scratch)
    except Exception as exc:  # a bug of ours reading it: the defaults, and the event is kept
        internal_error(root, ev.name, exc)
        settings = dict(config.DEFAULTS)
    ctx = apply_types.Context(root, time.time(), prepared, settings, request.claude_process)
    later: list[Effect] = []  # the hook run's own effects, after those of its answer
    held = None
    if reply_early is not None and answers_nothing(handler, ev, ctx):
        held = _hold(root, ev, delivery, prepared)
        if held is not None:  # on disk: a crash from here on does not lose it
            reply_early()
    try:
        if connect is not None:
            conn = connect(root, handler.busy_timeout_ms)
        else:
            conn = db.connect(db_path(root), busy_timeout_ms=handler.busy_timeout_ms)
            # Leave the WAL as it is when this process ends, and trim it only past a size (see
            # effects.trim_wal): closing the last connection checkpointed and deleted it each time
            # (two fsyncs), and the next hook made it anew (measured: ~3 ms of each hook).
            conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
            outcome.conn = conn
        if connect is not None and held is None and _groups(ev):
            from ..core import group_commit

            applied = group_commit.store(conn, ev, delivery, ctx, _apply)
        else:
            applied = _apply(conn, ev, delivery, ctx)
    except (db.DatabaseError, apsw.Error, OSError) as exc:  # OSError: cannot even create it
        reason = f"{type(exc).__name__}: {exc}"
        write_log("ERROR", root, ev.name, f"database unavailable, event spooled: {reason}")
        safe = _spool(spool_dir(root), ev, delivery, root, prepared, reason)
        conn = reader = _reader(root)
    except Exception as exc:  # a bug of ours even in storing the event alone: keep it on disk
        internal_error(root, ev.name, exc)
        why = f"not stored: {exc!r}"[:500]
        safe = _spool(spool_dir(root), ev, delivery, root, prepared, why)
    else:
        # The daemon's own watch ingests the spool; a hook on its own does it here.
        if connect is None and os.path.isdir(spool_dir(root)):
            later.append(effects.IngestSpool())
        safe = True
    if held is not None and safe:  # stored or spooled: no longer needed on the side
        from ..core import spool

        spool.release(held)
    try:
        if handler.after is not None:
            later += handler.after(ctx)
        elif request.daemon_missed and ev.name != "SessionEnd" and ev.unattributed is None:
            # no daemon answered a session's event: start it
            later += restart_daemon(ctx)
    except Exception as exc:
        internal_error(root, ev.name, exc)
    if applied is not None and applied.capture_requested:  # a frame asked for a snapshot
        later.append(effects.StartCapture())
    if outcome.conn is not None:  # last: a hook process on its own keeps its WAL short
        later.append(effects.TrimWal())
    try:
        if handler.answer is not None and conn is not None and held is None:  # held: given
            outcome.effects += _answer(outcome, handler, conn, ev, ctx, applied, scratch)
    finally:
        outcome.effects += later
        if reader is not None:
            reader.close()


def _answer(
    outcome: Outcome,
    handler: "Handler",
    conn: "apsw.Connection",
    ev: "Event",
    ctx: "Context",
    applied: "Applied | None",
    scratch: "apsw.Connection",
) -> "Effects":
    """Give the handler's answer (into `outcome`); the effects it calls for."""
    from .handlers import ExitBlock

    assert handler.answer is not None
    try:
        ready = None
        if handler.before_answer is not None:  # what must be written before the answer
            ready = handler.before_answer(conn, ev, ctx)
        reply = handler.answer(conn, ev, ctx, applied, ready)
    except Exception as exc:  # our bug: the tool call goes ahead as if we were not here
        internal_error(ctx.root, ev.name, exc)
        return ()
    if reply is None:
        return ()
    answer = reply.value
    if answer is None or isinstance(answer, ExitBlock):
        outcome.answer(answer)
    else:
        outcome.answer(encode(scratch, answer))
    if answer is not None and applied is not None:
        said = answer.reason if isinstance(answer, ExitBlock) else answer
        injection = _injection(ev, ctx, applied, said)
        if injection is not None:
            return (*reply.effects, injection)
    return reply.effects


def _injection(ev: "Event", ctx: "Context", applied: "Applied", answer: "Any") -> "Effect | None":
    """What of the answer reaches the model, to keep in the injection log once it is given
    (core/injections.py); None when it says nothing to the model."""
    from ..core import effects, injections

    found = injections.model_text(ev.name, answer)
    if found is None:
        return None
    kind, text = found
    source = None
    if ev.name == "SessionStart":
        source = "fork" if applied.forked_from is not None else ev.text_of("source")
    return effects.RecordInjection(
        {
            "at": ctx.now,
            "session_id": ev.session_id,
            "agent_id": ev.text_of("agent_id"),
            "event": ev.name,
            "kind": kind,
            "text": text,
            "source": source,
            "event_id": applied.event_id,
            "tool_use_id": ev.text_of("tool_use_id"),
        }
    )


def valid_traceparent(value: "str | None") -> "str | None":
    """A W3C traceparent (version 00: `00-<32 hex>-<16 hex>-<2 hex>`, ids not all zero), or
    None: the variable is Claude Code's, but whatever is in it is stored only in this form."""
    if not value or len(value) != 55:
        return None
    parts = value.split("-")
    if [len(p) for p in parts] != [2, 32, 16, 2] or parts[0] != "00":
        return None
    if any(c not in "0123456789abcdef" for c in value.replace("-", "")):
        return None
    if parts[1] == "0" * 32 or parts[2] == "0" * 16:
        return None
    return value


def _groups(ev: "Event") -> bool:
    """Whether a long-lived process stores this event in a group commit (core/group_commit.py):
    every event of a session but its start, whose answer reads what its own application found
    (a fork's branch), which the group's writer does not hand back."""
    return (
        ev.name != "SessionStart"
        and ev.unattributed is None
        and not os.environ.get("CLAUDE_SESSION_NO_GROUP_COMMIT")
    )


def _apply(conn: "apsw.Connection", ev: "Event", delivery: "Delivery", ctx: "Context") -> "Applied":
    """Apply the event; if our own derivation has a bug, still keep the event alone."""
    import apsw

    from ..core import events

    try:
        return events.apply(conn, ev, delivery, ctx)
    except apsw.Error:
        raise
    except Exception as exc:
        write_log("ERROR", ctx.root, ev.name, f"derived state failed, event kept alone: {exc!r}")
        delivery.note = f"derived state failed: {exc!r}"[:500]
        return events.apply(conn, ev, delivery, ctx, derive=False)


def _reader(root: str) -> "apsw.Connection | None":
    """A read-only connection for answering when writing failed (a held lock does not block
    WAL readers); None when the database cannot be read either."""
    from ..core import db
    from ..core.paths import db_path

    try:
        return db.connect(db_path(root), readonly=True, busy_timeout_ms=500)
    except Exception:
        return None


def _hold(root: str, ev: "Event", delivery: "Delivery", prepared: "Any") -> "str | None":
    """The event on disk while its early answer is given (core/spool.py, `hold`); None when it
    cannot be written: then the answer waits for the event to be stored, as usual."""
    from ..core import spool

    try:
        return spool.hold(root, spool.envelope_of(ev, delivery, root, prepared, "answered early"))
    except Exception as exc:
        internal_error(root, "early answer", exc)
        return None


def _spool(
    folder: str,
    ev: "Event",
    delivery: "Delivery",
    root: str | None,
    prepared: "Any",
    reason: str,
) -> bool:
    """Keep the event in a spool; whether it could be written."""
    from ..core import spool

    envelope = spool.envelope_of(ev, delivery, root, prepared, reason)
    try:
        spool.write(folder, envelope)
    except Exception as exc:
        if folder == spool.user_spool_dir():
            write_log("ERROR", root, ev.name, f"event lost: spool write failed too: {exc!r}")
            return False
        folder = spool.user_spool_dir()  # e.g. the project directory is not writable
        try:
            spool.write(folder, envelope)
        except Exception as exc2:
            write_log(
                "ERROR", root, ev.name, f"event lost: no spool could take it: {exc!r}, {exc2!r}"
            )
            return False
    if folder == spool.user_spool_dir() and _first_time(root, ev.session_id):
        write_log("ERROR", None, ev.name, f"{reason}: events of this session spooled to {folder}")
    return True


def _spool_partial(
    root: str | None, event_hint: str, raw: bytes, received_at: float, reason: str
) -> None:
    """A payload cut short goes to the spool as (redacted) text: its ingestion sets it aside
    with the reason, where `status` shows it, instead of it vanishing."""
    from ..core import events, spool
    from ..core.paths import spool_dir
    from ..core.redact import redact

    envelope = {
        "v": 1,
        "delivery_id": events.new_delivery_id(),
        "received_at": received_at,
        "event_hint": event_hint,
        "project_root": root,
        "reason": reason,
        "payload_bytes": len(raw),
        "payload": redact(raw.decode("utf-8", "replace"))[: 256 * 1024],
    }
    try:
        spool.write(spool_dir(root) if root else spool.user_spool_dir(), envelope)
    except Exception as exc:
        write_log("ERROR", root, event_hint, f"partial payload lost: spool write failed: {exc!r}")


def _first_time(root: str | None, session_id: str) -> bool:
    """True once per project and session: a project that cannot be written is said once in the
    per-user log, not once per event (its events all wait in the spool all the same)."""
    import zlib

    from ..core.paths import user_state_dir

    try:
        folder = os.path.join(user_state_dir(), "said")
        os.makedirs(folder, mode=0o700, exist_ok=True)
        key = zlib.crc32(f"{root}|{session_id}".encode("utf-8", "replace"))
        fd = os.open(os.path.join(folder, f"{key:08x}"), os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW)
    except FileExistsError:
        return False
    except OSError:
        return True
    os.close(fd)
    return True


def encode(scratch: "apsw.Connection", value: object) -> str:
    """JSON text for a dict of str/int/bool/None/dict, via SQLite (no `json` import)."""
    if isinstance(value, dict):
        items = (f"{encode(scratch, str(k))}:{encode(scratch, v)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, int | float):
        return repr(value)
    return str(scratch.execute("SELECT json_quote(?)", (str(value),)).fetchall()[0][0])


def write_log(level: str, root: str | None, hook: str, message: str) -> None:
    """One line in the log; the log module loads only when there is something to say."""
    from ..core import log

    log.write(root, level, hook, message)


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def internal_error(root: str | None, hook: str, exc: BaseException) -> None:
    """Log an error of our own (never raises: a hook's failure to log is not the agent's)."""
    try:
        write_log("ERROR", root, hook, f"internal error: {type(exc).__name__}: {exc}")
    except BaseException:
        pass
