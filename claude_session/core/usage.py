"""What each model response used and cost, from Claude Code's transcripts: the one writer of
transcript_files, message_usage and session_costs, and of session_usage and
session_tool_usage, message_usage summed per session for `cost` (refresh_rollup).

The figures are Claude Code's own: each model's `costUSD` in a session's latest cost-state is
apportioned to that session's messages of that model by their price-weighted tokens, so the
messages add up to Claude Code's figure exactly. A model Claude Code gave no figure for is
priced from our own table (`cost_source = 'price_table'`). Nothing here runs in a hook.

Claude Code's own helper requests (the compaction summariser, titles, recaps, memory
extraction: forks it runs with `skipTranscript`) are in its `modelUsage` but on no transcript
line. What they used is known only as a difference: per model, `modelUsage` less the
responses read that it covers. That difference is one row per session and model, agent_id
HELPERS (no time, no turn, no tool), apportioned its share like a response: the tokens add up
to Claude Code's per model, and the helpers' cost is not spread over the responses.
"""

from __future__ import annotations

import json
from typing import Any

import apsw

from . import transcript_values as values
from .db import as_int, rows

# The ratio of Anthropic's prices per token: input 1, output 5, cache read 0.1, cache write
# (5 minutes) 1.25. A price-weighted token count splits a model's cost among its messages.
WEIGHTS = (1.0, 5.0, 0.1, 1.25)  # input, output, cache read, cache creation
PICO = 10**12  # costs are apportioned in whole picodollars: the shares add up exactly
# message_usage.agent_id of the rows for what Claude Code used that no transcript line holds
# (message_id: the model). A literal in SQL below: keep it free of quotes.
HELPERS = "(not in transcripts)"
# modelUsage's names of the token counts, as message_usage's columns.
MODEL_USAGE = (
    ("input_tokens", "inputTokens"),
    ("output_tokens", "outputTokens"),
    ("cache_read_tokens", "cacheReadInputTokens"),
    ("cache_creation_tokens", "cacheCreationInputTokens"),
)

# Our own fallback: the input price in USD per million tokens of each family (the other kinds
# follow WEIGHTS), matched in order by a substring of the model's name. Used only where Claude
# Code gave no figure; say so wherever it shows.
PRICES: tuple[tuple[str, float], ...] = (
    ("claude-3-opus", 15.0),
    ("opus-4-1", 15.0),
    ("opus-4-0", 15.0),
    ("opus-4-2025", 15.0),
    ("opus", 5.0),
    ("sonnet", 3.0),
    ("claude-3-haiku", 0.25),
    ("3-5-haiku", 0.8),
    ("haiku-3-5", 0.8),
    ("haiku", 1.0),
)

FILE_COLUMNS = (
    "path, session_id, agent_id, read_to, inode, size, lines_read, lines_skipped, restarts,"
    " prompt_id, last_error, updated_at, filled_to, first_skipped"
)


def input_price(model: str | None) -> float | None:
    """USD per million input tokens for `model` from our table; None when it names no family."""
    name = (model or "").lower()
    for part, price in PRICES:
        if part in name:
            return price
    return None


def weight(row: dict[str, Any]) -> float:
    """A message's price-weighted tokens (input-token equivalents)."""
    counts = (
        row["input_tokens"],
        row["output_tokens"],
        row["cache_read_tokens"],
        row["cache_creation_tokens"],
    )
    return sum(as_int(n) * w for n, w in zip(counts, WEIGHTS, strict=True))


# --- transcript files ---------------------------------------------------------------------


def file_state(conn: apsw.Connection, path: str) -> dict[str, Any] | None:
    found = rows(conn, f"SELECT {FILE_COLUMNS} FROM transcript_files WHERE path = ?", (path,))
    return found[0] if found else None


def save_filled(conn: apsw.Connection, path: str, filled_to: int) -> None:
    """How far `reconcile` has been handed the file's entries (services/transcripts)."""
    conn.execute("UPDATE transcript_files SET filled_to = ? WHERE path = ?", (filled_to, path))


def save_file(
    conn: apsw.Connection,
    path: str,
    session_id: str,
    agent_id: str,
    now: float,
    *,
    read_to: int = 0,
    inode: int | None = None,
    size: int | None = None,
    lines: int = 0,
    skipped: int = 0,
    first_skipped: int | None = None,
    restarted: bool = False,
    prompt_id: str | None = None,
    error: str | None = None,
) -> None:
    """Where reading `path` stands: counts are added, the rest replaced. An error keeps the
    offset reached before it (the file may come back). `first_skipped`, where a line skipped
    begins, is kept until the file is read again from 0."""
    conn.execute(
        "INSERT INTO transcript_files (path, session_id, agent_id, read_to, inode, size,"
        " lines_read, lines_skipped, restarts, prompt_id, last_error, updated_at, first_skipped)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"
        " ON CONFLICT (path) DO UPDATE SET"
        " first_skipped = CASE WHEN ?9 THEN ?13 ELSE coalesce(first_skipped, ?13) END,"
        " read_to = CASE WHEN ?11 IS NULL THEN ?4 ELSE read_to END,"
        " inode = coalesce(?5, inode), size = coalesce(?6, size),"
        " lines_read = lines_read + ?7, lines_skipped = lines_skipped + ?8,"
        " restarts = restarts + ?9, filled_to = CASE WHEN ?9 THEN 0 ELSE filled_to END,"
        " prompt_id = CASE WHEN ?11 IS NULL THEN ?10 ELSE prompt_id END,"
        " last_error = ?11, updated_at = ?12",
        (
            path,
            session_id,
            agent_id,
            read_to,
            inode,
            size,
            lines,
            skipped,
            int(restarted),
            prompt_id,
            error,
            now,
            first_skipped,
        ),
    )


def session_files(conn: apsw.Connection, session_id: str) -> list[dict[str, Any]]:
    return rows(
        conn,
        f"SELECT {FILE_COLUMNS} FROM transcript_files WHERE session_id = ? ORDER BY path",
        (session_id,),
    )


# --- messages -----------------------------------------------------------------------------


def record_messages(
    conn: apsw.Connection, session_id: str, agent_id: str, messages: list[dict[str, Any]]
) -> int:
    """Store model responses (keys as message_usage's columns; `tool_uses` a dict). A message
    seen again (streamed in several entries, or read twice) is merged, never counted twice:
    its token counts are the largest seen, its tool calls the union."""
    turns = _turn_finder(conn, session_id, agent_id, wait_after=float("-inf"))
    for m in messages:
        prompt_id = m.get("prompt_id")
        conn.execute(
            "INSERT INTO message_usage (session_id, agent_id, message_id, turn_id, prompt_id,"
            " tool_uses, model, input_tokens, output_tokens, cache_read_tokens,"
            " cache_creation_tokens, thinking_tokens, service_tier, speed, at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (session_id, agent_id, message_id) DO UPDATE SET"
            " turn_id = coalesce(turn_id, excluded.turn_id),"
            " prompt_id = coalesce(prompt_id, excluded.prompt_id),"
            " tool_uses = json_patch(tool_uses, excluded.tool_uses),"
            " model = coalesce(model, excluded.model),"
            " input_tokens = max(input_tokens, excluded.input_tokens),"
            " output_tokens = max(output_tokens, excluded.output_tokens),"
            " cache_read_tokens = max(cache_read_tokens, excluded.cache_read_tokens),"
            " cache_creation_tokens = max(cache_creation_tokens, excluded.cache_creation_tokens),"
            " thinking_tokens = max(thinking_tokens, excluded.thinking_tokens),"
            " service_tier = coalesce(service_tier, excluded.service_tier),"
            " speed = coalesce(speed, excluded.speed), at = coalesce(at, excluded.at)",
            (
                session_id,
                agent_id,
                m["message_id"],
                turns(prompt_id, m.get("at")),
                prompt_id,
                json.dumps(m.get("tool_uses") or {}),
                m.get("model"),
                as_int(m.get("input_tokens")),
                as_int(m.get("output_tokens")),
                as_int(m.get("cache_read_tokens")),
                as_int(m.get("cache_creation_tokens")),
                as_int(m.get("thinking_tokens")),
                m.get("service_tier"),
                m.get("speed"),
                m.get("at"),
            ),
        )
    if messages:
        refresh_rollup(conn, session_id)
    return len(messages)


# A message whose promptId names no turn yet waits this long for it (its prompt's hook, or the
# transcript's fill of a lost one) before the turn is guessed from the times.
TURN_WAIT = 600.0


def _turn_finder(conn: apsw.Connection, session_id: str, agent_id: str, wait_after: float) -> Any:
    """turns.id for a message: by its promptId; for a subagent, else the turn of the Agent
    call that launched it; else the last turn started before it. A promptId that names no
    turn yet is a turn still to be recorded when the message came after `wait_after`: None
    (turns_found settles it later), never the turn before it."""
    by_prompt: dict[str, int] = {}
    started: list[tuple[float, int]] = []
    for row in rows(
        conn,
        "SELECT id, prompt_id, started_at FROM turns WHERE session_id = ? ORDER BY started_at",
        (session_id,),
    ):
        if row["prompt_id"]:
            by_prompt[str(row["prompt_id"])] = as_int(row["id"])
        started.append((float(row["started_at"]), as_int(row["id"])))
    # This Claude Code names its prompts in its hooks (2.1.196 on): an unknown one is coming.
    named = len(by_prompt) == len(started)
    launched: int | None = None
    if agent_id != session_id:
        found = rows(
            conn,
            "SELECT c.turn_id FROM agent_registry a JOIN tool_calls c"
            " ON c.tool_use_id = a.tool_use_id WHERE a.id = ? AND c.turn_id IS NOT NULL",
            (agent_id,),
        )
        launched = as_int(found[0]["turn_id"]) if found else None

    def find(prompt_id: str | None, at: float | None) -> int | None:
        if prompt_id and prompt_id in by_prompt:
            return by_prompt[prompt_id]
        if prompt_id and agent_id == session_id and (at is None or at > wait_after) and named:
            return None
        if launched is not None:
            return launched
        if at is None:
            return None
        before = [turn for when, turn in started if when <= at]
        return before[-1] if before else None

    return find


def turns_found(conn: apsw.Connection, session_id: str, now: float) -> list[tuple[int, str, str]]:
    """(turn id, agent, message) for the messages read before their turn was recorded (hooks
    and transcript race) whose turn is known now. Reads only: nothing to write, no lock."""
    waiting = rows(
        conn,
        "SELECT agent_id, message_id, prompt_id, at FROM message_usage"
        " WHERE session_id = ? AND turn_id IS NULL",
        (session_id,),
    )
    found = []
    finders: dict[str, Any] = {}
    for row in waiting:
        agent = str(row["agent_id"])
        finder = finders.setdefault(
            agent, _turn_finder(conn, session_id, agent, wait_after=now - TURN_WAIT)
        )
        turn = finder(row["prompt_id"], row["at"])
        if turn is not None:
            found.append((turn, agent, str(row["message_id"])))
    return found


def set_turns(conn: apsw.Connection, session_id: str, found: list[tuple[int, str, str]]) -> None:
    for turn, agent, message in found:
        conn.execute(
            "UPDATE message_usage SET turn_id = ? WHERE session_id = ? AND agent_id = ?"
            " AND message_id = ? AND turn_id IS NULL",
            (turn, session_id, agent, message),
        )
    if found:
        refresh_rollup(conn, session_id)


# --- Claude Code's totals and the apportioning ---------------------------------------------


def record_cost_state(
    conn: apsw.Connection, session_id: str, state: dict[str, Any], as_of: float | None, now: float
) -> None:
    """Claude Code's latest cost-state for the session (it includes the subagents'), its
    figures checked (core/transcript_values.cost_figures)."""
    usage = state.get("modelUsage")
    conn.execute(
        "INSERT INTO session_costs (session_id, total_cost_usd, model_usage, as_of,"
        " api_duration_ms, tool_duration_ms, lines_added, lines_removed,"
        " has_unknown_model_cost, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (session_id) DO UPDATE SET total_cost_usd = excluded.total_cost_usd,"
        " model_usage = excluded.model_usage, as_of = excluded.as_of,"
        " api_duration_ms = excluded.api_duration_ms,"
        " tool_duration_ms = excluded.tool_duration_ms, lines_added = excluded.lines_added,"
        " lines_removed = excluded.lines_removed,"
        " has_unknown_model_cost = excluded.has_unknown_model_cost,"
        " updated_at = excluded.updated_at",
        (
            session_id,
            _number(state.get("totalCostUSD")),
            json.dumps(usage) if isinstance(usage, dict) else None,
            as_of,
            _number(state.get("totalAPIDuration")),
            _number(state.get("totalToolDuration")),
            _integer(state.get("totalLinesAdded")),
            _integer(state.get("totalLinesRemoved")),
            int(bool(state.get("hasUnknownModelCost"))),
            now,
        ),
    )


def _latest(conn: apsw.Connection, session_id: str) -> tuple[dict[str, Any], float | None, bool]:
    """The session's latest modelUsage (model -> its figures), the time it runs to (None: all
    the messages) and whether Claude Code had no price for a model."""
    found = rows(
        conn,
        "SELECT model_usage, as_of, has_unknown_model_cost FROM session_costs WHERE session_id = ?",
        (session_id,),
    )
    if not found or not found[0]["model_usage"]:
        return {}, None, False
    try:
        usage = json.loads(str(found[0]["model_usage"]))
    except ValueError:
        return {}, None, False
    as_of = found[0]["as_of"]
    return (
        {str(k): v for k, v in usage.items() if isinstance(v, dict)}
        if isinstance(usage, dict)
        else {},
        float(as_of) if isinstance(as_of, int | float) else None,
        bool(found[0]["has_unknown_model_cost"]),
    )


def figures(conn: apsw.Connection, session_id: str) -> tuple[dict[str, float], float | None]:
    """Claude Code's cost per model for the session, and the time its figures run to (None:
    all the messages). A model it had no price for (a 0 under hasUnknownModelCost) has none."""
    usage, as_of, unknown = _latest(conn, session_id)
    costs: dict[str, float] = {}
    for model, entry in usage.items():
        cost = entry.get("costUSD")
        if not values.sane_cost(cost):  # also for a figure stored before it was checked
            continue
        if cost == 0 and unknown:
            continue
        costs[model] = float(cost)
    return costs, as_of


def helper_usage(conn: apsw.Connection, session_id: str) -> dict[str, dict[str, int]]:
    """Per model, what Claude Code counted that no response read carries: its modelUsage less
    the responses it covers (those up to its time). A model is left out when a count is
    missing, or smaller than the responses' (the figures do not cover what was read: an
    older resume, a response not counted yet), or nothing is left over: no number guessed."""
    usage, as_of, _ = _latest(conn, session_id)
    read = {
        str(r["model"]): r
        for r in rows(
            conn,
            "SELECT model, "
            + ", ".join(f"sum({c}) AS {c}" for c, _ in MODEL_USAGE)
            + ", sum(thinking_tokens) AS thinking_tokens FROM message_usage"
            f" WHERE session_id = ?1 AND agent_id != '{HELPERS}' AND model IS NOT NULL"
            " AND (?2 IS NULL OR at IS NULL OR at <= ?2) GROUP BY model",
            (session_id, as_of),
        )
    }
    found: dict[str, dict[str, int]] = {}
    for model, entry in usage.items():
        counts = [entry.get(theirs) for _, theirs in MODEL_USAGE]
        if not all(_bounded(n) for n in counts):  # also for figures stored before the checks
            continue
        ours = read.get(model, {})
        left = {
            c: int(n) - as_int(ours.get(c)) for (c, _), n in zip(MODEL_USAGE, counts, strict=True)
        }
        if min(left.values()) < 0 or max(left.values()) == 0:
            continue
        thinking = entry.get("thinkingTokens")
        thought = int(thinking) - as_int(ours.get("thinking_tokens")) if _bounded(thinking) else 0
        found[model] = left | {"thinking_tokens": max(0, thought)}
    return found


def record_helpers(conn: apsw.Connection, session_id: str) -> None:
    """The session's HELPERS rows as helper_usage finds them now (their cost is apportioned
    after, with the responses')."""
    found = helper_usage(conn, session_id)
    kept = rows(
        conn,
        "SELECT message_id, input_tokens, output_tokens, cache_read_tokens,"
        f" cache_creation_tokens, thinking_tokens FROM message_usage WHERE session_id = ?"
        f" AND agent_id = '{HELPERS}'",
        (session_id,),
    )
    now = {str(r.pop("message_id")): r for r in kept}
    changed = False
    for model in now.keys() - found.keys():
        changed = True
        conn.execute(
            f"DELETE FROM message_usage WHERE session_id = ? AND agent_id = '{HELPERS}'"
            " AND message_id = ?",
            (session_id, model),
        )
    for model, counts in found.items():
        if now.get(model) == counts:
            continue
        changed = True
        conn.execute(
            "INSERT INTO message_usage (session_id, agent_id, message_id, model, input_tokens,"
            " output_tokens, cache_read_tokens, cache_creation_tokens, thinking_tokens)"
            f" VALUES (?1, '{HELPERS}', ?2, ?2, ?3, ?4, ?5, ?6, ?7)"
            " ON CONFLICT (session_id, agent_id, message_id) DO UPDATE SET"
            " input_tokens = ?3, output_tokens = ?4, cache_read_tokens = ?5,"
            " cache_creation_tokens = ?6, thinking_tokens = ?7",
            (
                session_id,
                model,
                counts["input_tokens"],
                counts["output_tokens"],
                counts["cache_read_tokens"],
                counts["cache_creation_tokens"],
                counts["thinking_tokens"],
            ),
        )
    if changed:
        refresh_rollup(conn, session_id)


def apportion(conn: apsw.Connection, session_id: str) -> int:
    """Give every message of the session its cost: Claude Code's figure for its model split by
    price-weighted tokens (largest remainders in picodollars, so the shares add up to the
    figure), else our price table; the helpers' rows first brought up to date (record_helpers).
    Returns the messages whose cost changed."""
    record_helpers(conn, session_id)
    costs, as_of = figures(conn, session_id)
    messages = rows(
        conn,
        "SELECT agent_id, message_id, model, input_tokens, output_tokens, cache_read_tokens,"
        " cache_creation_tokens, at, cost_usd, cost_source FROM message_usage"
        " WHERE session_id = ? ORDER BY at, agent_id, message_id",
        (session_id,),
    )
    by_model: dict[str, list[dict[str, Any]]] = {}
    new: dict[tuple[str, str], tuple[float | None, str | None]] = {}
    for m in messages:
        model = str(m["model"] or "")
        covered = as_of is None or m["at"] is None or float(m["at"]) <= as_of
        if model in costs and covered:
            by_model.setdefault(model, []).append(m)
            continue
        price = input_price(model)
        key = (str(m["agent_id"]), str(m["message_id"]))
        new[key] = (None, None) if price is None else (price * weight(m) / 1e6, "price_table")
    for model, group in by_model.items():
        for m, units in zip(group, split(round(costs[model] * PICO), group), strict=True):
            new[(str(m["agent_id"]), str(m["message_id"]))] = (units / PICO, "claude_code")
    changed = 0
    for m in messages:
        key = (str(m["agent_id"]), str(m["message_id"]))
        cost, source = new[key]
        if (m["cost_usd"], m["cost_source"]) != (cost, source):
            conn.execute(
                "UPDATE message_usage SET cost_usd = ?, cost_source = ? WHERE session_id = ?"
                " AND agent_id = ? AND message_id = ?",
                (cost, source, session_id, *key),
            )
            changed += 1
    if changed:
        refresh_rollup(conn, session_id)
    return changed


def split(total: int, group: list[dict[str, Any]]) -> list[int]:
    """`total` units shared by weight, largest remainders first: the parts add up to it. In
    integers (weights times 20 are whole numbers), so no rounding can lose a unit."""
    weights = [round(weight(m) * 20) for m in group]
    whole = sum(weights)
    if whole <= 0:
        weights, whole = [1] * len(group), len(group)
    parts = [total * w // whole for w in weights]
    rests = [total * w % whole for w in weights]
    order = sorted(range(len(group)), key=lambda i: rests[i], reverse=True)
    for i in order[: total - sum(parts)]:
        parts[i] += 1
    return parts


def _bounded(value: object) -> bool:
    """A session's count as a cost-state gives it, within core/transcript_values' cap."""
    try:
        return values.count(value, values.MAX_SESSION_TOKENS) is not None
    except values.Bad:
        return False


def _number(value: object) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok else None  # type: ignore[arg-type]


def _integer(value: object) -> int | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return int(value) if ok else None  # type: ignore[call-overload]


# --- the per-session rollups `cost` sums (session_usage, session_tool_usage) ---------------

_TOKEN_COLUMNS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
    "thinking_tokens",
)
_COUNTS = (
    "count(CASE WHEN m.cost_source = 'claude_code' THEN 1 END),"
    " count(CASE WHEN m.cost_source = 'price_table' THEN 1 END), sum(m.cost_usd IS NULL)"
)
ROLLUP_SQL = (
    "INSERT INTO session_usage SELECT m.session_id, m.agent_id, m.model, CAST(m.at / 900 AS"
    f" INTEGER), count(CASE WHEN m.agent_id != '{HELPERS}' THEN 1 END), "
    + ", ".join(f"sum(m.{t})" for t in _TOKEN_COLUMNS)
    + ", sum(m.cost_usd), total(CASE WHEN m.cost_source = 'claude_code' THEN m.cost_usd END), "
    + _COUNTS
    + ", min(m.at), max(m.at), (SELECT count(DISTINCT t.turn_id)"
    " + coalesce(max(t.turn_id IS NULL), 0) FROM message_usage t"
    f" WHERE t.session_id = m.session_id AND t.agent_id != '{HELPERS}')"
    " FROM message_usage m WHERE {where}"
    " GROUP BY m.session_id, m.agent_id, m.model, CAST(m.at / 900 AS INTEGER)"
)
TOOL_ROLLUP_SQL = (
    "INSERT INTO session_tool_usage SELECT m.session_id, coalesce(j.value, '(no tool: text)'),"
    " count(j.key), count(DISTINCT m.agent_id || ' ' || m.message_id), "
    + ", ".join(
        f"sum(m.{t} * 1.0 / max(1, (SELECT count(*) FROM json_each(m.tool_uses))))"
        for t in _TOKEN_COLUMNS
    )
    + ", sum(m.cost_usd / max(1, (SELECT count(*) FROM json_each(m.tool_uses)))), "
    + _COUNTS
    + " FROM message_usage m LEFT JOIN json_each(m.tool_uses) j WHERE {where}"
    f" AND m.agent_id != '{HELPERS}'"
    " GROUP BY m.session_id, 2"
)


def refresh_rollup(conn: apsw.Connection, session_id: str) -> None:
    """The session's rows of session_usage and session_tool_usage, computed again from its
    message_usage rows (exact and idempotent): called after every write to them, in its
    transaction."""
    conn.execute("DELETE FROM session_usage WHERE session_id = ?", (session_id,))
    conn.execute("DELETE FROM session_tool_usage WHERE session_id = ?", (session_id,))
    conn.execute(ROLLUP_SQL.format(where="m.session_id = ?1"), (session_id,))
    conn.execute(TOOL_ROLLUP_SQL.format(where="m.session_id = ?1"), (session_id,))
