"""The hook runs in a Claude Code transcript (2.1.330, checked against the real CLI):

- an `attachment` line whose attachment is `hook_success`, `hook_non_blocking_error`,
  `hook_cancelled` or `hook_error_during_execution`, with `hookEvent`, `hookName`, `toolUseID`,
  `command` (an mcp_tool hook's is SERVER/TOOL) and `durationMs`. Every mcp_tool hook run gets
  one, without `durationMs` when the hook answered JSON (a run, unmeasured); a command hook
  only when it printed something that is not bare JSON (`{}` gets none), or failed: a silent
  one gets none;
- at each Stop, a `system` line of subtype `stop_hook_summary` whose `hookInfos` list every
  Stop hook that ran, `{command, durationMs}`, silent command hooks too (an http hook's
  without `durationMs`: an http hook is never timed, its command is its URL).

Other hook attachments (hook_additional_context, hook_blocking_error, hook_system_message, ...)
carry no duration and are not runs of their own. A line is the agent's to write too: a figure
out of bounds, a field of the wrong type or a line nested too deep makes it one not understood
(skipped and counted, never stored).
"""

from __future__ import annotations

from typing import Any

from ...core import hook_runs
from ...core import transcript_values as values

MAX_INFOS = 1000  # hookInfos read from one summary: Claude Code lists one per Stop hook
KIND = "hook-runs"  # the entry this module makes of a line: {"type": KIND, "runs": [...]}


def entry(line: dict[str, Any]) -> dict[str, Any] | None:
    """A parsed `attachment` or `system` line as {"type": "hook-runs", "runs": [...],
    "timestamp": ...}; {} when it times no hook; None when it is not understood."""
    kind = line.get("type")
    found: Any = line.get("attachment")
    if kind == "attachment":
        if not isinstance(found, dict) or found.get("type") not in hook_runs.TIMED:
            return {}
    elif kind == "system":
        if line.get("subtype") != "stop_hook_summary":
            return {}
    else:
        return {}
    if not values.nested_within(line):
        return None
    try:
        runs = _attachment(found) if kind == "attachment" else _summary(line)
    except values.Bad:
        return None
    return {"type": KIND, "runs": runs, "timestamp": line.get("timestamp")}


def _text(value: object, what: str, required: bool = False) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise values.Bad(f"{what}: not text")
    return value


def _duration(value: object) -> float | None:
    return values.amount(value, values.MAX_DURATION_MS)


def _attachment(found: dict[str, Any]) -> list[dict[str, Any]]:
    name = _text(found.get("hookName"), "hookName")
    event = _text(found.get("hookEvent"), "hookEvent") or (name or "").split(":")[0]
    if not event:
        raise values.Bad("a hook run with no event")
    duration = _duration(found.get("durationMs"))  # None: a run Claude Code did not time
    command = _text(found.get("command"), "command") or "(no command named)"
    return [
        {
            "item": 0,
            "event": event,
            "hook_name": name,
            "command": command,
            "outcome": hook_runs.TIMED[found["type"]],
            "tool_use_id": _text(found.get("toolUseID"), "toolUseID"),
            "duration_ms": duration,
        }
    ]


def _summary(line: dict[str, Any]) -> list[dict[str, Any]]:
    infos = line.get("hookInfos")
    if not isinstance(infos, list):
        raise values.Bad("hookInfos: not a list")
    tool_use_id = _text(line.get("toolUseID"), "toolUseID")
    runs = []
    for i, info in enumerate(infos[:MAX_INFOS]):
        if not isinstance(info, dict):
            raise values.Bad("hookInfos: an item not an object")
        runs.append(
            {
                "item": i,
                "event": None,  # Stop in the main transcript, SubagentStop in a subagent's
                "hook_name": None,
                "command": _text(info.get("command"), "command") or "(no command named)",
                "outcome": hook_runs.SUMMARY,
                "tool_use_id": tool_use_id,
                "duration_ms": _duration(info.get("durationMs")),
            }
        )
    return runs


def runs_of(
    entries: list[dict[str, Any]],
    ends: tuple[int, ...],
    prompt_id: str | None,
    main: bool,
    when: Any,
) -> list[dict[str, Any]]:
    """The runs of one batch of a transcript's entries, each with its line's end offset, the
    promptId of the user entry before it (starting from `prompt_id`) and its time (`when`:
    the reader's timestamp parser)."""
    runs = []
    for found, end in zip(entries, ends, strict=False):
        kind = found.get("type")
        if kind == "user" and isinstance(found.get("promptId"), str):
            prompt_id = found["promptId"]
        if kind != KIND:
            continue
        at = when(found.get("timestamp"))
        for run in found["runs"]:
            event = run["event"] or ("Stop" if main else "SubagentStop")
            runs.append(run | {"event": event, "line_end": end, "prompt_id": prompt_id, "at": at})
    return runs
