"""The one table from event name to what a hook does for it.

Each Handler has up to three steps: `prepare` runs before the write transaction (slow, outside
work such as git), `record` writes derived state inside it, and `answer` reads afterwards and
returns the JSON object Claude Code gets on stdout. Events not in the table are stored as they
came and answered with nothing.
"""

import apsw

from . import store
from .event import Event

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

# Every event of the hooks contract (Claude Code 2.1.240 docs, seen in 2.1.330).
EVENTS: tuple[str, ...] = (
    "SessionStart",
    "Setup",
    "InstructionsLoaded",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "MessageDisplay",
    "PreToolUse",
    "PermissionRequest",
    "PermissionDenied",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Notification",
    "SubagentStart",
    "SubagentStop",
    "TaskCreated",
    "TaskCompleted",
    "Stop",
    "StopFailure",
    "TeammateIdle",
    "ConfigChange",
    "CwdChanged",
    "DirectoryAdded",
    "FileChanged",
    "WorktreeCreate",
    "WorktreeRemove",
    "PreCompact",
    "PostCompact",
    "Elicitation",
    "ElicitationResult",
    "SessionEnd",
)


class Handler:
    __slots__ = ("answer", "busy_timeout_ms", "prepare", "record")

    def __init__(
        self,
        record: "Callable[[apsw.Connection, Event, store.Context], None] | None" = None,
        *,
        prepare: "Callable[[str], Any] | None" = None,
        answer: "Callable[[apsw.Connection, Event, float], dict[str, Any] | None] | None" = None,
        busy_timeout_ms: int = 5000,
    ) -> None:
        self.record = record
        self.prepare = prepare
        self.answer = answer
        self.busy_timeout_ms = busy_timeout_ms


def capture_git(root: str) -> "dict[str, Any]":
    from . import gitstate  # imported here: only PreCompact pays for subprocess

    return gitstate.capture(root)


def answer_session_start(conn: apsw.Connection, ev: Event, now: float) -> "dict[str, Any] | None":
    """Put the recorded state back in front of the model (compaction) or what was left open."""
    from . import context

    source = ev.text_of("source")
    if source == "compact":
        text: str | None = context.for_compaction(conn, ev.session_id, now)
    else:
        text = context.for_new_session(conn, ev.session_id, source, now)
    if not text:
        return None
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}


HANDLERS: dict[str, Handler] = {
    "SessionStart": Handler(store.on_session_start, answer=answer_session_start),
    "UserPromptSubmit": Handler(store.on_user_prompt),
    "PreToolUse": Handler(store.on_pre_tool_use),
    "PostToolUse": Handler(store.on_post_tool_use),
    "PostToolUseFailure": Handler(store.on_post_tool_use_failure),
    "SubagentStart": Handler(store.on_subagent_start),
    "SubagentStop": Handler(store.on_subagent_stop),
    "PreCompact": Handler(store.on_pre_compact, prepare=capture_git),
    "PostCompact": Handler(store.on_post_compact),
    # SessionEnd hooks share a 1.5 s budget unless settings raise it: give up on a lock sooner.
    "SessionEnd": Handler(store.on_session_end, busy_timeout_ms=1000),
}
DEFAULT = Handler()
