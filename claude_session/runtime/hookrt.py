"""The hook runtime: every hook script calls `main(event_name)` and nothing else.

stdin (capped, with a deadline) -> redact -> parse -> one transaction -> answer. All output
and the exit code live here: stdout is empty or exactly one JSON object, the exit code is 0,
or 3 for the one deliberate, configured block (the judge; the installed command makes it 2).
Anything that goes wrong inside is logged beside the database; the event goes to the spool
when the database cannot take it. Imports: the standard library and apsw only.
"""

import gc
import os
import sys
import time

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from typing import Any

    import apsw

    from ..core.event import Event
    from ..core.events import Applied, Context, Delivery
    from .handlers import ExitBlock

BLOCK_EXIT = 3  # not 2: python itself exits 2 when it cannot open the script
STDIN_CAP_BYTES = 32 * 1024 * 1024  # past this the payload cannot be a real event
# Claude Code writes the payload at once; the shortest timeout we install is 5 s (SessionEnd).
STDIN_FIRST_BYTE_SECONDS = 3.0  # nothing at all for this long: nobody is going to write
STDIN_IDLE_SECONDS = 2.0  # data flowed, then nothing for this long: the writer is gone


def main(event_hint: str) -> None:
    """Run one hook and exit 0 whatever happens (3 only for a deliberate block)."""
    # A hook lives ~15 ms and leaves no cycles worth collecting: without the cyclic GC, the
    # imports below stop paying for collections that scan every object so far (measured).
    gc.disable()
    started_clock = time.perf_counter()
    received_at = time.time()
    output = None
    if not os.environ.get("CLAUDE_SESSION_DISABLED"):
        try:
            output = run(event_hint, received_at, started_clock)
        except BaseException as exc:  # fail open, always
            _internal_error(None, event_hint, exc)
    code = 0
    try:
        if isinstance(output, str):
            sys.stdout.write(output)
            sys.stdout.flush()
        elif output is not None:  # a deliberate, configured block (the judge)
            sys.stderr.write(output.reason + "\n")
            sys.stderr.flush()
            code = BLOCK_EXIT  # the installed command turns it into 2 (see installer)
    except Exception:
        code = 0
    # Skip interpreter teardown: everything is committed or spooled already.
    os._exit(code)


def run(event_hint: str, received_at: float, started_clock: float) -> "str | ExitBlock | None":
    """One hook run; returns the text for stdout (one JSON object), an ExitBlock, or None."""
    import apsw

    from ..core import config, db, event, events
    from ..core.paths import db_path, intended_root, project_root, spool_dir
    from .handlers import DEFAULT, HANDLERS, ExitBlock

    known_root = project_root()  # from $CLAUDE_PROJECT_DIR: where to log before parsing
    raw, why_short = read_stdin()
    if why_short and not raw:
        _log("ERROR", known_root, event_hint, f"{why_short}; event not stored")
        return None
    if why_short:  # whatever arrived is recorded below: a whole payload, or spooled raw text
        _log("WARNING", known_root, event_hint, f"{why_short}: {len(raw)} bytes read")
    if not raw.strip():
        _log("WARNING", known_root, event_hint, "empty stdin: nothing to record")
        return None
    scratch = apsw.Connection(":memory:")  # SQLite is the JSON parser and encoder here
    try:
        ev, truncated = event.load(scratch, raw, event_hint)
    except event.BadPayload as exc:
        _log(
            "ERROR", known_root, event_hint, f"{exc}; {len(raw)} bytes, sha256 {_sha256(raw)[:16]}"
        )
        if why_short:  # cut off by a writer that went silent: keep what came, for the record
            _spool_partial(known_root, event_hint, raw, received_at, f"{why_short}; {exc}")
        return None
    delivery = events.Delivery(
        events.new_delivery_id(),
        received_at,
        len(raw),
        _sha256(raw) if truncated else None,
        truncated,
        started_clock=started_clock,
        # Claude Code gives a plugin's hooks CLAUDE_PLUGIN_ROOT; a settings.json hook has none.
        dispatcher="plugin" if os.environ.get("CLAUDE_PLUGIN_ROOT") else "settings",
    )
    root = project_root(ev.get("cwd"))
    if root is None:
        missing = intended_root(ev.get("cwd"))
        reason = f"project directory {missing} missing" if missing else "no project directory"
        from ..core import spool

        _spool(spool.user_spool_dir(), ev, delivery, missing, None, reason)
        return None
    handler = HANDLERS.get(ev.name, DEFAULT)
    prepared = None
    if handler.prepare is not None:
        try:
            prepared = handler.prepare(root)
        except Exception as exc:
            _internal_error(root, ev.name, exc)
    conn = None
    applied = None
    ctx = events.Context(root, time.time(), prepared, config.for_hooks(root, scratch))
    try:
        conn = db.connect(db_path(root), busy_timeout_ms=handler.busy_timeout_ms)
        applied = _apply(conn, ev, delivery, ctx)
    except (db.DatabaseError, apsw.Error, OSError) as exc:  # OSError: cannot even create it
        reason = f"{type(exc).__name__}: {exc}"
        _log("ERROR", root, ev.name, f"database unavailable, event spooled: {reason}")
        _spool(spool_dir(root), ev, delivery, root, prepared, reason)
        conn = _reader(root)
    else:
        if os.path.isdir(spool_dir(root)):
            try:
                from ..core import spool

                if spool.pending(spool_dir(root)):
                    spool.ingest(conn, root, limit=50)
            except Exception as exc:
                _internal_error(root, "spool ingest", exc)
    if handler.after is not None:
        try:
            handler.after(ctx)
        except Exception as exc:
            _internal_error(root, ev.name, exc)
    if ctx.capture_requested and conn is not None:  # a frame asked for a workspace snapshot
        try:
            from ..services import capture_control

            capture_control.ensure_running(root)
        except Exception as exc:
            _internal_error(root, "workspace snapshot", exc)
    if handler.answer is None or conn is None:
        return None
    try:
        answer = handler.answer(conn, ev, ctx, applied)
    except Exception as exc:  # our bug: the tool call goes ahead as if we were not here
        _internal_error(root, ev.name, exc)
        return None
    if answer is None or isinstance(answer, ExitBlock):
        return answer
    return encode(scratch, answer)


def _apply(conn: "apsw.Connection", ev: "Event", delivery: "Delivery", ctx: "Context") -> "Applied":
    """Apply the event; if our own derivation has a bug, still keep the event alone."""
    import apsw

    from ..core import events

    try:
        return events.apply(conn, ev, delivery, ctx)
    except apsw.Error:
        raise
    except Exception as exc:
        _log("ERROR", ctx.root, ev.name, f"derived state failed, event kept alone: {exc!r}")
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


def _spool(
    folder: str,
    ev: "Event",
    delivery: "Delivery",
    root: str | None,
    prepared: "Any",
    reason: str,
) -> None:
    from ..core import spool

    envelope = {
        "v": 1,
        "delivery_id": delivery.delivery_id,
        "received_at": delivery.received_at,
        "duration_ms": round((time.perf_counter() - delivery.started_clock) * 1000, 3),
        "event_hint": ev.name,
        "project_root": root,
        "reason": reason,
        "payload_bytes": delivery.payload_bytes,
        "payload_sha256": delivery.payload_sha256,
        "truncated": delivery.truncated,
        "prepared": prepared,
        "payload": ev.text,
    }
    try:
        spool.write(folder, envelope)
    except Exception as exc:
        if folder == spool.user_spool_dir():
            _log("ERROR", root, ev.name, f"event lost: spool write failed too: {exc!r}")
            return
        folder = spool.user_spool_dir()  # e.g. the project directory is not writable
        try:
            spool.write(folder, envelope)
        except Exception as exc2:
            _log("ERROR", root, ev.name, f"event lost: no spool could take it: {exc!r}, {exc2!r}")
            return
    if folder == spool.user_spool_dir() and _first_time(root, ev.session_id):
        _log("ERROR", None, ev.name, f"{reason}: events of this session spooled to {folder}")


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
        _log("ERROR", root, event_hint, f"partial payload lost: spool write failed: {exc!r}")


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


def read_stdin() -> tuple[bytes, str | None]:
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


def _log(level: str, root: str | None, hook: str, message: str) -> None:
    """One line in the log; the log module loads only when there is something to say."""
    from ..core import log

    log.write(root, level, hook, message)


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _internal_error(root: str | None, hook: str, exc: BaseException) -> None:
    try:
        _log("ERROR", root, hook, f"internal error: {type(exc).__name__}: {exc}")
    except BaseException:
        pass
