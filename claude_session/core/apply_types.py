"""What an event's application carries to the writers of derived state, and what it returns.

Apart from `events` (which imports the writers) so that a writer can name these types without
importing its caller: the imports of the core go one way. Standard library and apsw only.
"""

from .config import DEFAULTS

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from typing import Any


class Delivery:
    """How one payload reached us: used for the audit row and the idempotency key.

    Plain classes, not dataclasses: `dataclasses` imports `inspect`, several ms per hook.
    """

    def __init__(
        self,
        delivery_id: str,
        received_at: float,
        payload_bytes: int,
        payload_sha256: str | None = None,
        truncated: bool = False,
        via: str = "hook",
        started_clock: float = 0.0,
        duration_ms: float | None = None,
        note: str | None = None,
        dispatcher: str = "settings",
        source: str = "hook",
        transport: str | None = None,
        traceparent: str | None = None,
    ) -> None:
        self.delivery_id = delivery_id
        self.received_at = received_at  # time.time() when the hook process started
        self.payload_bytes = payload_bytes
        self.payload_sha256 = payload_sha256
        self.truncated = truncated
        self.via = via  # 'hook' or 'spool'
        self.started_clock = started_clock  # time.perf_counter() at received_at
        self.duration_ms = duration_ms  # fixed for spooled events: the original hook run
        self.note = note
        # What delivered it: 'plugin' (a plugin's hook), 'settings' (a settings.json hook) or
        # 'spool' (replayed from the spool).
        self.dispatcher = dispatcher
        # Where the event came from: 'hook' (Claude Code sent it), or 'transcript' (it never
        # came from a hook and was rebuilt from Claude Code's transcript: services/reconcile).
        self.source = source
        # How it reached the store: 'process', 'relay' or 'mcp' (hook_events.transport).
        self.transport = transport
        # Claude Code's active span when it ran the hook (W3C traceparent, from TRACEPARENT:
        # only with its traces on, and only a command hook sees it): events.traceparent.
        self.traceparent = traceparent


class Context:
    """What goes into one application of an event, beyond the event itself: what a writer of
    derived state may need to know. Inputs only: what the application finds comes back in
    `Applied`. `now` is the clock of this application (tests inject their own)."""

    __slots__ = ("claude_process", "config", "now", "prepared", "root")

    def __init__(
        self,
        root: str,
        now: float,
        prepared: "Any" = None,
        config: "dict[str, Any] | None" = None,
        claude_process: "tuple[int, int, str] | None" = None,
    ) -> None:
        self.root = root
        self.now = now
        self.prepared = prepared  # the handler's `prepare` result, made outside the transaction
        self.config = config if config is not None else dict(DEFAULTS)
        # The Claude Code process that ran this hook, when the hook could tell (SessionStart and
        # UserPromptSubmit look: core/processes.py): (pid, start ticks, pid space).
        self.claude_process = claude_process

    def number(self, key: str) -> float:
        """A numeric setting (validated where the configuration is read)."""
        value = self.config[key]
        return float(value) if isinstance(value, int | float) else 0.0

    @property
    def lease_seconds(self) -> float:
        return self.number("claim_lease_minutes") * 60


class Applied:
    """What `apply` did and found: the event's row, its audit row, whether it was a duplicate,
    and what its derivation found. The writers of derived state fill it in inside the event's
    transaction (one object for the event, so that no writer reaches back into the `Context`);
    `apply` returns it, and the hook's answer and side effects read it."""

    __slots__ = (
        "audit_id",
        "capture_requested",
        "counters",
        "duplicate",
        "event_id",
        "forked_from",
        "newest_skill_command",
        "turn_id",
    )

    def __init__(self, event_id: int, audit_id: int = 0, duplicate: bool = False) -> None:
        self.event_id = event_id
        self.audit_id = audit_id
        self.duplicate = duplicate
        self.counters: dict[str, float] = {}  # session_metrics increments of this event
        self.capture_requested = False  # a frame asked for a workspace snapshot (see frames)
        self.turn_id: int | bool | None = False  # the event's turn once looked up (executions)
        # SessionStart in a fork: (branch id, parent session, parent frame, state hash)
        self.forked_from: tuple[int, str, int, str | None] | None = None
        self.newest_skill_command = 0  # the newest PreSkillShellCommand's event id when stored

    def count(self, key: str, amount: float = 1) -> None:
        """Add to one of this event's session counters (written once, by `apply`)."""
        self.counters[key] = self.counters.get(key, 0) + amount
