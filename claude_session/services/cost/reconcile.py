"""Nothing missing from the record: what Claude Code's transcript shows but no hook delivered.

A hook can be lost (a killed process, a timeout, hooks not loaded yet, a drill's
`CLAUDE_SESSION_DROP_EVENTS`). The transcript still has every prompt, tool call and subagent,
so the payloads Claude Code would have sent are rebuilt from it and applied through the one
path, `core.events.apply`: loaded (redacted) like a hook's, marked as coming from the
transcript (the audit row's note says `source=transcript`, the stored payload carries
`_claude_session_source`), with no workspace snapshot (the files are no longer as they were).

Idempotent in either order: an event already recorded (the same session, event and
`tool_use_id`, `agent_id` or `prompt_id`) is not rebuilt, and a hook's delivery arriving after
the transcript's is a duplicate of it (the same events key: see `events.apply`), which derives
nothing a second time. Deliberately left out: tool calls Claude Code rejected before running
them (`<tool_use_error>`: no hook fires for those) and the events without a transcript trace
(SessionStart, Stop, ...).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import apsw

from ...core import apply_types, config, event, events, relations, store
from ...core.paths import relative_to_root

SOURCE = "transcript"
NOTE = "source=transcript: never received from a hook; rebuilt from Claude Code's transcript"
MARK = "_claude_session_source"  # in the stored payload: this one was not sent by Claude Code
# Texts that stand in for a slash command, a shell escape or an interruption, not a prompt.
NOT_PROMPTS = ("<command-", "<local-command-", "<bash-", "[Request interrupted")
# A tool result that says the call never ran, as Claude Code words it: no hook fires for those.
REJECTED = "<tool_use_error>"
# A result that says the call was stopped, declined or cut off, as Claude Code words it (the
# user, or the placeholders it writes for a call whose process died under it, seen on resume):
# an interruption, not a failure.
STOPPED = (
    "[Request interrupted",
    "The user doesn't want to proceed",
    "[Tool call interrupted",
    "[Agent call interrupted",
    "[Tool call did not complete",
    "[Tool call result not in this copy",
    "[This turn ended before it finished",
)

Payload = dict[str, Any]


def fill(
    conn: apsw.Connection,
    root: str,
    session_id: str,
    agent_id: str | None,
    entries: list[dict[str, Any]],
) -> int:
    """Add what `entries` (one transcript's parsed lines, in file order: the main one when
    `agent_id` is None, else that subagent's) show but the hooks never delivered; returns how
    many events were added. Safe to call again with the same or later entries."""
    settings = config.for_hooks(root, conn)
    settings["workspace_snapshots"] = False  # a snapshot now would not be the files of then
    reader = _Reader(conn, session_id, agent_id, entries)
    implied = list(reader.payloads())
    reader.look_up(implied)  # one query for the lot, not one per payload
    added = 0
    for name, payload, when in implied:
        if reader.recorded(name, payload):
            continue
        raw = json.dumps(payload, ensure_ascii=False).encode("utf-8", "replace")
        ev, truncated = event.load(conn, raw, name)
        delivery = apply_types.Delivery(
            events.new_delivery_id(),
            when,
            len(raw),
            None,
            truncated,
            duration_ms=0.0,
            note=NOTE,
            source=SOURCE,
        )
        applied = events.apply(conn, ev, delivery, apply_types.Context(root, when, None, settings))
        reader.applied(ev, delivery)
        added += not applied.duplicate
        missed = None if applied.duplicate else missed_answer(conn, root, ev, when)
        if missed:
            events.add_note(conn, applied.audit_id, missed)
    return added


MISSED = "missed answer: "  # in the audit row's note: what the hook would have told the agent


def missed_answer(conn: apsw.Connection, root: str, ev: event.Event, when: float) -> str | None:
    """What a hook that never came would have told the agent, now that it cannot: a conflict
    warning before an edit of a file another live agent claimed then. Said in the audit row,
    never given late or made up (the agent has moved on)."""
    if ev.name != "PreToolUse" or ev.text_of("tool_name") not in store.EDIT_TOOLS:
        return None
    target = ev.text_of("file_path") or ev.text_of("notebook_path")
    if not target:
        return None
    path = relative_to_root(root, target)
    holders = relations.conflicts(conn, ev.session_id, ev.text_of("agent_id"), path, when)
    if not holders:
        return None
    agents = ", ".join(sorted({f"{h['agent']} ({h['relation']})" for h in holders}))
    return f"{MISSED}a conflict warning: {path} was claimed by {agents}"


class _Reader:
    """The hook payloads one transcript implies, and which of them the record already has."""

    def __init__(
        self,
        conn: apsw.Connection,
        session_id: str,
        agent_id: str | None,
        entries: list[dict[str, Any]],
    ) -> None:
        self.conn = conn
        self.session_id = session_id
        self.agent_id = agent_id
        # A main transcript of older versions held its subagents' entries too (sidechains).
        self.entries = [
            e
            for e in entries
            if isinstance(e, dict) and not (agent_id is None and e.get("isSidechain") is True)
        ]
        found = conn.execute(
            "SELECT transcript_path FROM sessions WHERE session_id = ?", (session_id,)
        ).fetchall()
        self.transcript_path = found[0][0] if found and isinstance(found[0][0], str) else None
        # tool_use_id -> the user entry holding its result and that result block; the call
        self.results: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        self.calls: dict[str, dict[str, Any]] = {}
        for entry in self.entries:
            for block in _blocks(entry):
                if entry.get("type") == "user" and block.get("type") == "tool_result":
                    self.results[str(block.get("tool_use_id"))] = (entry, block)
                elif entry.get("type") == "assistant" and block.get("type") == "tool_use":
                    self.calls[str(block.get("id"))] = block
        self.agent_type = self._agent_type() if agent_id is not None else None
        self.prompts: set[str] = set()  # of the prompts recorded (see `look_up`)
        self.keys: set[str] = set()  # the events keys recorded, of the others

    def look_up(self, implied: list[tuple[str, Payload, float]]) -> None:
        """Find which of the events `implied` the record has already (from a hook or an
        earlier fill), in a few queries: `recorded` then answers from what was found."""
        prompts = sorted({str(p["prompt_id"]) for n, p, _ in implied if n == "UserPromptSubmit"})
        keys = sorted(
            {
                k
                for n, p, _ in implied
                if n != "UserPromptSubmit"
                for k in _keys(self.session_id, n, p)
            }
        )
        for part in _chunks(prompts):
            self.prompts.update(
                str(row[0])
                for row in self.conn.execute(
                    "SELECT DISTINCT prompt_id FROM events WHERE session_id = ?"
                    " AND hook_event_name = 'UserPromptSubmit'"
                    f" AND prompt_id IN ({', '.join('?' * len(part))})",
                    (self.session_id, *part),
                )
            )
        for part in _chunks(keys):
            self.keys.update(
                str(row[0])
                for row in self.conn.execute(
                    "SELECT dedup_key FROM events"
                    f" WHERE dedup_key IN ({', '.join('?' * len(part))})",
                    part,
                )
            )

    def recorded(self, name: str, payload: Payload) -> bool:
        """Whether the record has this event already, from a hook or an earlier fill (as
        `look_up` found it, and `applied` since)."""
        if name == "UserPromptSubmit":
            return payload["prompt_id"] in self.prompts
        return any(key in self.keys for key in _keys(self.session_id, name, payload))

    def applied(self, ev: event.Event, delivery: apply_types.Delivery) -> None:
        """`ev` is in the record now (added, or found there by `events.apply`)."""
        if ev.name == "UserPromptSubmit":
            prompt_id = ev.text_of("prompt_id")
            if prompt_id:
                self.prompts.add(prompt_id)
        else:
            self.keys.add(ev.dedup_key(delivery.delivery_id))

    def payloads(self) -> Iterator[tuple[str, Payload, float]]:
        """(event name, payload, when) in transcript order."""
        prompt_id = self._latest_prompt_id()
        mode: str | None = None
        cwd: str | None = None
        started = False
        for entry in self.entries:
            kind = entry.get("type")
            if kind not in ("user", "assistant"):
                continue
            cwd = _text(entry.get("cwd")) or cwd
            when = _when(entry)
            if kind == "user":
                prompt_id = _text(entry.get("promptId")) or prompt_id
                mode = _text(entry.get("permissionMode")) or mode
            base = self._base(cwd, prompt_id, mode)
            if self.agent_id is not None and not started:
                started = True
                yield "SubagentStart", self._subagent(base, "SubagentStart"), when
            if kind == "user":
                prompt = self._prompt(entry)
                if prompt is not None and prompt_id:
                    yield "UserPromptSubmit", self._named(base, "UserPromptSubmit", prompt), when
                for block in _blocks(entry):
                    if block.get("type") == "tool_result":
                        yield from self._finished(entry, block, base, when)
                continue
            effort = _text(entry.get("effort"))
            tools = [b for b in _blocks(entry) if b.get("type") == "tool_use" and b.get("id")]
            for block in tools:
                yield from self._started(block, base, effort, when)
            if self.agent_id is not None and not tools and _stop_reason(entry) == "end_turn":
                stop = self._subagent(base, "SubagentStop") | {
                    "stop_hook_active": False,
                    "last_assistant_message": _joined(_blocks(entry)),
                }
                if self.transcript_path:
                    stop["agent_transcript_path"] = os.path.join(
                        os.path.splitext(self.transcript_path)[0],
                        "subagents",
                        f"agent-{self.agent_id}.jsonl",
                    )
                yield "SubagentStop", stop, when

    def _base(self, cwd: str | None, prompt_id: str | None, mode: str | None) -> Payload:
        """The fields every payload of this transcript carries (absent ones left out)."""
        base: Payload = {"session_id": self.session_id, MARK: SOURCE}
        optional = {
            "transcript_path": self.transcript_path,
            "cwd": cwd,
            "prompt_id": prompt_id,
            "permission_mode": mode if self.agent_id is None else None,
        }
        base |= {k: v for k, v in optional.items() if v is not None}
        if self.agent_id is not None:
            base |= {"agent_id": self.agent_id, "agent_type": self.agent_type}
        return base

    def _named(self, base: Payload, name: str, prompt: str) -> Payload:
        return base | {"hook_event_name": name, "prompt": prompt}

    def _subagent(self, base: Payload, name: str) -> Payload:
        return {k: v for k, v in base.items() if k != "permission_mode"} | {"hook_event_name": name}

    def _prompt(self, entry: dict[str, Any]) -> str | None:
        """The text the user submitted, when this main-transcript entry is a prompt."""
        if self.agent_id is not None or entry.get("isMeta") or entry.get("isCompactSummary"):
            return None
        content = (entry.get("message") or {}).get("content")
        if isinstance(content, list):
            if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
                return None
            content = _joined(content)
        if not isinstance(content, str) or not content.strip():
            return None
        return None if content.lstrip().startswith(NOT_PROMPTS) else content

    def _started(
        self, block: dict[str, Any], base: Payload, effort: str | None, when: float
    ) -> Iterator[tuple[str, Payload, float]]:
        tool_use_id = str(block["id"])
        found = self.results.get(tool_use_id)
        if found is not None and REJECTED in _joined(_content(found[1]))[:200]:
            return  # rejected before it ran: Claude Code sent no hook for it
        if found is not None and _text(found[0].get("promptId")):  # the turn it ran in
            base = base | {"prompt_id": found[0]["promptId"]}
        payload = base | {"hook_event_name": "PreToolUse"}
        if effort:
            payload["effort"] = {"level": effort}
        payload |= {
            "tool_name": block.get("name"),
            "tool_input": block.get("input") if isinstance(block.get("input"), dict) else {},
            "tool_use_id": tool_use_id,
        }
        yield "PreToolUse", payload, when

    def _finished(
        self, entry: dict[str, Any], block: dict[str, Any], base: Payload, when: float
    ) -> Iterator[tuple[str, Payload, float]]:
        tool_use_id = str(block["tool_use_id"])
        call = self._tool_use(tool_use_id)
        text = _joined(_content(block))
        if call is None or REJECTED in text[:200]:
            return  # its call is not in these entries, or it never ran
        payload = base | {
            "tool_name": call.get("name"),
            "tool_input": call.get("input") if isinstance(call.get("input"), dict) else {},
        }
        stopped = text.lstrip().startswith(STOPPED)
        if block.get("is_error") is True or stopped:
            name = "PostToolUseFailure"
            payload |= {"tool_use_id": tool_use_id, "error": text, "is_interrupt": stopped}
        else:
            name = "PostToolUse"
            response = entry.get("toolUseResult", _content(block))
            payload |= {"tool_response": response, "tool_use_id": tool_use_id}
        yield name, {"hook_event_name": name} | payload, when

    def _tool_use(self, tool_use_id: str) -> dict[str, Any] | None:
        """The call behind a result: in these entries, else as its recorded PreToolUse has it
        (the call was in an earlier batch)."""
        if tool_use_id in self.calls:
            return self.calls[tool_use_id]
        found = self.conn.execute(
            "SELECT tool_name, json_extract(payload, '$.tool_input') FROM events"
            " WHERE dedup_key = ?",
            (f"{self.session_id}|PreToolUse|{tool_use_id}",),
        ).fetchall()
        if not found:
            return None
        tool_input = json.loads(found[0][1]) if isinstance(found[0][1], str) else {}
        return {"name": found[0][0], "input": tool_input}

    def _agent_type(self) -> str | None:
        """The subagent's type: as its transcript names it, else as the record does."""
        for entry in self.entries:
            named = _text(entry.get("attributionAgent"))
            if named:
                return named
        found = self.conn.execute(
            "SELECT coalesce((SELECT nullif(agent_type, '') FROM agent_registry WHERE id = ?1),"
            " (SELECT subagent_type FROM agent_launches WHERE agent_id = ?1 LIMIT 1))",
            (self.agent_id,),
        ).fetchall()
        return found[0][0] if found and isinstance(found[0][0], str) else None

    def _latest_prompt_id(self) -> str | None:
        """The turn a batch that starts mid-turn belongs to: the session's latest."""
        found = self.conn.execute(
            "SELECT prompt_id FROM turns WHERE session_id = ? ORDER BY turn_no DESC LIMIT 1",
            (self.session_id,),
        ).fetchall()
        return found[0][0] if found and isinstance(found[0][0], str) else None


def _keys(session_id: str, name: str, payload: Payload) -> list[str]:
    """The events keys the record would hold this event under (`events.apply`): by session,
    event and tool_use_id (or agent_id); a call ends with PostToolUse or PostToolUseFailure."""
    natural = payload.get("tool_use_id") or payload.get("agent_id")
    names = [name]
    if name in ("PostToolUse", "PostToolUseFailure"):  # either one ends the call
        names = ["PostToolUse", "PostToolUseFailure"]
    return [f"{session_id}|{n}|{natural}" for n in names]


def _chunks(values: list[str], size: int = 500) -> Iterator[list[str]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _blocks(entry: dict[str, Any]) -> list[dict[str, Any]]:
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _content(block: dict[str, Any]) -> Any:
    return block.get("content", "")


def _joined(content: Any) -> str:
    """The text of a message or tool result: a string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) for b in content if isinstance(b, dict) and "text" in b
        )
    return ""


def _stop_reason(entry: dict[str, Any]) -> str | None:
    message = entry.get("message")
    return _text(message.get("stop_reason")) if isinstance(message, dict) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _when(entry: dict[str, Any]) -> float:
    """The entry's time (ISO 8601, UTC), as Unix seconds; now when it has none."""
    stamp = entry.get("timestamp")
    if isinstance(stamp, str):
        try:
            return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    return time.time()
