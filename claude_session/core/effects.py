"""What a hook's work calls for once its answer is out, as plain data.

An answer is read from the store and never writes to it: what it calls for (the memories it
gave marked as given and counted, the judge's verdict, the exit code of its audit row, the
text the model was given, a capture or the daemon to start) is one of these values, and
`runtime/effects.py` carries them out after the answer is given, each in its own transaction,
whichever transport ran the hook. So a slow or failing write never delays nor changes the
answer, and an answer can be computed on a read-only connection. Standard library only.
"""

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from typing import Any


class MarkGiven:
    """These memories ((scope, id): 'project' or 'global') were given to the session, so that
    it is not given them again (memory_uses, in the project's database)."""

    __slots__ = ("how", "memories", "now", "session_id")

    def __init__(
        self, session_id: str, memories: "tuple[tuple[str, int], ...]", how: str, now: float
    ) -> None:
        self.session_id = session_id
        self.memories = memories
        self.how = how  # 'session_start' or 'prompt'
        self.now = now


class CountUse:
    """A use of each of these memories, counted where they live: the project's database
    ('project') or the user's global one ('global')."""

    __slots__ = ("ids", "now", "scope")

    def __init__(self, scope: str, ids: "tuple[int, ...]", now: float) -> None:
        self.scope = scope
        self.ids = ids
        self.now = now


class RememberSeen:
    """The files of memories hashed while checking them, unchanged: their sightings are kept
    so that the next check need not hash them again (core/memory_files.py)."""

    __slots__ = ("seen",)

    def __init__(self, seen: "tuple[tuple[Any, ...], ...]") -> None:
        self.seen = seen


class RecordVerdict:
    """The judge's verdict (llm_verdicts: `verdict` holds the keyword arguments of
    `verdicts.record`), and the budget reservation it replaces, dropped in the same
    transaction (None: none was held)."""

    __slots__ = ("release", "verdict")

    def __init__(self, verdict: "dict[str, Any]", release: int | None) -> None:
        self.verdict = verdict
        self.release = release


class SetExitCode:
    """How this hook run really ended (its audit row): a deliberate block."""

    __slots__ = ("audit_id", "exit_code", "note")

    def __init__(self, audit_id: int, exit_code: int, note: str) -> None:
        self.audit_id = audit_id
        self.exit_code = exit_code
        self.note = note


class RecordInjection:
    """What of the answer reached the model (injections: `values` holds the arguments of
    `injections.record`)."""

    __slots__ = ("values",)

    def __init__(self, values: "dict[str, Any]") -> None:
        self.values = values


class StartCapture:
    """A frame asked for a workspace snapshot: start the capture process if none runs."""

    __slots__ = ()


class StartDaemon:
    """Start the project's daemon if it is not running (detached, not waited for)."""

    __slots__ = ()


class IngestSpool:
    """Events that waited in the spool go in after this one (a few per hook run)."""

    __slots__ = ()


class TrimWal:
    """A hook process on its own empties the WAL past a size (runtime/effects.py, `trim_wal`)."""

    __slots__ = ()


if TYPE_CHECKING:
    Effect = (
        MarkGiven
        | CountUse
        | RememberSeen
        | RecordVerdict
        | SetExitCode
        | RecordInjection
        | StartCapture
        | StartDaemon
        | IngestSpool
        | TrimWal
    )
    Effects = tuple[Effect, ...]
