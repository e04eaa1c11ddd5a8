"""Pydantic models of Claude Code hook payloads and hook outputs.

For the CLI, doctor and tests only, never for hooks (pydantic costs ~60 ms per process). Every
model allows extra fields: Claude Code adds fields often, and a recorder must not reject them.
The contract is shared/reference/claude-code-hooks.md; the tests validate every recorded
payload against these models.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class Payload(BaseModel):
    """Fields every event carries (only session_id and hook_event_name are guaranteed)."""

    model_config = ConfigDict(extra="allow")

    session_id: str
    hook_event_name: str
    transcript_path: str | None = None
    cwd: str | None = None
    permission_mode: str | None = None
    prompt_id: str | None = None
    agent_id: str | None = None  # only inside a subagent
    agent_type: str | None = None


class SessionStart(Payload):
    hook_event_name: Literal["SessionStart"]
    source: Literal["startup", "resume", "clear", "compact", "fork"] | str
    model: str | None = None


class UserPromptSubmit(Payload):
    hook_event_name: Literal["UserPromptSubmit"]
    prompt: str


class ToolEvent(Payload):
    tool_name: str
    tool_input: dict[str, Any] = Field(default_factory=dict)
    tool_use_id: str | None = None


class PreToolUse(ToolEvent):
    hook_event_name: Literal["PreToolUse"]


class PostToolUse(ToolEvent):
    hook_event_name: Literal["PostToolUse"]
    tool_response: Any = None
    duration_ms: int | None = None


class PostToolUseFailure(ToolEvent):
    hook_event_name: Literal["PostToolUseFailure"]
    error: str
    is_interrupt: bool | None = None
    duration_ms: int | None = None


class PostToolBatch(Payload):
    hook_event_name: Literal["PostToolBatch"]
    tool_calls: list[dict[str, Any]]


class SubagentStart(Payload):
    hook_event_name: Literal["SubagentStart"]
    agent_id: str
    agent_type: str


class SubagentStop(Payload):
    hook_event_name: Literal["SubagentStop"]
    agent_id: str
    agent_type: str  # "" for Claude Code's internal helpers
    stop_hook_active: bool = False
    agent_transcript_path: str | None = None
    last_assistant_message: str | None = None


class Stop(Payload):
    hook_event_name: Literal["Stop"]
    stop_hook_active: bool = False
    last_assistant_message: str | None = None
    background_tasks: list[dict[str, Any]] | None = None
    session_crons: list[dict[str, Any]] | None = None


class PreCompact(Payload):
    hook_event_name: Literal["PreCompact"]
    trigger: Literal["manual", "auto"] | str
    custom_instructions: str | None = None


class PostCompact(Payload):
    hook_event_name: Literal["PostCompact"]
    trigger: Literal["manual", "auto"] | str
    compact_summary: str | None = None


class ModelSwitch(Payload):
    """PreModelSwitch (before the session's model changes; a hook may allow, deny or ask) and
    PostModelSwitch (after it changed): the same fields, as the 2.1.330 CLI sends them."""

    from_model: str
    to_model: str
    requested_model: str | None = None  # an alias ("opus"), a full id, or None for the default
    source: Literal["command", "picker", "sdk", "auto", "resume"] | str | None = None
    context_tokens: int | None = None
    prompt_cache_warm: bool | None = None
    cache_ttl: Literal["5m", "1h"] | str | None = None
    estimated_cache_write_usd: float | None = None
    pricing: Literal["configured", "catalog", "default"] | str | None = None


class PreModelSwitch(ModelSwitch):
    hook_event_name: Literal["PreModelSwitch"]


class PostModelSwitch(ModelSwitch):
    hook_event_name: Literal["PostModelSwitch"]


class SessionEnd(Payload):
    hook_event_name: Literal["SessionEnd"]
    reason: str | None = None


class Notification(Payload):
    hook_event_name: Literal["Notification"]
    message: str | None = None
    notification_type: str | None = None


MODELS: dict[str, type[Payload]] = {
    model.model_fields["hook_event_name"].annotation.__args__[0]: model  # type: ignore[union-attr]
    for model in (
        SessionStart,
        UserPromptSubmit,
        PreToolUse,
        PostToolUse,
        PostToolUseFailure,
        PostToolBatch,
        SubagentStart,
        SubagentStop,
        Stop,
        PreCompact,
        PostCompact,
        PreModelSwitch,
        PostModelSwitch,
        SessionEnd,
        Notification,
    )
}


def parse(data: dict[str, Any]) -> Payload:
    """Validate a payload with its event's model; unknown events get the common model."""
    model = MODELS.get(str(data.get("hook_event_name")), Payload)
    return model.model_validate(data)


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
