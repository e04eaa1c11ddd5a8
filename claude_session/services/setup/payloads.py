"""Hook payloads checked against the one description of a payload (core/hook_payload.py), and
hook outputs against Claude Code's output contract.

A payload's check is derived from that table: each event's required fields and each field's
kind; a field the table does not know is allowed (Claude Code adds fields often, and a
recorder must not reject them). The outputs are what a hook prints, not a payload, so their
models stay pydantic models here. For the CLI, doctor and tests only, never for hooks
(pydantic costs ~60 ms per process). The contract is shared/reference/claude-code-hooks.md.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from ...core.hook_payload import FIELDS, FLAG, JSON, NUMBER, STRING_TOO, TEXT, required_of


def problems(payload: dict[str, Any]) -> list[str]:
    """How `payload` breaks the contract: a required field missing or null, a field of the
    wrong kind (an optional one may be null). Empty when it meets it."""
    found = []
    required = required_of(payload.get("hook_event_name"))
    for name in required:
        if payload.get(name) is None:
            found.append(f"{name} is missing")
    for name, value in payload.items():
        kind = FIELDS.get(name)
        if kind and value is not None and not _of_kind(kind, value, name in STRING_TOO):
            found.append(f"{name} is {type(value).__name__}, not {kind}")
    return found


def _of_kind(kind: str, value: object, string_too: bool) -> bool:
    if kind == TEXT:
        return isinstance(value, str)
    if kind == JSON:
        return isinstance(value, (dict, list)) or (string_too and isinstance(value, str))
    if kind == NUMBER:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == FLAG:
        return isinstance(value, bool)
    return True


def sample(event: str, base: dict[str, Any]) -> dict[str, Any]:
    """`base` with every field `event` requires and `base` lacks filled with a value of its
    kind: a payload doctor can send that meets the contract."""
    filler = {TEXT: "doctor", JSON: {}, NUMBER: 0, FLAG: False}
    payload = dict(base, hook_event_name=event)
    for name in required_of(event):
        if payload.get(name) is None:
            payload[name] = filler[FIELDS[name]]
    return payload


# --- outputs ------------------------------------------------------------------------------


class HookSpecificOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    hookEventName: str
    additionalContext: str | None = None
    permissionDecision: Literal["allow", "deny", "ask", "defer"] | None = None
    permissionDecisionReason: str | None = None


class HookOutput(BaseModel):
    """What a hook may print on stdout: the universal fields plus hookSpecificOutput."""

    model_config = ConfigDict(extra="forbid")

    continue_: bool | None = Field(default=None, alias="continue")
    stopReason: str | None = None
    suppressOutput: bool | None = None
    systemMessage: str | None = None
    decision: Literal["block"] | None = None
    reason: str | None = None
    hookSpecificOutput: HookSpecificOutput | None = None


output_adapter = TypeAdapter(HookOutput)
