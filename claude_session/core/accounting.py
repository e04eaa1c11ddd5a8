"""The accounting rule: what each response cost, counted once, and whose it is.

- A response is counted once, by (message id, request id), across every transcript: a fork
  and a resume copy lines, with their ids. A copy is recorded in response_copies (its owner:
  the line's requestSessionId, else the session that started first), never as the copying
  session's own (core/usage.record_messages asks `owner_of`).
- A session's cost is the sum of its own responses, and of what Claude Code billed its
  processes that no transcript line holds (its helpers: the compaction summariser, titles).
- Claude Code's cost-state is cumulative: a resumed or forked process starts from the last
  state of the session it continues (for a fork, its parent's) and adds its own. So each
  process's spend is its last state less that start, per model, and it is shared among that
  process's own responses up to the state (by their price at our table's rates, in
  picodollars, so the shares add up exactly); what is left over is its helpers'. A process
  is found by its SessionStart (startup, resume, fork, clear), and by a state that falls.
- A response no state covers (a process killed before it wrote one, an older version, a
  live session's latest responses) is priced from our table (core/prices), at the price
  Claude Code's own states taught for its model where they did (learned_prices); an old
  transcript's per-line costUSD is Claude Code's own. A model neither knows gets the default
  tier, and its cost is an estimate (`estimated`), as is Claude Code's for a model it did not
  know (costBasis `unknown`).

The one writer of cost_states, response_copies and learned_prices; core/usage writes what
`priced` gives (message_usage's cost columns and the helpers' rows).
"""

from __future__ import annotations

import bisect
import json
from typing import Any, NamedTuple

import apsw

from . import prices
from . import transcript_values as values
from .db import as_int, rows

PICO = 10**12  # costs are apportioned in whole picodollars: the shares add up exactly
# message_usage.agent_id of the rows for what Claude Code used that no transcript line holds
# (message_id: the model). A literal in SQL: keep it free of quotes.
HELPERS = "(not in transcripts)"
# modelUsage's names of the token counts, as message_usage's columns.
MODEL_USAGE = (
    ("input_tokens", "inputTokens"),
    ("output_tokens", "outputTokens"),
    ("cache_read_tokens", "cacheReadInputTokens"),
    ("cache_creation_tokens", "cacheCreationInputTokens"),
)
COUNTS = tuple(ours for ours, _ in MODEL_USAGE)
# What a helpers' row holds per model: its counts (1-hour writes and thinking among them), and
# its cost and whether that is an estimate (core/usage writes them in this order).
HELPER_COUNTS = (*COUNTS, "cache_1h_tokens", "thinking_tokens")
HELPER_COLUMNS = (*HELPER_COUNTS, "cost_usd", "estimated")
# SessionStart sources that begin a Claude Code process for the session (a compaction does not).
PROCESS_SOURCES = ("startup", "resume", "fork", "clear")
LEARNED_BOUNDS = (0.01, 100.0)  # a scale past these says the figures are not a price


# --- what the transcripts give: cost states and copies ------------------------------------


def record_cost_states(
    conn: apsw.Connection,
    session_id: str,
    path: str,
    states: list[tuple[int, float | None, dict[str, Any]]],
    now: float,
) -> None:
    """Every cost-state line read (line end, as of, checked figures), and the latest in
    session_costs, Claude Code's own totals as it wrote them last."""
    for line_end, as_of, state in states:
        if as_of is None:  # the first line of a read: its responses were read before
            found = rows(
                conn,
                "SELECT max(at) AS at FROM message_usage WHERE session_id = ?"
                f" AND agent_id != '{HELPERS}'",
                (session_id,),
            )
            as_of = found[0]["at"] if found else None
        usage = state.get("modelUsage")
        conn.execute(
            "INSERT INTO cost_states (session_id, path, line_end, as_of, total_cost_usd,"
            " model_usage, has_unknown_model_cost) VALUES (?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT DO UPDATE SET as_of = excluded.as_of,"
            " total_cost_usd = excluded.total_cost_usd, model_usage = excluded.model_usage,"
            " has_unknown_model_cost = excluded.has_unknown_model_cost",
            (
                session_id,
                path,
                line_end,
                as_of,
                state.get("totalCostUSD"),
                json.dumps(usage) if isinstance(usage, dict) else None,
                int(bool(state.get("hasUnknownModelCost"))),
            ),
        )
    line_end, as_of, state = states[-1]
    record_cost_state(conn, session_id, state, as_of, now)


def forget_states(conn: apsw.Connection, session_id: str, path: str) -> None:
    """A transcript read again from its start: its states are read again too."""
    conn.execute("DELETE FROM cost_states WHERE session_id = ? AND path = ?", (session_id, path))


def record_cost_state(
    conn: apsw.Connection, session_id: str, state: dict[str, Any], as_of: float | None, now: float
) -> None:
    """Claude Code's latest cost-state for the session, as it wrote it (cumulative: a fork's
    and a resume's include what they continue)."""
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


def _started(conn: apsw.Connection, session_id: str) -> float | None:
    found = rows(conn, "SELECT started_at FROM sessions WHERE session_id = ?", (session_id,))
    value = found[0]["started_at"] if found else None
    return float(value) if isinstance(value, int | float) else None


def owner_of(
    conn: apsw.Connection, session_id: str, message: dict[str, Any]
) -> tuple[str | None, list[str]]:
    """The session a response in `session_id`'s transcript belongs to when it is a copy of
    another's (None: its own), and the sessions whose row of it is a copy of this one's (to
    be removed: recorded here as their copies). Its requestSessionId says so where Claude
    Code wrote one; else the same (message id, request id) in another session's rows makes
    it a copy when that session started first; when this one did, the other's is the copy."""
    request_session = message.get("request_session")
    if isinstance(request_session, str) and request_session and request_session != session_id:
        return request_session, []
    known = rows(
        conn,
        "SELECT owner FROM response_copies WHERE session_id = ? AND message_id = ?",
        (session_id, message["message_id"]),
    )
    if known:
        return str(known[0]["owner"]), []
    others = rows(
        conn,
        "SELECT DISTINCT session_id FROM message_usage WHERE message_id = ?1 AND session_id != ?2"
        " AND (request_id IS ?3 OR request_id IS NULL OR ?3 IS NULL)",
        (message["message_id"], session_id, message.get("request_id")),
    )
    mine = _started(conn, session_id)
    moved = []
    for row in others:
        other = str(row["session_id"])
        theirs = _started(conn, other)
        if theirs is not None and (mine is None or theirs <= mine):
            return other, []
        moved.append(other)  # it took this one's response for its own (read first)
        record_copy(conn, other, session_id, message)
    return None, moved


def record_copy(
    conn: apsw.Connection, session_id: str, owner: str, message: dict[str, Any]
) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO response_copies (session_id, message_id, request_id, owner, at)"
        " VALUES (?, ?, ?, ?, ?)",
        (session_id, message["message_id"], message.get("request_id"), owner, message.get("at")),
    )


def continuing(conn: apsw.Connection, session_id: str) -> list[str]:
    """The sessions holding copies of this one's responses (its forks): their first
    process starts from its state, so its figures change theirs."""
    return [
        str(r["session_id"])
        for r in rows(
            conn,
            "SELECT DISTINCT session_id FROM response_copies WHERE owner = ? AND session_id != ?",
            (session_id, session_id),
        )
    ]


# --- processes and their spend ---------------------------------------------------------------


def process_starts(conn: apsw.Connection, session_id: str) -> tuple[list[float], bool]:
    """When each of the session's Claude Code processes started (its SessionStart hooks), and
    whether one of them said it began a fork."""
    found = rows(
        conn,
        "SELECT received_at, coalesce(json_extract(payload, '$.source'), 'startup') AS source"
        " FROM events WHERE session_id = ? AND hook_event_name = 'SessionStart'",
        (session_id,),
    )
    starts = sorted(float(r["received_at"]) for r in found if r["source"] in PROCESS_SOURCES)
    return starts, any(r["source"] == "fork" for r in found)


def _states(conn: apsw.Connection, session_id: str) -> list[dict[str, Any]]:
    """The session's cost states in the order written, each as {as_of, models, unknown}."""
    found = []
    for r in rows(
        conn,
        "SELECT as_of, model_usage, has_unknown_model_cost FROM cost_states"
        " WHERE session_id = ? ORDER BY coalesce(as_of, 0), line_end",
        (session_id,),
    ):
        try:
            usage = json.loads(str(r["model_usage"])) if r["model_usage"] else {}
        except ValueError:
            usage = {}
        models = {
            str(k): v
            for k, v in (usage.items() if isinstance(usage, dict) else ())
            if isinstance(v, dict)
        }
        as_of = r["as_of"]
        found.append(
            {
                "as_of": float(as_of) if isinstance(as_of, int | float) else None,
                "models": models,
                "unknown": bool(r["has_unknown_model_cost"]),
            }
        )
    return found


def _parent_state(conn: apsw.Connection, session_id: str, before: float | None) -> dict[str, Any]:
    """For a fork: the state of the session it copied (the owner of most of its copies) that
    its first process started from, the last one before `before` (none: it started from 0).
    {"missing": True}: its parent is not known, or its transcript was never read here."""
    found = rows(
        conn,
        "SELECT owner, count(*) AS n FROM response_copies WHERE session_id = ?"
        " GROUP BY owner ORDER BY n DESC LIMIT 1",
        (session_id,),
    )
    if not found:  # a fork that copied nothing: whose figures it started from is not known
        return {"as_of": None, "models": {}, "unknown": False, "missing": True}
    parent = str(found[0]["owner"])
    read = rows(
        conn,
        "SELECT 1 FROM transcript_files WHERE session_id = ? AND agent_id = session_id"
        " AND last_error IS NULL LIMIT 1",
        (parent,),
    )
    if not read:
        return {"as_of": None, "models": {}, "unknown": False, "missing": True}
    states = [
        s
        for s in _states(conn, parent)
        if before is None or s["as_of"] is None or s["as_of"] < before
    ]
    return states[-1] if states else {"as_of": None, "models": {}, "unknown": False}


def is_fork(conn: apsw.Connection, session_id: str, said: bool) -> bool:
    """Whether the session began as a fork: it holds copies of another's responses, or its
    SessionStart `said` so (a fork of a session with no response of its own copies none)."""
    copied = "SELECT 1 FROM response_copies WHERE session_id = ? LIMIT 1"
    return said or bool(rows(conn, copied, (session_id,)))


def _model_figures(entry: dict[str, Any]) -> tuple[float | None, dict[str, int] | None]:
    """A model's cost and counts in a state (None where a figure is missing or out of bounds)."""
    cost = entry.get("costUSD")
    figure = float(cost) if isinstance(cost, int | float) and values.sane_cost(cost) else None
    found = {ours: _count(entry.get(theirs)) for ours, theirs in MODEL_USAGE}
    if any(n is None for n in found.values()):
        return figure, None
    counts = {k: int(n or 0) for k, n in found.items()}
    counts["cache_1h_tokens"] = _count(entry.get("cacheCreationEphemeral1hInputTokens")) or 0
    counts["thinking_tokens"] = _count(entry.get("thinkingTokens")) or 0
    return figure, counts


def spends(
    conn: apsw.Connection, session_id: str, messages: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Per process that wrote a state: its spend per model (its last state less the state it
    started from), the time its last state runs to, and its messages (those of `messages`
    it made up to that time). A process whose start is not known (a fork of a session not
    recorded here) has none."""
    starts, said_fork = process_starts(conn, session_id)
    states = _states(conn, session_id)

    def process_of(at: float | None) -> int:
        return len(starts) - 1 if at is None else bisect.bisect_right(starts, at) - 1

    # A state that falls below the one before it in the same process: a process began that
    # no hook told of, just after that one.
    previous: dict[str, Any] | None = None
    for state in states:
        if previous is not None and process_of(state["as_of"]) == process_of(previous["as_of"]):
            fell = any(
                (_model_figures(e)[0] or 0.0) + 1e-12
                < (_model_figures(previous["models"].get(m, {}))[0] or 0.0)
                for m, e in state["models"].items()
            ) or any(m not in state["models"] for m in previous["models"])
            if fell and previous["as_of"] is not None:
                bisect.insort(starts, previous["as_of"] + 1e-6)
        previous = state
    last: dict[int, dict[str, Any]] = {}
    base: dict[int, dict[str, Any] | None] = {}
    before: dict[str, Any] | None = None
    first_start = starts[0] if starts else None
    for state in states:
        k = process_of(state["as_of"])
        if k not in last:
            base[k] = before
        last[k] = state
        before = state
    fork = is_fork(conn, session_id, said_fork)
    main_times = sorted(
        m["at"] for m in messages if m["agent_id"] == session_id and m["at"] is not None
    )
    found = []
    first_process = 0 if starts else -1  # the one a fork's SessionStart began
    for k, state in last.items():
        start_state = base[k]
        # A fork's first process starts from its parent's state; a later one resumes from the
        # fork's own transcript (no state in it: from 0).
        if start_state is None and fork and k == first_process:
            own = [m["at"] for m in messages if m["at"] is not None]
            cutoff = first_start if first_start is not None else (min(own) if own else None)
            start_state = _parent_state(conn, session_id, cutoff)
            if start_state.get("missing"):
                continue  # its start is another session's figure we do not have
        covered = [
            m
            for m in messages
            if process_of(m["at"]) == k
            and (state["as_of"] is None or m["at"] is None or m["at"] <= state["as_of"])
        ]
        # A subagent's response after the main thread's last line before the state, and
        # before its next one, may be in the state or not (the state has no time of its own):
        # `priced` takes it in while the state's counts leave room for it.
        after = None
        if state["as_of"] is not None:
            i = bisect.bisect_right(main_times, state["as_of"])
            after = main_times[i] if i < len(main_times) else None
        maybe = [
            m
            for m in messages
            if process_of(m["at"]) == k
            and m["agent_id"] != session_id
            and state["as_of"] is not None
            and m["at"] is not None
            and state["as_of"] < m["at"]
            and (after is None or m["at"] < after)
        ]
        models: dict[str, dict[str, Any]] = {}
        for model, entry in state["models"].items():
            cost, counts = _model_figures(entry)
            start_cost, start_counts = _model_figures(
                (start_state or {"models": {}})["models"].get(model, {})
            )
            if cost is None or (
                start_cost is None and start_state and model in start_state["models"]
            ):
                continue
            spent = cost - (start_cost or 0.0)
            if spent < -1e-12:
                continue
            left = None
            if counts is not None:
                left = {c: counts[c] - ((start_counts or {}).get(c) or 0) for c in counts}
            models[model] = {
                "cost": max(0.0, spent),
                "counts": left,
                "estimated": entry.get("costBasis") == "unknown"
                or (state["unknown"] and prices.lookup(model)[0] is None),
                "unknown_zero": cost == 0 and state["unknown"],
            }
        found.append(
            {
                "process": k,
                "as_of": state["as_of"],
                "models": models,
                "messages": covered,
                "maybe": maybe,
            }
        )
    return found


# --- giving every response its cost -----------------------------------------------------------


def _price(model: str | None, table: prices.Table) -> tuple[prices.Price, bool]:
    """The table's price for `model`, else the default tier (an estimate: True)."""
    found, _ = prices.lookup(model, table)
    return (found, False) if found is not None else (prices.default_price(table), True)


def table_cost(m: dict[str, Any], table: prices.Table) -> float:
    return prices.cost(_price(m.get("model"), table)[0], m)


def split(total: int, weights: list[int]) -> list[int]:
    """`total` units shared by integer weights, largest remainders first: the parts add up
    to it exactly (all weights 0: shared evenly)."""
    whole = sum(weights)
    if whole <= 0:
        weights, whole = [1] * len(weights), len(weights)
    parts = [total * w // whole for w in weights]
    rests = [total * w % whole for w in weights]
    order = sorted(range(len(weights)), key=lambda i: rests[i], reverse=True)
    for i in order[: total - sum(parts)]:
        parts[i] += 1
    return parts


def priced_from_table(conn: apsw.Connection, models: list[str], skip: str) -> list[str]:
    """The sessions (but `skip`) with responses of `models` priced from our table."""
    if not models:
        return []
    marks = ", ".join("?" for _ in models)
    return [
        str(r["session_id"])
        for r in rows(
            conn,
            "SELECT DISTINCT session_id FROM message_usage WHERE cost_source = 'price_table'"
            f" AND model IN ({marks}) AND session_id != ?",
            (*models, skip),
        )
    ]


def learned(conn: apsw.Connection) -> dict[str, float]:
    return {
        str(r["model"]): float(r["scale"])
        for r in rows(conn, "SELECT model, scale FROM learned_prices")
    }


class Priced(NamedTuple):
    """What the rule gives a session: the responses whose cost changes ((agent, message) ->
    (cost, source, estimated)), and its helpers' rows per model (tokens, cost, estimated)."""

    changes: dict[tuple[str, str], tuple[float | None, str | None, int]]
    helpers: dict[str, dict[str, Any]]


def priced(conn: apsw.Connection, session_id: str, now: float = 0.0) -> Priced:
    """Every response of the session priced by the rule (module docstring), and its helpers'
    rows; the prices its states teach are learned here. core/usage writes the rows."""
    table = prices.table()
    messages = rows(
        conn,
        "SELECT agent_id, message_id, model, input_tokens, output_tokens, cache_read_tokens,"
        " cache_creation_tokens, cache_1h_tokens, thinking_tokens, at, line_cost_usd,"
        " cost_usd, cost_source, estimated FROM message_usage WHERE session_id = ?"
        f" AND agent_id != '{HELPERS}' ORDER BY at, agent_id, message_id",
        (session_id,),
    )
    new: dict[tuple[str, str], tuple[float | None, str | None, int]] = {}
    helpers: dict[str, dict[str, Any]] = {}
    taught: dict[str, float] = {}
    for spend in spends(conn, session_id, messages):
        for model, figures in spend["models"].items():
            if figures["unknown_zero"]:
                continue  # Claude Code had no price: it wrote 0
            group = [m for m in spend["messages"] if m["model"] == model]
            counts = figures["counts"]
            for m in (m for m in spend["maybe"] if m["model"] == model):
                if counts is None or any(
                    counts[c] < sum(as_int(g[c]) for g in group) + as_int(m[c]) for c in COUNTS
                ):
                    break
                group.append(m)
            extra = None
            if counts is not None:
                left = {c: counts[c] - sum(as_int(m[c]) for m in group) for c in HELPER_COUNTS}
                if min(left[c] for c in COUNTS) >= 0 and max(left[c] for c in COUNTS) > 0:
                    left["cache_1h_tokens"] = max(
                        0, min(left["cache_1h_tokens"], left["cache_creation_tokens"])
                    )
                    left["thinking_tokens"] = max(0, left["thinking_tokens"])
                    extra = left | {"model": model}
            items = group + ([extra] if extra else [])
            if not items:
                continue
            weights = [round(table_cost(m, table) * 1e9) for m in items]
            parts = split(round(figures["cost"] * PICO), weights)
            flag = int(figures["estimated"])
            for m, units in zip(group, parts, strict=False):
                new[(str(m["agent_id"]), str(m["message_id"]))] = (
                    units / PICO,
                    "claude_code",
                    flag,
                )
            if extra is not None:
                kept = helpers.setdefault(model, dict.fromkeys(HELPER_COLUMNS, 0))
                for c in HELPER_COUNTS:
                    kept[c] += extra[c]
                kept["cost_usd"] += parts[-1] / PICO
                kept["estimated"] |= flag
            priced = sum(weights) / 1e9
            if not figures["estimated"] and priced > 0:
                scale = figures["cost"] / priced
                if LEARNED_BOUNDS[0] <= scale <= LEARNED_BOUNDS[1]:
                    taught[model] = scale
    scales = learned(conn) | taught
    changes = {}
    for m in messages:
        key = (str(m["agent_id"]), str(m["message_id"]))
        if key not in new:
            new[key] = _own_price(m, table, scales)
        if (m["cost_usd"], m["cost_source"], m["estimated"]) != new[key]:
            changes[key] = new[key]
    for model, scale in taught.items():
        conn.execute(
            "INSERT INTO learned_prices (model, scale, session_id, updated_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (model) DO UPDATE SET scale = excluded.scale,"
            " session_id = excluded.session_id, updated_at = excluded.updated_at"
            " WHERE abs(scale - excluded.scale) > 1e-9",
            (model, scale, session_id, now),
        )
    return Priced(changes, helpers)


def _own_price(
    m: dict[str, Any], table: prices.Table, scales: dict[str, float]
) -> tuple[float | None, str | None, int]:
    """A response no state covers: its line's own costUSD, else our table's price (scaled to
    what Claude Code's states taught for the model), an estimate when neither knows it."""
    if m["line_cost_usd"] is not None:
        return float(m["line_cost_usd"]), "claude_code", 0
    model = m["model"]
    if not model:
        return None, None, 0
    price, unknown = _price(str(model), table)
    scale = scales.get(str(model))
    cost = prices.cost(price, m) * (scale if scale is not None else 1.0)
    return cost, "price_table", int(unknown and scale is None)


def _count(value: object) -> int | None:
    """A session's count as a cost-state gives it, within core/transcript_values' cap."""
    try:
        return values.count(value, values.MAX_SESSION_TOKENS)
    except values.Bad:
        return None


def _number(value: object) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok else None  # type: ignore[arg-type]


def _integer(value: object) -> int | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return int(value) if ok else None  # type: ignore[call-overload]
