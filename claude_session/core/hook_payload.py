"""The one description of a Claude Code hook payload: every top-level field with its kind, the
fields each event carries, those it must carry, and those the hooks read.

Everything else that knows the payload derives from these tables, so they cannot disagree:
the hook's parser (core/event.py reads READ_BY_HOOKS), the mcp_tool transport
(core/mcp_hook_input.py: the hook's `input` names `fields_of(event)`, and the server rebuilds
each field by its kind) and doctor's validation (services/setup/payloads.py).

Sources: Claude Code 2.1.330's and 2.1.332's hook-input schemas (tests/test_hook_fields_cli.py
reads them out of the real CLI), the recorded payloads (tests/fixtures/claude-code-2.1.330) and
shared/reference/claude-code-hooks.md. Plain dicts and tuples: every hook process imports this.
"""

TEXT, JSON, NUMBER, FLAG = "text", "json", "number", "flag"

# Every top-level field -> its kind. TEXT is a JSON string, JSON an object or array, NUMBER a
# JSON number, FLAG a boolean. Any field may be missing; an optional one may be null.
FIELDS: dict[str, str] = {
    name: TEXT
    for name in [
        "hook_event_name",
        "session_id",
        "transcript_path",
        "cwd",
        "prompt_id",
        "permission_mode",
        "agent_id",
        "agent_type",
        "tool_name",
        "tool_use_id",
        "prompt",
        "source",
        "reason",
        "trigger",
        "custom_instructions",
        "compact_summary",
        "last_assistant_message",
        "agent_transcript_path",
        "error",
        "error_details",
        "message",
        "title",
        "notification_type",
        "task_id",
        "task_subject",
        "task_description",
        "teammate_name",
        "team_name",
        "model",
        "session_title",
        "cache_ttl",
        "pricing",
        "from_model",
        "to_model",
        "requested_model",
        "file_path",
        "old_cwd",
        "new_cwd",
        "event",
        "load_reason",
        "memory_type",
        "trigger_file_path",
        "parent_file_path",
        "name",
        "worktree_path",
        "mcp_server_name",
        "expansion_type",
        "command_name",
        "command_args",
        "command_source",
        "invoked_by",
        "directory",
        "elicitation_id",
        "mode",
        "url",
        "action",
        "message_id",
        "turn_id",
        "delta",
        "scratchpad_dir",
        "tool_kind",
    ]
}
FIELDS |= {
    name: JSON
    for name in [
        "tool_input",
        "tool_response",
        "effort",
        "background_tasks",
        "session_crons",
        "tool_calls",
        "permission_suggestions",
        "requested_schema",
        "content",
        "globs",
        "mcp_server",
        "mcp_skill",
    ]
}
FIELDS |= {
    name: NUMBER
    for name in [
        "duration_ms",
        "context_tokens",
        "seconds_since_last_response",
        "estimated_cache_write_usd",
        "index",
    ]
}
FIELDS |= {
    name: FLAG
    for name in [
        "is_interrupt",
        "stop_hook_active",
        "prompt_cache_likely_expired",
        "prompt_cache_warm",
        "final",
    ]
}
# JSON fields that may also be a plain string: an MCP tool's result is a string or an array.
STRING_TOO = ("tool_response",)

# The fields every event carries (Claude Code's base hook input), then each event's own. An
# mcp_tool hook's input names only its event's fields: naming all of them on each event made
# settings.local.json 109 KB.
COMMON = (
    "hook_event_name",
    "session_id",
    "transcript_path",
    "cwd",
    "prompt_id",
    "permission_mode",
    "agent_id",
    "agent_type",
    "effort",
    "scratchpad_dir",
)
_TOOL = ("tool_name", "tool_input", "tool_use_id", "mcp_server")
_MODEL_SWITCH = (
    "from_model",
    "to_model",
    "requested_model",
    "source",
    "context_tokens",
    "prompt_cache_warm",
    "cache_ttl",
    "estimated_cache_write_usd",
    "pricing",
)
_TASK = ("task_id", "task_subject", "task_description", "teammate_name", "team_name")
_STOP = ("stop_hook_active", "last_assistant_message", "background_tasks", "session_crons")
EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    "SessionStart": (
        "source",
        "model",
        "session_title",
        "seconds_since_last_response",
        "context_tokens",
        "prompt_cache_likely_expired",
        "estimated_cache_write_usd",
    ),
    "Setup": ("trigger",),
    "InstructionsLoaded": (
        "file_path",
        "memory_type",
        "load_reason",
        "globs",
        "trigger_file_path",
        "parent_file_path",
    ),
    "UserPromptSubmit": ("prompt", "source", "session_title"),
    "UserPromptExpansion": (
        "expansion_type",
        "command_name",
        "command_args",
        "command_source",
        "prompt",
    ),
    "MessageDisplay": ("turn_id", "message_id", "index", "final", "delta"),
    "PreToolUse": _TOOL,
    "PermissionRequest": (*_TOOL, "permission_suggestions", "tool_kind", "mcp_skill"),
    "PermissionDenied": (*_TOOL, "reason"),
    "PostToolUse": (*_TOOL, "tool_response", "duration_ms"),
    "PostToolUseFailure": (*_TOOL, "error", "is_interrupt", "duration_ms"),
    "PostToolBatch": ("tool_calls",),
    "Notification": ("message", "title", "notification_type"),
    "SubagentStart": (),
    "SubagentStop": (*_STOP, "agent_transcript_path"),
    "TaskCreated": _TASK,
    "TaskCompleted": _TASK,
    "Stop": _STOP,
    "StopFailure": ("error", "error_details", "last_assistant_message"),
    "TeammateIdle": ("teammate_name", "team_name"),
    "ConfigChange": ("source", "file_path"),
    "CwdChanged": ("old_cwd", "new_cwd"),
    "DirectoryAdded": ("directory", "source"),
    "FileChanged": ("file_path", "event"),
    "WorktreeCreate": ("name",),
    "WorktreeRemove": ("worktree_path",),
    "PreCompact": ("trigger", "custom_instructions"),
    "PostCompact": ("trigger", "compact_summary"),
    "PreModelSwitch": _MODEL_SWITCH,
    "PostModelSwitch": _MODEL_SWITCH,
    "Elicitation": (
        "mcp_server_name",
        "message",
        "mode",
        "url",
        "elicitation_id",
        "requested_schema",
    ),
    "ElicitationResult": ("mcp_server_name", "elicitation_id", "mode", "action", "content"),
    "SessionEnd": ("reason",),
    # 2.1.332: before a skill's inline shell command runs (2.1.330 never calls its hook)
    "PreSkillShellCommand": (
        "tool_name",
        "tool_input",
        "tool_use_id",
        "command_name",
        "command_source",
        "invoked_by",
    ),
}

# What an event must carry beyond ALWAYS_REQUIRED, for doctor's validation. The recorder itself
# requires nothing: Claude Code adds and drops fields often, and the raw text is kept anyway.
ALWAYS_REQUIRED = ("session_id", "hook_event_name")
REQUIRED: dict[str, tuple[str, ...]] = {
    "SessionStart": ("source",),
    "UserPromptSubmit": ("prompt",),
    "PreToolUse": ("tool_name",),
    "PostToolUse": ("tool_name",),
    "PostToolUseFailure": ("tool_name", "error"),
    "PostToolBatch": ("tool_calls",),
    "SubagentStart": ("agent_id", "agent_type"),
    "SubagentStop": ("agent_id", "agent_type"),
    "PreCompact": ("trigger",),
    "PostCompact": ("trigger",),
    "PreModelSwitch": ("from_model", "to_model"),
    "PostModelSwitch": ("from_model", "to_model"),
    "PreSkillShellCommand": (
        "tool_name",
        "tool_input",
        "tool_use_id",
        "command_name",
        "invoked_by",
    ),
}

# The top-level fields the hooks read by name (core/event.py extracts each under its own name;
# the rest stay in the stored text).
READ_BY_HOOKS = (
    "session_id",
    "hook_event_name",
    "cwd",
    "transcript_path",
    "prompt_id",
    "agent_id",
    "agent_type",
    "tool_name",
    "tool_use_id",
    "source",
    "model",
    "reason",
    "prompt",
    "trigger",
    "compact_summary",
    "last_assistant_message",
    "error",
    "is_interrupt",
    "task_subject",
    "task_description",
    "stop_hook_active",
    "task_id",
    "duration_ms",
)


def fields_of(event: object) -> tuple[str, ...]:
    """The fields `event` carries: the common ones and the event's own; every known field for
    an event not listed (one Claude Code added later)."""
    own = EVENT_FIELDS.get(event) if isinstance(event, str) else None
    return tuple(FIELDS) if own is None else COMMON + own


def required_of(event: object) -> tuple[str, ...]:
    """The fields a payload of `event` must carry to meet the contract."""
    return ALWAYS_REQUIRED + (REQUIRED.get(event, ()) if isinstance(event, str) else ())
