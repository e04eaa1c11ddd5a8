"""Carrying out a hook's effects (core/effects.py) once its answer is out: the one place a
hook writes after its event's transaction, on every transport (a hook process, the daemon's
relay, the MCP hook server).

Each write is its own BEGIN IMMEDIATE transaction, in the order given: the answer's own first
(the memories it gave marked as given, so the session's next answer does not repeat them),
then the hook run's (the injection log, a capture or the daemon to start, the spool, the
WAL). One that fails is logged beside the database and the next still runs: the answer is out
already and stays what it was (fail open). Standard library and apsw only.
"""

import os

from ..core import effects

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    import apsw

    from ..core.effects import Effect

    Connect = Callable[[str, int], apsw.Connection]  # (root, busy timeout ms) -> connection

TRIM_WAL_FRAMES = 256  # ~1 MB: past this, a hook on its own empties the WAL after its answer
BUSY_TIMEOUT_MS = 5000

# What each effect is called in the log when it fails.
NAMES = {
    effects.MarkGiven: "memories given",
    effects.CountUse: "memory use count",
    effects.RememberSeen: "memory files seen",
    effects.RecordVerdict: "judge verdict",
    effects.SetExitCode: "exit code",
    effects.RecordInjection: "injection log",
    effects.StartCapture: "workspace snapshot",
    effects.StartDaemon: "daemon start",
    effects.IngestSpool: "spool ingest",
    effects.TrimWal: "WAL trim",
}
WITHOUT_PROJECT_DB = (effects.StartCapture, effects.StartDaemon)


def run(
    done: "Iterable[Effect]",
    root: str,
    own: "apsw.Connection | None" = None,
    connect: "Connect | None" = None,
) -> None:
    """Carry out `done` for the project at `root`, in order, each failure logged and never
    raised. The project's database through `own` (a hook process's own connection), else
    one `connect` lends (a long-lived caller's; it takes it back after), else a new one; it
    is opened only for an effect that writes there."""
    conn = own
    for effect in done:
        try:
            if conn is None and not isinstance(effect, WITHOUT_PROJECT_DB):
                conn = _open(root, connect)
            carry_out(effect, root, conn)
        except Exception as exc:
            _failed(root, NAMES.get(type(effect), type(effect).__name__), exc)


def carry_out(effect: "Effect", root: str, conn: "apsw.Connection | None") -> None:
    """One effect: its write in its own transaction, or the process it starts."""
    from ..core.db import Immediate

    if isinstance(effect, effects.StartCapture):
        from ..services.snapshots import capture_control

        capture_control.ensure_running(root)
    elif isinstance(effect, effects.StartDaemon):
        from ..services.background import daemon_control

        daemon_control.ensure_running(root)
    elif conn is None:
        raise RuntimeError("no connection to the project's database")
    elif isinstance(effect, effects.MarkGiven):
        from ..core import memories

        with Immediate(conn):
            memories.mark_given(conn, effect.memories, effect.session_id, effect.how, effect.now)
    elif isinstance(effect, effects.CountUse):
        _count_use(conn, effect)
    elif isinstance(effect, effects.RememberSeen):
        from ..core import memory_files

        with Immediate(conn):
            memory_files.remember_seen(conn, effect.seen)
    elif isinstance(effect, effects.RecordVerdict):
        from ..core import verdicts

        with Immediate(conn):
            verdicts.record(conn, **effect.verdict)
            if effect.release is not None:  # the cost reported replaces what was reserved
                verdicts.release(conn, effect.release)
    elif isinstance(effect, effects.SetExitCode):
        from ..core.events import set_exit_code

        set_exit_code(conn, effect.audit_id, effect.exit_code, effect.note)
    elif isinstance(effect, effects.RecordInjection):
        from ..core import injections

        injections.record(conn, **effect.values)
    elif isinstance(effect, effects.IngestSpool):
        _ingest_spool(conn, root)
    elif isinstance(effect, effects.TrimWal):
        trim_wal(conn)


def _count_use(conn: "apsw.Connection", effect: "effects.CountUse") -> None:
    from ..core.db import Immediate

    if effect.scope == "global":
        from ..core import recall

        recall.count_global_use(effect.ids, effect.now)
        return
    from ..core import memories

    with Immediate(conn):
        memories.count_use(conn, effect.ids, effect.now)


def _open(root: str, connect: "Connect | None") -> "apsw.Connection":
    if connect is not None:
        return connect(root, BUSY_TIMEOUT_MS)
    from ..core import db
    from ..core.paths import db_path

    return db.connect(db_path(root), busy_timeout_ms=BUSY_TIMEOUT_MS)


def _ingest_spool(conn: "apsw.Connection", root: str) -> None:
    """Events that waited in the spool go in after this one (a few per hook run)."""
    from ..core import spool
    from ..core.paths import spool_dir

    if spool.pending(spool_dir(root)):
        spool.ingest(conn, root, limit=50)


def trim_wal(conn: "apsw.Connection") -> None:
    """Empty the WAL once it holds more than TRIM_WAL_FRAMES frames, if no one else is using the
    database now (never waited for). A hook that finds no other connection open reads the whole
    WAL to rebuild its index (~3 ms per 1,000 frames, measured), so it is kept short; when
    another process is connected (the daemon, the CLI), that one checkpoints instead. The last
    effect of a hook process: it leaves the connection without a busy timeout."""
    import apsw

    try:
        frames = os.path.getsize(conn.filename + "-wal") // (4096 + 24)
    except OSError:
        return
    if frames <= TRIM_WAL_FRAMES:
        return
    conn.setbusytimeout(0)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    except apsw.BusyError:
        pass  # in use: whoever uses it checkpoints


def _failed(root: str, what: str, exc: BaseException) -> None:
    """Log an effect that failed (never raises: the answer is out, and stays as it was)."""
    try:
        from ..core import log

        log.write(root, "ERROR", what, f"internal error: {type(exc).__name__}: {exc}")
    except BaseException:
        pass
