"""The payload of an `mcp_tool` hook, field by field: what `install` writes as the hook's input
and how the hook server puts the payload back together.

Why this is needed: Claude Code 2.1.330 gives an `mcp_tool` hook no whole payload. It fills
each `${name}` of the hook's `input` from the payload's top-level field `name`: a string as it
is, a number or boolean as its text, an object or array as its JSON text, and a missing or
null field as "" (read in the CLI, checked with the real one: docs/design.md). So the input
names every field we know, each with its kind, and the server turns the strings back into
the payload. A field Claude Code adds later is not carried until it is listed here; the
command transport carries everything.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

TEXT, JSON, NUMBER, FLAG = "text", "json", "number", "flag"

# Every top-level payload field of Claude Code 2.1.330 (its fixtures and hooks reference).
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

# The fields every event carries (Claude Code's base hook input), then each event's own, as
# Claude Code 2.1.330's input schemas give them (tests/test_hook_fields_cli.py reads them out of
# the real CLI and checks that no field is left out). An mcp_tool hook's input names only the
# fields of its event: naming all of them on each of 27 events made settings.local.json 109 KB.
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
}


def fields_of(event: object) -> tuple[str, ...]:
    """The fields an mcp_tool hook for `event` carries: the common ones and the event's own;
    every known field for an event not listed (one Claude Code added later)."""
    own = EVENT_FIELDS.get(event) if isinstance(event, str) else None
    return tuple(FIELDS) if own is None else COMMON + own


# The argument that names the install that wrote the hook (its package folder): a hook
# server of another install refuses the call, as the relay declines another install's hook.
INSTALL_ARGUMENT = "claude_session_install"


def input_template(install: str, event: str | None = None) -> dict[str, str]:
    """The `input` of our mcp_tool hook for `event`: each of its fields by reference, and the
    install's name."""
    template = {name: f"${{{name}}}" for name in fields_of(event)}
    template[INSTALL_ARGUMENT] = install
    return template


def arguments_for(payload: dict[str, object], install: str) -> dict[str, str]:
    """What Claude Code makes of `input_template(install)` for `payload` (its substitution:
    a string as it is, an object or array as compact JSON, a number or flag as its text, a
    missing or null field as ""): for the doctor, the benchmarks and the tests. The fields
    are those of the payload's event, as `install` writes them."""
    arguments = {}
    for name in fields_of(payload.get("hook_event_name")):
        value = payload.get(name)
        if value is None:
            arguments[name] = ""
        elif isinstance(value, bool):
            arguments[name] = "true" if value else "false"
        elif isinstance(value, (dict, list)):
            arguments[name] = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        else:
            arguments[name] = str(value)
    arguments[INSTALL_ARGUMENT] = install
    return arguments


def payload_from(arguments: dict[str, object]) -> dict[str, object]:
    """The payload as Claude Code had it, from the filled-in input: "" is a missing field; a
    JSON field that does not read as an object or array was a string and stays one."""
    payload: dict[str, object] = {}
    for name, value in arguments.items():
        kind = FIELDS.get(name)
        if kind is None or not isinstance(value, str) or value == "":
            continue
        payload[name] = _typed(kind, value)
    return payload


def payload_bytes(arguments: dict[str, object], valid_json: Callable[[str], bool]) -> bytes:
    """The payload's JSON text straight from the filled-in input, as `payload_from` would read
    it, without parsing it into Python objects and encoding it again: a string field is quoted;
    a JSON field's text (Claude Code's own JSON text) goes in as it is when `valid_json` says
    it is an object or array, else as a string; a number or flag goes in as its text. The
    payload is parsed once, by `event.load`, as a command hook's stdin is.

    UTF-8, or ASCII with escapes when a string holds a lone surrogate (text cut mid-emoji),
    as Claude Code writes it to a command hook."""
    from json.encoder import encode_basestring, encode_basestring_ascii

    def text(quote: Callable[[str], str]) -> str:
        parts = []
        for name, value in arguments.items():
            kind = FIELDS.get(name)
            if kind is None or not isinstance(value, str) or value == "":
                continue
            parts.append(f"{quote(name)}: {_json_text(kind, value, quote, valid_json)}")
        return "{" + ", ".join(parts) + "}"

    try:
        return text(encode_basestring).encode("utf-8")
    except UnicodeEncodeError:
        return text(encode_basestring_ascii).encode("ascii")


def _json_text(
    kind: str, value: str, quote: Callable[[str], str], valid_json: Callable[[str], bool]
) -> str:
    """One field's value as JSON text: what `_typed` reads it as, written back."""
    if kind == JSON and value[:1] in ("{", "[") and valid_json(value):
        return value
    if kind == NUMBER:
        try:
            return str(int(value))
        except ValueError:
            try:
                number = float(value)
            except ValueError:
                return quote(value)
            return repr(number) if number - number == 0 else quote(value)  # not inf, nan
    if kind == FLAG and value in ("true", "false"):
        return value
    return quote(value)


def _typed(kind: str, value: str) -> object:
    if kind == JSON and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):  # nested past Python's limit: kept as text
            return value
    if kind == NUMBER:
        try:
            return int(value)
        except ValueError:
            try:
                return float(value)
            except ValueError:
                return value
    if kind == FLAG and value in ("true", "false"):
        return value == "true"
    return value
