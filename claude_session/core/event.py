"""One hook payload: sanitised text plus the fields the handlers need (stdlib + apsw only).

SQLite's JSON functions parse the payload: importing Python's `json` costs ~5 ms per hook
process (it pulls in `re` and `enum`), a third of the whole hook budget.
"""

import apsw

from .hook_payload import READ_BY_HOOKS

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from typing import Any

STORE_CAP = 256 * 1024  # characters of payload stored; larger payloads have long strings cut
STRING_CAP = 8 * 1024  # a string longer than this is cut when a payload is over STORE_CAP

# attribute -> a path inside one of the payload's JSON fields (hook_payload.FIELDS): what the
# handlers read of a tool's input, its response and a batch's calls. `file_path` and `url`
# here are the tool's: the payload's own (InstructionsLoaded's, Elicitation's) are not read.
INSIDE: dict[str, tuple[str, str]] = {
    "file_path": ("tool_input", ".file_path"),
    "notebook_path": ("tool_input", ".notebook_path"),
    "command": ("tool_input", ".command"),
    "description": ("tool_input", ".description"),
    "task_prompt": ("tool_input", ".prompt"),
    "subagent_type": ("tool_input", ".subagent_type"),
    "run_in_background": ("tool_input", ".run_in_background"),
    "pattern": ("tool_input", ".pattern"),  # Grep, Glob
    "url": ("tool_input", ".url"),  # WebFetch
    "query": ("tool_input", ".query"),  # WebSearch
    "response_agent_id": ("tool_response", ".agentId"),
    "response_status": ("tool_response", ".status"),
    "response_error": ("tool_response", ".error"),
    "response_success": ("tool_response", ".success"),
    "first_batch_tool_use_id": ("tool_calls", "[0].tool_use_id"),
}
# attribute -> JSON path: the top-level fields the hooks read, under their own names, then the
# paths inside. Every field is optional: Claude Code adds and drops fields often.
FIELDS: dict[str, str] = {name: "$." + name for name in READ_BY_HOOKS} | {
    name: f"$.{field}{inner}" for name, (field, inner) in INSIDE.items()
}
SUMMARY_CAP = 200  # characters of hook_events.payload_summary
SUMMARY_TEXT_CAP = 80  # characters of a prompt or message quoted in it
# The JSON type, then every field (a path into a non-object is simply NULL).
_SELECT = "SELECT json_type(?1), " + ", ".join(
    f"json_extract(?1, '{path}')" for path in FIELDS.values()
)


class BadPayload(ValueError):
    """Not a JSON object: logged and dropped (there is nothing to store)."""


class Event:
    """The sanitised payload text and its extracted fields; unknown fields stay in `text`.

    `unattributed`: why the event belongs to no session (its payload has no `session_id`: not
    Claude Code's, likely another tool's), else None. Such an event is stored, with that
    reason, and nothing is derived from it (core/events.py): no session is invented for it."""

    __slots__ = ("_summary", "fields", "text", "unattributed")

    def __init__(
        self, text: str, fields: "dict[str, Any]", unattributed: str | None = None
    ) -> None:
        self.text = text
        self.fields = fields
        self.unattributed = unattributed
        self._summary: tuple[str | None, str] | None = None  # (root, summary): asked 3x an event

    def get(self, name: str) -> "Any":
        return self.fields.get(name)

    def text_of(self, name: str) -> str | None:
        value = self.fields.get(name)
        if value is None:
            return None
        return value if isinstance(value, str) else str(value)

    @property
    def session_id(self) -> str:
        """The Claude Code session; "" for an unattributed event (it has none)."""
        return self.text_of("session_id") or ""

    @property
    def name(self) -> str:
        return self.text_of("hook_event_name") or "unknown"

    def task_id(self) -> str | None:
        """The task this event belongs to: Claude Code's `task_id` when the payload has one
        (TaskCreated, TaskCompleted), else its `prompt_id`, the user turn it happened in."""
        return self.text_of("task_id") or self.text_of("prompt_id")

    def summary(self, root: str | None = None) -> str:
        """One line for people reading hook_events: "Bash: npm test", "Edit src/a.py",
        "prompt: ...". Built from the fields already extracted (no `json`), which came from the
        redacted payload; paths are relative to `root` when inside it."""
        if self._summary is not None and self._summary[0] == root:
            return self._summary[1]
        name = self.name
        tool = self.text_of("tool_name")
        if tool:
            text = tool + _tool_subject(self, root)
        elif name == "UserPromptSubmit":
            text = "prompt: " + _short(self.text_of("prompt"))
        elif name in ("SubagentStart", "SubagentStop"):
            kind = self.text_of("agent_type") or "internal"
            text = f"{name} {kind} {self.text_of('agent_id') or ''}"
        elif name in ("TaskCreated", "TaskCompleted"):
            subject = self.text_of("task_subject")
            text = f"{name} {self.text_of('task_id') or ''}" + (f": {subject}" if subject else "")
        elif name == "Stop":
            message = self.text_of("last_assistant_message")
            text = "Stop" + (f": {_short(message)}" if message else "")
        else:
            detail = self.text_of("source") or self.text_of("trigger") or self.text_of("reason")
            text = f"{name} {detail}" if detail else name
        text = " ".join(text.split())
        text = text if len(text) <= SUMMARY_CAP else text[: SUMMARY_CAP - 3] + "..."
        self._summary = (root, text)
        return text

    def dedup_key(self, delivery_id: str) -> str:
        """Duplicate deliveries of one event share this key; distinct events never do."""
        natural = self.text_of("tool_use_id")
        if natural is None and self.name in ("SubagentStart", "SubagentStop"):
            natural = self.text_of("agent_id")
        if natural is None and self.name == "PostToolBatch":
            natural = self.text_of("first_batch_tool_use_id")
        return f"{self.session_id}|{self.name}|{natural or 'delivery:' + delivery_id}"


def load(conn: apsw.Connection, raw: bytes, event_hint: str = "") -> "tuple[Event, bool]":
    """What Claude Code sent, as stored: redacted (decoded string values, before any cut),
    capped, parsed; and whether it was capped. The hook and the in-process recorder start here."""
    from .redact import redact_json

    text = redact_json(conn, _sanitize_surrogates(raw.decode("utf-8", "replace")))
    text, truncated = shrink(text)
    try:
        return parse(conn, text, event_hint), truncated
    except BadPayload as exc:
        unparsed = _unparsed(conn, text, event_hint, str(exc))
        if unparsed is None:
            raise
        return unparsed, truncated or len(text) > STORE_CAP


def _unparsed(conn: apsw.Connection, text: str, event_hint: str, why: str) -> "Event | None":
    """An object SQLite cannot parse (nested deeper than its 1,000 levels, say) is still an
    event Claude Code sent: keep it as raw text under the ids found by plain search. Anything
    not shaped like an object (truncated, an array, a number) is not an event: None."""
    stripped = text.strip()
    if not (stripped.startswith("{") and stripped.endswith("}")):
        return None
    wrapper = conn.execute(
        "SELECT json_object('session_id', ?1, 'hook_event_name', ?2, 'cwd', ?3,"
        " '_claude_session_unparsed', json_object('reason', ?4, 'chars', ?5, 'text', ?6))",
        (
            _plain_field(stripped, "session_id"),
            _plain_field(stripped, "hook_event_name") or event_hint,
            _plain_field(stripped, "cwd"),
            why,
            len(text),
            text[:STORE_CAP],
        ),
    ).fetchall()[0][0]
    return parse(conn, str(wrapper), event_hint)


def _plain_field(text: str, name: str) -> str | None:
    """The string value of a top-level-looking `"name": "value"` pair, by plain search."""
    at = text.find(f'"{name}"')
    if at < 0:
        return None
    colon = text.find(":", at + len(name) + 2)
    start = text.find('"', colon + 1)
    if colon < 0 or start < 0 or text[colon + 1 : start].strip():
        return None
    end = text.find('"', start + 1)
    return text[start + 1 : end] if end > start and end - start < 1024 else None


def _tool_subject(ev: Event, root: str | None) -> str:
    """What a tool call was about: its command, its file, or what else its input names."""
    command = ev.text_of("command")
    if command:
        return ": " + command
    target = ev.text_of("file_path") or ev.text_of("notebook_path")
    if target:
        if root:
            from .paths import relative_to_root

            target = relative_to_root(root, target)
        return " " + target
    for field in ("description", "pattern", "url", "query"):
        subject = ev.text_of(field)
        if subject:
            return ": " + subject
    return ""


def _short(text: str | None) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= SUMMARY_TEXT_CAP else flat[: SUMMARY_TEXT_CAP - 3] + "..."


def parse(conn: apsw.Connection, text: str, event_hint: str = "") -> Event:
    """Parse payload text (already redacted) into an Event; raise BadPayload if it is not one."""
    text = _sanitize_surrogates(text)
    if not conn.execute("SELECT json_valid(?1)", (text,)).fetchall()[0][0]:
        raise BadPayload(f"invalid JSON, {len(text)} characters")
    kind, *values = conn.execute(_SELECT, (text,)).fetchall()[0]
    if kind != "object":
        raise BadPayload(f"JSON {kind}, not an object")
    fields = dict(zip(FIELDS, values, strict=True))
    if fields["hook_event_name"] is None and event_hint:
        fields["hook_event_name"] = event_hint
    unattributed = None
    if fields["session_id"] is None or fields["session_id"] == "":
        unattributed = _why_unattributed(conn, text)
    return Event(text, fields, unattributed)


CONVERSATION_ID_CAP = 120  # characters of a foreign conversation id quoted in the reason


def _why_unattributed(conn: apsw.Connection, text: str) -> str:
    """Why a payload without a `session_id` belongs to no session, in words kept with it.
    Cursor's hooks send a `conversation_id` instead: it is quoted, never taken for a Claude
    Code session id (it names no session of ours, no transcript, no process to ask about);
    Codex's send neither."""
    found = conn.execute("SELECT json_extract(?1, '$.conversation_id')", (text,)).fetchall()
    conversation = found[0][0] if found else None
    if conversation is None or conversation == "":
        return "no session_id"
    quoted = " ".join(str(conversation).split())[:CONVERSATION_ID_CAP]
    return f"no session_id (Cursor's conversation_id {quoted})"


def _sanitize_surrogates(text: str) -> str:
    """Replace JSON escapes of lone UTF-16 surrogates, which SQLite would turn into bad UTF-8."""
    if "\\ud" not in text and "\\uD" not in text:
        return text
    import re

    pair = r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
    lone = r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}"
    return re.sub(f"({pair})|{lone}", lambda m: m.group(1) or "\\ufffd", text)


def shrink(text: str) -> tuple[str, bool]:
    """Cap a payload at about STORE_CAP characters while keeping it valid JSON.

    Long strings are cut (with a marker saying how long they were); if that is not enough the
    payload is replaced by a stub. Only large payloads pay for importing `json` here.
    """
    if len(text) <= STORE_CAP:
        return text, False
    import json

    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text, False  # not JSON: parse() rejects it, nothing is stored

    def cut(item: "Any", limit: int) -> "Any":
        if isinstance(item, str) and len(item) > limit:
            return item[:limit] + f"...[truncated {len(item) - limit} of {len(item)} chars]"
        if isinstance(item, list):
            return [cut(x, limit) for x in item]
        if isinstance(item, dict):
            return {k: cut(v, limit) for k, v in item.items()}
        return item

    limit = STRING_CAP
    while limit >= 64:
        small = json.dumps(cut(value, limit), ensure_ascii=False)
        if len(small) <= STORE_CAP:
            return small, True
        limit //= 4
    keep = ("session_id", "hook_event_name", "cwd", "tool_name", "tool_use_id", "agent_id")
    stub = {k: value.get(k) for k in keep if isinstance(value, dict) and k in value}
    stub["_claude_session"] = "payload too large to store; see payload_bytes and payload_sha256"
    return json.dumps(stub, ensure_ascii=False), True
