"""Bounds on the figures read from Claude Code's transcripts (services/transcripts).

A transcript is Claude Code's file, but the agent can write to it too (a Bash `>>`). A figure
we store must be one SQLite can hold and arithmetic can use: a huge integer fails to bind (the
batch rolls back and the reader never gets past it), a NaN or an infinity fails the cost split,
a negative count or cost is a forgery. So every figure taken from a line is checked here, the
line's nesting too, and a line that fails is skipped and counted, never stored. The core's
readers of what was stored (core/usage) use the same caps, for a database written before them.
"""

from __future__ import annotations

import json
import math
from typing import Any

# Tokens in one model response. The largest context window is about 10**6 tokens and a response
# reads at most that much cache; 10**9 is a thousand times more, so no real count comes near it,
# and 9.2 billion responses at the cap still sum within SQLite's 64-bit integers (the rollups
# `sum()` them: past that SQLite fails with "integer overflow").
MAX_TOKENS = 10**9
# A session's totals in a cost-state (modelUsage): a thousand responses at the cap per model.
MAX_SESSION_TOKENS = 10**12
# USD, one session's or one model's: the status line's COST_CAP too. From it on, not a figure:
# a session costing a billion dollars is a forgery (or a bug), never a bill to show.
MAX_COST_USD = 1e9
MAX_DURATION_MS = 10**12  # about 31 years
MAX_LINES = 10**9  # lines added or removed in a session
# Nesting of a line: real entries are a few levels deep (a tool's input inside a content block
# inside the message). Deeper ones are skipped before anything walks them recursively
# (json.dumps, redaction, reconcile), well below Python's recursion limit of 1000.
MAX_DEPTH = 64

# message.usage's names, as message_usage's columns (thinking is under output_tokens_details).
USAGE_KEYS = (
    ("input_tokens", "input_tokens"),
    ("output_tokens", "output_tokens"),
    ("cache_read_tokens", "cache_read_input_tokens"),
    ("cache_creation_tokens", "cache_creation_input_tokens"),
)
# A cost-state's per-model counts we read (core/usage.MODEL_USAGE and thinkingTokens).
MODEL_COUNTS = (
    "inputTokens",
    "outputTokens",
    "cacheReadInputTokens",
    "cacheCreationInputTokens",
    "thinkingTokens",
    "cacheCreationEphemeral5mInputTokens",
    "cacheCreationEphemeral1hInputTokens",
)


class Bad(ValueError):
    """A figure out of bounds or of the wrong type: the line holding it is skipped."""


def count(value: object, cap: int = MAX_TOKENS) -> int | None:
    """A count from 0 to `cap`; None when absent. A string, a float, a bool is not a count."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise Bad(f"not a whole number: {type(value).__name__}")
    if not 0 <= value <= cap:
        raise Bad("a count out of bounds")
    return value


def amount(value: object, cap: float = MAX_COST_USD) -> float | None:
    """A finite number from 0 up to (not including) `cap`; None when absent."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Bad(f"not a number: {type(value).__name__}")
    if isinstance(value, int) and not 0 <= value < cap:  # float() of a huge int overflows
        raise Bad("a figure out of bounds")
    number = float(value)
    if not (math.isfinite(number) and 0 <= number < cap):
        raise Bad("a figure out of bounds")
    return number


def sane_cost(value: object) -> bool:
    """A cost worth showing as Claude Code's own: finite, from 0 up to MAX_COST_USD."""
    try:
        return amount(value) is not None
    except Bad:
        return False


def nested_within(value: object, limit: int = MAX_DEPTH) -> bool:
    """Whether `value` is nested at most `limit` levels deep (walked without recursion)."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth >= limit:
            return False
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return True


def usage_counts(used: dict[str, Any]) -> dict[str, int]:
    """A response's token counts (message.usage) as message_usage's columns: absent is 0."""
    found = {column: count(used.get(key)) or 0 for column, key in USAGE_KEYS}
    details = used.get("output_tokens_details")
    if details is not None and not isinstance(details, dict):
        raise Bad("output_tokens_details: not an object")
    found["thinking_tokens"] = count((details or {}).get("thinking_tokens")) or 0
    # The cache writes by time to live: all 5-minute unless a split says otherwise (Claude
    # Code writes the object with both at 0 when the API sent none).
    split = used.get("cache_creation")
    if split is not None and not isinstance(split, dict):
        raise Bad("cache_creation: not an object")
    hour = count((split or {}).get("ephemeral_1h_input_tokens")) or 0
    found["cache_1h_tokens"] = min(hour, found["cache_creation_tokens"])
    return found


def cost_figures(entry: dict[str, Any]) -> dict[str, Any]:
    """A cost-state entry with its figures checked: the keys core/usage.record_cost_state
    reads, each a number in bounds or None (modelUsage: each model's counts and cost checked)."""
    models = entry.get("modelUsage")
    if models is not None and not isinstance(models, dict):
        raise Bad("modelUsage: not an object")
    for figures in (models or {}).values():
        if not isinstance(figures, dict):
            raise Bad("modelUsage: a model's figures are not an object")
        for key in MODEL_COUNTS:
            count(figures.get(key), MAX_SESSION_TOKENS)
        amount(figures.get("costUSD"))
    try:  # stored as JSON text (a CHECK wants it valid): NaN or Infinity in any figure is not
        json.dumps(models, allow_nan=False)
    except ValueError as exc:
        raise Bad("modelUsage: a figure that is not a number") from exc
    return {
        "type": "cost-state",
        "totalCostUSD": amount(entry.get("totalCostUSD")),
        "totalAPIDuration": amount(entry.get("totalAPIDuration"), MAX_DURATION_MS),
        "totalToolDuration": amount(entry.get("totalToolDuration"), MAX_DURATION_MS),
        "totalLinesAdded": count(entry.get("totalLinesAdded"), MAX_LINES),
        "totalLinesRemoved": count(entry.get("totalLinesRemoved"), MAX_LINES),
        "modelUsage": models,
        "hasUnknownModelCost": entry.get("hasUnknownModelCost") is True,
    }


def problem(entry: dict[str, Any]) -> str | None:
    """Why a kept entry (user, assistant, cost-state) is to be skipped; None when it is fine."""
    if not nested_within(entry):
        return f"nested more than {MAX_DEPTH} levels deep"
    try:
        if entry["type"] == "cost-state":
            cost_figures(entry)
        elif entry["type"] == "assistant":
            message = entry.get("message")
            used = message.get("usage") if isinstance(message, dict) else None
            if used is not None and not isinstance(used, dict):
                raise Bad("message.usage: not an object")
            if used is not None:
                usage_counts(used)
    except Bad as exc:
        return str(exc)
    return None
