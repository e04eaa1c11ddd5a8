"""The fast layer: events applied in-process through `core.events.apply`, with a clock the test
owns. The same function the hook, the spool ingest and the demo call; no subprocess, no sleep."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import apsw

from claude_session.core import apply_types, config, db, event, events
from claude_session.core.paths import db_path
from claude_session.runtime import effects
from claude_session.runtime.handlers import HANDLERS


class Recorder:
    """A project database fed event by event; `now` moves only when the test moves it."""

    def __init__(self, root: Path, now: float = 1_800_000_000.0) -> None:
        self.root = str(root)
        self.now = now
        self.conn = db.connect(db_path(self.root))
        self.scratch = apsw.Connection(":memory:")

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def send(
        self, payload: dict[str, Any], process: tuple[int, int, str] | None = None
    ) -> tuple[apply_types.Applied, dict[str, Any] | None]:
        """Apply one payload as the hook would (capped, redacted, parsed, applied at `now`),
        and return what the hook would answer (its JSON object, or None). `process`: the
        Claude Code process the hook found above itself (SessionStart, UserPromptSubmit)."""
        raw = json.dumps(payload).encode()
        ev, truncated = event.load(self.scratch, raw, str(payload.get("hook_event_name", "")))
        delivery = apply_types.Delivery(
            events.new_delivery_id(), self.now, len(raw), None, truncated
        )
        settings = config.for_hooks(self.root, self.scratch)
        ctx = apply_types.Context(self.root, self.now, None, settings, process)
        applied = events.apply(self.conn, ev, delivery, ctx)
        handler = HANDLERS.get(ev.name)
        answer = None
        if handler is not None and handler.answer is not None:
            ready = None
            if handler.before_answer is not None:
                ready = handler.before_answer(self.conn, ev, ctx)
            reply = handler.answer(self.conn, ev, ctx, applied, ready)
            if reply is not None:  # the writes it calls for, once the answer is out
                effects.run(reply.effects, self.root, self.conn)
                answer = reply.value if isinstance(reply.value, dict) else None
        return applied, answer

    def rows(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql, params).fetchall()

    def close(self) -> None:
        self.conn.close()


_tool_ids = itertools.count(1)


def as_agent(payload: dict[str, Any], session: str, agent: str | None) -> dict[str, Any]:
    """A recorded payload made one of `session`'s, by `agent` (None: the main thread), its tool
    call a new one."""
    payload = {k: v for k, v in payload.items() if k not in ("agent_id", "agent_type")}
    payload["session_id"] = session
    if "tool_use_id" in payload:
        payload["tool_use_id"] = f"toolu_inproc_{next(_tool_ids)}"
    if agent:
        payload |= {"agent_id": agent, "agent_type": "general-purpose"}
    return payload
